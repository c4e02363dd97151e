// Differential tests: random legal instruction streams run on fsim (the golden model)
// and on the Verilated RTL must leave identical DRAM images and identical untimed
// counters, for every built configuration, with the board-like DRAM timing and under
// random AXI back-pressure. A failure prints the seed and the stream to replay it.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "hw/driver/fsim_device.h"
#include "hw/driver/rtl/rtl_device.h"
#include "hw/sim/fsim/fsim.h"
#include "hw/sim/rtl/rtl_sim.h"
#include "hw/sim/testing/random_program.h"
#include "hw/spec/error.h"

namespace kiln {
namespace {

using driver::DeviceOptions;
using hw::regs::Counter;
using sim::testing::RandomProgram;

hw::Config config_named(const std::string& name) {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  std::filesystem::path root = src ? src : ".";
  return hw::Config::from_file(root / "hw" / "config" / (name + ".json"));
}

// Streams per test case; KILN_RTL_STREAMS overrides (e.g. 2000 for a long soak).
int stream_count(int fallback) {
  const char* s = std::getenv("KILN_RTL_STREAMS");
  return s ? std::atoi(s) : fallback;
}

std::string listing(const RandomProgram& p) {
  std::string s;
  for (size_t n = 0; n < p.insns.size(); ++n)
    s += fmt::format("  #{:<3} {}\n", n, sim::testing::describe(p.insns[n]));
  return s;
}

std::string region_of(const RandomProgram& p, uint64_t addr) {
  for (const auto& r : p.regions)
    if (addr >= r.addr && addr < r.addr + r.bytes) return fmt::format("{}+{}", r.name, addr - r.addr);
  return "no region";
}

struct Case {
  std::string config;
  bool backpressure;
  int latency = -1;         // -1: the DRAM model's default (a Zynq HP port)
  int bytes_per_cycle = -1;
  bool long_loops = false;  // up to 8 x 8 iterations of up to 8 micro-ops
  std::string core = "decoupled";
  // Bursts that fill a command queue to its depth (RandomProgramOptions::queue_limits).
  bool queue_limits = false;
  std::string name() const {
    std::string suffix = core == "decoupled" ? "" : "_" + core;
    if (queue_limits) return config + "_queue_limits" + suffix;
    if (long_loops) return config + "_long_loops" + suffix;
    if (latency >= 0) return config + "_slow_dram" + suffix;
    return config + (backpressure ? "_backpressure" : "_board_timing") + suffix;
  }
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name(); }

class RtlDiff : public ::testing::TestWithParam<Case> {};

// Runs one stream on both devices; returns "" or what differs. Adds the rtl's
// counters to `totals`.
std::string run_both(const hw::Config& cfg, const RandomProgram& p, const DeviceOptions& base,
                     driver::Counters& totals) {
  DeviceOptions opts = base;
  opts.dram_bytes = (p.dram.size() + 4095) / 4096 * 4096;
  driver::FsimDevice fsim(cfg, opts);
  driver::RtlDevice rtl(cfg, opts);
  fsim.write(0, p.dram);
  rtl.write(0, p.dram);
  fsim.run(p.insn_addr, p.insn_count);
  try {
    rtl.run(p.insn_addr, p.insn_count);
  } catch (const hw::Error& e) {
    return fmt::format("rtl failed: {}", e.what());
  }
  std::vector<uint8_t> a(opts.dram_bytes), b(opts.dram_bytes);
  fsim.read(0, a);
  rtl.read(0, b);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      return fmt::format("DRAM byte 0x{:x} ({}) is 0x{:02x} on fsim, 0x{:02x} on rtl", i,
                         region_of(p, i), a[i], b[i]);
    }
  }
  driver::Counters fc = fsim.counters(), rc = rtl.counters();
  for (const auto& [id, v] : rc) totals[id] += v;
  for (const auto& [id, v] : fc) {
    if (!rtl.has_counter(id)) continue;  // the in-order core keeps fewer
    if (rc[id] != v) {
      return fmt::format("counter {} is {} on fsim, {} on rtl",
                         hw::regs::kCounters[static_cast<int>(id)].name, v, rc[id]);
    }
  }
  return "";
}

