#include "tests/driver/uio/uio_model.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "hw/spec/error.h"
#include "hw/spec/regs.h"

namespace kiln::test {

namespace r = hw::regs;

namespace {

void make_file(const std::string& path, uint64_t bytes) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    if (fd >= 0) ::close(fd);
    throw hw::Error(fmt::format("uio model: cannot make {}: {}", path, std::strerror(err)));
  }
  ::close(fd);
}

}  // namespace

UioModel::UioModel(const hw::Config& cfg, Options opts) : cfg_(cfg), opts_(opts) {
  if (opts_.bus_base % driver::page_bytes() != 0)
    throw hw::Error("uio model: the bus base must be page-aligned");
  std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-uio-XXXXXX").string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  if (mkdtemp(name.data()) == nullptr)
    throw hw::Error(fmt::format("uio model: mkdtemp {}: {}", tmpl, std::strerror(errno)));
  dir_ = name.data();
  regs_path_ = dir_ + "/uio0";
  buffer_path_ = dir_ + "/udmabuf0";
  make_file(regs_path_, driver::page_bytes());
  make_file(buffer_path_, opts_.buffer_bytes);
  regs_ = std::make_unique<driver::Mapping>(regs_path_, 0, driver::page_bytes(), false,
                                            "uio model: register page");

  // The bus: address space reserved up to the buffer's end, the buffer file mapped at
  // its bus address over the reservation.
  bus_bytes_ = opts_.bus_base + opts_.buffer_bytes;
  void* bus = mmap(nullptr, bus_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (bus == MAP_FAILED) throw hw::Error("uio model: cannot reserve the bus address space");
  bus_ = static_cast<uint8_t*>(bus);
  int fd = ::open(buffer_path_.c_str(), O_RDWR | O_CLOEXEC);
  void* buf = fd < 0 ? MAP_FAILED
                     : mmap(bus_ + opts_.bus_base, opts_.buffer_bytes, PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_FIXED, fd, 0);
  if (fd >= 0) ::close(fd);
  if (buf == MAP_FAILED) throw hw::Error("uio model: cannot map the buffer onto the bus");
  fsim_ = std::make_unique<sim::Fsim>(cfg_, std::span<uint8_t>(bus_, bus_bytes_));

  set_reg(r::kFingerprintLo, static_cast<uint32_t>(cfg_.fingerprint()));
  set_reg(r::kFingerprintHi, static_cast<uint32_t>(cfg_.fingerprint() >> 32));
  set_reg(r::kVersion, r::kMapVersion);
  thread_ = std::thread([this] { logic(); });
}

UioModel::~UioModel() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  fsim_.reset();
  if (bus_ != nullptr) munmap(bus_, bus_bytes_);
  regs_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

driver::DeviceOptions UioModel::device_options(driver::DeviceOptions opts) const {
  opts.uio_registers = regs_path_;
  opts.uio_buffer = buffer_path_;
  opts.uio_buffer_phys = opts_.bus_base;
  return opts;
}

uint32_t UioModel::reg(uint32_t offset) const {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(regs_->data() + offset)).load();
}

void UioModel::set_reg(uint32_t offset, uint32_t value) {
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(regs_->data() + offset)).store(value);
}

void UioModel::logic() {
  while (!stop_) {
    // As the RTL: a start is taken when not busy; it sets busy and CTRL reads 0 again.
    // An abort ends a busy run (here only a deadlocked one is still busy) with done and
    // error, cause kAborted; when not busy it does nothing.
    uint32_t ctrl = reg(r::kCtrl);
    bool busy = reg(r::kStatus) & r::kStatusBusy;
    if ((ctrl & r::kCtrlAbort) && busy) {
      uint32_t cause = static_cast<uint32_t>(r::ErrorCause::kAborted) << r::kStatusCauseShift;
      set_reg(r::kStatus, r::kStatusDone | r::kStatusError | cause);
      set_reg(r::kCtrl, 0);
      ++aborts_;
    } else if ((ctrl & r::kCtrlStart) && !busy) {
      set_reg(r::kStatus, r::kStatusBusy);
      set_reg(r::kCtrl, 0);
      last_insn_addr_ = uint64_t{reg(r::kInsnAddrHi)} << 32 | reg(r::kInsnAddrLo);
      ++starts_;
      run_stream();
    } else if (ctrl & r::kCtrlAbort) {
      set_reg(r::kCtrl, 0);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void UioModel::run_stream() {
  uint32_t status = r::kStatusDone;
  try {
    fsim_->run(last_insn_addr_, reg(r::kInsnCount));
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (what.find("deadlock") != std::string::npos) return;  // busy until the host aborts
    status |= r::kStatusError;  // the hardware has a status bit and a cause, not a message
    if (what.find("beyond the DRAM") != std::string::npos)
      status |= static_cast<uint32_t>(r::ErrorCause::kDram) << r::kStatusCauseShift;
  }
  for (const auto& info : r::kCounters) {
    uint64_t v = fsim_->counter(info.id);
    set_reg(r::counter_lo(info.id), static_cast<uint32_t>(v));
    set_reg(r::counter_hi(info.id), static_cast<uint32_t>(v >> 32));
  }
  set_reg(r::kStatus, status);
}

}  // namespace kiln::test
