// The SystemC platform: random legal streams (hw/sim/testing) on the systemc device and
// on fsim (the golden model) leave identical DRAM images and untimed counters, under
// the rtl harness's timing, each memory preset and random AXI back-pressure; at the rtl
// harness's timing the cycle counts match the rtl device's; a deadlocked stream ends
// in a watchdog report naming the waiting module; bad options are refused by name.
// A failure prints the seed to replay it.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "hw/driver/fsim_device.h"
#include "hw/driver/rtl/rtl_device.h"
#include "hw/driver/systemc/systemc_device.h"
#include "hw/sim/systemc/memory_model.h"
#include "hw/sim/testing/random_program.h"
#include "hw/spec/error.h"
#include "hw/spec/isa.h"
#include "tests/support/hw_test.h"

namespace kiln {
namespace {

using driver::DeviceOptions;
using hw::regs::Counter;
using sim::testing::RandomProgram;
using test::expect_error;

hw::Config config(const char* name) { return test::shipped_config(name); }

// Streams per case; KILN_SYSTEMC_STREAMS overrides (e.g. 1000 for a soak).
int stream_count(int fallback) {
  const char* s = std::getenv("KILN_SYSTEMC_STREAMS");
  return s ? std::atoi(s) : fallback;
}

DeviceOptions sized_for(const RandomProgram& p, DeviceOptions opts) {
  opts.dram_bytes = (p.dram.size() + 4095) / 4096 * 4096;
  return opts;
}

// Runs p on `dev` and on fsim; returns "" or what differs.
std::string compare_with_fsim(driver::Device& dev, const hw::Config& cfg, const RandomProgram& p) {
  driver::FsimDevice fsim(cfg, dev.options());
  fsim.write(0, p.dram);
  dev.write(0, p.dram);
  fsim.run(p.insn_addr, p.insn_count);
  try {
    dev.run(p.insn_addr, p.insn_count);
  } catch (const hw::Error& e) {
    return fmt::format("systemc failed: {}", e.what());
  }
  std::vector<uint8_t> a(p.dram.size()), b(p.dram.size());
  fsim.read(0, a);
  dev.read(0, b);
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i])
      return fmt::format("DRAM byte 0x{:x} is 0x{:02x} on fsim, 0x{:02x} on systemc", i, a[i], b[i]);
  driver::Counters fc = fsim.counters(), sc = dev.counters();
  for (const auto& [id, v] : fc)
    if (sc[id] != v)
      return fmt::format("counter {} is {} on fsim, {} on systemc",
                         hw::regs::kCounters[static_cast<int>(id)].name, v, sc[id]);
  return "";
}

struct Case {
  std::string config;
  bool backpressure;
  std::string memory;  // "" : the rtl harness's timing
  int streams;
  std::string name() const {
    std::string m = memory.empty() ? "rtl_timing" : memory;
    for (char& c : m)
      if (c == '-') c = '_';
    return config + "_" + m + (backpressure ? "_backpressure" : "");
  }
};

class SystemcDiff : public ::testing::TestWithParam<Case> {};

TEST_P(SystemcDiff, RandomStreamsMatchFsim) {
  const Case& c = GetParam();
  hw::Config cfg = config(c.config.c_str());
  DeviceOptions opts;
  opts.dram_backpressure = c.backpressure;
  opts.memory = c.memory;
  opts.watchdog_cycles = 20000;
  uint64_t cycles = 0;
  int n = stream_count(c.streams);
  for (int i = 0; i < n; ++i) {
    uint64_t seed = 7000003ull * (i + 1) + (c.backpressure ? 7 : 0) + c.memory.size();
    opts.seed = seed;
    RandomProgram p = sim::testing::random_program(cfg, seed);
    auto dev = driver::make_device("systemc", cfg, sized_for(p, opts));
    std::string diff = compare_with_fsim(*dev, cfg, p);
    ASSERT_EQ(diff, "") << "case " << c.name() << ", random_program seed " << seed;
    cycles += dev->counters()[Counter::kCycles];
  }
  EXPECT_GT(cycles, 0u);
  std::printf("%d streams: %llu cycles\n", n, static_cast<unsigned long long>(cycles));
}

INSTANTIATE_TEST_SUITE_P(Platform, SystemcDiff,
                         ::testing::Values(Case{"default", false, "", 12},
                                           Case{"default", true, "", 12},
                                           Case{"tiny", true, "", 25},
                                           Case{"small", true, "", 10},
                                           Case{"tiny", false, "zynq7000-hp", 4},
                                           Case{"tiny", false, "zynqmp-hp", 4},
                                           Case{"tiny", true, "ddr4-2400-x64", 4},
                                           Case{"tiny", false, "lpddr4-3200-x32", 4},
                                           Case{"default", false, "hbm2-pc", 4}),
                         [](const auto& info) { return info.param.name(); });

