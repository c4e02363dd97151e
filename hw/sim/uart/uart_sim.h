#pragma once
// The Verilator harness of the board top (kiln_uart_top): clock and reset, and the two
// UART lines driven and decoded bit by bit (8N1, the model's CLKS_PER_BIT cycles per
// bit), as an FTDI chip would. It moves bytes only; the host-link protocol is the
// driver's (hw/driver/uart). Simulated time passes only inside receive() and run().

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hw/sim/uart/uart_model.h"
#include "hw/spec/config.h"

namespace kiln::sim {

struct UartSimOptions {
  std::string wave_file;  // FST waveform of the whole simulation ("" for none)
};

class UartSim {
 public:
  // Selects the board top built for cfg's fingerprint; throws hw::Error listing the
  // built configurations when there is none.
  UartSim(const hw::Config& cfg, const UartSimOptions& opts = {});
  ~UartSim();
  UartSim(const UartSim&) = delete;
  UartSim& operator=(const UartSim&) = delete;

  const UartModelInfo& model() const { return info_; }

  // Queues bytes for the board's receive line; they go out back to back as the clock
  // runs. send_bad_stop() queues one byte whose stop bit is low (a framing error).
  void send(std::span<const uint8_t> bytes);
  void send_bad_stop(uint8_t byte);
  // Runs the clock until out.size() bytes have come from the board (bytes received
  // earlier count first); throws hw::Error after max_cycles without them.
  void receive(std::span<uint8_t> out, uint64_t max_cycles);
  // Runs the clock for `cycles` cycles.
  void run(uint64_t cycles);
  // Bytes received and not yet taken by receive(); drop_received() discards them.
  size_t received() const { return rx_bytes_.size(); }
  void drop_received() { rx_bytes_.clear(); }
  // Bytes the board sent with a low stop bit (dropped), since construction.
  uint64_t framing_errors() const { return framing_errors_; }

  uint64_t cycle() const { return cycle_; }
  uint64_t cycles_since_progress() const { return cycle_ - last_progress_; }
  uint16_t dbg_state() const { return out_.dbg_state; }
  size_t queued() const { return tx_frames_.size(); }  // bytes not yet sent whole

 private:
  void tick();

  const UartModelInfo& info_;
  std::unique_ptr<UartModel> model_;
  UartTopIn in_;
  UartTopOut out_;
  uint64_t cycle_ = 0;
  uint64_t last_progress_ = 0;
  // Host -> board: 10-bit frames (start, data LSB first, stop) from bit 0.
  std::deque<uint16_t> tx_frames_;
  int tx_bit_ = 0, tx_clk_ = 0;
  // Board -> host: the decoder's position in a frame (-1: waiting for a start bit).
  int rx_clk_ = -1;
  uint16_t rx_shift_ = 0;
  std::deque<uint8_t> rx_bytes_;
  uint64_t framing_errors_ = 0;
};

// The configurations this build has Verilated board tops for, by name.
std::vector<std::string> uart_model_names();

}  // namespace kiln::sim
