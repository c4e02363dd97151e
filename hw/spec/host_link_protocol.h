#pragma once
// The board's UART host-link protocol (docs/hardware.md, "Board top and UART host link"):
// the command and reply bytes that the RTL's bridge (hw/rtl/kiln_host_bridge.sv, through
// the generated kiln_cfg_pkg) and the host's driver (hw/driver/uart/host_link.h) share.
// Every multi-byte argument and value is little-endian.

#include <cstdint>

namespace kiln::hw::link {

// Command bytes; the acknowledgement of a command is its byte | kAck.
inline constexpr uint8_t kPing = 0x01;       // -> ack, protocol version, log2(memory bytes)
inline constexpr uint8_t kRegWrite = 0x02;   // offset, value (4) -> ack
inline constexpr uint8_t kRegRead = 0x03;    // offset -> ack, value (4)
inline constexpr uint8_t kMemWrite = 0x04;   // addr (4), n (2), n bytes, sum -> ack
inline constexpr uint8_t kMemRead = 0x05;    // addr (4), n (2) -> ack, n bytes, sum
inline constexpr uint8_t kResetCore = 0x06;  // -> ack, after holding the core in reset
inline constexpr uint8_t kAck = 0x80;
// Error replies: one byte in place of the acknowledgement.
inline constexpr uint8_t kErrCommand = 0xE1;   // unknown command byte
inline constexpr uint8_t kErrRange = 0xE2;     // memory range outside device memory
inline constexpr uint8_t kErrChecksum = 0xE3;  // MEM_WRITE data does not match its sum
inline constexpr uint8_t kErrTimeout = 0xE4;   // a frame stopped arriving
inline constexpr uint8_t kErrBus = 0xE5;       // the register file answered with an error
inline constexpr uint8_t kErrFraming = 0xE6;   // a byte with a low stop bit
inline constexpr uint8_t kProtocolVersion = 1;

// The widths of the arguments: MEM_* addresses and lengths.
inline constexpr int kMemAddrBytes = 4;
inline constexpr int kMemLenBytes = 2;

}  // namespace kiln::hw::link
