#pragma once
// fsim: the bit-exact functional model of the accelerator and the golden reference
// for the RTL and the compiler. It executes an instruction stream as docs/isa.md says
// (shared/ISA.md, with one change: OUT is ACC read through its low bits, not a buffer
// of its own), with the load, compute and store modules as separate in-order queues
// joined by the four dependency-token queues.

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "hw/spec/config.h"
#include "hw/spec/isa.h"
#include "hw/spec/regs.h"

namespace kiln::sim {

// Functional counters of one run, indexed by hw::regs::Counter (timed ones stay 0).
using FsimCounters = std::array<uint64_t, hw::regs::kNumCounters>;

class Fsim {
 public:
  // `dram` is the device's DRAM image; fsim reads and writes it in place and never
  // outside it. The on-chip buffers persist across runs, as on the hardware.
  Fsim(const hw::Config& cfg, std::span<uint8_t> dram);

  // Fetches `insn_count` instructions at byte address `insn_addr` and runs them to
  // FINISH. Throws hw::Error naming the instruction (index, mnemonic) on: a stream that
  // deadlocks (and the token it waits for), an access outside a buffer or DRAM, an
  // instruction that cannot be decoded or is ill-formed, no FINISH, or work left
  // undone when FINISH retires. Counters are reset at the start of every run.
  void run(uint64_t insn_addr, uint32_t insn_count);

  // Which module runs when several can. 0 (the default): load and store first, then
  // compute. Any other value: a random ready module at each step, from this seed. A
  // stream whose tokens order every conflicting access gives the same result under
  // every seed; tests use this to find streams that race.
  void set_schedule_seed(uint64_t seed) { schedule_seed_ = seed; }

  const FsimCounters& counters() const { return counters_; }
  uint64_t counter(hw::regs::Counter c) const { return counters_[static_cast<int>(c)]; }

  // Direct views of the on-chip buffers, for tests and debugging. Values are stored
  // sign-extended; acc values wrap to the accumulator width.
  std::span<const int64_t> acc(uint32_t index) const;  // BATCH x BLOCK_OUT
  // OUT is no buffer of its own: it is ACC's low output-width bits (what STORE writes).
  std::vector<int64_t> out(uint32_t index) const;      // BATCH x BLOCK_OUT
  std::span<const int64_t> inp(uint32_t index) const;  // BATCH x BLOCK_IN
  std::span<const int64_t> wgt(uint32_t index) const;  // BLOCK_OUT x BLOCK_IN
  hw::Uop uop(uint32_t index) const;

 private:
  struct Impl;
  hw::Config cfg_;
  hw::InsnLayout layout_;
  std::span<uint8_t> dram_;
  std::vector<int64_t> inp_, wgt_, acc_;
  std::vector<hw::Uop> uops_;
  FsimCounters counters_{};
  uint64_t schedule_seed_ = 0;
  friend struct Impl;
};

}  // namespace kiln::sim