TEST_P(RtlDiff, RandomStreamsMatchFsim) {
  const Case& c = GetParam();
  hw::Config cfg = config_named(c.config);
  DeviceOptions opts;
  opts.dram_backpressure = c.backpressure;
  opts.dram_latency = c.latency;
  opts.dram_bytes_per_cycle = c.bytes_per_cycle;
  opts.watchdog_cycles = 20000;
  opts.core = c.core;
  int n = stream_count(c.latency >= 0 || c.long_loops || c.queue_limits ? 50
                       : c.config == "default"                         ? 150
                                                                       : 200);
  if (c.core == "inorder" && c.config == "default") n = stream_count(30);  // 16 lanes in turn
  sim::testing::RandomProgramOptions popts;
  if (c.long_loops) popts.max_iter = 8, popts.max_uops = 8;
  popts.queue_limits = c.queue_limits;
  driver::Counters totals;
  for (int i = 0; i < n; ++i) {
    uint64_t seed = 1000003ull * (i + 1) + (c.backpressure ? 7 : 0) + (c.latency >= 0 ? 13 : 0) +
                    (c.long_loops ? 29 : 0) + (c.queue_limits ? 31 : 0);
    opts.seed = seed;
    RandomProgram p = sim::testing::random_program(cfg, seed, popts);
    std::string diff = run_both(cfg, p, opts, totals);
    ASSERT_EQ(diff, "") << "case " << c.name() << ", random_program seed " << seed << "\n"
                        << listing(p);
  }
  // The streams exercised every unit.
  EXPECT_GT(totals[Counter::kGemmUops], 0u);
  EXPECT_GT(totals[Counter::kAluUops], 0u);
  EXPECT_GT(totals[Counter::kStoreInsns], 0u);
  EXPECT_GT(totals[Counter::kLoadInsns], 0u);
  if (c.core == "decoupled") {
    EXPECT_GT(totals[Counter::kStoreBytes], 0u);
    EXPECT_GT(totals[Counter::kLoadAccBytes], 0u);
  }
  std::printf("%d streams: %llu cycles, %llu GEMM and %llu ALU micro-ops, %llu bytes stored\n", n,
              static_cast<unsigned long long>(totals[Counter::kCycles]),
              static_cast<unsigned long long>(totals[Counter::kGemmUops]),
              static_cast<unsigned long long>(totals[Counter::kAluUops]),
              static_cast<unsigned long long>(totals[Counter::kStoreBytes]));
}

INSTANTIATE_TEST_SUITE_P(Configs, RtlDiff,
                         ::testing::Values(Case{"default", false}, Case{"default", true},
                                           Case{"tiny", false}, Case{"tiny", true},
                                           // A slow, narrow DRAM: 100 cycles, 3 bytes/cycle.
                                           Case{"default", false, 100, 3},
                                           Case{"tiny", true, 100, 3},
                                           Case{"default", true, -1, -1, true},
                                           Case{"tiny", false, -1, -1, true},
                                           // Command queues filled to the RTL's depth.
                                           Case{"default", true, -1, -1, false, "decoupled", true},
                                           Case{"tiny", false, -1, -1, false, "decoupled", true},
                                           // The in-order core (kiln_inorder_top).
                                           Case{"tiny", false, -1, -1, false, "inorder"},
                                           Case{"tiny", true, -1, -1, false, "inorder"},
                                           Case{"default", true, -1, -1, false, "inorder"},
                                           Case{"tiny", false, -1, -1, true, "inorder"},
                                           Case{"tiny", false, 100, 3, false, "inorder"}),
                         [](const auto& info) { return info.param.name(); });

TEST(RtlDevice, RefusesAConfigurationThatWasNotBuilt) {
  // A valid configuration that no build Verilates: default with a half-size input buffer.
  hw::ConfigParams p = config_named("default").params();
  p.log_inp_buff_size -= 1;
  hw::Config cfg = hw::Config::from_params(p, "unbuilt");
  try {
    driver::RtlDevice dev(cfg, {});
    FAIL() << "no error";
  } catch (const hw::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("no Verilated decoupled model for configuration 'unbuilt'"), std::string::npos) << msg;
    for (const auto& name : sim::rtl_model_names())
      EXPECT_NE(msg.find(name), std::string::npos) << msg << " should list " << name;
  }
}

