#pragma once
// A timeline of what the fetch, load, compute and store modules do in each clock cycle
// of a run, written as Chrome Trace Event Format JSON (opens in https://ui.perfetto.dev
// and chrome://tracing). One track per module; an interval ("X" event) is a run of
// cycles in one state on one instruction: busy, stalled on a dependency token, or
// stalled on room in a queue. Idle cycles and the one-cycle handshakes between
// instructions, which the performance counters count as neither busy nor stalled, are
// left as gaps. Time is in cycles, written as microseconds (1 us = 1 cycle).
//
// Several timelines can share one file (TraceFile): the SystemC platform writes one
// per accelerator, on the platform's clock, beside counters of its bus and memory.
//
// The state is read from kiln_top's debug ports (module states, token and command
// queue occupancies) and the instruction stream in DRAM, so tracing needs no extra
// hardware: the busy and stalled cycles it derives are exactly the ones the busy and
// stall counters of hw/spec/regs.h count (tests/rtl/trace_test.cc holds it to that).

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hw/sim/rtl/rtl_model.h"
#include "hw/spec/config.h"
#include "hw/spec/isa.h"

namespace kiln::sim {

// A Chrome trace file that events are appended to; after every flush() it is complete
// JSON (the closing brackets are written, and overwritten by the next event).
class TraceFile {
 public:
  // Creates (truncates) `path`; `other_data` is the file's "otherData" object (JSON
  // text). Throws hw::Error naming `device` and the path when it cannot be written.
  TraceFile(const std::string& path, const std::string& device, const std::string& other_data);
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  void emit(const std::string& event);
  // Names a process (a device) or one of its threads (a track), with its place in
  // the viewer's order.
  void name_process(int pid, const std::string& name, int sort_index);
  void name_thread(int pid, int tid, const std::string& name);
  // A counter track's values at `ts` (one "C" event; names plain ASCII).
  void counter(int pid, std::string_view track, uint64_t ts,
               std::span<const std::pair<std::string_view, double>> values);
  void flush();

  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_, device_;
  std::FILE* file_ = nullptr;
  bool first_event_ = true;
  bool trailer_ = false;  // the closing "]}" is written at trailer_at_
  long trailer_at_ = 0;
};

class ActivityTrace {
 public:
  enum class State : uint8_t { kIdle, kSync, kBusy, kStallToken, kStallQueue };
  // The timeline's tracks: fetch, then the three hw::Module in their order.
  enum Unit : uint8_t { kFetch, kLoad, kCompute, kStore, kNumUnits };
  static constexpr Unit unit_of(hw::Module m) { return static_cast<Unit>(static_cast<int>(m) + 1); }

  // The rtl harness's timeline: its own file at `path`, with runs placed one after
  // another (each starts where the previous one ended; only running cycles count).
  // Throws hw::Error naming the path when it cannot be written.
  ActivityTrace(const std::string& path, const hw::Config& cfg);
  // One accelerator's timeline in a shared file, as process `pid` named `name`, on a
  // clock the caller gives to sample_at().
  ActivityTrace(std::shared_ptr<TraceFile> file, const hw::Config& cfg, int pid,
                const std::string& name);
  ~ActivityTrace();
  ActivityTrace(const ActivityTrace&) = delete;
  ActivityTrace& operator=(const ActivityTrace&) = delete;

  // The register writes the driver makes, in order: the instruction address and
  // count are remembered, and a write of CTRL's start bit begins a run on the stream
  // as it lies in `dram` then (the part inside it).
  void register_write(uint32_t offset, uint32_t value, std::span<const uint8_t> dram);
  // A run starts: `stream` is its instruction stream as it lies in DRAM (16 bytes
  // per instruction; shorter when the stream runs past DRAM's end).
  void begin_run(std::span<const uint8_t> stream, uint32_t insn_count);
  // One clock cycle (outputs settled before the rising edge). Only cycles in which the
  // accelerator is running (the register file's busy bit, as the counters count) are
  // placed on the timeline; it is a no-op outside a run.
  void sample(const TopOut& out) {
    if (active_) sample_cycle(out, offset_ + cycle_);
  }
  // The same on the caller's clock: `now` is the cycle's time on the shared timeline.
  void sample_at(const TopOut& out, uint64_t now) {
    if (active_) sample_cycle(out, now);
  }
  // The run ended (`error` is empty unless it failed): closes its intervals and appends
  // them to the file, which is complete JSON again afterwards.
  void end_run(const std::string& error);
  bool running() const { return active_; }

  const std::string& path() const { return file_->path(); }

 private:
  struct InsnInfo {
    std::string name;  // "gemm #12", "load inp #3"
    Unit module;       // whose command queue fetch routes it to
    bool pop_prev, pop_next, push_prev, push_next;
  };
  struct Track {
    State state = State::kIdle;
    int64_t insn = -1;   // index in the stream; -1 for none
    uint64_t since = 0;  // time on the timeline where this state began
  };

  void declare_tracks(const std::string& name);
  InsnInfo describe(std::span<const uint8_t> stream, uint32_t i) const;
  void sample_cycle(const TopOut& out, uint64_t now);
  void set_state(Unit m, State s, int64_t insn);
  void close(Unit m);

  std::shared_ptr<TraceFile> file_;
  int pid_ = 1;
  hw::InsnLayout layout_;

  bool active_ = false;
  int runs_ = 0;
  uint64_t offset_ = 0;  // rtl: cycles of the earlier runs
  uint64_t cycle_ = 0;   // running cycles of this run so far
  uint64_t now_ = 0;     // time of the cycle being sampled; after it, one past it
  uint64_t run_start_ = 0;
  uint64_t insn_addr_ = 0;  // as last written to the registers
  uint32_t insn_count_ = 0;
  std::vector<InsnInfo> insns_;
  std::vector<uint32_t> routed_[kNumUnits];  // per module, its instructions in order
  size_t popped_[kNumUnits] = {};            // how many it has taken from its queue
  int64_t current_[kNumUnits] = {};          // the instruction it holds, or -1
  Track tracks_[kNumUnits];
  uint64_t tokens_ = ~uint64_t{0};  // last token occupancies written
};

}  // namespace kiln::sim
