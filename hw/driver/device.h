#pragma once
// The Device interface: what the runtime and the CLI see of an accelerator, whatever
// runs it (fsim, the Verilated RTL, the SystemC platform, a board). One physical DRAM
// address space, the register map of hw/spec/regs.h, run-to-FINISH, counters.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/spec/config.h"
#include "hw/spec/ranges.h"
#include "hw/spec/regs.h"

namespace kiln::driver {

using DevAddr = uint64_t;  // a byte address in device DRAM
using Counters = std::map<hw::regs::Counter, uint64_t>;

struct DeviceOptions {
  uint64_t dram_bytes = uint64_t{64} << 20;  // size of device DRAM
  // Device-specific settings; a device ignores those it does not have.
  std::string core = "decoupled";     // rtl: the RTL core, "decoupled" (kiln_top) or "inorder"
  bool build_model = false;           // rtl: Verilate the configuration at run time when this
                                      //   build has no model of it (hw/sim/rtl/model_builder.h)
  std::string wave_file;              // rtl: FST waveform of the run
  std::string trace_file;             // rtl: Chrome trace JSON of module activity, every run
  uint64_t watchdog_cycles = 100000;  // rtl: cycles without progress that count as a hang
  int dram_latency = -1;              // rtl: DRAM model latency in cycles (-1: default)
  int dram_bytes_per_cycle = -1;      // rtl: DRAM model bandwidth (-1: default)
  bool dram_backpressure = false;     // rtl: random AXI back-pressure
  uint64_t seed = 1;                  // rtl: back-pressure seed
  std::string fault;                  // rtl: an injected hardware fault, KIND[:ARGS] ("": none;
                                      //   parse_fault in device_settings.h)
  // systemc: the SystemC platform (docs/systemc.md) also takes wave_file (a VCD of its
  // signals), trace_file (its timeline: the accelerators, their ports and the memory),
  // watchdog_cycles, dram_latency, dram_bytes_per_cycle, dram_backpressure, seed.
  std::string memory;                 // systemc: memory preset ("": the rtl harness's timing)
  double dram_gbps = -1;              // systemc: memory bandwidth in GB/s (-1: the preset's)
  double clock_mhz = 100;             // systemc: the platform's clock
  int accelerators = 1;               // systemc: accelerators sharing the memory
  // uart: a small board's UART host link (docs/hardware.md); uart-sim uses wave_file and
  // watchdog_cycles (cycles without the core's progress).
  std::string uart_port = "/dev/ttyUSB1";  // uart: the serial port (iCEBreaker: FTDI channel B)
  int uart_baud = 1000000;            // uart: the bitstream's baud rate (board.json host_link)
  double uart_timeout_s = 10.0;       // uart: seconds a run may take before it counts as a hang
  // uio: a Zynq board's accelerator mapped from Linux (docs/uio-device.md).
  std::string uio_registers;          // uio: register file: /dev/uioN, /dev/mem or a file
                                      //   ("": the UIO device named "kiln")
  uint64_t uio_registers_offset = 0;  // uio: its mmap offset (with /dev/mem: physical address)
  std::string uio_buffer = "/dev/udmabuf0";  // uio: the contiguous buffer that is device DRAM
  uint64_t uio_buffer_offset = 0;     // uio: its mmap offset (with /dev/mem: physical address)
  std::optional<uint64_t> uio_buffer_phys;  // uio: the buffer's bus address (default: from
                                            //   u-dma-buf's sysfs, or the /dev/mem offset)
  double uio_timeout_s = 10.0;        // uio: seconds a run may take before it counts as a hang
};

class Device {
 public:
  Device(const hw::Config& cfg, const DeviceOptions& opts);
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  virtual std::string_view kind() const = 0;  // "fsim", "rtl", ...
  const hw::Config& config() const { return cfg_; }
  const DeviceOptions& options() const { return opts_; }
  uint64_t dram_bytes() const { return opts_.dram_bytes; }

  // Device memory. alloc() returns an address aligned to `align` or throws when DRAM
  // is exhausted; free() takes an address alloc() returned.
  DevAddr alloc(uint64_t bytes, uint64_t align = 64);
  void free(DevAddr addr);
  // Copies to and from DRAM; a range outside DRAM throws hw::Error.
  virtual void write(DevAddr addr, std::span<const uint8_t> data) = 0;
  virtual void read(DevAddr addr, std::span<uint8_t> data) = 0;

  // Registers (hw/spec/regs.h).
  virtual void write_reg(uint32_t offset, uint32_t value) = 0;
  virtual uint32_t read_reg(uint32_t offset) = 0;

  // Runs `insn_count` instructions at `insn_addr` to FINISH through the registers:
  // checks the configuration fingerprint and the stream (check_stream), programs the
  // stream, starts, waits for done. A device-reported error (deadlock, bad instruction,
  // watchdog) throws hw::Error with the device's message.
  void run(DevAddr insn_addr, uint32_t insn_count);

  // Refuses, with hw::Error naming the instruction (position, assembly), the buffer and
  // the index, a stream that touches a scratchpad index beyond its buffer's depth
  // (hw/spec/ranges.h): the RTL would wrap the index and give wrong results silently.
  // Reads the stream and the micro-ops of its LOAD UOPs from device DRAM, and follows
  // the uop buffer from run to run. run() calls it; code that starts a run through the
  // registers alone must call it first (as systemc's run_together does).
  void check_stream(DevAddr insn_addr, uint32_t insn_count);
  // What check_stream knows of the uop buffer is lost: call after a run that failed.
  void forget_uop_buffer() { range_check_.forget(); }

  // The counters of the last run that this device has (fsim has no timed ones).
  Counters counters();
  // True for counters this device measures.
  virtual bool has_counter(hw::regs::Counter c) const = 0;

 protected:
  // Waits until the status register shows done or error; a device that simulates
  // clocks advances them here. Returns the final status register value.
  virtual uint32_t wait_done() = 0;
  // The detailed message behind the status error bit.
  virtual std::string error_message() const = 0;
  void check_range(DevAddr addr, uint64_t bytes, std::string_view what) const;

 private:
  // Programs the stream's registers, starts the run and waits for it.
  void launch(DevAddr insn_addr, uint32_t insn_count);

  hw::Config cfg_;
  DeviceOptions opts_;
  std::map<DevAddr, uint64_t> allocations_;  // address -> size
  hw::InsnLayout layout_;
  hw::StreamRangeCheck range_check_;  // the uop buffer as the streams run so far left it
};

// The devices this build has ("fsim", and "rtl" where the Verilated models were built),
// and the factory that makes one (hw/driver/devices.cc holds the list).
std::vector<std::string> device_kinds();
std::unique_ptr<Device> make_device(std::string_view kind, const hw::Config& cfg,
                                    const DeviceOptions& opts = {});

}  // namespace kiln::driver