TEST(RtlDevice, RegistersAndFingerprint) {
  for (const char* name : {"default", "tiny"}) {
    hw::Config cfg = config_named(name);
    DeviceOptions opts;
    opts.dram_bytes = 1 << 20;
    driver::RtlDevice dev(cfg, opts);
    uint64_t fp = uint64_t{dev.read_reg(hw::regs::kFingerprintHi)} << 32 |
                  dev.read_reg(hw::regs::kFingerprintLo);
    EXPECT_EQ(fp, cfg.fingerprint());
    EXPECT_EQ(dev.read_reg(hw::regs::kVersion), hw::regs::kMapVersion);
    dev.write_reg(hw::regs::kInsnCount, 1234);
    EXPECT_EQ(dev.read_reg(hw::regs::kInsnCount), 1234u);
    EXPECT_EQ(dev.read_reg(hw::regs::kStatus), 0u);
  }
}

TEST(RtlDevice, WatchdogNamesWhatEachModuleWaitsFor) {
  // A compute instruction that pops a load->compute token nobody pushes.
  hw::Config cfg = config_named("tiny");
  hw::InsnLayout layout(cfg);
  hw::Insn gemm;
  gemm.opcode = hw::Opcode::kGemm;
  gemm.pop_prev_dep = true;
  hw::Insn finish;
  std::vector<hw::Insn> insns = {gemm, finish};
  std::vector<uint8_t> code = hw::encode_program(layout, insns);
  DeviceOptions opts;
  opts.dram_bytes = 1 << 16;
  opts.watchdog_cycles = 2000;
  driver::RtlDevice dev(cfg, opts);
  dev.write(0, code);
  try {
    dev.run(0, 2);
    FAIL() << "no error";
  } catch (const hw::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("watchdog"), std::string::npos) << msg;
    EXPECT_NE(msg.find("compute: waits for a token"), std::string::npos) << msg;
    // The harness ended the hang with CTRL abort, which the core took cleanly.
    EXPECT_EQ(msg.find("model was reset"), std::string::npos) << msg;
  }
  namespace r = hw::regs;
  EXPECT_EQ(r::status_cause(dev.read_reg(r::kStatus)), r::ErrorCause::kAborted);
}

// Runs random_program(cfg, seed) on `dev` and on fsim from zeroed DRAM; the DRAM after
// must be the same.
void expect_runs_like_fsim(driver::Device& dev, const hw::Config& cfg, const DeviceOptions& opts,
                           uint64_t seed) {
  RandomProgram p = sim::testing::random_program(cfg, seed);
  ASSERT_LE(p.dram.size(), opts.dram_bytes);
  driver::FsimDevice fsim(cfg, opts);
  for (driver::Device* d : {&dev, static_cast<driver::Device*>(&fsim)}) {
    std::vector<uint8_t> zero(opts.dram_bytes, 0);
    d->write(0, zero);
    d->write(0, p.dram);
    ASSERT_NO_THROW(d->run(p.insn_addr, p.insn_count)) << d->kind() << ", seed " << seed;
  }
  std::vector<uint8_t> a(opts.dram_bytes), b(opts.dram_bytes);
  dev.read(0, a);
  fsim.read(0, b);
  EXPECT_TRUE(a == b) << "seed " << seed;
}

TEST(RtlDevice, ReportsAnAccessOutsideDramAndRecovers) {
  hw::Config cfg = config_named("tiny");
  hw::InsnLayout layout(cfg);
  DeviceOptions opts;
  opts.dram_bytes = 1 << 16;
  driver::RtlDevice dev(cfg, opts);
  // A LOAD of one INP element 1 MiB into a 64 KiB DRAM.
  hw::Insn load;
  load.opcode = hw::Opcode::kLoad;
  load.memory_type = hw::MemType::kInp;
  load.dram_base = (1 << 20) / cfg.inp_elem_bytes();
  load.y_size = load.x_size = load.x_stride = 1;
  std::vector<hw::Insn> bad = {load, hw::Insn{}};
  dev.write(0, hw::encode_program(layout, bad));
  try {
    dev.run(0, 2);
    FAIL() << "no error";
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside the 65536 bytes of DRAM"), std::string::npos)
        << e.what();
  }
  // The device runs the next stream.
  expect_runs_like_fsim(dev, cfg, opts, 3);
}

