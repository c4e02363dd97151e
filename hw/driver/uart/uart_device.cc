#include "hw/driver/uart/uart_device.h"

#include <fmt/format.h>

#include <utility>

#include "hw/driver/uart/serial_link.h"
#include "hw/spec/error.h"
#ifdef KILN_HAVE_UART_SIM
#include "hw/driver/uart/sim_link.h"
#endif

namespace kiln::driver {

namespace r = hw::regs;
using hw::regs::Counter;

namespace {

// The board's memory size, asked before the Device (which needs it) exists.
uint64_t open_board(uart::ByteLink& link) {
  uart::HostLink host(link);
  link.resync();
  uint64_t mem_bytes = host.ping().mem_bytes;
  host.reset_core();  // a run a previous session left behind ends here
  return mem_bytes;
}

DeviceOptions with_memory(DeviceOptions opts, uint64_t mem_bytes) {
  opts.dram_bytes = mem_bytes;
  return opts;
}

}  // namespace

UartDevice::UartDevice(std::string kind, const hw::Config& cfg, const DeviceOptions& opts,
                       std::unique_ptr<uart::ByteLink> link)
    : Device(cfg, with_memory(opts, open_board(*link))),
      kind_(std::move(kind)),
      link_(std::move(link)),
      host_(*link_) {}

void UartDevice::write(DevAddr addr, std::span<const uint8_t> data) {
  check_range(addr, data.size(), "write to device memory");
  if (!data.empty()) host_.write_mem(static_cast<uint32_t>(addr), data);
}

void UartDevice::read(DevAddr addr, std::span<uint8_t> data) {
  check_range(addr, data.size(), "read from device memory");
  if (!data.empty()) host_.read_mem(static_cast<uint32_t>(addr), data);
}

void UartDevice::write_reg(uint32_t offset, uint32_t value) {
  if (!r::is_writable(offset))
    throw hw::Error(fmt::format("{} device: register 0x{:02x} is not writable", kind_, offset));
  host_.write_reg(static_cast<uint8_t>(offset), value);
}

uint32_t UartDevice::read_reg(uint32_t offset) {
  bool counter = offset >= r::kCounterBase && offset < r::kCounterBase + 8 * r::kNumCounters;
  if (offset % 4 != 0 || (offset > r::kVersion && !counter))
    throw hw::Error(fmt::format("{} device: no register at 0x{:02x}", kind_, offset));
  return host_.read_reg(static_cast<uint8_t>(offset));
}

bool UartDevice::has_counter(Counter c) const { return r::inorder_has_counter(c); }

uint32_t UartDevice::wait_done() {
  error_.clear();
  link_->run_started();
  for (;;) {
    uint32_t status = read_reg(r::kStatus);
    if (status & r::kStatusError) {
      r::ErrorCause cause = r::status_cause(status);
      std::string text = r::status_error_text(status);
      error_ = fmt::format("{} device: the run stopped with an error (STATUS 0x{:04x}): {}", kind_,
                           status, text.empty() ? "the core gives no cause" : text);
      if (cause == r::ErrorCause::kTokenMissing)
        error_ += " (on a decoupled device this stream would deadlock)";
      return status;
    }
    if (status & r::kStatusDone) return status;
    if (!(status & r::kStatusBusy)) return status;  // neither running nor done: run() says so
    if (std::string hung = link_->run_hung(); !hung.empty()) {
      // CTRL abort ends the run (STATUS done, error, cause kAborted); a core that does
      // not take it is reset, so that the next run starts clean either way.
      write_reg(r::kCtrl, r::kCtrlAbort);
      uint32_t after = read_reg(r::kStatus);
      bool aborted = (after & r::kStatusDone) && !(after & r::kStatusBusy);
      if (!aborted) host_.reset_core();
      error_ = fmt::format("{} watchdog: {}; {} (the stream may wait for something that "
                           "never happens)",
                           kind_, hung,
                           aborted ? "the run was aborted (CTRL abort)"
                                   : "the abort was not taken, so the core was reset");
      return (aborted ? after : status) | r::kStatusError;
    }
    link_->pause();
  }
}

std::unique_ptr<Device> make_uart_device(const hw::Config& cfg, const DeviceOptions& opts) {
  auto link = std::make_unique<uart::SerialLink>(opts.uart_port, opts.uart_baud,
                                                 opts.uart_timeout_s);
  return std::make_unique<UartDevice>("uart", cfg, opts, std::move(link));
}

std::unique_ptr<Device> make_uart_sim_device(const hw::Config& cfg, const DeviceOptions& opts) {
#ifdef KILN_HAVE_UART_SIM
  sim::UartSimOptions sim_opts;
  sim_opts.wave_file = opts.wave_file;
  auto link = std::make_unique<uart::SimLink>(cfg, sim_opts, opts.watchdog_cycles);
  return std::make_unique<UartDevice>("uart-sim", cfg, opts, std::move(link));
#else
  (void)cfg;
  (void)opts;
  throw hw::Error(
      "uart-sim device: this build has no Verilated board top (Verilator was not found when "
      "it was configured)");
#endif
}

}  // namespace kiln::driver
