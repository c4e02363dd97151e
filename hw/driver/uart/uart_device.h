#pragma once
// The uart Devices: a small board's top (kiln_uart_top: the in-order core, on-chip
// device memory, a UART host link) driven through its host-link protocol (host_link.h).
// "uart-sim" talks to the Verilated board top (hw/sim/uart), "uart" to a real board
// through a serial port (DeviceOptions::uart_port, uart_baud). Device memory is the
// board's (128 KiB on the iCEBreaker), whatever DeviceOptions::dram_bytes says.

#include <memory>
#include <string>

#include "hw/driver/device.h"
#include "hw/driver/uart/byte_link.h"
#include "hw/driver/uart/host_link.h"

namespace kiln::driver {

class UartDevice : public Device {
 public:
  // Resynchronizes the link, resets the core and asks the board for its memory size.
  UartDevice(std::string kind, const hw::Config& cfg, const DeviceOptions& opts,
             std::unique_ptr<uart::ByteLink> link);

  std::string_view kind() const override { return kind_; }
  void write(DevAddr addr, std::span<const uint8_t> data) override;
  void read(DevAddr addr, std::span<uint8_t> data) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  uint32_t read_reg(uint32_t offset) override;
  // The in-order core's counters (hw/spec/regs.h inorder_has_counter).
  bool has_counter(hw::regs::Counter c) const override;

  uart::HostLink& host() { return host_; }
  uart::ByteLink& link() { return *link_; }

 protected:
  uint32_t wait_done() override;
  std::string error_message() const override { return error_; }

 private:
  std::string kind_;
  std::unique_ptr<uart::ByteLink> link_;
  uart::HostLink host_;
  std::string error_;
};

// "uart": a board on the serial port DeviceOptions::uart_port.
std::unique_ptr<Device> make_uart_device(const hw::Config& cfg, const DeviceOptions& opts);
// "uart-sim": the Verilated board top of cfg's configuration; throws hw::Error in a
// build without Verilator or without a board top for cfg (KILN_UART_CONFIGS).
std::unique_ptr<Device> make_uart_sim_device(const hw::Config& cfg, const DeviceOptions& opts);

}  // namespace kiln::driver