// With the memory at the rtl harness's timing (32 cycles, 8 bytes per cycle each way)
// the platform's bridge and memory serve bursts as the rtl DRAM model does.
TEST(SystemcPlatform, CyclesMatchTheRtlDeviceAtItsTiming) {
  hw::Config cfg = config("default");
  uint64_t rtl_total = 0, sc_total = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    RandomProgram p = sim::testing::random_program(cfg, seed);
    DeviceOptions opts = sized_for(p, {});
    driver::RtlDevice rtl(cfg, opts);
    auto sc = driver::make_device("systemc", cfg, opts);
    for (driver::Device* d : {static_cast<driver::Device*>(&rtl), sc.get()}) {
      d->write(0, p.dram);
      d->run(p.insn_addr, p.insn_count);
    }
    uint64_t a = rtl.counters()[Counter::kCycles], b = sc->counters()[Counter::kCycles];
    std::printf("seed %llu: rtl %llu cycles, systemc %llu\n", static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
    rtl_total += a;
    sc_total += b;
  }
  double ratio = double(sc_total) / double(rtl_total);
  EXPECT_NEAR(ratio, 1.0, 0.02) << "rtl " << rtl_total << " cycles, systemc " << sc_total;
}

TEST(SystemcPlatform, WatchdogNamesTheWaitingModule) {
  // A compute instruction that pops a load->compute token nobody pushes.
  hw::Config cfg = config("tiny");
  hw::Insn gemm;
  gemm.opcode = hw::Opcode::kGemm;
  gemm.pop_prev_dep = true;
  std::vector<hw::Insn> insns = {gemm, hw::Insn{}};
  DeviceOptions opts;
  opts.dram_bytes = 1 << 16;
  opts.watchdog_cycles = 2000;
  auto dev = driver::make_device("systemc", cfg, opts);
  dev->write(0, hw::encode_program(hw::InsnLayout(cfg), insns));
  expect_error([&] { dev->run(0, 2); },
               {"systemc watchdog", "accel0", "compute: waits for a token", "AXI-to-TLM bridge"});
  namespace r = hw::regs;
  EXPECT_EQ(r::status_cause(dev->read_reg(r::kStatus)), r::ErrorCause::kAborted);
  // The abort left the platform working.
  RandomProgram p = sim::testing::random_program(cfg, 5);
  ASSERT_LE(p.dram.size(), opts.dram_bytes);
  EXPECT_EQ(compare_with_fsim(*dev, cfg, p), "");
}

TEST(SystemcPlatform, ReportsAnAccessOutsideItsMemoryAndRecovers) {
  hw::Config cfg = config("tiny");
  DeviceOptions opts;
  opts.dram_bytes = 1 << 16;
  auto dev = driver::make_device("systemc", cfg, opts);
  hw::Insn load;  // one INP element 1 MiB into a 64 KiB memory
  load.opcode = hw::Opcode::kLoad;
  load.memory_type = hw::MemType::kInp;
  load.dram_base = (1 << 20) / cfg.inp_elem_bytes();
  load.y_size = load.x_size = load.x_stride = 1;
  std::vector<hw::Insn> bad = {load, hw::Insn{}};
  dev->write(0, hw::encode_program(hw::InsnLayout(cfg), bad));
  expect_error([&] { dev->run(0, 2); }, {"outside the 65536 bytes of DRAM"});
  RandomProgram p = sim::testing::random_program(cfg, 3);
  ASSERT_LE(p.dram.size(), opts.dram_bytes);
  std::vector<uint8_t> zero(opts.dram_bytes, 0);
  dev->write(0, zero);
  EXPECT_EQ(compare_with_fsim(*dev, cfg, p), "");
}

TEST(SystemcPlatform, BadOptionsAreRefusedByName) {
  hw::Config cfg = config("tiny");
  DeviceOptions opts;
  opts.dram_bytes = 1 << 16;
  opts.memory = "ddr9";
  expect_error([&] { driver::make_device("systemc", cfg, opts); },
               {"unknown memory preset 'ddr9'", "zynq7000-hp", "hbm2-pc"});
  opts.memory = "";
  opts.dram_bytes_per_cycle = 0;
  expect_error([&] { driver::make_device("systemc", cfg, opts); }, {"bandwidth of 0"});
  opts.dram_bytes_per_cycle = -1;
  opts.dram_gbps = 0;
  expect_error([&] { driver::make_device("systemc", cfg, opts); }, {"bandwidth of 0"});
  opts.dram_gbps = -1;
  opts.accelerators = 0;
  expect_error([&] { driver::make_systemc_devices(cfg, opts); }, {"0 accelerators"});
  opts.accelerators = 1;
  opts.clock_mhz = 0;
  expect_error([&] { driver::make_device("systemc", cfg, opts); }, {"clock of 0 MHz"});
  // A program that needs more memory than the platform has.
  opts.clock_mhz = 100;
  auto dev = driver::make_device("systemc", cfg, opts);
  expect_error([&] { dev->alloc(1 << 20); }, {"systemc device: out of DRAM", "65536 bytes"});
  // A configuration the build has no SystemC model of.
  hw::ConfigParams params = config("default").params();
  params.log_inp_buff_size -= 1;
  expect_error([&] { driver::make_device("systemc", hw::Config::from_params(params, "unbuilt"), opts); },
               {"no SystemC model for configuration 'unbuilt'", "KILN_SYSTEMC_CONFIGS"});
}

