#pragma once
// The accelerator's bus interfaces as packed structs, one table for the RTL and the
// C++: the AXI4 master to DRAM, the AXI4-Lite register file, the in-order core's
// device-memory port and kiln_top's internal DMA read clients, each a request (what
// the initiator drives) and a response (what the target drives), with a struct per AXI
// channel (as OpenTitan's tlul_pkg does for TL-UL). rtl_params generates the typedefs
// of kiln_cfg_pkg from these tables (kiln_cfg_pkg::axi_req_t, ...); the Verilator
// harness (hw/sim/rtl) reads and drives the same structs on the Verilated tops through
// bus_field(); the Vivado wrapper (boards/xilinx, rtl_params' zynq_wrapper()) spreads
// them onto flat AXI port names.

#include <span>
#include <string_view>
#include <vector>

#include "hw/spec/debug_ports.h"

namespace kiln::hw::bus {

inline constexpr int kAxiIdBits = 3;     // read clients are told apart by ARID
inline constexpr int kAxiLenBits = 8;    // AXI4: beats in a burst - 1
inline constexpr int kAxiSizeBits = 3;   // log2 of the bytes in a beat
inline constexpr int kAxiBurstBits = 2;
inline constexpr int kAxiBurstIncr = 1;  // the only burst type the accelerator issues
inline constexpr int kAxiRespBits = 2;
inline constexpr int kAxiRespOkay = 0;
inline constexpr int kAxilAddrBits = 8;  // the register file decodes 8 address bits
inline constexpr int kAxilDataBits = 32;
inline constexpr int kMemAddrBits = 32;  // device memory: byte addresses of 64-bit words
inline constexpr int kMemDataBits = 64;

// One member of a struct, in SystemVerilog's packed order (the first is the top bits).
// A member whose type is another struct of the table names it.
struct Member {
  std::string_view name;
  int width;
  std::string_view type = {};
};

struct Struct {
  std::string_view name;
  std::vector<Member> members;
  int bits() const;
};

// Every struct, each after those it uses, for an AXI4 data width of axi_data_bits.
std::vector<Struct> bus_structs(int axi_data_bits, int axi_addr_bits);

// Bits of member `path` ("aw_valid", "aw.addr", "r.data") in struct `name`; throws
// hw::Error for a name or path the table lacks.
dbg::BitField bus_field(std::span<const Struct> structs, std::string_view name,
                        std::string_view path);

}  // namespace kiln::hw::bus
