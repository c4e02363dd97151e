#pragma once
// The systemc Device: one accelerator of the SystemC platform (hw/sim/systemc), its
// DRAM a window of the platform's shared memory. Registers go through the host's TLM
// socket and take simulated time; a run advances the platform's clock until done.
// DeviceOptions choose the memory: a preset (`memory`), or the rtl harness's default
// timing changed by dram_latency / dram_bytes_per_cycle / dram_gbps.

#include <memory>
#include <vector>

#include "hw/driver/device.h"
#include "hw/sim/systemc/platform.h"

namespace kiln::driver {

class SystemcDevice : public Device {
 public:
  // Accelerator `index` of `platform`; its DRAM is the platform's window.
  SystemcDevice(const hw::Config& cfg, const DeviceOptions& opts,
                std::shared_ptr<sim::sc::Platform> platform, int index);

  std::string_view kind() const override { return "systemc"; }
  void write(DevAddr addr, std::span<const uint8_t> data) override;
  void read(DevAddr addr, std::span<uint8_t> data) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  uint32_t read_reg(uint32_t offset) override;
  bool has_counter(hw::regs::Counter) const override { return true; }

  sim::sc::Platform& platform() { return *platform_; }
  int index() const { return index_; }

 protected:
  uint32_t wait_done() override;
  std::string error_message() const override { return error_; }

 private:
  std::shared_ptr<sim::sc::Platform> platform_;
  int index_;
  std::string error_;
};

// The platform options DeviceOptions describe; throws hw::Error for bad ones (an
// unknown preset, a zero bandwidth, ...).
sim::sc::PlatformOptions platform_options(const DeviceOptions& opts);

// `opts.accelerators` devices on one platform sharing its memory, each with
// opts.dram_bytes / accelerators of it.
std::vector<std::unique_ptr<Device>> make_systemc_devices(const hw::Config& cfg,
                                                          const DeviceOptions& opts);
// Runs `insn_count` instructions at `insn_addr` on every device of `devices` (all of
// one platform, from make_systemc_devices) at once: starts each, then waits for all.
// Throws hw::Error naming the accelerator whose run failed.
void run_together(std::span<const std::unique_ptr<Device>> devices, DevAddr insn_addr,
                  uint32_t insn_count);

std::unique_ptr<Device> make_systemc_device(const hw::Config& cfg, const DeviceOptions& opts);

}  // namespace kiln::driver
