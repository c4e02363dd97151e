// Activity timelines of the rtl device (DeviceOptions::trace_file, `kiln sim --trace`):
// valid Chrome Trace Event Format, one track per module, intervals that do not overlap
// and lie inside the run, busy and stalled totals equal to the hardware's counters, and
// stalls where the stream forces a module to wait for a token.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/activity_timeline.h"
#include "tests/support/command.h"
#include "hw/driver/rtl/rtl_device.h"
#include "hw/sim/testing/random_program.h"
#include "hw/spec/assembly.h"
#include "hw/spec/error.h"
#include "hw/spec/isa.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using driver::DeviceOptions;
using hw::regs::Counter;
using json = nlohmann::json;
using test::Interval;
using test::Pipeline;
using test::Timeline;
using test::expect_disjoint_within;
using test::expect_totals_match;
using test::parse_timeline;
using test::pipeline;
using test::total;

hw::Config config_named(const std::string& name) {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  fs::path root = src ? src : ".";
  return hw::Config::from_file(root / "hw" / "config" / (name + ".json"));
}

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / fmt::format("kiln_trace_{}_{}", ::getpid(), name);
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);  // throws on invalid JSON
}

TEST(RtlTrace, PipelineTimelineMatchesTheCounters) {
  hw::Config cfg = config_named("tiny");
  const int kRounds = 6, kRows = 16;
  Pipeline p = pipeline(cfg, kRounds, kRows);
  fs::path file = temp_path("pipeline.json");
  driver::Counters c;
  {
    DeviceOptions opts;
    opts.dram_bytes = (p.dram.size() + 4095) / 4096 * 4096;
    opts.trace_file = file.string();
    driver::RtlDevice dev(cfg, opts);
    dev.write(0, p.dram);
    dev.run(p.insn_addr, p.insn_count);
    c = dev.counters();
  }
  Timeline t = parse_timeline(read_json(file));
  fs::remove(file);

  std::map<int, std::string> want = {
      {0, "runs"}, {1, "fetch"}, {2, "load"}, {3, "compute"}, {4, "store"}};
  EXPECT_EQ(t.threads, want);
  for (const char* m : {"fetch", "load", "compute", "store"})
    EXPECT_FALSE(t.by_module[m].empty()) << m << " has no interval";
  ASSERT_EQ(t.runs.size(), 1u);
  EXPECT_EQ(t.runs[0].ts, 0u);
  EXPECT_EQ(t.runs[0].dur, c[Counter::kCycles]);
  expect_disjoint_within(t, 0, c[Counter::kCycles]);
  expect_totals_match(t, c, 0, c[Counter::kCycles]);
  // The modules overlap: more busy cycles than cycles would be impossible otherwise.
  EXPECT_GT(
      c[Counter::kLoadBusyCycles] + c[Counter::kComputeBusyCycles] + c[Counter::kStoreBusyCycles],
      c[Counter::kCycles])
      << p.text;

  // Forced waits: the first GEMM (#3) waits for the first INP load's token, the first
  // STORE (#4) for the first GEMM's, and each is named after its instruction.
  auto stalled = [&](const std::string& module, int64_t insn) {
    for (const Interval& iv : t.by_module[module])
      if (iv.state == "stall_token" && iv.insn == insn) return iv;
    return Interval{};
  };
  Interval gemm_wait = stalled("compute", 3);
  EXPECT_GT(gemm_wait.dur, 0u) << "compute did not wait for the token of load #2";
  EXPECT_EQ(gemm_wait.name, "token wait: gemm #3");
  Interval store_wait = stalled("store", 4);
  EXPECT_GT(store_wait.dur, 0u) << "store did not wait for the token of gemm #3";
  EXPECT_EQ(store_wait.name, "token wait: store #4");
  bool load_named = false;
  for (const Interval& iv : t.by_module["load"])
    load_named |= iv.state == "busy" && iv.name == "load inp #2" && iv.insn == 2;
  EXPECT_TRUE(load_named);
}

// Several runs on one device append to one timeline, each after the previous one.
TEST(RtlTrace, RunsAppendOneAfterAnother) {
  hw::Config cfg = config_named("tiny");
  Pipeline p = pipeline(cfg, 4, 8);
  fs::path file = temp_path("runs.json");
  std::vector<driver::Counters> counters;
  {
    DeviceOptions opts;
    opts.dram_bytes = (p.dram.size() + 4095) / 4096 * 4096;
    opts.trace_file = file.string();
    driver::RtlDevice dev(cfg, opts);
    dev.write(0, p.dram);
    for (int r = 0; r < 3; ++r) {
      dev.run(p.insn_addr, p.insn_count);
      counters.push_back(dev.counters());
      // The file is complete JSON after every run.
      EXPECT_NO_THROW(read_json(file)) << "after run " << r;
    }
  }
  Timeline t = parse_timeline(read_json(file));
  fs::remove(file);
  ASSERT_EQ(t.runs.size(), 3u);
  uint64_t at = 0;
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(t.runs[r].name, fmt::format("run {}", r + 1));
    EXPECT_EQ(t.runs[r].ts, at);
    EXPECT_EQ(t.runs[r].dur, counters[r][Counter::kCycles]);
    expect_disjoint_within(t, at, at + t.runs[r].dur);
    expect_totals_match(t, counters[r], at, at + t.runs[r].dur);
    at += t.runs[r].dur;
  }
}

