#pragma once
// The scratchpad range rule (shared/ISA.md, "Semantics"): which indices of which buffer
// one instruction touches, and the first of them that lies beyond its buffer's depth.
// It has one owner, here: fsim refuses an instruction that breaks it as it runs it, and
// driver::Device refuses a whole stream that holds one before launch (StreamRangeCheck),
// because the RTL keeps only an index's low bits and would silently wrap it.

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hw/spec/config.h"
#include "hw/spec/isa.h"

namespace kiln::hw {

// The first out-of-range access of one instruction.
struct RangeViolation {
  MemType buffer = MemType::kUop;  // the buffer whose depth the index passes
  uint64_t index = 0;              // the out-of-range index
  uint32_t depth = 0;              // that buffer's depth (mem_depth)
  // What fsim reports after "instruction #N (mnemonic): ", e.g. "dst index 2048 (micro-op
  // 2040 + 8*1 + 0*0) is beyond the acc buffer's depth 2048".
  std::string message;
};

// The largest index an instruction touches in each buffer, indexed by MemType; empty
// where it touches none (OUT is STORE's view of ACC's index space, kept apart).
struct Footprint {
  std::array<std::optional<uint64_t>, kMemTypes.size()> top;
  std::optional<uint64_t>& operator[](MemType m) { return top[static_cast<size_t>(m)]; }
  const std::optional<uint64_t>& operator[](MemType m) const {
    return top[static_cast<size_t>(m)];
  }
};

// `uops` is the uop buffer as the instruction finds it (GEMM and ALU read their micro-ops
// from it); entries past its end read as zero micro-ops, as fsim's buffer starts.
// An instruction that does nothing (a LOAD or STORE with x_size or y_size 0, a GEMM or
// ALU with an empty micro-op range or a zero loop count) touches nothing.
//
// LOAD: sram_base + rows * cols - 1 (padding included) in its memory type's buffer.
// STORE: sram_base + y_size * x_size - 1 in OUT.
// GEMM: [uop_bgn, uop_end) in UOP; per micro-op, dst + (iter_out-1)*dst_factor_out +
// (iter_in-1)*dst_factor_in in ACC, src likewise in INP and wgt in WGT (a reset reads
// neither INP nor WGT). ALU: dst and src in ACC (an immediate reads no src).
Footprint footprint(const Insn& insn, std::span<const Uop> uops);

// The first access beyond a buffer's depth, in the order the hardware makes them: for a
// LOAD or STORE the last element of its block; for GEMM and ALU the micro-op range, then
// the loop i (outer), j (inner), micro-op k, and dst before src before wgt, as fsim runs
// them. None when every access is in range.
std::optional<RangeViolation> first_out_of_range(const Config& cfg, const Insn& insn,
                                                 std::span<const Uop> uops);

// The range rule over a whole stream before it runs. It follows the uop buffer as the
// compute module fills it: LOAD UOP and GEMM/ALU all run on compute, in stream order, so
// each GEMM or ALU sees exactly the micro-ops the LOAD UOPs before it left. The buffer
// outlives a stream (the runtime keeps micro-op kernels resident across runs), so one
// StreamRangeCheck belongs to one device and carries the buffer from run to run.
class StreamRangeCheck {
 public:
  // Reads `out.size()` bytes of device DRAM at byte address `addr`; false when that
  // range is not all in DRAM (the device reports the access itself when it runs).
  using DramReader = std::function<bool(uint64_t addr, std::span<uint8_t> out)>;

  explicit StreamRangeCheck(const Config& cfg);

  // Checks every instruction of `insns` in order. Throws hw::Error "instruction #N
  // (ASSEMBLY): MESSAGE" for the first one that touches an index beyond its buffer, and
  // then leaves the uop buffer as it was. Otherwise the uop buffer becomes what the
  // stream leaves in it: each LOAD UOP's micro-ops are read once through `read`, one call
  // per row (the runtime's LOAD UOPs have one).
  void check(std::span<const Insn> insns, const DramReader& read);

  // After a run whose outcome is unknown (a device error, an aborted run): the uop
  // buffer may hold the old micro-ops, the new ones or a mix. Each entry becomes a zero
  // micro-op, the least it can index from, so later checks refuse only what is out of
  // range whatever the buffer holds.
  void forget();

  std::span<const Uop> uops() const { return uops_; }

 private:
  // Applies one LOAD UOP to `uops` (it is in range).
  void load_uops(const Insn& insn, const DramReader& read, std::vector<Uop>& uops) const;

  Config cfg_;
  InsnLayout layout_;
  std::vector<Uop> uops_;
};

}  // namespace kiln::hw
