#include "hw/driver/uart/host_link.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "hw/spec/error.h"

namespace kiln::driver::uart {

std::string_view reply_error_text(uint8_t code) {
  switch (code) {
    case kErrCommand: return "unknown command byte";
    case kErrRange: return "the range is outside device memory";
    case kErrChecksum: return "the data's checksum did not match (a corrupted transfer)";
    case kErrTimeout: return "the command's bytes stopped arriving (frame timeout)";
    case kErrBus: return "the register file answered with an error";
    case kErrFraming: return "a byte arrived with a low stop bit (framing error: baud rate?)";
    default: return "";
  }
}

uint8_t checksum(std::span<const uint8_t> data) {
  uint8_t sum = 0;
  for (uint8_t b : data) sum = static_cast<uint8_t>(sum + b);
  return sum;
}

namespace {

void put32(std::vector<uint8_t>& v, uint32_t x) {
  for (int i = 0; i < 4; ++i) v.push_back(static_cast<uint8_t>(x >> (8 * i)));
}

}  // namespace

void HostLink::expect_ack(uint8_t cmd, std::span<const uint8_t> request, std::string_view what) {
  link_.write(request);
  uint8_t reply = 0;
  link_.read(std::span(&reply, 1));
  if (reply == (cmd | kAck)) return;
  std::string_view why = reply_error_text(reply);
  if (why.empty()) {
    link_.resync();  // out of step with the board: start afresh for the next command
    throw hw::Error(fmt::format("{}: {} answered 0x{:02x}, not the acknowledgement 0x{:02x} (the "
                                "link was out of step; it has been resynchronized)",
                                link_.name(), what, reply, cmd | kAck));
  }
  throw hw::Error(fmt::format("{}: {} refused by the board (0x{:02x}: {})", link_.name(), what,
                              reply, why));
}

HostLink::Info HostLink::ping() {
  const uint8_t req[] = {kPing};
  expect_ack(kPing, req, "PING");
  std::array<uint8_t, 2> rest{};
  link_.read(rest);
  if (rest[0] != kProtocolVersion || rest[1] > 32) {
    throw hw::Error(fmt::format("{}: the board speaks host-link protocol version {} with 2^{} bytes "
                                "of memory; this driver speaks version {}",
                                link_.name(), rest[0], rest[1], kProtocolVersion));
  }
  return Info{rest[0], uint64_t{1} << rest[1]};
}

void HostLink::write_reg(uint8_t offset, uint32_t value) {
  std::vector<uint8_t> req = {kRegWrite, offset};
  put32(req, value);
  expect_ack(kRegWrite, req, fmt::format("register write 0x{:02x}", offset));
}

uint32_t HostLink::read_reg(uint8_t offset) {
  const uint8_t req[] = {kRegRead, offset};
  expect_ack(kRegRead, req, fmt::format("register read 0x{:02x}", offset));
  std::array<uint8_t, 4> v{};
  link_.read(v);
  return uint32_t{v[0]} | uint32_t{v[1]} << 8 | uint32_t{v[2]} << 16 | uint32_t{v[3]} << 24;
}

namespace {

// Calls frame(addr, part) for each piece of `data` of at most kMaxFrameBytes, in order
// (one empty frame for empty data).
template <typename T, typename F>
void in_frames(uint32_t addr, std::span<T> data, F frame) {
  do {
    size_t n = std::min(data.size(), kMaxFrameBytes);
    frame(addr, data.first(n));
    addr += static_cast<uint32_t>(n);
    data = data.subspan(n);
  } while (!data.empty());
}

}  // namespace

void HostLink::write_mem(uint32_t addr, std::span<const uint8_t> data) {
  in_frames(addr, data, [&](uint32_t a, std::span<const uint8_t> d) { write_frame(a, d); });
}

void HostLink::read_mem(uint32_t addr, std::span<uint8_t> out) {
  in_frames(addr, out, [&](uint32_t a, std::span<uint8_t> d) { read_frame(a, d); });
}

void HostLink::write_frame(uint32_t addr, std::span<const uint8_t> data) {
  std::vector<uint8_t> req = {kMemWrite};
  req.reserve(data.size() + 8);
  put32(req, addr);
  req.push_back(static_cast<uint8_t>(data.size()));
  req.push_back(static_cast<uint8_t>(data.size() >> 8));
  req.insert(req.end(), data.begin(), data.end());
  req.push_back(checksum(data));
  expect_ack(kMemWrite, req,
             fmt::format("memory write of {} bytes at 0x{:x}", data.size(), addr));
}

void HostLink::read_frame(uint32_t addr, std::span<uint8_t> out) {
  std::vector<uint8_t> req = {kMemRead};
  put32(req, addr);
  req.push_back(static_cast<uint8_t>(out.size()));
  req.push_back(static_cast<uint8_t>(out.size() >> 8));
  expect_ack(kMemRead, req, fmt::format("memory read of {} bytes at 0x{:x}", out.size(), addr));
  link_.read(out);
  uint8_t sum = 0;
  link_.read(std::span(&sum, 1));
  if (sum != checksum(out)) {
    throw hw::Error(fmt::format("{}: memory read of {} bytes at 0x{:x}: checksum 0x{:02x} from the "
                                "board, 0x{:02x} computed (a corrupted transfer; read again)",
                                link_.name(), out.size(), addr, sum, checksum(out)));
  }
}

void HostLink::reset_core() {
  const uint8_t req[] = {kResetCore};
  expect_ack(kResetCore, req, "core reset");
}

}  // namespace kiln::driver::uart
