#pragma once
// The accelerator's host interface (Kiln's own, shared/ISA.md "Host interface"): the
// AXI4-Lite register map and the performance counters. The RTL register file, the
// Verilator harness, the SystemC platform, the board drivers and the fsim device all
// implement this one map.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::hw::regs {

// 32-bit registers (bus::kAxilDataBits) at byte offsets.
inline constexpr uint32_t kCtrl = 0x00;           // write 1 to bit 0: start
inline constexpr uint32_t kStatus = 0x04;         // bit 0 busy, bit 1 done, bit 2 error
inline constexpr uint32_t kInsnCount = 0x08;      // instructions to fetch
inline constexpr uint32_t kInsnAddrLo = 0x0c;     // byte address of the stream in DRAM
inline constexpr uint32_t kInsnAddrHi = 0x10;
inline constexpr uint32_t kFingerprintLo = 0x14;  // Config::fingerprint(), read-only
inline constexpr uint32_t kFingerprintHi = 0x18;
inline constexpr uint32_t kVersion = 0x1c;        // register map version, read-only
inline constexpr uint32_t kCounterBase = 0x40;    // counter k: lo at 0x40 + 8k, hi at +4
inline constexpr int kInsnCountBits = 32;         // INSN_COUNT
inline constexpr int kInsnAddrBits = 64;          // INSN_ADDR_HI:INSN_ADDR_LO

// The registers the host may write, with their names for messages and for
// `--fault reg-drop:NAME`.
struct WritableReg {
  uint32_t offset;
  std::string_view name;
};
inline constexpr WritableReg kWritableRegs[] = {
    {kCtrl, "ctrl"}, {kInsnCount, "insn_count"}, {kInsnAddrLo, "insn_addr_lo"},
    {kInsnAddrHi, "insn_addr_hi"}};
// The name of the writable register at `offset` ("" for any other offset).
constexpr std::string_view writable_reg_name(uint32_t offset) {
  for (const WritableReg& w : kWritableRegs)
    if (w.offset == offset) return w.name;
  return "";
}
// Whether the host may write the register at `offset`.
constexpr bool is_writable(uint32_t offset) { return !writable_reg_name(offset).empty(); }

inline constexpr uint32_t kCtrlStart = 1u << 0;
// Ends a run that does not finish (a deadlocked stream): the accelerator is reset, the
// register file keeps its registers, STATUS shows done and error with cause kAborted.
inline constexpr uint32_t kCtrlAbort = 1u << 1;
inline constexpr uint32_t kStatusBusy = 1u << 0;
inline constexpr uint32_t kStatusDone = 1u << 1;
inline constexpr uint32_t kStatusError = 1u << 2;
inline constexpr uint32_t kMapVersion = 1;

// With the error bit, STATUS[7:4] may say what went wrong (0: the device does not say).
inline constexpr uint32_t kStatusCauseShift = 4;
inline constexpr int kStatusCauseBits = 4;
inline constexpr uint32_t kStatusCauseMask = ((1u << kStatusCauseBits) - 1) << kStatusCauseShift;
enum class ErrorCause : uint8_t {
  kNone = 0,
  kDram = 1,           // a memory access outside device memory, or an error response
  kTokenMissing = 2,   // an instruction pops a token no earlier instruction pushed
  kBadInstruction = 3, // an opcode or memory type the ISA does not have, or no FINISH
  kTokenOverflow = 4,  // more tokens outstanding than the device counts
  kAborted = 5,        // the host ended the run (CTRL abort)
  kRange = 6,          // a scratchpad index outside its buffer (STATUS[15:8] says where)
  kParity = 7,         // a scratchpad word read back with a parity error (STATUS[15:8])
};
inline constexpr int kNumErrorCauses = 8;
constexpr ErrorCause status_cause(uint32_t status) {
  return static_cast<ErrorCause>((status & kStatusCauseMask) >> kStatusCauseShift);
}
// What a cause means, for error messages ("" for kNone and unknown codes).
constexpr std::string_view error_cause_text(ErrorCause c) {
  switch (c) {
    case ErrorCause::kDram:
      return "a memory access outside device memory (or an error response from it)";
    case ErrorCause::kTokenMissing:
      return "an instruction pops a dependency token that no earlier instruction pushed";
    case ErrorCause::kBadInstruction:
      return "an instruction the ISA does not have, or a stream that ends without FINISH";
    case ErrorCause::kTokenOverflow:
      return "more dependency tokens outstanding than the device counts";
    case ErrorCause::kAborted:
      return "the host aborted the run (CTRL bit 1)";
    case ErrorCause::kRange:
      return "a scratchpad index outside its buffer";
    case ErrorCause::kParity:
      return "a scratchpad word read back with a parity error";
    default:
      return "";
  }
}

