#include "hw/driver/device.h"

#include <fmt/format.h>

#include <utility>

#include "hw/spec/error.h"

namespace kiln::driver {

using hw::regs::Counter;

Device::Device(const hw::Config& cfg, const DeviceOptions& opts)
    : cfg_(cfg), opts_(opts), layout_(cfg), range_check_(cfg) {}

DevAddr Device::alloc(uint64_t bytes, uint64_t align) {
  if (align == 0 || (align & (align - 1)) != 0)
    throw hw::Error(fmt::format("alloc: alignment {} is not a power of two", align));
  if (bytes == 0) bytes = 1;
  // First fit between existing allocations, which the map keeps sorted by address.
  DevAddr candidate = 0;
  for (const auto& [addr, size] : allocations_) {
    if (candidate + bytes <= addr) break;
    candidate = (addr + size + align - 1) & ~(align - 1);
  }
  if (candidate + bytes > dram_bytes()) {
    throw hw::Error(fmt::format("{} device: out of DRAM allocating {} bytes ({} bytes of DRAM)",
                                kind(), bytes, dram_bytes()));
  }
  allocations_[candidate] = bytes;
  return candidate;
}

void Device::free(DevAddr addr) {
  if (allocations_.erase(addr) == 0)
    throw hw::Error(fmt::format("free: 0x{:x} is not an address that alloc returned", addr));
}

void Device::check_range(DevAddr addr, uint64_t bytes, std::string_view what) const {
  if (addr > dram_bytes() || bytes > dram_bytes() - addr) {
    throw hw::Error(fmt::format("{}: bytes [0x{:x}, 0x{:x}) are outside the {} bytes of DRAM",
                                what, addr, addr + bytes, dram_bytes()));
  }
}

void Device::run(DevAddr insn_addr, uint32_t insn_count) {
  namespace r = hw::regs;
  uint64_t fp = uint64_t{read_reg(r::kFingerprintHi)} << 32 | read_reg(r::kFingerprintLo);
  if (fp != cfg_.fingerprint()) {
    throw hw::Error(fmt::format("{} device runs configuration fingerprint {:016x}, but the program "
                                "was built for '{}' ({:016x})",
                                kind(), fp, cfg_.name(), cfg_.fingerprint()));
  }
  check_stream(insn_addr, insn_count);
  try {
    launch(insn_addr, insn_count);
  } catch (...) {
    // The run may have loaded some micro-ops of the stream, or none.
    range_check_.forget();
    throw;
  }
}

void Device::check_stream(DevAddr insn_addr, uint32_t insn_count) {
  check_range(insn_addr, uint64_t{insn_count} * hw::kInsnBytes, "instruction stream");
  std::vector<uint8_t> bytes(size_t{insn_count} * hw::kInsnBytes);
  read(insn_addr, bytes);
  // The instructions that decode, up to the first that does not: the device refuses
  // that one itself (fsim) or runs what its decoder makes of it.
  std::vector<hw::Insn> insns;
  insns.reserve(insn_count);
  for (size_t n = 0; n < insn_count; ++n) {
    try {
      std::span<const uint8_t> one(bytes.data() + n * hw::kInsnBytes, hw::kInsnBytes);
      insns.push_back(hw::decode_program(layout_, one).front());
    } catch (const hw::Error&) {
      break;
    }
  }
  auto read_dram = [this](uint64_t addr, std::span<uint8_t> out) {
    if (addr > dram_bytes() || out.size() > dram_bytes() - addr) return false;
    read(addr, out);
    return true;
  };
  try {
    range_check_.check(insns, read_dram);
  } catch (const hw::Error& e) {
    throw hw::Error(fmt::format("{} device: the stream at 0x{:x} was refused before launch: {}",
                                kind(), insn_addr, e.what()));
  }
}

void Device::launch(DevAddr insn_addr, uint32_t insn_count) {
  namespace r = hw::regs;
  // Each write is read back: one lost on the bus would run another stream, or none.
  const std::pair<uint32_t, uint32_t> writes[] = {
      {r::kInsnAddrLo, static_cast<uint32_t>(insn_addr)},
      {r::kInsnAddrHi, static_cast<uint32_t>(insn_addr >> 32)},
      {r::kInsnCount, insn_count}};
  for (auto [offset, value] : writes) {
    write_reg(offset, value);
    uint32_t got = read_reg(offset);
    if (got != value) {
      throw hw::Error(fmt::format("{} device: the write of 0x{:x} to register {} (0x{:02x}) did "
                                  "not reach it (it reads 0x{:x}): a lost register write; the run "
                                  "was not started",
                                  kind(), value, r::writable_reg_name(offset), offset, got));
    }
  }
  write_reg(r::kCtrl, r::kCtrlStart);
  uint32_t status = wait_done();
  if (status & r::kStatusError) throw hw::Error(error_message());
  if (!(status & r::kStatusDone))
    throw hw::Error(fmt::format("{} device stopped without done (status 0x{:x})", kind(), status));
}

Counters Device::counters() {
  Counters out;
  for (const auto& info : hw::regs::kCounters) {
    if (!has_counter(info.id)) continue;
    out[info.id] = uint64_t{read_reg(hw::regs::counter_hi(info.id))} << 32 |
                   read_reg(hw::regs::counter_lo(info.id));
  }
  return out;
}

}  // namespace kiln::driver
