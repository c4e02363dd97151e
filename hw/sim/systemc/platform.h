#pragma once
// The SystemC platform: one clock, N accelerators (kiln_top's SystemC model behind its
// AXI-to-TLM bridge, each with a host thread), one interconnect and one memory that
// they share. Each platform owns its own SystemC simulation context, so a process can
// hold several (one per Device) one after another or side by side; every call into
// the platform switches to that context. The devices of one platform may be run from
// several threads at once (each its own accelerator): their commands interleave in
// simulated time, so their runs overlap as on hardware. Accelerator i sees device DRAM at addresses
// [0, dram_bytes / N) of its own window of the memory.

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "hw/sim/systemc/host.h"
#include "hw/sim/systemc/interconnect.h"
#include "hw/sim/systemc/memory_model.h"
#include "hw/spec/config.h"

namespace sc_core {
class sc_simcontext;
}

namespace kiln::sim::sc {

struct PlatformOptions {
  MemoryTiming memory;                // in cycles of the clock
  double clock_mhz = 100;             // the accelerators' (and host port's) clock
  double interconnect_cycles = 0;     // each way through the interconnect
  int accelerators = 1;
  bool backpressure = false;          // random AXI back-pressure at every bridge
  uint64_t seed = 1;
  uint64_t watchdog_cycles = 100000;  // cycles without progress that count as a hang
  std::string wave_file;              // VCD of the platform's signals ("" for none)
  std::string trace_file;             // Chrome trace JSON of the platform ("" for none):
                                      //   platform_trace.h
};

struct PlatformStats {
  uint64_t cycles = 0;                // platform clock cycles simulated
  MemoryStats memory;
  std::vector<PortTraffic> ports;     // per accelerator
};

class Accelerator;
class PlatformTrace;

class Platform {
 public:
  // Throws hw::Error when the build has no SystemC model of cfg (listing those it
  // has), or for options no platform has (zero bandwidth, no accelerators, ...).
  Platform(const hw::Config& cfg, uint64_t dram_bytes, const PlatformOptions& opts);
  ~Platform();
  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;

  int accelerators() const { return static_cast<int>(accels_.size()); }
  uint64_t window_bytes() const { return window_; }
  // Accelerator i's DRAM window (host-side access, no simulated time).
  std::span<uint8_t> dram(int i);

  void write_reg(int i, uint32_t offset, uint32_t value);
  uint32_t read_reg(int i, uint32_t offset);
  // Runs the clock until accelerator i's status shows done or error. Returns the
  // status; with the error bit set, error(i) says why.
  uint32_t run_until_done(int i);
  const std::string& error(int i) const;

  PlatformStats stats() const;
  const PlatformOptions& options() const { return opts_; }

 private:
  class Context;
  // Has host i do one command; safe to call from several threads at once.
  void exec(int i, Host::Op op, uint32_t offset, uint32_t value);

  PlatformOptions opts_;
  uint64_t window_;
  std::vector<uint8_t> mem_;
  std::unique_ptr<Context> ctx_;
  std::vector<Accelerator*> accels_;
  std::vector<Host*> hosts_;
  MemoryModel* memory_ = nullptr;
  Interconnect* interconnect_ = nullptr;
  PlatformTrace* trace_ = nullptr;
  std::mutex mu_;  // one caller drives the simulation at a time
};

// The configurations this build has SystemC models for, by name.
std::vector<std::string> systemc_model_names();

}  // namespace kiln::sim::sc
