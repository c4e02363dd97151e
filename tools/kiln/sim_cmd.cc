// kiln sim: run a program file on a device against a DRAM image.

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <tuple>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "hw/driver/device.h"
#ifdef KILN_HAVE_SYSTEMC
#include <chrono>

#include "hw/driver/systemc/systemc_device.h"
#endif
#include "hw/spec/error.h"
#include "hw/spec/isa.h"
#include "support/integer.h"
#include "tools/kiln/common.h"

namespace kiln::cli {

namespace {

struct SimArgs {
  std::string device = "fsim";
  std::string core = "decoupled";
  std::string config;
  std::string program, dram_in, dram_out, wave, trace;
  uint64_t dram_bytes = 0;
  uint64_t watchdog = 0;
  int dram_latency = -1;
  int dram_bytes_per_cycle = -1;
  std::string memory;
  double dram_gbps = -1;
  double clock_mhz = 100;
  int accelerators = 1;
  bool backpressure = false;
  uint64_t seed = 1;
  std::string uio_registers, uio_buffer;
  std::optional<uint64_t> uio_buffer_phys;
  double timeout = 0;
  std::string uart_port;
  int uart_baud = 0;
  bool json = false;
};

void print_sim_result(const SimArgs& a, const hw::Config& cfg, uint32_t insn_count,
                      uint64_t insn_addr, uint64_t dram_bytes, driver::Device& dev,
                      const nlohmann::ordered_json* platform);

#ifdef KILN_HAVE_SYSTEMC
struct SystemcRun {
  std::vector<std::unique_ptr<driver::Device>> devices;
  nlohmann::ordered_json report;  // the platform: memory, traffic, simulation speed
};

SystemcRun run_on_systemc(const hw::Config& cfg, const driver::DeviceOptions& opts,
                          const std::vector<uint8_t>& image, const std::vector<uint8_t>& prog,
                          uint64_t insn_addr) {
  SystemcRun r;
  r.devices = driver::make_systemc_devices(cfg, opts);
  for (auto& d : r.devices) {
    d->write(0, image);
    d->write(insn_addr, prog);
  }
  auto& platform = static_cast<driver::SystemcDevice&>(*r.devices.front()).platform();
  uint64_t cycles_before = platform.stats().cycles;
  auto t0 = std::chrono::steady_clock::now();
  driver::run_together(r.devices, insn_addr, static_cast<uint32_t>(prog.size() / hw::kInsnBytes));
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sim::sc::PlatformStats s = platform.stats();
  const sim::sc::MemoryTiming& m = platform.options().memory;
  nlohmann::ordered_json& j = r.report;
  j["memory"] = {{"name", m.name}, {"latency_cycles", m.latency},
                 {"read_bytes_per_cycle", m.read_bytes_per_cycle},
                 {"write_bytes_per_cycle", m.write_bytes_per_cycle}, {"shared_bus", m.shared_bus},
                 {"banks", m.banks}, {"row_bytes", m.row_bytes}};
  j["clock_mhz"] = platform.options().clock_mhz;
  j["accelerators"] = platform.accelerators();
  nlohmann::ordered_json per = nlohmann::ordered_json::array();
  for (size_t i = 0; i < r.devices.size(); ++i) {
    driver::Counters c = r.devices[i]->counters();
    per.push_back({{"cycles", c[hw::regs::Counter::kCycles]},
                   {"read_bytes", s.ports[i].read_bytes},
                   {"write_bytes", s.ports[i].write_bytes}});
  }
  j["per_accelerator"] = per;
  uint64_t cycles = s.cycles - cycles_before;
  j["memory_traffic"] = {{"read_bursts", s.memory.read_bursts},
                         {"write_bursts", s.memory.write_bursts},
                         {"read_bytes", s.memory.read_bytes},
                         {"write_bytes", s.memory.write_bytes},
                         {"row_hits", s.memory.row_hits},
                         {"row_misses", s.memory.row_misses},
                         {"refresh_stalls", s.memory.refresh_stalls},
                         {"read_bus_busy", cycles ? s.memory.read_busy / double(s.cycles) : 0.0},
                         {"write_bus_busy", cycles ? s.memory.write_busy / double(s.cycles) : 0.0}};
  j["simulated_cycles"] = cycles;
  j["wall_seconds"] = wall;
  j["cycles_per_second"] = wall > 0 ? double(cycles) / wall : 0.0;
  return r;
}
#endif

// "PATH" or "PATH@OFFSET" (an mmap offset: with /dev/mem, the physical address).
std::pair<std::string, uint64_t> path_at(const std::string& arg, const char* option) {
  size_t at = arg.rfind('@');
  if (at == std::string::npos) return {arg, 0};
  try {
    size_t used = 0;
    uint64_t offset = std::stoull(arg.substr(at + 1), &used, 0);
    if (used == arg.size() - at - 1) return {arg.substr(0, at), offset};
  } catch (const std::exception&) {
  }
  throw hw::Error(fmt::format("{} {}: expected PATH or PATH@OFFSET (say /dev/mem@0x43c00000)",
                              option, arg));
}

void run_sim(const SimArgs& a) {
  hw::Config cfg = load_config(a.config);
  std::vector<uint8_t> prog = read_file(a.program);
  if (prog.empty() || prog.size() % hw::kInsnBytes != 0) {
    throw hw::Error(fmt::format("{}: a program is a non-empty whole number of 16-byte "
                                "instructions; it has {} bytes",
                                a.program, prog.size()));
  }
  std::vector<uint8_t> image;
  if (!a.dram_in.empty()) image = read_file(a.dram_in);

  // IN.bin at address 0, the instruction stream after it, the rest zero.
  uint64_t insn_addr = round_up(image.size(), 64);
  uint64_t needed = insn_addr + prog.size();
  uint64_t dram_bytes = a.dram_bytes ? a.dram_bytes : round_up(needed, 4096);
  if (dram_bytes < needed) {
    throw hw::Error(fmt::format("--dram-bytes {} is too small: the image ({} bytes) and the program "
                                "({} bytes at 0x{:x}) need {}",
                                dram_bytes, image.size(), prog.size(), insn_addr, needed));
  }
  if (!a.trace.empty() && a.device == "systemc")
    throw hw::Error("--trace is the rtl device's module timeline; on systemc, --wave writes the "
                    "platform's signals");
  if (!a.trace.empty() && a.device == "fsim")
    throw hw::Error("--trace records clock cycles: the fsim device has none; use --device rtl");
  driver::DeviceOptions opts;
  opts.dram_bytes = dram_bytes;
  opts.core = a.core;
  opts.wave_file = a.wave;
  opts.trace_file = a.trace;
  if (a.watchdog) opts.watchdog_cycles = a.watchdog;
  opts.dram_latency = a.dram_latency;
  opts.dram_bytes_per_cycle = a.dram_bytes_per_cycle;
  opts.dram_backpressure = a.backpressure;
  opts.seed = a.seed;
  opts.memory = a.memory;
  opts.dram_gbps = a.dram_gbps;
  opts.clock_mhz = a.clock_mhz;
  opts.accelerators = a.accelerators;
  if (a.device != "systemc" && (!a.memory.empty() || a.dram_gbps != -1 || a.accelerators != 1))
    throw hw::Error(fmt::format("--memory, --dram-gbps and --accelerators are the systemc device's; "
                                "--device is {}",
                                a.device));
  if (!a.uio_registers.empty())
    std::tie(opts.uio_registers, opts.uio_registers_offset) = path_at(a.uio_registers, "--uio-registers");
  if (!a.uio_buffer.empty())
    std::tie(opts.uio_buffer, opts.uio_buffer_offset) = path_at(a.uio_buffer, "--uio-buffer");
  opts.uio_buffer_phys = a.uio_buffer_phys;
  if (a.timeout > 0) opts.uio_timeout_s = opts.uart_timeout_s = a.timeout;
  if (!a.uart_port.empty()) opts.uart_port = a.uart_port;
  if (a.uart_baud > 0) opts.uart_baud = a.uart_baud;
  auto insn_count = static_cast<uint32_t>(prog.size() / hw::kInsnBytes);
#ifdef KILN_HAVE_SYSTEMC
  if (a.device == "systemc") {
    // Every accelerator of the platform runs the program at once, each in its own
    // window of the shared memory; the first one's DRAM and counters are printed.
    opts.dram_bytes = dram_bytes * uint64_t(std::max(1, a.accelerators));
    SystemcRun run = run_on_systemc(cfg, opts, image, prog, insn_addr);
    print_sim_result(a, cfg, insn_count, insn_addr, dram_bytes, *run.devices.front(), &run.report);
    return;
  }
#endif
  std::unique_ptr<driver::Device> dev = driver::make_device(a.device, cfg, opts);
  dev->write(0, image);
  dev->write(insn_addr, prog);
  dev->run(insn_addr, insn_count);
  print_sim_result(a, cfg, insn_count, insn_addr, dram_bytes, *dev, nullptr);
}

void print_sim_result(const SimArgs& a, const hw::Config& cfg, uint32_t insn_count,
                      uint64_t insn_addr, uint64_t dram_bytes, driver::Device& dev,
                      const nlohmann::ordered_json* platform) {

  if (!a.dram_out.empty()) {
    std::vector<uint8_t> out(dram_bytes);
    dev.read(0, out);
    write_file(a.dram_out, out);
  }
  driver::Counters counters = dev.counters();
  if (a.json) {
    nlohmann::ordered_json j;
    j["device"] = a.device;
    j["config"] = cfg.name();
    j["fingerprint"] = fmt::format("{:016x}", cfg.fingerprint());
    j["instructions"] = insn_count;
    j["program_address"] = insn_addr;
    j["dram_bytes"] = dram_bytes;
    nlohmann::ordered_json c = nlohmann::ordered_json::object();
    for (const auto& info : hw::regs::kCounters)
      if (counters.count(info.id)) c[std::string(info.name)] = counters.at(info.id);
    j["counters"] = c;
    if (platform) j["platform"] = *platform;
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("ran {} instructions on {} ({}), program at 0x{:x}, {} bytes of DRAM\n", insn_count,
             a.device, cfg.name(), insn_addr, dram_bytes);
  for (const auto& info : hw::regs::kCounters)
    if (counters.count(info.id))
      fmt::print("  {:<22} {:>14}   {}\n", info.name, counters.at(info.id), info.description);
  if (platform) fmt::print("platform: {}\n", platform->dump(2));
}

}  // namespace

void add_sim_command(CLI::App& app) {
  auto a = std::make_shared<SimArgs>();
  CLI::App* sim = app.add_subcommand(
      "sim", "run PROG.bin on a device: IN.bin at DRAM address 0, the program after it");
  sim->add_option("--device", a->device, "device to run on (see `kiln hw devices`)")
      ->default_val("fsim");
  add_config_option(sim, a->config);
  sim->add_option("--program", a->program, "instruction stream (PROG.bin)")->required();
  sim->add_option("--dram", a->dram_in, "initial DRAM image, mapped at address 0");
  sim->add_option("--dram-out", a->dram_out, "write the whole DRAM image here after the run");
  sim->add_option("--dram-bytes", a->dram_bytes,
                  "DRAM size (default: the image and the program, rounded up to 4 KiB)");
  sim->add_flag("--json", a->json, "print the run's figures as one JSON object");
  sim->add_option("--core", a->core,
                  "rtl: the RTL core, decoupled (kiln_top) or inorder (kiln_inorder_top)")
      ->check(CLI::IsMember({"decoupled", "inorder"}));
  sim->add_option("--wave", a->wave,
                  "rtl: write an FST waveform of the run; systemc: a VCD of the platform's signals");
  sim->add_option("--trace", a->trace,
                  "rtl: write a timeline of module activity as Chrome trace JSON (Perfetto)");
  sim->add_option("--watchdog", a->watchdog,
                  "rtl, systemc: cycles without progress that abort the run");
  sim->add_option("--dram-latency", a->dram_latency, "rtl, systemc: DRAM latency in cycles");
  sim->add_option("--dram-bytes-per-cycle", a->dram_bytes_per_cycle,
                  "rtl, systemc: DRAM bandwidth in bytes per cycle");
  sim->add_flag("--backpressure", a->backpressure,
                "rtl, systemc: random AXI back-pressure from DRAM");
  sim->add_option("--seed", a->seed, "rtl: seed of the back-pressure pattern");
  sim->add_option("--memory", a->memory,
                  "systemc: memory preset (zynq7000-hp, zynqmp-hp, ddr4-2400-x64, lpddr4-3200-x32, "
                  "hbm2-pc; default: the rtl harness's timing)");
  sim->add_option("--dram-gbps", a->dram_gbps, "systemc: memory bandwidth in GB/s each way");
  sim->add_option("--clock-mhz", a->clock_mhz, "systemc: the platform clock (default 100)");
  sim->add_option("--accelerators", a->accelerators,
                  "systemc: accelerators sharing the memory, each running the program");
  sim->add_option("--uio-registers", a->uio_registers,
                  "uio: the register file, PATH[@OFFSET] (default: the UIO device named kiln)");
  sim->add_option("--uio-buffer", a->uio_buffer,
                  "uio: the DMA buffer that is device DRAM, PATH[@OFFSET] (default /dev/udmabuf0)");
  sim->add_option("--uio-buffer-phys", a->uio_buffer_phys,
                  "uio: the buffer's bus address (default: u-dma-buf's sysfs, or /dev/mem's offset)");
  sim->add_option("--timeout", a->timeout, "uio, uart: seconds a run may take (default 10)");
  sim->add_option("--uart-port", a->uart_port,
                  "uart: the board's serial port (default /dev/ttyUSB1, the iCEBreaker's FTDI channel B)");
  sim->add_option("--uart-baud", a->uart_baud,
                  "uart: the bitstream's baud rate (default 1000000, board.json host_link.baud)");
  sim->callback([a] { run_sim(*a); });
}

}  // namespace kiln::cli
