#include "hw/driver/rtl/rtl_device.h"

#include <fmt/format.h>

#include <algorithm>

#include "hw/driver/device_settings.h"
#include "hw/sim/rtl/model_builder.h"
#include "hw/spec/error.h"

namespace kiln::driver {

namespace r = hw::regs;

namespace {

sim::RtlSimOptions sim_options(const DeviceOptions& opts) {
  sim::RtlSimOptions o;
  if (opts.dram_latency >= 0) o.dram.latency = opts.dram_latency;
  if (opts.dram_bytes_per_cycle > 0) o.dram.bytes_per_cycle = opts.dram_bytes_per_cycle;
  o.dram.backpressure = opts.dram_backpressure;
  o.dram.seed = opts.seed;
  o.wave_file = opts.wave_file;
  o.trace_file = opts.trace_file;
  o.watchdog_cycles = opts.watchdog_cycles;
  o.core = opts.core;
  o.fault = parse_fault(opts.fault);
  return o;
}

}  // namespace

RtlDevice::RtlDevice(const hw::Config& cfg, const DeviceOptions& opts)
    : Device(cfg, opts), dram_(opts.dram_bytes, 0) {
  if (opts.dram_bytes_per_cycle == 0)
    throw hw::Error("rtl device: dram_bytes_per_cycle must be at least 1");
  if (opts.build_model && !sim::has_rtl_model(cfg, opts.core)) {
    sim::ModelBuildOptions build;
    build.core = opts.core;
    build.jobs = 2;
    sim::build_rtl_model(cfg, build);
  }
  sim_ = std::make_unique<sim::RtlSim>(cfg, std::span<uint8_t>(dram_), sim_options(opts));
}

void RtlDevice::write(DevAddr addr, std::span<const uint8_t> data) {
  check_range(addr, data.size(), "write to device DRAM");
  std::copy(data.begin(), data.end(), dram_.begin() + static_cast<std::ptrdiff_t>(addr));
}

void RtlDevice::read(DevAddr addr, std::span<uint8_t> data) {
  check_range(addr, data.size(), "read from device DRAM");
  auto first = dram_.begin() + static_cast<std::ptrdiff_t>(addr);
  std::copy(first, first + static_cast<std::ptrdiff_t>(data.size()), data.begin());
}

void RtlDevice::write_reg(uint32_t offset, uint32_t value) {
  if (!r::is_writable(offset))
    throw hw::Error(fmt::format("rtl device: register 0x{:02x} is not writable", offset));
  if (offset == r::kInsnAddrHi && value != 0) {
    throw hw::Error(fmt::format("rtl device: instruction address high word 0x{:x}: the AXI "
                                "master has 32-bit addresses",
                                value));
  }
  sim_->write_reg(offset, value);
}

uint32_t RtlDevice::read_reg(uint32_t offset) {
  bool counter = offset >= r::kCounterBase && offset < r::kCounterBase + 8 * r::kNumCounters;
  if (offset % 4 != 0 || (offset > r::kVersion && !counter))
    throw hw::Error(fmt::format("rtl device: no register at 0x{:02x}", offset));
  return sim_->read_reg(offset);
}

uint32_t RtlDevice::wait_done() {
  error_.clear();
  uint32_t status = sim_->run_until_done();
  if (status & r::kStatusError) error_ = sim_->error();
  return status;
}

std::unique_ptr<Device> make_rtl_device(const hw::Config& cfg, const DeviceOptions& opts) {
  return std::make_unique<RtlDevice>(cfg, opts);
}

}  // namespace kiln::driver