// With kRange or kParity, STATUS[15:8] says where: [15:12] the module that saw it
// (isa.h Module), [11:8] the scratchpad (isa.h MemType). Zero for the other causes.
inline constexpr uint32_t kStatusWhereShift = 8;
inline constexpr int kStatusWhereModuleBits = 4;
inline constexpr int kStatusWhereMemBits = 4;
inline constexpr uint32_t kStatusWhereMemShift = kStatusWhereShift;
inline constexpr uint32_t kStatusWhereModuleShift = kStatusWhereMemShift + kStatusWhereMemBits;
inline constexpr uint32_t kStatusWhereMask =
    ((1u << (kStatusWhereModuleBits + kStatusWhereMemBits)) - 1) << kStatusWhereShift;
constexpr uint32_t status_where_module(uint32_t status) {
  return (status >> kStatusWhereModuleShift) & ((1u << kStatusWhereModuleBits) - 1);
}
constexpr uint32_t status_where_mem(uint32_t status) {
  return (status >> kStatusWhereMemShift) & ((1u << kStatusWhereMemBits) - 1);
}
// What an error STATUS says, for messages: the cause's text and, where STATUS[15:8] names
// it, the module and the scratchpad ("a scratchpad index outside its buffer (the compute
// module, acc)"); "" when STATUS gives no cause.
std::string status_error_text(uint32_t status);

// 64-bit performance counters, reset by every start.
inline constexpr int kCounterBits = 64;
enum class Counter : uint8_t {
  kCycles,
  kLoadInsns,
  kComputeInsns,
  kStoreInsns,
  kGemmUops,
  kAluUops,
  kLoadUopBytes,
  kLoadWgtBytes,
  kLoadInpBytes,
  kLoadAccBytes,
  kStoreBytes,
  kDramReadBytes,
  kDramWriteBytes,
  kLoadBusyCycles,
  kLoadStallCycles,
  kComputeBusyCycles,
  kComputeStallCycles,
  kStoreBusyCycles,
  kStoreStallCycles,
};
inline constexpr int kNumCounters = 19;

struct CounterInfo {
  Counter id;
  std::string_view name;        // the key in `kiln sim --json`
  bool timed;                   // exists only on a cycle-accurate device
  std::string_view description;
};

inline constexpr std::array<CounterInfo, kNumCounters> kCounters = {{
    {Counter::kCycles, "cycles", true, "clock cycles from start to done"},
    {Counter::kLoadInsns, "load_insns", false, "instructions run by the load module"},
    {Counter::kComputeInsns, "compute_insns", false, "instructions run by the compute module"},
    {Counter::kStoreInsns, "store_insns", false, "instructions run by the store module"},
    {Counter::kGemmUops, "gemm_uops", false, "GEMM micro-ops executed"},
    {Counter::kAluUops, "alu_uops", false, "ALU micro-ops executed"},
    {Counter::kLoadUopBytes, "load_uop_bytes", false, "bytes loaded into the micro-op buffer"},
    {Counter::kLoadWgtBytes, "load_wgt_bytes", false, "bytes loaded into the weight buffer"},
    {Counter::kLoadInpBytes, "load_inp_bytes", false, "bytes loaded into the input buffer"},
    {Counter::kLoadAccBytes, "load_acc_bytes", false, "bytes loaded into the accumulator buffer"},
    {Counter::kStoreBytes, "store_bytes", false, "bytes stored from the output buffer"},
    {Counter::kDramReadBytes, "dram_read_bytes", false, "bytes read from DRAM (instructions included)"},
    {Counter::kDramWriteBytes, "dram_write_bytes", false, "bytes written to DRAM"},
    {Counter::kLoadBusyCycles, "load_busy_cycles", true, "cycles the load module works"},
    {Counter::kLoadStallCycles, "load_stall_cycles", true, "cycles the load module waits for a token"},
    {Counter::kComputeBusyCycles, "compute_busy_cycles", true, "cycles the compute module works"},
    {Counter::kComputeStallCycles, "compute_stall_cycles", true, "cycles the compute module waits for a token"},
    {Counter::kStoreBusyCycles, "store_busy_cycles", true, "cycles the store module works"},
    {Counter::kStoreStallCycles, "store_stall_cycles", true, "cycles the store module waits for a token"},
}};

// The counters the in-order core (hw/rtl/kiln_inorder_top.sv) keeps, 32 bits wide: bit
// k for Counter k. The RTL takes this mask from its generated parameter package.
inline constexpr uint32_t kInorderCounterMask =
    1u << static_cast<int>(Counter::kCycles) | 1u << static_cast<int>(Counter::kLoadInsns) |
    1u << static_cast<int>(Counter::kComputeInsns) | 1u << static_cast<int>(Counter::kStoreInsns) |
    1u << static_cast<int>(Counter::kGemmUops) | 1u << static_cast<int>(Counter::kAluUops);
constexpr bool inorder_has_counter(Counter c) {
  return (kInorderCounterMask >> static_cast<int>(c) & 1u) != 0;
}

constexpr uint32_t counter_lo(Counter c) { return kCounterBase + 8 * static_cast<uint32_t>(c); }
constexpr uint32_t counter_hi(Counter c) { return counter_lo(c) + 4; }

}  // namespace kiln::hw::regs
