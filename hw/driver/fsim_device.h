#pragma once
// The fsim Device: DRAM in host memory, the register map emulated, and a start that
// runs the functional simulator to FINISH at once. It has every untimed counter.

#include <memory>
#include <string>
#include <vector>

#include "hw/driver/device.h"
#include "hw/sim/fsim/fsim.h"

namespace kiln::driver {

class FsimDevice : public Device {
 public:
  FsimDevice(const hw::Config& cfg, const DeviceOptions& opts);

  std::string_view kind() const override { return "fsim"; }
  void write(DevAddr addr, std::span<const uint8_t> data) override;
  void read(DevAddr addr, std::span<uint8_t> data) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  uint32_t read_reg(uint32_t offset) override;
  bool has_counter(hw::regs::Counter c) const override;

  sim::Fsim& fsim() { return *fsim_; }

 protected:
  uint32_t wait_done() override { return status_; }
  std::string error_message() const override { return error_; }

 private:
  std::vector<uint8_t> dram_;
  std::unique_ptr<sim::Fsim> fsim_;
  uint32_t insn_count_ = 0;
  uint64_t insn_addr_ = 0;
  uint32_t status_ = 0;
  std::string error_;
};

}  // namespace kiln::driver
