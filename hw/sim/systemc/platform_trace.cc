#include "hw/sim/systemc/platform_trace.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "hw/sim/systemc/accelerator.h"
#include "hw/sim/systemc/interconnect.h"

namespace kiln::sim::sc {

PlatformTrace::PlatformTrace(sc_core::sc_module_name name, const std::string& path,
                             const hw::Config& cfg, const std::string& memory_name,
                             sc_core::sc_clock& clk, std::vector<Accelerator*> accels,
                             const MemoryModel& memory, const Interconnect& interconnect)
    : sc_module(name),
      accels_(std::move(accels)),
      memory_(memory),
      interconnect_(interconnect),
      memory_pid_(static_cast<int>(accels_.size()) + 1),
      windows_(accels_.size()) {
  nlohmann::ordered_json other = {
      {"tool", "kiln"},
      {"device", "systemc"},
      {"config", cfg.name()},
      {"accelerators", accels_.size()},
      {"memory", memory_name},
      {"time_unit", "1 us on the timeline is 1 cycle of the platform clock"},
      {"counters", fmt::format("averages over windows of {} cycles", kWindowCycles)}};
  file_ = std::make_shared<TraceFile>(path, "systemc", other.dump());
  for (size_t i = 0; i < accels_.size(); ++i) {
    int pid = static_cast<int>(i) + 1;
    timelines_.push_back(std::make_unique<ActivityTrace>(
        file_, cfg, pid, fmt::format("accelerator {} ({})", i, cfg.name())));
  }
  file_->name_process(memory_pid_, fmt::format("memory ({})", memory_name), memory_pid_);
  file_->flush();
  SC_METHOD(on_clock);
  sensitive << clk.posedge_event();
  dont_initialize();
}

void PlatformTrace::register_write(int i, uint32_t offset, uint32_t value,
                                   std::span<const uint8_t> dram) {
  timelines_.at(size_t(i))->register_write(offset, value, dram);
}

void PlatformTrace::end_run(int i, const std::string& error) {
  ActivityTrace& t = *timelines_.at(size_t(i));
  if (!t.running()) return;
  t.end_run(error);
}

// At each rising edge the signals still hold what the edge samples (the model's new
// outputs appear a delta cycle later), as the rtl harness's settled outputs.
void PlatformTrace::on_clock() {
  for (size_t i = 0; i < accels_.size(); ++i) {
    if (!timelines_[i]->running()) continue;
    TopOut out = accels_[i]->debug_view();
    timelines_[i]->sample_at(out, cycle_);
    if (out.dbg_state & 1) any_ran_ = true;
    BridgeOccupancy o = accels_[i]->bridge().occupancy();
    windows_[i].reads += double(o.reads);
    windows_[i].writes += double(o.writes + o.responses);
  }
  ++cycle_;
  if (cycle_ - window_start_ == kWindowCycles) write_counters();
}

void PlatformTrace::write_counters() {
  double n = double(cycle_ - window_start_);
  const std::vector<PortTraffic>& ports = interconnect_.traffic();
  MemoryStats m = memory_.stats();
  if (any_ran_) {
    for (size_t i = 0; i < accels_.size(); ++i) {
      int pid = static_cast<int>(i) + 1;
      const Window& w = windows_[i];
      const PortTraffic& p = ports[i];
      const std::pair<std::string_view, double> bursts[] = {{"reads", w.reads / n},
                                                            {"writes", w.writes / n}};
      file_->counter(pid, "AXI bursts outstanding", window_start_, bursts);
      const std::pair<std::string_view, double> bytes[] = {
          {"read", double(p.read_bytes - w.read_bytes) / n},
          {"write", double(p.write_bytes - w.write_bytes) / n}};
      file_->counter(pid, "AXI bytes per cycle", window_start_, bytes);
    }
    const MemoryStats& a = memory_at_start_;
    const std::pair<std::string_view, double> busy[] = {{"read bus", (m.read_busy - a.read_busy) / n},
                                                        {"write bus", (m.write_busy - a.write_busy) / n}};
    file_->counter(memory_pid_, "data bus occupancy", window_start_, busy);
    const std::pair<std::string_view, double> rows[] = {
        {"row hits", double(m.row_hits - a.row_hits)},
        {"row misses", double(m.row_misses - a.row_misses)},
        {"refresh stalls", double(m.refresh_stalls - a.refresh_stalls)}};
    file_->counter(memory_pid_, "bank accesses", window_start_, rows);
  }
  window_start_ = cycle_;
  any_ran_ = false;
  memory_at_start_ = m;
  for (size_t i = 0; i < accels_.size(); ++i)
    windows_[i] = Window{0, 0, ports[i].read_bytes, ports[i].write_bytes};
}

}  // namespace kiln::sim::sc
