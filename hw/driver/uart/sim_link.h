#pragma once
// ByteLink to the Verilated board top (hw/sim/uart): bytes go over the simulated UART
// lines bit by bit; the clock runs while the host waits for a reply. The run watchdog
// counts cycles without the core's dbg_progress_o.

#include <cstdint>
#include <string>

#include "hw/driver/uart/byte_link.h"
#include "hw/sim/uart/uart_sim.h"

namespace kiln::driver::uart {

class SimLink final : public ByteLink {
 public:
  // watchdog_cycles: cycles without progress during a run that count as a hang.
  SimLink(const hw::Config& cfg, const sim::UartSimOptions& opts, uint64_t watchdog_cycles);

  std::string name() const override;
  void write(std::span<const uint8_t> bytes) override;
  void read(std::span<uint8_t> out) override;
  void resync() override;
  void run_started() override {}
  void pause() override;
  std::string run_hung() override;

  sim::UartSim& sim() { return sim_; }

 private:
  sim::UartSim sim_;
  uint64_t watchdog_cycles_;
};

}  // namespace kiln::driver::uart
