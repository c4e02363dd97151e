#include "hw/driver/systemc/systemc_device.h"

#include <fmt/format.h>

#include <algorithm>

#include "hw/spec/error.h"

namespace kiln::driver {

namespace r = hw::regs;

namespace {

DeviceOptions windowed(DeviceOptions opts, uint64_t window) {
  opts.dram_bytes = window;
  return opts;
}

}  // namespace

sim::sc::PlatformOptions platform_options(const DeviceOptions& opts) {
  sim::sc::PlatformOptions o;
  o.clock_mhz = opts.clock_mhz;
  if (!(o.clock_mhz > 0))
    throw hw::Error(fmt::format("systemc device: clock of {} MHz; it must be above 0", o.clock_mhz));
  if (!opts.memory.empty()) o.memory = sim::sc::memory_preset(opts.memory).timing(o.clock_mhz);
  if (opts.dram_latency >= 0) o.memory.latency = opts.dram_latency;
  if (opts.dram_bytes_per_cycle == 0 || opts.dram_gbps == 0.0)
    throw hw::Error("systemc device: a memory bandwidth of 0 moves nothing; give at least "
                    "1 byte per cycle");
  if (opts.dram_gbps < 0 && opts.dram_gbps != -1.0)
    throw hw::Error(fmt::format("systemc device: memory bandwidth {} GB/s is negative", opts.dram_gbps));
  double bpc = opts.dram_bytes_per_cycle > 0 ? double(opts.dram_bytes_per_cycle)
               : opts.dram_gbps > 0          ? opts.dram_gbps * 1000.0 / o.clock_mhz
                                             : 0.0;
  if (bpc > 0) o.memory.read_bytes_per_cycle = o.memory.write_bytes_per_cycle = bpc;
  if (opts.dram_latency >= 0 || bpc > 0) o.memory.name += " (changed)";
  o.accelerators = opts.accelerators;
  o.backpressure = opts.dram_backpressure;
  o.seed = opts.seed;
  o.watchdog_cycles = opts.watchdog_cycles;
  o.wave_file = opts.wave_file;
  o.trace_file = opts.trace_file;
  sim::sc::validate(o.memory);
  return o;
}

SystemcDevice::SystemcDevice(const hw::Config& cfg, const DeviceOptions& opts,
                             std::shared_ptr<sim::sc::Platform> platform, int index)
    : Device(cfg, windowed(opts, platform->window_bytes())), platform_(std::move(platform)),
      index_(index) {}

void SystemcDevice::write(DevAddr addr, std::span<const uint8_t> data) {
  check_range(addr, data.size(), "write to device DRAM");
  std::span<uint8_t> mem = platform_->dram(index_);
  std::copy(data.begin(), data.end(), mem.begin() + static_cast<std::ptrdiff_t>(addr));
}

void SystemcDevice::read(DevAddr addr, std::span<uint8_t> data) {
  check_range(addr, data.size(), "read from device DRAM");
  std::span<uint8_t> mem = platform_->dram(index_);
  auto first = mem.begin() + static_cast<std::ptrdiff_t>(addr);
  std::copy(first, first + static_cast<std::ptrdiff_t>(data.size()), data.begin());
}

void SystemcDevice::write_reg(uint32_t offset, uint32_t value) {
  if (!r::is_writable(offset))
    throw hw::Error(fmt::format("systemc device: register 0x{:02x} is not writable", offset));
  if (offset == r::kInsnAddrHi && value != 0) {
    throw hw::Error(fmt::format("systemc device: instruction address high word 0x{:x}: the AXI "
                                "master has 32-bit addresses",
                                value));
  }
  platform_->write_reg(index_, offset, value);
}

uint32_t SystemcDevice::read_reg(uint32_t offset) {
  bool counter = offset >= r::kCounterBase && offset < r::kCounterBase + 8 * r::kNumCounters;
  if (offset % 4 != 0 || (offset > r::kVersion && !counter))
    throw hw::Error(fmt::format("systemc device: no register at 0x{:02x}", offset));
  return platform_->read_reg(index_, offset);
}

uint32_t SystemcDevice::wait_done() {
  error_.clear();
  uint32_t status = platform_->run_until_done(index_);
  if (status & r::kStatusError) error_ = platform_->error(index_);
  return status;
}

std::vector<std::unique_ptr<Device>> make_systemc_devices(const hw::Config& cfg,
                                                          const DeviceOptions& opts) {
  auto platform = std::make_shared<sim::sc::Platform>(cfg, opts.dram_bytes, platform_options(opts));
  std::vector<std::unique_ptr<Device>> out;
  for (int i = 0; i < platform->accelerators(); ++i)
    out.push_back(std::make_unique<SystemcDevice>(cfg, opts, platform, i));
  return out;
}

void run_together(std::span<const std::unique_ptr<Device>> devices, DevAddr insn_addr,
                  uint32_t insn_count) {
  std::vector<SystemcDevice*> devs;
  for (const auto& d : devices) {
    auto* s = dynamic_cast<SystemcDevice*>(d.get());
    if (!s || &s->platform() != &dynamic_cast<SystemcDevice&>(*devices.front()).platform())
      throw hw::Error("run_together: the devices must be systemc devices of one platform");
    devs.push_back(s);
  }
  for (SystemcDevice* d : devs) {
    uint64_t fp = uint64_t{d->read_reg(r::kFingerprintHi)} << 32 | d->read_reg(r::kFingerprintLo);
    if (fp != d->config().fingerprint())
      throw hw::Error(fmt::format("systemc device runs configuration fingerprint {:016x}, but the "
                                  "program was built for '{}'",
                                  fp, d->config().name()));
    if (insn_addr > d->dram_bytes() || uint64_t{insn_count} * 16 > d->dram_bytes() - insn_addr)
      throw hw::Error("run_together: the instruction stream lies outside device DRAM");
    d->check_stream(insn_addr, insn_count);  // scratchpad ranges, as Device::run checks them
    d->write_reg(r::kInsnAddrLo, static_cast<uint32_t>(insn_addr));
    d->write_reg(r::kInsnAddrHi, static_cast<uint32_t>(insn_addr >> 32));
    d->write_reg(r::kInsnCount, insn_count);
  }
  for (SystemcDevice* d : devs) d->write_reg(r::kCtrl, r::kCtrlStart);
  for (SystemcDevice* d : devs) {
    uint32_t status = d->platform().run_until_done(d->index());
    if (status & r::kStatusError) {
      for (SystemcDevice* e : devs) e->forget_uop_buffer();  // what the failed runs left there is unknown
      throw hw::Error(fmt::format("accelerator {}: {}", d->index(), d->platform().error(d->index())));
    }
  }
}

std::unique_ptr<Device> make_systemc_device(const hw::Config& cfg, const DeviceOptions& opts) {
  DeviceOptions one = opts;
  one.accelerators = 1;
  return std::move(make_systemc_devices(cfg, one).front());
}

}  // namespace kiln::driver
