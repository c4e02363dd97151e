#include "hw/driver/uart/sim_link.h"

#include <fmt/format.h>

namespace kiln::driver::uart {

namespace {

// Cycles between two status polls of a run (a poll itself takes about 7 bytes' time).
constexpr uint64_t kPollCycles = 256;
// The board answers within a few byte times of a command's last byte; this is slack.
constexpr uint64_t kReplySlackCycles = 4096;

}  // namespace

SimLink::SimLink(const hw::Config& cfg, const sim::UartSimOptions& opts, uint64_t watchdog_cycles)
    : sim_(cfg, opts), watchdog_cycles_(watchdog_cycles) {}

std::string SimLink::name() const { return fmt::format("uart-sim ({})", sim_.model().name); }

void SimLink::write(std::span<const uint8_t> bytes) { sim_.send(bytes); }

void SimLink::read(std::span<uint8_t> out) {
  // Time for what is still queued to go out, the reply to come back, and slack.
  const uint64_t byte_cycles = 10 * static_cast<uint64_t>(sim_.model().clks_per_bit);
  sim_.receive(out, (sim_.queued() + out.size()) * byte_cycles + kReplySlackCycles);
}

void SimLink::resync() {
  const uint64_t byte_cycles = 10 * static_cast<uint64_t>(sim_.model().clks_per_bit);
  sim_.run(sim_.queued() * byte_cycles + sim_.model().timeout_clks + kReplySlackCycles);
  sim_.drop_received();
}

void SimLink::pause() { sim_.run(kPollCycles); }

std::string SimLink::run_hung() {
  if (sim_.cycles_since_progress() <= watchdog_cycles_) return "";
  return fmt::format("no progress for {} cycles (cycle {}, core dbg_state 0x{:04x})",
                     sim_.cycles_since_progress(), sim_.cycle(), sim_.dbg_state());
}

}  // namespace kiln::driver::uart
