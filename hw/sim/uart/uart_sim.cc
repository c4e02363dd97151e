#include "hw/sim/uart/uart_sim.h"

#include <fmt/format.h>

#include "hw/spec/error.h"

namespace kiln::sim {

namespace {

const UartModelInfo& find_model(const hw::Config& cfg) {
  std::string built;
  for (const UartModelInfo& m : uart_models()) {
    hw::Config model_cfg = hw::Config::from_json(m.config_json, m.name);
    if (model_cfg.fingerprint() == cfg.fingerprint()) return m;
    built += fmt::format(" {} ({:016x})", m.name, model_cfg.fingerprint());
  }
  throw hw::Error(fmt::format(
      "uart-sim: no Verilated board top for configuration '{}' (fingerprint {:016x}); this "
      "build has:{}. Add the configuration to KILN_UART_CONFIGS (cmake "
      "-DKILN_UART_CONFIGS=...) and rebuild",
      cfg.name(), cfg.fingerprint(), built.empty() ? " none" : built));
}

uint16_t frame(uint8_t byte, bool stop) {
  return static_cast<uint16_t>((stop ? 1u << 9 : 0u) | uint32_t{byte} << 1);
}

}  // namespace

std::vector<std::string> uart_model_names() {
  std::vector<std::string> out;
  for (const UartModelInfo& m : uart_models()) out.push_back(m.name);
  return out;
}

UartSim::UartSim(const hw::Config& cfg, const UartSimOptions& opts)
    : info_(find_model(cfg)), model_(info_.make(opts.wave_file)) {
  in_.rst_n = false;
  for (int i = 0; i < 4; ++i) tick();
  in_.rst_n = true;
  last_progress_ = cycle_;
}

UartSim::~UartSim() = default;

void UartSim::send(std::span<const uint8_t> bytes) {
  for (uint8_t b : bytes) tx_frames_.push_back(frame(b, true));
}

void UartSim::send_bad_stop(uint8_t byte) { tx_frames_.push_back(frame(byte, false)); }

void UartSim::receive(std::span<uint8_t> out, uint64_t max_cycles) {
  const uint64_t end = cycle_ + max_cycles;
  while (rx_bytes_.size() < out.size()) {
    if (cycle_ >= end) {
      throw hw::Error(fmt::format(
          "uart-sim: the board top sent {} of {} bytes in {} cycles (core state 0x{:04x})",
          rx_bytes_.size(), out.size(), max_cycles, out_.dbg_state));
    }
    tick();
  }
  for (uint8_t& b : out) {
    b = rx_bytes_.front();
    rx_bytes_.pop_front();
  }
}

void UartSim::run(uint64_t cycles) {
  for (uint64_t i = 0; i < cycles; ++i) tick();
}

void UartSim::tick() {
  const int cpb = info_.clks_per_bit;
  // The host's line: the current frame's bit, each held for cpb cycles.
  in_.rx = tx_frames_.empty() || (tx_frames_.front() >> tx_bit_ & 1) != 0;
  model_->eval_low(in_, out_);
  if (out_.dbg_progress) last_progress_ = cycle_;
  if (!tx_frames_.empty() && ++tx_clk_ == cpb) {
    tx_clk_ = 0;
    if (++tx_bit_ == 10) {
      tx_bit_ = 0;
      tx_frames_.pop_front();
    }
  }
  // The board's line, sampled in the middle of each bit after a falling edge.
  if (rx_clk_ < 0) {
    if (!out_.tx) rx_clk_ = 0;
  } else {
    ++rx_clk_;
    if (rx_clk_ % cpb == cpb / 2) {
      int bit = rx_clk_ / cpb;
      if (bit == 0 && out_.tx) {
        rx_clk_ = -1;  // a glitch, not a start bit
      } else if (bit >= 1 && bit <= 8) {
        rx_shift_ = static_cast<uint16_t>(rx_shift_ >> 1 | (out_.tx ? 0x80 : 0));
      } else if (bit == 9) {
        if (out_.tx) rx_bytes_.push_back(static_cast<uint8_t>(rx_shift_));
        else ++framing_errors_;
        rx_clk_ = -1;
      }
    }
  }
  model_->posedge();
  ++cycle_;
}

}  // namespace kiln::sim