TEST(SystemcPlatform, PresetTimingIsValid) {
  for (const auto& p : sim::sc::memory_presets()) {
    sim::sc::MemoryTiming t = p.timing(100);
    EXPECT_NO_THROW(sim::sc::validate(t)) << p.name;
    EXPECT_GT(t.read_bytes_per_cycle, 0) << p.name;
  }
  sim::sc::MemoryTiming t;
  t.refresh_interval = 100;
  t.refresh_cycles = 200;
  expect_error([&] { sim::sc::validate(t); }, {"tRFC", "tREFI"});
}

TEST(SystemcPlatform, AcceleratorsShareOneMemory) {
  hw::Config cfg = config("tiny");
  DeviceOptions opts;
  opts.dram_bytes = 2 << 20;
  opts.accelerators = 2;
  auto devs = driver::make_systemc_devices(cfg, opts);
  ASSERT_EQ(devs.size(), 2u);
  EXPECT_EQ(devs[0]->dram_bytes(), 1u << 20);
  RandomProgram p = sim::testing::random_program(cfg, 11);
  // Alone, then both at once from two threads (their runs overlap in simulated time).
  ASSERT_EQ(compare_with_fsim(*devs[0], cfg, p), "");
  uint64_t alone = devs[0]->counters()[Counter::kCycles];
  std::string diff[2];
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&, i] { diff[i] = compare_with_fsim(*devs[size_t(i)], cfg, p); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(diff[0], "");
  EXPECT_EQ(diff[1], "");
  EXPECT_GE(devs[0]->counters()[Counter::kCycles], alone);
  auto& platform = static_cast<driver::SystemcDevice&>(*devs[1]).platform();
  sim::sc::PlatformStats s = platform.stats();
  ASSERT_EQ(s.ports.size(), 2u);
  EXPECT_GT(s.ports[1].read_bytes, 0u);
  EXPECT_EQ(s.memory.read_bytes, s.ports[0].read_bytes + s.ports[1].read_bytes);
  // run_together starts both on one stream.
  for (auto& d : devs) d->write(0, p.dram);
  EXPECT_NO_THROW(driver::run_together(devs, p.insn_addr, p.insn_count));

  // A stream whose LOAD runs past INP is refused before either starts, as Device::run
  // refuses it (hw/spec/ranges.h), and the platform runs the next stream.
  hw::Insn load;
  load.opcode = hw::Opcode::kLoad;
  load.memory_type = hw::MemType::kInp;
  load.sram_base = static_cast<uint32_t>(hw::mem_depth(cfg, hw::MemType::kInp) - 1);
  load.y_size = 1;
  load.x_size = load.x_stride = 2;
  const std::vector<hw::Insn> bad = {load, hw::Insn{}};
  for (auto& d : devs) d->write(p.insn_addr, hw::encode_program(hw::InsnLayout(cfg), bad));
  try {
    driver::run_together(devs, p.insn_addr, 2);
    ADD_FAILURE() << "no error";
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("refused before launch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("inp"), std::string::npos) << e.what();
  }
  for (auto& d : devs) d->write(0, p.dram);
  EXPECT_NO_THROW(driver::run_together(devs, p.insn_addr, p.insn_count));
}

TEST(SystemcPlatform, WritesAWaveform) {
  hw::Config cfg = config("tiny");
  std::filesystem::path wave = std::filesystem::temp_directory_path() /
                               fmt::format("kiln_systemc_{}.vcd", ::testing::UnitTest::GetInstance()->random_seed());
  DeviceOptions opts;
  opts.dram_bytes = 1 << 16;
  opts.wave_file = wave.string();
  {
    auto dev = driver::make_device("systemc", cfg, opts);
    RandomProgram p = sim::testing::random_program(cfg, 2);
    EXPECT_EQ(compare_with_fsim(*dev, cfg, p), "");
  }
  std::ifstream in(wave);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("m_axi_arvalid"), std::string::npos);
  EXPECT_NE(text.find("$enddefinitions"), std::string::npos);
  std::filesystem::remove(wave);
}

}  // namespace
}  // namespace kiln
