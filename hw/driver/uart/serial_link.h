#pragma once
// ByteLink to a real board through a serial port (termios, raw 8N1): on the iCEBreaker,
// the FT2232H's channel B (/dev/ttyUSB1 on Linux). The run watchdog is wall-clock time.

#include <chrono>
#include <string>

#include "hw/driver/uart/byte_link.h"

namespace kiln::driver::uart {

class SerialLink final : public ByteLink {
 public:
  // Opens and configures `path`; throws hw::Error naming the port and what to check.
  // frame_timeout_s: the board's frame timeout (resync waits longer than it);
  // run_timeout_s: seconds a run may take before it counts as a hang.
  SerialLink(const std::string& path, int baud, double run_timeout_s,
             double frame_timeout_s = 0.1);
  ~SerialLink() override;
  SerialLink(const SerialLink&) = delete;
  SerialLink& operator=(const SerialLink&) = delete;

  std::string name() const override;
  void write(std::span<const uint8_t> bytes) override;
  void read(std::span<uint8_t> out) override;
  void resync() override;
  void run_started() override { run_start_ = std::chrono::steady_clock::now(); }
  void pause() override;
  std::string run_hung() override;

 private:
  std::string path_;
  int baud_;
  double run_timeout_s_, frame_timeout_s_;
  int fd_ = -1;
  std::chrono::steady_clock::time_point run_start_;
};

}  // namespace kiln::driver::uart
