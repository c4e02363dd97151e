#pragma once
// The SystemVerilog parameter package of a configuration (kiln_cfg_pkg.sv): every
// size and width the RTL uses, the fingerprint, and the lsb/width of every instruction
// field from InsnLayout, so the RTL decodes with the same table as the C++.

#include <string>

#include "hw/spec/config.h"

namespace kiln::hw {

// The package's file name; Verilator's DECLFILENAME wants it to match the package.
inline constexpr const char* kRtlParamsFile = "kiln_cfg_pkg.sv";

// Bus parameters of the accelerator's AXI4 master port. Not part of a configuration:
// they describe the board's port, not the ISA (a Zynq-7000 HP port is 64 bits wide).
// The data width is a build choice (kiln_rtl_params --axi-data-bits, CMake
// KILN_RTL_AXI_DATA_BITS): 32 to 1024 bits, a power of two.
inline constexpr int kRtlAxiDataBits = 64;
inline constexpr int kRtlAxiAddrBits = 32;
inline constexpr int kRtlAxiMaxBurst = 16;  // beats per burst the RTL issues at most

// kiln_zynq.v: Verilog-2001 wrapper of kiln_top for a Vivado block design, its flat AXI
// ports spread from kiln_top's bus structs (hw/spec/bus_ports.h).
inline constexpr const char* kZynqWrapperFile = "kiln_zynq.v";
std::string zynq_wrapper(int axi_data_bits = kRtlAxiDataBits);

// kiln_top_flat.sv: kiln_top behind flat AXI ports named as kiln_top's struct members
// (s_axil_awvalid, m_axi_arvalid, ...), which the SystemC platform binds by name.
inline constexpr const char* kFlatTopFile = "kiln_top_flat.sv";
std::string flat_top(int axi_data_bits = kRtlAxiDataBits);

// Throws hw::Error for an AXI data width that is not a power of two from 32 to 1024.
std::string rtl_params_package(const Config& cfg, int axi_data_bits = kRtlAxiDataBits);

}  // namespace kiln::hw
