#include "hw/driver/uio/uio_device.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "hw/spec/error.h"

namespace kiln::driver {

namespace r = hw::regs;
namespace fs = std::filesystem;

namespace {

// The name of the accelerator's UIO node: the device-tree node's name.
constexpr std::string_view kUioName = "kiln";
// The register map ends below this offset (the counters are last).
constexpr uint32_t kRegsEnd = r::kCounterBase + 8 * r::kNumCounters;

// The first line of a sysfs attribute, or nullopt when it cannot be read.
std::optional<std::string> read_attr(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

// A sysfs number ("0x00010000", "16777216"); nullopt when absent or unparsable.
std::optional<uint64_t> read_number(const fs::path& p) {
  std::optional<std::string> s = read_attr(p);
  if (!s) return std::nullopt;
  try {
    size_t used = 0;
    uint64_t v = std::stoull(*s, &used, 0);
    if (used == 0) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// /dev/uioN of the UIO device named kUioName.
std::string find_uio_node() {
  std::string seen;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/class/uio", ec)) {
    std::optional<std::string> name = read_attr(entry.path() / "name");
    std::string node = entry.path().filename().string();
    if (name && *name == kUioName) return "/dev/" + node;
    seen += fmt::format(" {} ('{}')", node, name.value_or("?"));
  }
  throw hw::Error(fmt::format(
      "uio device: no UIO device named '{}' (/sys/class/uio has:{}); add the accelerator's "
      "node to the device tree with compatible \"generic-uio\" (docs/uio-device.md), or name "
      "the register file (DeviceOptions::uio_registers, kiln sim --uio-registers)",
      kUioName, seen.empty() ? " nothing" : seen));
}

// The size of the register window: UIO's map size for /dev/uioN, else one page.
uint64_t register_window_bytes(const std::string& path, uint64_t offset) {
  std::smatch m;
  if (std::regex_match(path, m, std::regex("/dev/(uio[0-9]+)"))) {
    uint64_t map = offset / page_bytes();  // UIO selects map N by offset N pages
    fs::path size = fs::path("/sys/class/uio") / m[1].str() / "maps" / fmt::format("map{}", map) / "size";
    if (std::optional<uint64_t> v = read_number(size)) return *v;
  }
  return page_bytes();
}

// What sysfs says about a u-dma-buf node (both class names the driver has used).
struct DmaBufInfo {
  std::optional<uint64_t> phys, size;
};
DmaBufInfo dma_buf_info(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (const char* cls : {"/sys/class/u-dma-buf", "/sys/class/udmabuf"}) {
    fs::path dir = fs::path(cls) / name;
    if (!fs::exists(dir)) continue;
    return {read_number(dir / "phys_addr"), read_number(dir / "size")};
  }
  return {};
}

// Copies that only make aligned accesses: an uncached mapping may be Device memory,
// where the unaligned loads and stores of memcpy fault.
void copy_to_device(uint8_t* dst, const uint8_t* src, size_t n) {
  while (n > 0 && reinterpret_cast<uintptr_t>(dst) % 8 != 0) {
    *reinterpret_cast<volatile uint8_t*>(dst++) = *src++;
    --n;
  }
  for (; n >= 8; n -= 8, dst += 8, src += 8) {
    uint64_t w;
    std::memcpy(&w, src, 8);
    *reinterpret_cast<volatile uint64_t*>(dst) = w;
  }
  while (n-- > 0) *reinterpret_cast<volatile uint8_t*>(dst++) = *src++;
}

void copy_from_device(uint8_t* dst, const uint8_t* src, size_t n) {
  while (n > 0 && reinterpret_cast<uintptr_t>(src) % 8 != 0) {
    *dst++ = *reinterpret_cast<const volatile uint8_t*>(src++);
    --n;
  }
  for (; n >= 8; n -= 8, dst += 8, src += 8) {
    uint64_t w = *reinterpret_cast<const volatile uint64_t*>(src);
    std::memcpy(dst, &w, 8);
  }
  while (n-- > 0) *dst++ = *reinterpret_cast<const volatile uint8_t*>(src++);
}

bool is_dev_mem(const std::string& path) { return path == "/dev/mem"; }

// A full barrier for memory another bus master shares (Linux's mb(), in user space): the
// buffer's writes land before the start that lets the accelerator read them, and the
// buffer is read only after STATUS said done. The buffer and the registers are mapped
// with different memory types, which the CPU may otherwise reorder.
void io_barrier() {
#if defined(__aarch64__)
  asm volatile("dsb sy" ::: "memory");
#elif defined(__arm__)
  asm volatile("dsb" ::: "memory");
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace

UioDevice::UioDevice(const hw::Config& cfg, const DeviceOptions& opts)
    : Device(cfg, opts), layout_(cfg) {
  map_registers(opts);
  map_buffer(opts);
}

void UioDevice::map_registers(const DeviceOptions& opts) {
  std::string regs_path = opts.uio_registers.empty() ? find_uio_node() : opts.uio_registers;
  uint64_t window = register_window_bytes(regs_path, opts.uio_registers_offset);
  if (window < kRegsEnd) {
    throw hw::Error(fmt::format("uio device: the register window of {} has {} bytes; the "
                                "register map needs {}",
                                regs_path, window, kRegsEnd));
  }
  regs_ = std::make_unique<Mapping>(regs_path, opts.uio_registers_offset, window, true,
                                    "uio device: register file");
  uint32_t version = read_reg(r::kVersion);
  if (version != r::kMapVersion) {
    throw hw::Error(fmt::format(
        "uio device: the register file at {} reads version 0x{:x}, not the accelerator's "
        "register map version {}; is the Kiln bitstream loaded, and is this its register "
        "window (boards/*/board.json host_link)?",
        regs_path, version, r::kMapVersion));
  }
}

// The buffer: its bus address and size from u-dma-buf's sysfs, a plain file's size, or
// the options (/dev/mem).
void UioDevice::map_buffer(const DeviceOptions& opts) {
  const std::string& buf_path = opts.uio_buffer;
  DmaBufInfo info = dma_buf_info(buf_path);
  if (opts.uio_buffer_phys) {
    bus_base_ = *opts.uio_buffer_phys;
  } else if (is_dev_mem(buf_path)) {
    bus_base_ = opts.uio_buffer_offset;
  } else if (info.phys) {
    bus_base_ = *info.phys;
  } else {
    throw hw::Error(fmt::format(
        "uio device: cannot tell the bus address of the DMA buffer {}: it is not a u-dma-buf "
        "node (no /sys/class/u-dma-buf/{}/phys_addr); load u-dma-buf (docs/uio-device.md) or "
        "give the address (DeviceOptions::uio_buffer_phys, kiln sim --uio-buffer-phys)",
        buf_path, fs::path(buf_path).filename().string()));
  }
  std::optional<uint64_t> buffer_bytes = info.size;
  struct stat st {};
  if (!buffer_bytes && ::stat(buf_path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<uint64_t>(st.st_size) >= opts.uio_buffer_offset) {
    buffer_bytes = static_cast<uint64_t>(st.st_size) - opts.uio_buffer_offset;
  }
  if (buffer_bytes && *buffer_bytes < dram_bytes()) {
    throw hw::Error(fmt::format("uio device: the DMA buffer {} has {} bytes, fewer than the {} "
                                "bytes of DRAM asked for (DeviceOptions::dram_bytes, kiln sim "
                                "--dram-bytes); ask for less or make the buffer larger "
                                "(docs/uio-device.md)",
                                buf_path, *buffer_bytes, dram_bytes()));
  }
  // The AXI master has 32-bit addresses, and the stream's DRAM fields count elements.
  if (bus_base_ + dram_bytes() > (uint64_t{1} << 32)) {
    throw hw::Error(fmt::format("uio device: the DMA buffer at bus address 0x{:x} + {} bytes "
                                "reaches beyond 4 GiB, which the accelerator's 32-bit AXI master "
                                "cannot address",
                                bus_base_, dram_bytes()));
  }
  for (hw::MemType m : {hw::MemType::kUop, hw::MemType::kWgt, hw::MemType::kInp,
                        hw::MemType::kAcc, hw::MemType::kOut}) {
    if (bus_base_ % hw::mem_elem_bytes(config(), m) != 0) {
      throw hw::Error(fmt::format("uio device: the DMA buffer's bus address 0x{:x} is not "
                                  "aligned to the {}-byte {} element; the stream addresses DRAM "
                                  "in elements",
                                  bus_base_, hw::mem_elem_bytes(config(), m), hw::mem_type_name(m)));
    }
  }
  buf_ = std::make_unique<Mapping>(buf_path, opts.uio_buffer_offset, dram_bytes(), true,
                                   "uio device: DMA buffer");
}

UioDevice::~UioDevice() {
  if (original_ && !(reg(r::kStatus)[0] & r::kStatusBusy)) restore_stream();
}

volatile uint32_t* UioDevice::reg(uint32_t offset) const {
  return reinterpret_cast<volatile uint32_t*>(regs_->data() + offset);
}

void UioDevice::check_reg(uint32_t offset) const {
  bool counter = offset >= r::kCounterBase && offset < kRegsEnd;
  if (offset % 4 != 0 || (offset > r::kVersion && !counter))
    throw hw::Error(fmt::format("uio device: no register at 0x{:02x}", offset));
}

void UioDevice::write(DevAddr addr, std::span<const uint8_t> data) {
  check_range(addr, data.size(), "write to device DRAM");
  copy_to_device(buf_->data() + addr, data.data(), data.size());
}

void UioDevice::read(DevAddr addr, std::span<uint8_t> data) {
  check_range(addr, data.size(), "read from device DRAM");
  copy_from_device(data.data(), buf_->data() + addr, data.size());
}

void UioDevice::write_reg(uint32_t offset, uint32_t value) {
  switch (offset) {
    case r::kInsnCount: *reg(offset) = value; return;
    case r::kInsnAddrLo:
    case r::kInsnAddrHi: {
      // The registers hold a bus address; this device's view of them is a DevAddr.
      uint64_t addr = uint64_t{read_reg(r::kInsnAddrHi)} << 32 | read_reg(r::kInsnAddrLo);
      addr = offset == r::kInsnAddrLo ? (addr & ~uint64_t{0xffffffff}) | value
                                      : (addr & 0xffffffff) | uint64_t{value} << 32;
      uint64_t bus = bus_base_ + addr;
      *reg(r::kInsnAddrLo) = static_cast<uint32_t>(bus);
      *reg(r::kInsnAddrHi) = static_cast<uint32_t>(bus >> 32);
      return;
    }
    case r::kCtrl: start(value); return;
    default:
      check_reg(offset);
      throw hw::Error(fmt::format("uio device: register 0x{:02x} is not writable", offset));
  }
}

uint32_t UioDevice::read_reg(uint32_t offset) {
  check_reg(offset);
  if (offset != r::kInsnAddrLo && offset != r::kInsnAddrHi) return *reg(offset);
  uint64_t bus = uint64_t{*reg(r::kInsnAddrHi)} << 32 | *reg(r::kInsnAddrLo);
  // Outside the buffer (say, the reset value 0 below it) the raw bus address shows.
  uint64_t addr = bus >= bus_base_ && bus - bus_base_ <= dram_bytes() ? bus - bus_base_ : bus;
  return offset == r::kInsnAddrLo ? static_cast<uint32_t>(addr) : static_cast<uint32_t>(addr >> 32);
}

void UioDevice::start(uint32_t value) {
  if (!(value & r::kCtrlStart)) {
    *reg(r::kCtrl) = value;
    return;
  }
  if (original_) restore_stream();  // a previous run nobody waited for
  uint32_t status = *reg(r::kStatus);
  if (status & r::kStatusBusy) {
    throw hw::Error(fmt::format("uio device: the accelerator at {} is still busy (status 0x{:x}) "
                                "from an earlier run; write CTRL abort (bit 1) to end it, or "
                                "reload the bitstream",
                                regs_->path(), status));
  }
  run_addr_ = (uint64_t{read_reg(r::kInsnAddrHi)} << 32) | read_reg(r::kInsnAddrLo);
  run_count_ = *reg(r::kInsnCount);
  relocate_stream(run_addr_, run_count_);
  error_.clear();
  io_barrier();
  *reg(r::kCtrl) = value;
  io_barrier();
}

void UioDevice::relocate_stream(DevAddr insn_addr, uint32_t insn_count) {
  if (bus_base_ == 0) return;
  uint64_t bytes = uint64_t{insn_count} * hw::kInsnBytes;
  check_range(insn_addr, bytes, "instruction stream");
  Original original{insn_addr, std::vector<uint8_t>(bytes)};
  read(insn_addr, original.bytes);
  std::vector<hw::Insn> insns;
  try {
    insns = hw::decode_program(layout_, original.bytes);
  } catch (const hw::Error& e) {
    throw hw::Error(fmt::format("uio device: the instruction stream at 0x{:x}: {}", insn_addr,
                                e.what()));
  }
  std::vector<uint8_t> moved = original.bytes;
  for (size_t i = 0; i < insns.size(); ++i) {
    hw::Insn& insn = insns[i];
    if (insn.opcode != hw::Opcode::kLoad && insn.opcode != hw::Opcode::kStore) continue;
    uint64_t base = insn.dram_base + bus_base_ / hw::mem_elem_bytes(config(), insn.memory_type);
    if (base > uint64_t{UINT32_MAX}) {
      throw hw::Error(fmt::format("uio device: instruction {} ({}): dram_base 0x{:x} plus the "
                                  "buffer's bus address 0x{:x} does not fit 32 bits",
                                  i, hw::opcode_name(insn.opcode), insn.dram_base, bus_base_));
    }
    insn.dram_base = static_cast<uint32_t>(base);
    std::vector<uint8_t> bits = hw::encode_program(layout_, std::span(&insn, 1));
    std::copy(bits.begin(), bits.end(), moved.begin() + static_cast<std::ptrdiff_t>(i * hw::kInsnBytes));
  }
  write(insn_addr, moved);
  original_ = std::move(original);
}

void UioDevice::restore_stream() {
  if (!original_) return;
  write(original_->addr, original_->bytes);
  original_.reset();
}

// Writes CTRL abort and waits briefly for STATUS done: kiln_top shows it at once, then
// drains its memory port and resets its modules before it takes the next start.
bool UioDevice::abort_run() {
  using Clock = std::chrono::steady_clock;
  constexpr std::chrono::milliseconds kAbortWait{100};
  io_barrier();
  *reg(r::kCtrl) = r::kCtrlAbort;
  io_barrier();
  auto deadline = Clock::now() + kAbortWait;
  for (;;) {
    uint32_t status = *reg(r::kStatus);
    if ((status & r::kStatusDone) && !(status & r::kStatusBusy)) return true;
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

uint32_t UioDevice::wait_done() {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration<double>(options().uio_timeout_s);
  for (int polls = 0;; ++polls) {
    // CTRL reads 0 once the start is taken (at once on the RTL, whose CTRL reads 0).
    bool taken = !(*reg(r::kCtrl) & r::kCtrlStart);
    uint32_t status = *reg(r::kStatus);
    if (taken && (status & (r::kStatusDone | r::kStatusError))) {
      io_barrier();
      restore_stream();
      if (status & r::kStatusError) {
        // The hardware has a status bit and a cause, not fsim's message naming the
        // instruction.
        std::string cause = r::status_error_text(status);
        error_ = fmt::format("uio device: the accelerator stopped with an error (STATUS 0x{:04x}): "
                             "{}; running {} instructions at 0x{:x}; run the program on the "
                             "fsim or rtl device for the instruction",
                             status, cause.empty() ? "it gives no cause" : cause, run_count_,
                             run_addr_);
      }
      return status;
    }
    if (Clock::now() > deadline) {
      bool aborted = abort_run();
      restore_stream();
      throw hw::Error(fmt::format(
          "uio device: no done from the accelerator within {} s (STATUS 0x{:02x}{}) running {} "
          "instructions at 0x{:x}; a stream that deadlocks (waits for a dependency token no "
          "instruction pushes) or a stalled memory port never finishes: run it on the fsim "
          "or rtl device for a diagnosis, or allow more time (DeviceOptions::uio_timeout_s, "
          "kiln sim --timeout); {}",
          options().uio_timeout_s, status, taken ? "" : ", start not taken", run_count_,
          run_addr_,
          aborted ? "the run was aborted (CTRL abort) and the accelerator takes the next run"
                  : "the abort (CTRL bit 1) was not taken, so the accelerator stays busy until "
                    "the bitstream is reloaded (a bitstream older than the abort?)"));
    }
    // Spin briefly for short runs, then give the core away.
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

std::unique_ptr<Device> make_uio_device(const hw::Config& cfg, const DeviceOptions& opts) {
  return std::make_unique<UioDevice>(cfg, opts);
}

}  // namespace kiln::driver
