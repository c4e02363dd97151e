#pragma once
// The host side of the board's UART protocol (kiln_host_bridge.sv; docs/hardware.md,
// "Board top and UART host link"): register and memory accesses, each acknowledged by
// the board; an error reply becomes an hw::Error that says what was refused and why.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "hw/driver/uart/byte_link.h"
#include "hw/spec/host_link_protocol.h"

namespace kiln::driver::uart {

// The protocol's command and reply bytes (kPing, kAck, kErrRange, ...) are hw/spec's.
using namespace hw::link;  // NOLINT(google-build-using-namespace)
// Bytes per MEM_WRITE/MEM_READ frame (the protocol allows 65535): a corrupted frame
// costs little to repeat.
inline constexpr size_t kMaxFrameBytes = 4096;

// What an error reply means ("" for a byte that is none).
std::string_view reply_error_text(uint8_t code);
// The 8-bit sum of MEM_WRITE/MEM_READ data.
uint8_t checksum(std::span<const uint8_t> data);

class HostLink {
 public:
  explicit HostLink(ByteLink& link) : link_(link) {}

  struct Info {
    int version;         // protocol version
    uint64_t mem_bytes;  // device memory
  };
  Info ping();
  void write_reg(uint8_t offset, uint32_t value);
  uint32_t read_reg(uint8_t offset);
  // Any address and length inside device memory, in frames of kMaxFrameBytes.
  void write_mem(uint32_t addr, std::span<const uint8_t> data);
  void read_mem(uint32_t addr, std::span<uint8_t> out);
  // Holds the core in reset for a few cycles (registers and counters cleared; memory
  // and scratchpads keep their contents).
  void reset_core();

  ByteLink& link() { return link_; }

 private:
  // Sends `request`, reads the reply's first byte and checks it is `cmd`'s
  // acknowledgement; an error reply throws naming `what`.
  void expect_ack(uint8_t cmd, std::span<const uint8_t> request, std::string_view what);
  void write_frame(uint32_t addr, std::span<const uint8_t> data);
  void read_frame(uint32_t addr, std::span<uint8_t> out);

  ByteLink& link_;
};

}  // namespace kiln::driver::uart
