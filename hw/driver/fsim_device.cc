#include "hw/driver/fsim_device.h"

#include <fmt/format.h>

#include <algorithm>

#include "hw/spec/error.h"

namespace kiln::driver {

namespace r = hw::regs;

FsimDevice::FsimDevice(const hw::Config& cfg, const DeviceOptions& opts)
    : Device(cfg, opts), dram_(opts.dram_bytes, 0) {
  fsim_ = std::make_unique<sim::Fsim>(cfg, std::span<uint8_t>(dram_));
}

void FsimDevice::write(DevAddr addr, std::span<const uint8_t> data) {
  check_range(addr, data.size(), "write to device DRAM");
  std::copy(data.begin(), data.end(), dram_.begin() + static_cast<std::ptrdiff_t>(addr));
}

void FsimDevice::read(DevAddr addr, std::span<uint8_t> data) {
  check_range(addr, data.size(), "read from device DRAM");
  auto first = dram_.begin() + static_cast<std::ptrdiff_t>(addr);
  std::copy(first, first + static_cast<std::ptrdiff_t>(data.size()), data.begin());
}

void FsimDevice::write_reg(uint32_t offset, uint32_t value) {
  switch (offset) {
    case r::kInsnCount: insn_count_ = value; return;
    case r::kInsnAddrLo: insn_addr_ = (insn_addr_ & ~uint64_t{0xffffffff}) | value; return;
    case r::kInsnAddrHi: insn_addr_ = (insn_addr_ & 0xffffffff) | uint64_t{value} << 32; return;
    case r::kCtrl:
      if (!(value & r::kCtrlStart)) return;
      // fsim has no clock: a start runs the whole stream before the write returns.
      status_ = r::kStatusBusy;
      error_.clear();
      try {
        fsim_->run(insn_addr_, insn_count_);
        status_ = r::kStatusDone;
      } catch (const hw::Error& e) {
        status_ = r::kStatusDone | r::kStatusError;
        error_ = fmt::format("fsim: {}", e.what());
      }
      return;
    default:
      throw hw::Error(fmt::format("fsim device: register 0x{:02x} is not writable", offset));
  }
}

uint32_t FsimDevice::read_reg(uint32_t offset) {
  switch (offset) {
    case r::kCtrl: return 0;
    case r::kStatus: return status_;
    case r::kInsnCount: return insn_count_;
    case r::kInsnAddrLo: return static_cast<uint32_t>(insn_addr_);
    case r::kInsnAddrHi: return static_cast<uint32_t>(insn_addr_ >> 32);
    case r::kFingerprintLo: return static_cast<uint32_t>(config().fingerprint());
    case r::kFingerprintHi: return static_cast<uint32_t>(config().fingerprint() >> 32);
    case r::kVersion: return r::kMapVersion;
    default: break;
  }
  if (offset >= r::kCounterBase && offset < r::kCounterBase + 8 * r::kNumCounters &&
      offset % 4 == 0) {
    uint32_t k = (offset - r::kCounterBase) / 8;
    uint64_t v = fsim_->counters()[k];
    return (offset - r::kCounterBase) % 8 == 0 ? static_cast<uint32_t>(v)
                                               : static_cast<uint32_t>(v >> 32);
  }
  throw hw::Error(fmt::format("fsim device: no register at 0x{:02x}", offset));
}

bool FsimDevice::has_counter(r::Counter c) const {
  return !r::kCounters[static_cast<int>(c)].timed;
}

}  // namespace kiln::driver
