#pragma once
// The rtl Device: the Verilated accelerator (hw/sim/rtl) with DRAM in host memory.
// Registers go over the model's AXI4-Lite port; a run advances the clock until done,
// with the DRAM model's latency, bandwidth and back-pressure from DeviceOptions, and
// the injected hardware fault of DeviceOptions::fault (hw/sim/rtl/fault.h). The
// decoupled core (kiln_top) has every counter, timed ones included; the in-order core
// those of hw::regs::kInorderCounterMask.

#include <memory>
#include <vector>

#include "hw/driver/device.h"
#include "hw/sim/rtl/rtl_sim.h"

namespace kiln::driver {

class RtlDevice : public Device {
 public:
  // Throws hw::Error listing the built configurations when cfg has no Verilated model.
  RtlDevice(const hw::Config& cfg, const DeviceOptions& opts);

  std::string_view kind() const override { return "rtl"; }
  void write(DevAddr addr, std::span<const uint8_t> data) override;
  void read(DevAddr addr, std::span<uint8_t> data) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  uint32_t read_reg(uint32_t offset) override;
  bool has_counter(hw::regs::Counter c) const override {
    return options().core != "inorder" || hw::regs::inorder_has_counter(c);
  }

  sim::RtlSim& sim() { return *sim_; }

 protected:
  uint32_t wait_done() override;
  std::string error_message() const override { return error_; }

 private:
  std::vector<uint8_t> dram_;
  std::unique_ptr<sim::RtlSim> sim_;
  std::string error_;
};

std::unique_ptr<Device> make_rtl_device(const hw::Config& cfg, const DeviceOptions& opts);

}  // namespace kiln::driver
