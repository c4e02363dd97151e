#pragma once
// A byte pipe to a board's UART host link: the Verilated board top (uart-sim) or a
// serial port (uart). The protocol on top of it is host_link.h's.

#include <cstdint>
#include <span>
#include <string>

namespace kiln::driver::uart {

class ByteLink {
 public:
  virtual ~ByteLink() = default;
  // What the link is, for messages ("uart-sim (tiny)", "/dev/ttyUSB1 at 1000000 baud").
  virtual std::string name() const = 0;
  virtual void write(std::span<const uint8_t> bytes) = 0;
  // Reads exactly out.size() bytes; throws hw::Error when they do not come in time.
  virtual void read(std::span<uint8_t> out) = 0;
  // Lets the board's frame timeout pass, then drops every byte received and not read:
  // afterwards the board waits for a command and nothing stale is in the pipe.
  virtual void resync() = 0;

  // The watchdog of a run: run_started() when the core was started; pause() between
  // two status polls; run_hung() says why the run counts as hung ("" while it may go on).
  virtual void run_started() = 0;
  virtual void pause() = 0;
  virtual std::string run_hung() = 0;
};

}  // namespace kiln::driver::uart
