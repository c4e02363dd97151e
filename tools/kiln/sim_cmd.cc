// kiln sim: run a program file on a device against a DRAM image.

#include <fmt/format.h>

#include <algorithm>
#include <memory>
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
#include "tools/kiln/device_flags.h"

namespace kiln::cli {

namespace {

struct SimArgs {
  std::string device = "fsim";
  std::string config;
  std::string program, dram_in, dram_out;
  uint64_t dram_bytes = 0;
  DeviceFlags flags;
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


void run_sim(const SimArgs& a) {
  hw::Config cfg = load_config(a.config);
  std::vector<uint8_t> prog = read_bytes(a.program);
  if (prog.empty() || prog.size() % hw::kInsnBytes != 0) {
    throw hw::Error(fmt::format("{}: a program is a non-empty whole number of 16-byte "
                                "instructions; it has {} bytes",
                                a.program, prog.size()));
  }
  std::vector<uint8_t> image;
  if (!a.dram_in.empty()) image = read_bytes(a.dram_in);

  // IN.bin at address 0, the instruction stream after it, the rest zero.
  uint64_t insn_addr = round_up(image.size(), 64);
  uint64_t needed = insn_addr + prog.size();
  uint64_t dram_bytes = a.dram_bytes ? a.dram_bytes : round_up(needed, 4096);
  if (dram_bytes < needed) {
    throw hw::Error(fmt::format("--dram-bytes {} is too small: the image ({} bytes) and the program "
                                "({} bytes at 0x{:x}) need {}",
                                dram_bytes, image.size(), prog.size(), insn_addr, needed));
  }
  driver::DeviceOptions base;
  base.dram_bytes = dram_bytes;
  driver::DeviceOptions opts = a.flags.options(a.device, base);
  auto insn_count = static_cast<uint32_t>(prog.size() / hw::kInsnBytes);
#ifdef KILN_HAVE_SYSTEMC
  if (a.device == "systemc") {
    // Every accelerator of the platform runs the program at once, each in its own
    // window of the shared memory; the first one's DRAM and counters are printed.
    opts.dram_bytes = dram_bytes * uint64_t(std::max(1, opts.accelerators));
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
  a->flags.add_to(sim, {"dram_mb"});
  sim->callback([a] { run_sim(*a); });
}

}  // namespace kiln::cli
