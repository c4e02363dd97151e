#pragma once
// A timeline of what the fetch, load, compute and store modules do in each clock cycle
// of a run, written as Chrome Trace Event Format JSON (opens in https://ui.perfetto.dev
// and chrome://tracing). One track per module; an interval ("X" event) is a run of
// cycles in one state on one instruction: busy, stalled on a dependency token, or
// stalled on room in a queue. Idle cycles and the one-cycle handshakes between
// instructions, which the performance counters count as neither busy nor stalled, are
// left as gaps. Time is in cycles, written as microseconds (1 us = 1 cycle).
//
// The state is read from kiln_top's debug ports (module states, token and command
// queue occupancies) and the instruction stream in DRAM, so tracing needs no extra
// hardware: the busy and stalled cycles it derives are exactly the ones the busy and
// stall counters of hw/spec/regs.h count (tests/rtl/trace_test.cc holds it to that).

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "hw/sim/rtl/rtl_model.h"
#include "hw/spec/config.h"
#include "hw/spec/isa.h"

namespace kiln::sim {

class ActivityTrace {
 public:
  enum class State : uint8_t { kIdle, kSync, kBusy, kStallToken, kStallQueue };
  // The timeline's tracks: fetch, then the three hw::Module in their order.
  enum Unit : uint8_t { kFetch, kLoad, kCompute, kStore, kNumUnits };
  static constexpr Unit unit_of(hw::Module m) { return static_cast<Unit>(static_cast<int>(m) + 1); }

  // Creates (truncates) `path` and writes a valid, empty trace; throws hw::Error
  // naming the path when it cannot be written.
  ActivityTrace(const std::string& path, const hw::Config& cfg);
  ~ActivityTrace();
  ActivityTrace(const ActivityTrace&) = delete;
  ActivityTrace& operator=(const ActivityTrace&) = delete;

  // A run starts: `stream` is its instruction stream as it lies in DRAM (16 bytes
  // per instruction; shorter when the stream runs past DRAM's end).
  void begin_run(std::span<const uint8_t> stream, uint32_t insn_count);
  // One clock cycle (outputs settled before the rising edge). Only cycles in which the
  // accelerator is running (the register file's busy bit, as the counters count) are
  // placed on the timeline; it is a no-op outside a run.
  void sample(const TopOut& out) {
    if (active_) sample_cycle(out);
  }
  // The run ended (`error` is empty unless it failed): closes its intervals and appends
  // them to the file, which is complete JSON again afterwards. Runs follow each other
  // on one timeline, each starting where the previous one ended.
  void end_run(const std::string& error);

  const std::string& path() const { return path_; }

 private:
  struct InsnInfo {
    std::string name;  // "gemm #12", "load inp #3"
    Unit module;       // whose command queue fetch routes it to
    bool pop_prev, pop_next, push_prev, push_next;
  };
  struct Track {
    State state = State::kIdle;
    int64_t insn = -1;   // index in the stream; -1 for none
    uint64_t since = 0;  // cycle of the run where this state began
  };

  InsnInfo describe(std::span<const uint8_t> stream, uint32_t i) const;
  void sample_cycle(const TopOut& out);
  void set_state(Unit m, State s, int64_t insn);
  void close(Unit m);
  void emit(const std::string& event);
  void write_trailer();
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  std::FILE* file_ = nullptr;
  hw::InsnLayout layout_;
  bool first_event_ = true;
  long trailer_at_ = 0;  // file offset of the closing "]}" that the next run overwrites

  bool active_ = false;
  int runs_ = 0;
  uint64_t offset_ = 0;  // cycles of the earlier runs
  uint64_t cycle_ = 0;   // running cycles of this run so far
  std::vector<InsnInfo> insns_;
  std::vector<uint32_t> routed_[kNumUnits];  // per module, its instructions in order
  size_t popped_[kNumUnits] = {};            // how many it has taken from its queue
  int64_t current_[kNumUnits] = {};          // the instruction it holds, or -1
  Track tracks_[kNumUnits];
  uint64_t tokens_ = ~uint64_t{0};  // last token occupancies written
};

}  // namespace kiln::sim
