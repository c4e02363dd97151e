#pragma once
// The uio Device: the accelerator on a Zynq (PYNQ-Z1) or ZynqMP (Ultra96) board, driven
// from Linux user space (docs/uio-device.md). It maps the AXI4-Lite register file (a UIO
// node, /dev/uioN, or /dev/mem at the register window's physical address) and a
// physically contiguous buffer that is the device's DRAM (u-dma-buf's /dev/udmabufN, or
// /dev/mem at a reserved range). Registers are volatile 32-bit accesses through the
// mapping; a run polls STATUS against a wall-clock timeout, after which the device aborts
// the run (CTRL abort) so that the accelerator takes the next one.
//
// Addresses. The Device's DevAddr space is 0..dram_bytes, an offset in the buffer, as on
// every device. The accelerator's AXI master puts bus (physical) addresses on the PS's
// HP port (kiln_zynq.v, generated with the RTL package, passes them through unchanged),
// so the device adds the buffer's bus address where the hardware reads one: the
// instruction address registers, and the dram_base of every LOAD and STORE, which it
// relocates in the stream just before start and puts back when the run ends, so that
// device memory reads the same as on fsim or rtl.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/driver/device.h"
#include "hw/driver/uio/mapping.h"
#include "hw/spec/isa.h"

namespace kiln::driver {

class UioDevice : public Device {
 public:
  // Maps both regions and checks the register map version; throws hw::Error naming the
  // path and what to check when a node is missing, inaccessible or not the accelerator.
  UioDevice(const hw::Config& cfg, const DeviceOptions& opts);
  ~UioDevice() override;

  std::string_view kind() const override { return "uio"; }
  void write(DevAddr addr, std::span<const uint8_t> data) override;
  void read(DevAddr addr, std::span<uint8_t> data) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  uint32_t read_reg(uint32_t offset) override;
  // The board runs the RTL, which has every counter.
  bool has_counter(hw::regs::Counter) const override { return true; }

  // The bus address of DevAddr 0, and the paths mapped.
  uint64_t bus_base() const { return bus_base_; }
  const std::string& registers_path() const { return regs_->path(); }
  const std::string& buffer_path() const { return buf_->path(); }

 protected:
  uint32_t wait_done() override;
  std::string error_message() const override { return error_; }

 private:
  void map_registers(const DeviceOptions& opts);
  void map_buffer(const DeviceOptions& opts);
  volatile uint32_t* reg(uint32_t offset) const;
  void check_reg(uint32_t offset) const;
  void start(uint32_t value);
  // CTRL abort of the run in flight; true when STATUS shows it ended.
  bool abort_run();
  void relocate_stream(DevAddr insn_addr, uint32_t insn_count);
  void restore_stream();

  hw::InsnLayout layout_;
  std::unique_ptr<Mapping> regs_;
  std::unique_ptr<Mapping> buf_;
  uint64_t bus_base_ = 0;
  // The stream of the run in flight as it was before relocation, put back at its end.
  struct Original {
    DevAddr addr;
    std::vector<uint8_t> bytes;
  };
  std::optional<Original> original_;
  DevAddr run_addr_ = 0;
  uint32_t run_count_ = 0;
  std::string error_;
};

std::unique_ptr<Device> make_uio_device(const hw::Config& cfg, const DeviceOptions& opts);

}  // namespace kiln::driver