// Starts the stream at 0 without waiting for it; the clock runs only while the host
// accesses registers (a few cycles each), so `poll` reads STATUS to let time pass.
void start_at_zero(driver::RtlDevice& dev, uint32_t insn_count) {
  dev.write_reg(hw::regs::kInsnAddrLo, 0);
  dev.write_reg(hw::regs::kInsnAddrHi, 0);
  dev.write_reg(hw::regs::kInsnCount, insn_count);
  dev.write_reg(hw::regs::kCtrl, hw::regs::kCtrlStart);
}
uint32_t poll(driver::RtlDevice& dev, int reads) {
  uint32_t status = 0;
  for (int i = 0; i < reads; ++i) status = dev.read_reg(hw::regs::kStatus);
  return status;
}
void expect_aborted(driver::RtlDevice& dev) {
  namespace r = hw::regs;
  uint32_t status = dev.read_reg(r::kStatus);
  EXPECT_EQ(status & (r::kStatusBusy | r::kStatusDone | r::kStatusError),
            r::kStatusDone | r::kStatusError);
  EXPECT_EQ(r::status_cause(status), r::ErrorCause::kAborted);
}

TEST(RtlDevice, AbortEndsADeadlockedRun) {
  namespace r = hw::regs;
  hw::Config cfg = config_named("tiny");
  hw::Insn gemm;  // pops a load->compute token nobody pushes
  gemm.opcode = hw::Opcode::kGemm;
  gemm.pop_prev_dep = true;
  std::vector<hw::Insn> insns = {gemm, hw::Insn{}};
  DeviceOptions opts;
  opts.dram_bytes = 1 << 16;
  driver::RtlDevice dev(cfg, opts);
  dev.write(0, hw::encode_program(hw::InsnLayout(cfg), insns));
  start_at_zero(dev, 2);
  EXPECT_TRUE(poll(dev, 200) & r::kStatusBusy);  // hundreds of cycles: deadlocked
  dev.write_reg(r::kCtrl, r::kCtrlAbort);
  expect_aborted(dev);
  expect_runs_like_fsim(dev, cfg, opts, 3);
}

// The RTL holds kCmdQueueDepth + 1 instructions of a module that wait for tokens pushed
// by later instructions (fsim's model, tests/fsim): that many loads run, one more hangs
// the RTL while fsim refuses the stream.
TEST(RtlDevice, CommandQueueDepthIsTheOneFsimModels) {
  namespace r = hw::regs;
  hw::Config cfg = config_named("tiny");
  auto stream = [](int n) {
    std::vector<hw::Insn> insns;
    for (int i = 0; i < n; ++i) {
      hw::Insn load;  // waits for a compute->load token
      load.opcode = hw::Opcode::kLoad;
      load.memory_type = hw::MemType::kInp;
      load.y_size = load.x_size = load.x_stride = 1;
      load.dram_base = 64;
      load.pop_next_dep = true;
      insns.push_back(load);
    }
    for (int i = 0; i < n; ++i) {
      hw::Insn gemm;  // pushes one
      gemm.opcode = hw::Opcode::kGemm;
      gemm.push_prev_dep = true;
      insns.push_back(gemm);
    }
    insns.push_back(hw::Insn{});
    return insns;
  };
  DeviceOptions opts;
  opts.dram_bytes = 1 << 16;
  driver::RtlDevice dev(cfg, opts);
  for (int n : {hw::Config::kCmdQueueDepth + 1, hw::Config::kCmdQueueDepth + 2}) {
    SCOPED_TRACE(::testing::Message() << n << " loads");
    std::vector<hw::Insn> insns = stream(n);
    dev.write(0, hw::encode_program(hw::InsnLayout(cfg), insns));
    start_at_zero(dev, static_cast<uint32_t>(insns.size()));
    uint32_t status = poll(dev, 2000);  // thousands of cycles: far more than 2n+1 need
    if (n == hw::Config::kCmdQueueDepth + 1) {
      EXPECT_EQ(status & (r::kStatusBusy | r::kStatusDone | r::kStatusError), r::kStatusDone);
      continue;
    }
    EXPECT_TRUE(status & r::kStatusBusy) << "the RTL ran a stream past its command queue";
    dev.write_reg(r::kCtrl, r::kCtrlAbort);
    expect_aborted(dev);
    std::vector<uint8_t> dram(1 << 16, 0);
    std::vector<uint8_t> code = hw::encode_program(hw::InsnLayout(cfg), insns);
    std::copy(code.begin(), code.end(), dram.begin());
    sim::Fsim fsim(cfg, dram);
    try {
      fsim.run(0, static_cast<uint32_t>(insns.size()));
      ADD_FAILURE() << "fsim ran it";
    } catch (const hw::Error& e) {
      EXPECT_NE(std::string(e.what()).find("load command queue, which is full"), std::string::npos) << e.what();
    }
  }
  expect_runs_like_fsim(dev, cfg, opts, 3);
}