// Random legal streams on every built configuration, with and without back-pressure:
// the derived busy and stall cycles equal the counters run by run.
TEST(RtlTrace, RandomStreamsMatchTheCounters) {
  for (const std::string& name : {std::string("tiny"), std::string("default")}) {
    hw::Config cfg = config_named(name);
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      sim::testing::RandomProgram p = sim::testing::random_program(cfg, seed);
      fs::path file = temp_path(fmt::format("random_{}_{}.json", name, seed));
      driver::Counters c;
      {
        DeviceOptions opts;
        opts.dram_bytes = (p.dram.size() + 4095) / 4096 * 4096;
        opts.trace_file = file.string();
        opts.dram_backpressure = seed % 2 == 0;
        opts.seed = seed;
        driver::RtlDevice dev(cfg, opts);
        dev.write(0, p.dram);
        dev.run(p.insn_addr, p.insn_count);
        c = dev.counters();
      }
      SCOPED_TRACE(fmt::format("config {} seed {}", name, seed));
      Timeline t = parse_timeline(read_json(file));
      fs::remove(file);
      expect_disjoint_within(t, 0, c[Counter::kCycles]);
      expect_totals_match(t, c, 0, c[Counter::kCycles]);
    }
  }
}

TEST(RtlTrace, AnUnwritableFileIsAnErrorNamingIt) {
  hw::Config cfg = config_named("tiny");
  DeviceOptions opts;
  opts.dram_bytes = 1 << 16;
  opts.trace_file = "/nonexistent-kiln-dir/trace.json";
  try {
    driver::RtlDevice dev(cfg, opts);
    FAIL() << "no error";
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-kiln-dir/trace.json"), std::string::npos)
        << e.what();
  }
}

// A failed run still leaves a complete file whose run names the error.
TEST(RtlTrace, ADeadlockedRunIsRecordedWithItsError) {
  hw::Config cfg = config_named("tiny");
  hw::AsmProgram prog =
      hw::assemble("gemm pop_prev_dep uop_bgn=0 uop_end=0 iter_out=0 iter_in=0\nfinish\n", cfg);
  std::vector<uint8_t> bytes = hw::encode_program(hw::InsnLayout(cfg), prog.insns);
  fs::path file = temp_path("dead.json");
  {
    DeviceOptions opts;
    opts.dram_bytes = 1 << 16;
    opts.watchdog_cycles = 2000;
    opts.trace_file = file.string();
    driver::RtlDevice dev(cfg, opts);
    dev.write(0, bytes);
    EXPECT_THROW(dev.run(0, static_cast<uint32_t>(prog.insns.size())), hw::Error);
  }
  json j = read_json(file);
  fs::remove(file);
  Timeline t = parse_timeline(j);
  ASSERT_EQ(t.runs.size(), 1u);
  std::string error;
  for (const json& e : j["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "run 1") error = e["args"].value("error", "");
  EXPECT_NE(error.find("watchdog"), std::string::npos) << error;
  ASSERT_FALSE(t.by_module["compute"].empty());
  const Interval& wait = t.by_module["compute"].back();
  EXPECT_EQ(wait.state, "stall_token");
  EXPECT_EQ(wait.name, "token wait: gemm #0");
  EXPECT_GE(wait.dur, 2000u);
}

#ifdef KILN_BIN
// `kiln sim --device rtl --trace FILE`, run as a user runs it.
test::CommandResult kiln_cli(const std::string& args) { return test::run_command(std::string(KILN_BIN) + " " + args); }

TEST(RtlTraceCli, SimWritesATimeline) {
  hw::Config cfg = config_named("tiny");
  Pipeline p = pipeline(cfg, 4, 8);
  fs::path dir = temp_path("cli");
  test::write_sim_inputs(p, dir);
  std::string prog = (dir / "p.bin").string(), trace = (dir / "t.json").string();
  test::CommandResult a = kiln_cli("asm --config tiny " + (dir / "pipeline.s").string() + " -o " + prog +
                         " -u " + (dir / "p.uop").string());
  ASSERT_EQ(a.status, 0) << a.output;
  test::CommandResult r = kiln_cli("sim --device rtl --config tiny --program " + prog + " --dram " +
                         (dir / "in.bin").string() + " --trace " + trace + " --json");
  ASSERT_EQ(r.status, 0) << r.output;
  json counters = json::parse(r.output)["counters"];
  Timeline t = parse_timeline(read_json(trace));
  EXPECT_EQ(t.threads.size(), 5u);
  ASSERT_EQ(t.runs.size(), 1u);
  EXPECT_EQ(t.runs[0].dur, counters["cycles"].get<uint64_t>());
  EXPECT_EQ(total(t, "compute", {"busy"}), counters["compute_busy_cycles"].get<uint64_t>());
  EXPECT_EQ(total(t, "store", {"stall_token", "stall_queue"}),
            counters["store_stall_cycles"].get<uint64_t>());

  test::CommandResult fsim = kiln_cli("sim --device fsim --config tiny --program " + prog + " --dram " +
                            (dir / "in.bin").string() + " --trace " + trace);
  EXPECT_NE(fsim.status, 0);
  EXPECT_NE(fsim.output.find("--device rtl"), std::string::npos) << fsim.output;
  test::CommandResult bad =
      kiln_cli("sim --device rtl --config tiny --program " + prog + " --dram " +
               (dir / "in.bin").string() + " --trace " + (dir / "no/such/t.json").string());
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("no/such/t.json"), std::string::npos) << bad.output;
  fs::remove_all(dir);
}
#endif  // KILN_BIN

}  // namespace
}  // namespace kiln
