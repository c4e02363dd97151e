#pragma once
// The platform's timeline (`--trace` on the systemc device): one Chrome trace file with,
// per accelerator, the rtl harness's activity tracks (its runs; fetch, load, compute and
// store, busy or stalled on what; the token queues: hw/sim/rtl/activity_trace.h) and its
// AXI port (bursts outstanding each way, bytes per cycle), and one process for the
// shared memory (each data bus's occupancy, row hits and misses, refresh stalls). Time
// is the platform's clock, 1 us on the timeline = 1 cycle, so the accelerators' runs
// line up as they overlapped. The counters are averages over windows of
// `kWindowCycles`, written while some accelerator runs.

#include <systemc>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hw/sim/rtl/activity_trace.h"
#include "hw/sim/systemc/memory_model.h"
#include "hw/spec/config.h"

namespace kiln::sim::sc {

class Accelerator;
class Interconnect;

class PlatformTrace : public sc_core::sc_module {
 public:
  static constexpr uint64_t kWindowCycles = 64;

  SC_HAS_PROCESS(PlatformTrace);
  // Throws hw::Error naming `path` when it cannot be written.
  PlatformTrace(sc_core::sc_module_name name, const std::string& path, const hw::Config& cfg,
                const std::string& memory_name, sc_core::sc_clock& clk,
                std::vector<Accelerator*> accels, const MemoryModel& memory,
                const Interconnect& interconnect);

  // Accelerator i's register writes, as its host makes them (a start begins a run on
  // `dram`, its window of the memory).
  void register_write(int i, uint32_t offset, uint32_t value, std::span<const uint8_t> dram);
  void end_run(int i, const std::string& error);

 private:
  struct Window {  // sums over the current window
    double reads = 0, writes = 0;  // bursts outstanding at the bridge, summed per cycle
    uint64_t read_bytes = 0, write_bytes = 0;  // the port's traffic at its start
  };
  void on_clock();
  void write_counters();

  std::shared_ptr<TraceFile> file_;
  std::vector<Accelerator*> accels_;
  std::vector<std::unique_ptr<ActivityTrace>> timelines_;
  const MemoryModel& memory_;
  const Interconnect& interconnect_;
  int memory_pid_;
  uint64_t cycle_ = 0, window_start_ = 0;
  std::vector<Window> windows_;
  MemoryStats memory_at_start_;
  bool any_ran_ = false;  // some accelerator ran in this window
};

}  // namespace kiln::sim::sc