// An abort while a long LOAD reads and a long STORE writes (under back-pressure): the
// bursts in flight complete (the DRAM model reports any AXI rule broken on the next
// run), and the next stream matches fsim.
TEST(RtlDevice, AbortMidTransferLeavesTheMemoryPortWorking) {
  namespace r = hw::regs;
  hw::Config cfg = config_named("default");
  // rows x 256 elements of `mem` between SRAM 0 and DRAM byte `addr`.
  auto rows = [&](hw::Opcode op, hw::MemType mem, uint32_t addr, uint16_t y) {
    hw::Insn insn;
    insn.opcode = op;
    insn.memory_type = mem;
    insn.dram_base = addr / static_cast<uint32_t>(hw::mem_elem_bytes(cfg, mem));
    insn.y_size = y;
    insn.x_size = insn.x_stride = 256;
    return insn;
  };
  std::vector<hw::Insn> insns = {rows(hw::Opcode::kLoad, hw::MemType::kWgt, 256 << 10, 4),
                                 rows(hw::Opcode::kStore, hw::MemType::kOut, 512 << 10, 8),
                                 hw::Insn{}};
  DeviceOptions opts;
  opts.dram_bytes = 1 << 20;
  opts.dram_backpressure = true;
  driver::RtlDevice dev(cfg, opts);
  const uint64_t wgt_bytes = 4ull * 256 * cfg.wgt_elem_bytes();
  const uint64_t out_bytes = 8ull * 256 * cfg.out_elem_bytes();
  for (int reads : {30, 100, 300}) {
    SCOPED_TRACE(fmt::format("abort after {} STATUS reads", reads));
    dev.write(0, hw::encode_program(hw::InsnLayout(cfg), insns));
    start_at_zero(dev, static_cast<uint32_t>(insns.size()));
    EXPECT_TRUE(poll(dev, reads) & r::kStatusBusy);
    dev.write_reg(r::kCtrl, r::kCtrlAbort);
    expect_aborted(dev);
    driver::Counters c = dev.counters();  // as they stood at the abort
    EXPECT_LT(c.at(Counter::kLoadWgtBytes), wgt_bytes);
    EXPECT_LT(c.at(Counter::kStoreBytes), out_bytes);
    if (reads == 300) {
      EXPECT_GT(c.at(Counter::kLoadWgtBytes), 0u);
      EXPECT_GT(c.at(Counter::kStoreBytes), 0u);
    }
    expect_runs_like_fsim(dev, cfg, opts, 3 + static_cast<uint64_t>(reads));
  }
}

TEST(RtlDevice, WritesAnFstWaveform) {
  hw::Config cfg = config_named("tiny");
  RandomProgram p = sim::testing::random_program(cfg, 5);
  std::filesystem::path wave =
      std::filesystem::temp_directory_path() / fmt::format("kiln_rtl_wave_{}.fst", ::getpid());
  {
    DeviceOptions opts;
    opts.dram_bytes = (p.dram.size() + 4095) / 4096 * 4096;
    opts.wave_file = wave.string();
    driver::RtlDevice dev(cfg, opts);
    dev.write(0, p.dram);
    dev.run(p.insn_addr, p.insn_count);
  }
  ASSERT_TRUE(std::filesystem::exists(wave));
  EXPECT_GT(std::filesystem::file_size(wave), 1000u);
  std::filesystem::remove(wave);
}

TEST(RtlDevice, CountsCyclesAndModuleActivity) {
  hw::Config cfg = config_named("default");
  RandomProgram p = sim::testing::random_program(cfg, 11);
  DeviceOptions opts;
  opts.dram_bytes = (p.dram.size() + 4095) / 4096 * 4096;
  driver::RtlDevice dev(cfg, opts);
  dev.write(0, p.dram);
  dev.run(p.insn_addr, p.insn_count);
  driver::Counters c = dev.counters();
  EXPECT_EQ(c.size(), size_t{hw::regs::kNumCounters});
  EXPECT_GT(c[Counter::kCycles], 0u);
  EXPECT_GT(c[Counter::kLoadBusyCycles], 0u);
  EXPECT_GT(c[Counter::kComputeBusyCycles], 0u);
  EXPECT_GT(c[Counter::kStoreBusyCycles], 0u);
  EXPECT_LE(c[Counter::kComputeBusyCycles] + c[Counter::kComputeStallCycles], c[Counter::kCycles]);
  EXPECT_EQ(c[Counter::kLoadInsns] + c[Counter::kComputeInsns] + c[Counter::kStoreInsns],
            p.insn_count);
}

