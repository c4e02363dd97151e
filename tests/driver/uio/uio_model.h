#pragma once
// A register-level model of the accelerator on a Zynq board, so that the uio device runs
// here without one. The register page and the DMA buffer are ordinary files that the
// device maps exactly as it maps /dev/uio0 and /dev/udmabuf0. On the other side a thread
// plays the programmable logic: it implements the register map of hw/spec/regs.h over
// the shared page (start, STATUS busy/done/error, the counters, the fingerprint and
// version) and runs each started stream through fsim. fsim sees the bus address space
// the accelerator's AXI master sees: the buffer mapped at its bus address, zeros below.
// Where fsim stops with an error, the model does what the board's kiln_top does (it has
// no watchdog): a deadlock stays busy until the host writes CTRL abort, which ends the
// run with done and error, cause kAborted; an access beyond memory is an error with the
// DRAM cause, anything else an error with no cause.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "hw/driver/device.h"
#include "hw/driver/uio/mapping.h"
#include "hw/sim/fsim/fsim.h"
#include "hw/spec/config.h"

namespace kiln::test {

class UioModel {
 public:
  struct Options {
    uint64_t bus_base = 0x1f000000;      // where the buffer sits on the bus (page-aligned)
    uint64_t buffer_bytes = 4 << 20;
  };
  UioModel(const hw::Config& cfg, Options opts);
  ~UioModel();  // stops the logic and removes the files
  UioModel(const UioModel&) = delete;
  UioModel& operator=(const UioModel&) = delete;

  const std::string& registers_path() const { return regs_path_; }
  const std::string& buffer_path() const { return buffer_path_; }
  uint64_t bus_base() const { return opts_.bus_base; }
  // `opts` with the uio fields set to this model's files and bus address.
  driver::DeviceOptions device_options(driver::DeviceOptions opts = {}) const;

  // The register page as the logic sees it.
  uint32_t reg(uint32_t offset) const;
  void set_reg(uint32_t offset, uint32_t value);
  // Starts taken, and the bus address of the last stream (as the hardware read it).
  int starts() const { return starts_.load(); }
  int aborts() const { return aborts_.load(); }  // aborts taken (of a busy run)
  uint64_t last_insn_bus_addr() const { return last_insn_addr_.load(); }

 private:
  void logic();
  void run_stream();

  hw::Config cfg_;
  Options opts_;
  std::string dir_, regs_path_, buffer_path_;
  std::unique_ptr<driver::Mapping> regs_;
  uint8_t* bus_ = nullptr;  // bus addresses [0, bus_base + buffer_bytes)
  uint64_t bus_bytes_ = 0;
  std::unique_ptr<sim::Fsim> fsim_;
  std::atomic<bool> stop_{false};
  std::atomic<int> starts_{0};
  std::atomic<int> aborts_{0};
  std::atomic<uint64_t> last_insn_addr_{0};
  std::thread thread_;
};

}  // namespace kiln::test
