#include "hw/driver/device_settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "hw/spec/error.h"
#include "hw/spec/isa.h"

namespace kiln::driver {

namespace {

// Values parse whole or not at all; the message names the setting in apply_device_setting.
struct BadValue {
  std::string why;
};

uint64_t parse_u64(const std::string& v, uint64_t max = std::numeric_limits<uint64_t>::max()) {
  if (v.empty() || v[0] == '-' || v[0] == '+') throw BadValue{"expected a whole number"};
  errno = 0;
  char* end = nullptr;
  unsigned long long r = std::strtoull(v.c_str(), &end, 0);
  if (errno == ERANGE || *end != '\0' || end == v.c_str()) throw BadValue{"expected a whole number"};
  if (r > max) throw BadValue{fmt::format("at most {}", max)};
  return r;
}

int parse_int(const std::string& v, int min, int max) {
  errno = 0;
  char* end = nullptr;
  long long r = std::strtoll(v.c_str(), &end, 0);
  if (v.empty() || errno == ERANGE || *end != '\0') throw BadValue{"expected a whole number"};
  if (r < min || r > max) throw BadValue{fmt::format("expected {} to {}", min, max)};
  return static_cast<int>(r);
}

double parse_positive(const std::string& v) {
  errno = 0;
  char* end = nullptr;
  double r = std::strtod(v.c_str(), &end);
  if (v.empty() || errno == ERANGE || *end != '\0' || !std::isfinite(r) || !(r > 0))
    throw BadValue{"expected a number above 0"};
  return r;
}

bool parse_switch(const std::string& v) {
  if (v.empty() || v == "1" || v == "true" || v == "on") return true;
  if (v == "0" || v == "false" || v == "off") return false;
  throw BadValue{"expected 1 or 0"};
}

// "PATH" or "PATH@OFFSET" (an mmap offset: with /dev/mem, the physical address).
std::pair<std::string, uint64_t> path_at(const std::string& v) {
  size_t at = v.rfind('@');
  if (v.empty() || at == 0) throw BadValue{"expected PATH or PATH@OFFSET (say /dev/mem@0x43c00000)"};
  if (at == std::string::npos) return {v, 0};
  try {
    return {v.substr(0, at), parse_u64(v.substr(at + 1))};
  } catch (const BadValue&) {
    throw BadValue{"expected PATH or PATH@OFFSET (say /dev/mem@0x43c00000)"};
  }
}

constexpr const char* kFaultKinds =
    "dram-read-error:N (the N-th read burst answered SLVERR), dram-hang:N (the DRAM stops "
    "answering after N read beats), reg-drop:REGISTER[:N] (the N-th write to ctrl, "
    "insn_count, insn_addr_lo or insn_addr_hi is lost), sram-stuck:BUFFER:WORD:BIT:VALUE[:N] "
    "(during the N-th run, a bit of a uop, wgt, inp or acc word is stuck at 0 or 1)";

sim::InjectedFault parse_fault_value(const std::string& v) {
  using Kind = sim::InjectedFault::Kind;
  sim::InjectedFault f;
  f.text = v;
  if (v.empty()) return f;
  size_t colon = v.find(':');
  std::string kind = v.substr(0, colon);
  std::string args = colon == std::string::npos ? "" : v.substr(colon + 1);
  auto count = [&](const std::string& n, uint64_t min) {
    uint64_t r = parse_u64(n);
    if (r < min) throw BadValue{fmt::format("{}'s count is at least {}", kind, min)};
    return r;
  };
  if (kind == "dram-read-error" || kind == "dram-hang") {
    if (args.empty()) throw BadValue{fmt::format("{} needs its count: {}:N", kind, kind)};
    f.kind = kind == "dram-hang" ? Kind::kDramHang : Kind::kDramReadError;
    f.n = count(args, 1);
    return f;
  }
  if (kind == "reg-drop") {
    size_t c2 = args.find(':');
    std::string reg = args.substr(0, c2);
    f.kind = Kind::kRegDrop;
    f.n = c2 == std::string::npos ? 1 : count(args.substr(c2 + 1), 1);
    std::vector<std::string_view> names;
    for (const hw::regs::WritableReg& w : hw::regs::kWritableRegs) {
      if (w.name == reg) {
        f.reg = w.offset;
        return f;
      }
      names.push_back(w.name);
    }
    throw BadValue{fmt::format("reg-drop names a writable register ({}), not '{}'",
                               fmt::join(names, ", "), reg)};
  }
  if (kind == "sram-stuck") {
    std::vector<std::string> parts;
    for (size_t at = 0;;) {
      size_t next = args.find(':', at);
      parts.push_back(args.substr(at, next == std::string::npos ? std::string::npos : next - at));
      if (next == std::string::npos) break;
      at = next + 1;
    }
    constexpr const char* kForm = "sram-stuck:BUFFER:WORD:BIT:VALUE[:N] (say sram-stuck:inp:3:5:1)";
    if (args.empty() || parts.size() < 4 || parts.size() > 5)
      throw BadValue{fmt::format("expected {}", kForm)};
    f.kind = Kind::kSramStuck;
    bool found = false;
    for (hw::MemType m : {hw::MemType::kUop, hw::MemType::kWgt, hw::MemType::kInp, hw::MemType::kAcc})
      if (hw::mem_type_name(m) == parts[0]) f.mem = static_cast<uint8_t>(m), found = true;
    if (!found)
      throw BadValue{fmt::format("sram-stuck names a scratchpad (uop, wgt, inp or acc), not '{}' "
                                 "(OUT is ACC's low bits)",
                                 parts[0])};
    f.word = parse_u64(parts[1]);
    uint64_t bit = parse_u64(parts[2]);
    if (bit > 0xffff) throw BadValue{fmt::format("sram-stuck's bit {} is past any word's width", bit)};
    f.bit = static_cast<uint32_t>(bit);
    if (parts[3] != "0" && parts[3] != "1")
      throw BadValue{fmt::format("sram-stuck's value is 0 or 1, not '{}'", parts[3])};
    f.value = parts[3] == "1";
    f.n = parts.size() == 5 ? count(parts[4], 1) : 1;
    return f;
  }
  throw BadValue{fmt::format("no fault kind '{}'; the kinds: {}", kind, kFaultKinds)};
}

constexpr DeviceSetting kSettings[] = {
    {"dram_mb", "fsim,rtl,systemc,uio,uart,uart-sim", "N",
     "device DRAM in MiB (default 64; the accelerator targets' 256)",
     [](DeviceOptions& o, const std::string& v) { o.dram_bytes = parse_u64(v, 1 << 16) << 20; }},
    {"core", "rtl", "decoupled|inorder", "the RTL core: decoupled (kiln_top) or inorder (kiln_inorder_top)",
     [](DeviceOptions& o, const std::string& v) {
       if (v != "decoupled" && v != "inorder") throw BadValue{"expected decoupled or inorder"};
       o.core = v;
     }},
    {"build_model", "rtl", "",
     "Verilate the configuration at run time when this kiln has no model of it (seconds to "
     "minutes; cached in ~/.cache/kiln/rtl-models or $KILN_RTL_MODEL_CACHE)",
     [](DeviceOptions& o, const std::string& v) { o.build_model = parse_switch(v); }},
    {"wave", "rtl,systemc,uart-sim", "FILE",
     "write a waveform: rtl and uart-sim FST, systemc a VCD of the platform's signals",
     [](DeviceOptions& o, const std::string& v) { o.wave_file = v; }},
    {"trace", "rtl,systemc", "FILE",
     "write a timeline of the modules' activity as Chrome trace JSON (systemc: with each AXI "
     "port's and the memory's occupancy)",
     [](DeviceOptions& o, const std::string& v) { o.trace_file = v; }},
    {"watchdog", "rtl,systemc,uart-sim", "N",
     "cycles without progress that abort a run, with a report of what each module waits for",
     [](DeviceOptions& o, const std::string& v) { o.watchdog_cycles = parse_u64(v); }},
    {"dram_latency", "rtl,systemc", "N", "DRAM latency in cycles",
     [](DeviceOptions& o, const std::string& v) { o.dram_latency = parse_int(v, 0, 1 << 20); }},
    {"dram_bytes_per_cycle", "rtl,systemc", "N", "DRAM bandwidth in bytes per cycle each way",
     [](DeviceOptions& o, const std::string& v) { o.dram_bytes_per_cycle = parse_int(v, 1, 1 << 16); }},
    {"backpressure", "rtl,systemc", "", "random AXI back-pressure from DRAM",
     [](DeviceOptions& o, const std::string& v) { o.dram_backpressure = parse_switch(v); }},
    {"seed", "rtl,systemc", "N", "seed of the back-pressure pattern",
     [](DeviceOptions& o, const std::string& v) { o.seed = parse_u64(v); }},
    {"fault", "rtl", "KIND[:ARGS]",
     "inject one hardware fault, counted from the device's start: dram-read-error:N, "
     "dram-hang:N, reg-drop:REGISTER[:N], sram-stuck:BUFFER:WORD:BIT:VALUE[:N] (docs/testing.md, "
     "the fault model)",
     [](DeviceOptions& o, const std::string& v) {
       (void)parse_fault_value(v);
       o.fault = v;
     }},
    {"memory", "systemc", "PRESET",
     "the memory preset: zynq7000-hp, zynqmp-hp, ddr4-2400-x64, lpddr4-3200-x32, hbm2-pc "
     "(default: the rtl harness's timing)",
     [](DeviceOptions& o, const std::string& v) { o.memory = v; }},
    {"dram_gbps", "systemc", "G", "memory bandwidth in GB/s each way, at the platform clock",
     [](DeviceOptions& o, const std::string& v) { o.dram_gbps = parse_positive(v); }},
    {"clock_mhz", "systemc", "F", "the platform clock in MHz (default 100)",
     [](DeviceOptions& o, const std::string& v) { o.clock_mhz = parse_positive(v); }},
    {"accelerators", "systemc", "N", "accelerators sharing the memory",
     [](DeviceOptions& o, const std::string& v) { o.accelerators = parse_int(v, 1, 16); }},
    {"uio_registers", "uio", "PATH[@OFFSET]",
     "the register file: a UIO node or /dev/mem@ADDR (default: the UIO device named kiln)",
     [](DeviceOptions& o, const std::string& v) {
       std::tie(o.uio_registers, o.uio_registers_offset) = path_at(v);
     }},
    {"uio_buffer", "uio", "PATH[@OFFSET]",
     "the DMA buffer that is device DRAM (default /dev/udmabuf0)",
     [](DeviceOptions& o, const std::string& v) { std::tie(o.uio_buffer, o.uio_buffer_offset) = path_at(v); }},
    {"uio_buffer_phys", "uio", "ADDR",
     "the buffer's bus address (default: u-dma-buf's sysfs, or /dev/mem's offset)",
     [](DeviceOptions& o, const std::string& v) { o.uio_buffer_phys = parse_u64(v); }},
    {"timeout", "uio,uart", "SECONDS", "wall-clock seconds a run may take (default 10)",
     [](DeviceOptions& o, const std::string& v) { o.uio_timeout_s = o.uart_timeout_s = parse_positive(v); }},
    {"uart_port", "uart", "PATH", "the board's serial port (default /dev/ttyUSB1)",
     [](DeviceOptions& o, const std::string& v) { o.uart_port = v; }},
    {"uart_baud", "uart", "N", "the bitstream's baud rate (default 1000000)",
     [](DeviceOptions& o, const std::string& v) { o.uart_baud = parse_int(v, 1, 1 << 30); }},
};

}  // namespace

std::span<const DeviceSetting> device_settings() { return kSettings; }

const DeviceSetting* find_device_setting(std::string_view name) {
  std::string key(name);
  std::replace(key.begin(), key.end(), '-', '_');
  for (const DeviceSetting& s : kSettings)
    if (s.name == key) return &s;
  return nullptr;
}

bool device_takes(const DeviceSetting& s, std::string_view device) {
  std::string_view list = s.devices;
  while (!list.empty()) {
    size_t comma = list.find(',');
    if (list.substr(0, comma) == device) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::string flag_of(const DeviceSetting& s) {
  std::string f = "--" + std::string(s.name);
  std::replace(f.begin(), f.end(), '_', '-');
  return f;
}

sim::InjectedFault parse_fault(const std::string& text) {
  try {
    return parse_fault_value(text);
  } catch (const BadValue& e) {
    throw hw::Error(fmt::format("--fault {}: {}", text, e.why));
  }
}

void apply_device_setting(DeviceOptions& o, std::string_view device, const DeviceSetting& s,
                          const std::string& value, std::string_view spelled) {
  if (!device_takes(s, device)) {
    std::string devices(s.devices);
    std::replace(devices.begin(), devices.end(), ',', '|');
    throw hw::Error(fmt::format("{} applies to --device {}; the device is {}", spelled, devices, device));
  }
  try {
    s.apply(o, value);
  } catch (const BadValue& e) {
    throw hw::Error(fmt::format("{} {}: {}", spelled, value, e.why));
  }
}

}  // namespace kiln::driver