// The in-order core runs the stream in program order: what the decoupled core would
// wait for forever is an error with a cause at once, not a watchdog hang.
std::string inorder_error(const hw::Config& cfg, const std::vector<hw::Insn>& insns,
                          uint32_t count) {
  hw::InsnLayout layout(cfg);
  DeviceOptions opts;
  opts.dram_bytes = 1 << 16;
  opts.core = "inorder";
  opts.watchdog_cycles = 2000;
  driver::RtlDevice dev(cfg, opts);
  dev.write(0, hw::encode_program(layout, insns));
  try {
    dev.run(0, count);
  } catch (const hw::Error& e) {
    // The device recovers: a good stream runs next.
    std::vector<hw::Insn> ok = {hw::Insn{}};
    dev.write(0, hw::encode_program(layout, ok));
    EXPECT_NO_THROW(dev.run(0, 1));
    EXPECT_EQ(dev.counters()[Counter::kComputeInsns], 1u);
    return e.what();
  }
  return "no error";
}

TEST(RtlInorder, ReportsMissingTokenBadInstructionAndMemoryErrors) {
  hw::Config cfg = config_named("tiny");
  hw::Insn gemm;
  gemm.opcode = hw::Opcode::kGemm;
  gemm.pop_prev_dep = true;
  std::string msg = inorder_error(cfg, {gemm, hw::Insn{}}, 2);
  EXPECT_NE(msg.find("pops a dependency token that no earlier instruction pushed"),
            std::string::npos) << msg;

  // A stream that ends without FINISH.
  hw::Insn alu;
  alu.opcode = hw::Opcode::kAlu;
  msg = inorder_error(cfg, {alu}, 1);
  EXPECT_NE(msg.find("ends without FINISH"), std::string::npos) << msg;

  // A LOAD into OUT, which the ISA does not have.
  hw::Insn load;
  load.opcode = hw::Opcode::kLoad;
  load.memory_type = hw::MemType::kOut;
  load.y_size = load.x_size = load.x_stride = 1;
  msg = inorder_error(cfg, {load, hw::Insn{}}, 2);
  EXPECT_NE(msg.find("an instruction the ISA does not have"), std::string::npos) << msg;

  // A LOAD beyond the 64 KiB of DRAM.
  load.memory_type = hw::MemType::kInp;
  load.dram_base = (1 << 20) / cfg.inp_elem_bytes();
  msg = inorder_error(cfg, {load, hw::Insn{}}, 2);
  EXPECT_NE(msg.find("outside the 65536 bytes of DRAM"), std::string::npos) << msg;
}

TEST(RtlInorder, KeepsItsCountersAndRefusesATimeline) {
  hw::Config cfg = config_named("tiny");
  RandomProgram p = sim::testing::random_program(cfg, 11);
  DeviceOptions opts;
  opts.dram_bytes = (p.dram.size() + 4095) / 4096 * 4096;
  opts.core = "inorder";
  driver::RtlDevice dev(cfg, opts);
  dev.write(0, p.dram);
  dev.run(p.insn_addr, p.insn_count);
  driver::Counters c = dev.counters();
  EXPECT_EQ(c.size(), 6u);
  EXPECT_FALSE(dev.has_counter(Counter::kLoadBusyCycles));
  EXPECT_GT(c[Counter::kCycles], 0u);
  EXPECT_EQ(c[Counter::kLoadInsns] + c[Counter::kComputeInsns] + c[Counter::kStoreInsns],
            p.insn_count);

  opts.trace_file = "unused-trace.json";
  try {
    driver::RtlDevice traced(cfg, opts);
    FAIL() << "no error";
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("the inorder core has none"), std::string::npos) << e.what();
  }
  opts.trace_file.clear();
  opts.core = "superscalar";
  try {
    driver::RtlDevice other(cfg, opts);
    FAIL() << "no error";
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown core 'superscalar'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
