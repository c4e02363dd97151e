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

// A double-buffered pipeline: load INP (load module), GEMM (compute), STORE (store),
// `n` rounds joined by tokens both ways, so the three modules overlap and wait on each
// other. Instruction 0 loads the micro-ops, 1 the weights; round k is 2 + 3k.. 4 + 3k.
struct Pipeline {
  std::vector<uint8_t> dram;
  uint64_t insn_addr = 0;
  uint32_t insn_count = 0;
  std::string text;
};

Pipeline pipeline(const hw::Config& cfg, int n, int rows) {
  const uint64_t uop_at = 0, wgt_at = 4096, inp_at = 8192, out_at = 65536, insn_at = 131072;
  auto el = [](uint64_t byte, int elem) { return byte / static_cast<uint64_t>(elem); };
  std::string s;
  s += fmt::format("uop dst_idx=0 src_idx=0 wgt_idx=0\nuop dst_idx={0} src_idx={0} wgt_idx=0\n",
                   rows);
  s += fmt::format("load memory_type=uop sram_base=0 dram_base={} y_size=1 x_size=2 x_stride=2\n",
                   el(uop_at, 4));
  s += fmt::format("load memory_type=wgt sram_base=0 dram_base={} y_size=1 x_size=1 x_stride=1\n",
                   el(wgt_at, cfg.wgt_elem_bytes()));
  for (int k = 0; k < n; ++k) {
    int b = k % 2;
    s += fmt::format(
        "load memory_type=inp sram_base={} dram_base={} y_size=1 x_size={} x_stride={}{} "
        "push_next_dep\n",
        b * rows, el(inp_at, cfg.inp_elem_bytes()) + static_cast<uint64_t>(k * rows), rows, rows,
        k >= 2 ? " pop_next_dep" : "");
    s += fmt::format(
        "gemm uop_bgn={} uop_end={} iter_out={} iter_in=1 dst_factor_out=1 src_factor_out=1 "
        "pop_prev_dep push_next_dep{}{}\n",
        b, b + 1, rows, k >= 2 ? " pop_next_dep" : "", k + 2 < n ? " push_prev_dep" : "");
    s += fmt::format(
        "store memory_type=out sram_base={} dram_base={} y_size=1 x_size={} x_stride={} "
        "pop_prev_dep{}\n",
        b * rows, el(out_at, cfg.out_elem_bytes()) + static_cast<uint64_t>(k * rows), rows, rows,
        (k + 2 < n || k == n - 1) ? " push_prev_dep" : "");
  }
  // FINISH pops no token: an empty GEMM waits for the last store first.
  s += "gemm uop_bgn=0 uop_end=0 iter_out=0 iter_in=0 pop_next_dep\nfinish\n";

  hw::AsmProgram prog = hw::assemble(s, cfg, "pipeline");
  hw::InsnLayout layout(cfg);
  std::vector<uint8_t> insns = hw::encode_program(layout, prog.insns);
  std::vector<uint8_t> uops = hw::encode_uops(layout, prog.uops);
  Pipeline p;
  p.dram.assign(insn_at + insns.size(), 0);
  std::copy(uops.begin(), uops.end(), p.dram.begin() + static_cast<std::ptrdiff_t>(uop_at));
  for (uint64_t i = inp_at; i < out_at; ++i) p.dram[i] = static_cast<uint8_t>(i * 7);
  std::copy(insns.begin(), insns.end(), p.dram.begin() + static_cast<std::ptrdiff_t>(insn_at));
  p.insn_addr = insn_at;
  p.insn_count = static_cast<uint32_t>(prog.insns.size());
  p.text = s;
  return p;
}

struct Interval {
  std::string name, state;
  int64_t insn = -1;
  uint64_t ts = 0, dur = 0;
};

// What a trace says, checked for the Trace Event Format on the way.
struct Timeline {
  std::map<int, std::string> threads;  // tid -> thread_name
  std::map<std::string, std::vector<Interval>> by_module;
  std::vector<Interval> runs;
};

Timeline parse_timeline(const json& j) {
  Timeline t;
  EXPECT_TRUE(j.is_object());
  EXPECT_TRUE(j.contains("traceEvents"));
  const json& events = j.at("traceEvents");
  EXPECT_TRUE(events.is_array());
  for (const json& e : events) {
    EXPECT_TRUE(e.contains("ph") && e["ph"].is_string()) << e.dump();
    EXPECT_TRUE(e.contains("name") && e["name"].is_string()) << e.dump();
    std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "thread_name") t.threads[e["tid"]] = e["args"]["name"];
  }
  for (const json& e : events) {
    if (e["ph"] != "X") continue;
    EXPECT_TRUE(e["ts"].is_number_unsigned() && e["dur"].is_number_unsigned()) << e.dump();
    EXPECT_TRUE(e["pid"].is_number() && e["tid"].is_number()) << e.dump();
    Interval iv;
    iv.name = e["name"];
    iv.ts = e["ts"];
    iv.dur = e["dur"];
    if (e.contains("args") && e["args"].contains("insn")) iv.insn = e["args"]["insn"];
    if (e.contains("args") && e["args"].contains("state")) iv.state = e["args"]["state"];
    int tid = e["tid"];
    EXPECT_TRUE(t.threads.count(tid)) << "no thread_name for tid " << tid;
    if (t.threads[tid] == "runs") {
      t.runs.push_back(iv);
    } else {
      EXPECT_GT(iv.dur, 0u) << e.dump();
      t.by_module[t.threads[tid]].push_back(iv);
    }
  }
  for (auto& [module, ivs] : t.by_module)
    std::sort(ivs.begin(), ivs.end(),
              [](const Interval& a, const Interval& b) { return a.ts < b.ts; });
  return t;
}

// Intervals of one module within [begin, end): none overlaps the next, all inside.
void expect_disjoint_within(const Timeline& t, uint64_t begin, uint64_t end) {
  for (const auto& [module, ivs] : t.by_module) {
    for (size_t i = 0; i < ivs.size(); ++i) {
      if (ivs[i].ts < begin || ivs[i].ts >= end) continue;
      EXPECT_LE(ivs[i].ts + ivs[i].dur, end) << module << " " << ivs[i].name;
      if (i + 1 < ivs.size()) {
        EXPECT_LE(ivs[i].ts + ivs[i].dur, ivs[i + 1].ts)
            << module << " " << ivs[i].name << " overlaps " << ivs[i + 1].name;
      }
    }
  }
}

// Cycles of `module` in [begin, end) in the given states.
uint64_t total(const Timeline& t, const std::string& module, std::vector<std::string> states,
               uint64_t begin = 0, uint64_t end = ~uint64_t{0}) {
  uint64_t sum = 0;
  auto it = t.by_module.find(module);
  if (it == t.by_module.end()) return 0;
  for (const Interval& iv : it->second)
    if (iv.ts >= begin && iv.ts < end &&
        std::find(states.begin(), states.end(), iv.state) != states.end())
      sum += iv.dur;
  return sum;
}

// The busy and stall counters of a run equal the timeline's totals in [begin, end).
void expect_totals_match(const Timeline& t, driver::Counters c, uint64_t begin, uint64_t end) {
  const std::vector<std::string> stall = {"stall_token", "stall_queue"};
  EXPECT_EQ(total(t, "load", {"busy"}, begin, end), c[Counter::kLoadBusyCycles]);
  EXPECT_EQ(total(t, "compute", {"busy"}, begin, end), c[Counter::kComputeBusyCycles]);
  EXPECT_EQ(total(t, "store", {"busy"}, begin, end), c[Counter::kStoreBusyCycles]);
  EXPECT_EQ(total(t, "load", stall, begin, end), c[Counter::kLoadStallCycles]);
  EXPECT_EQ(total(t, "compute", stall, begin, end), c[Counter::kComputeStallCycles]);
  EXPECT_EQ(total(t, "store", stall, begin, end), c[Counter::kStoreStallCycles]);
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
  fs::create_directories(dir);
  std::ofstream(dir / "pipeline.s") << p.text;
  // The image holds everything below the stream; `kiln sim` puts the program after it.
  std::vector<uint8_t> image(p.dram.begin(),
                             p.dram.begin() + static_cast<std::ptrdiff_t>(p.insn_addr));
  std::ofstream(dir / "in.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(image.data()),
             static_cast<std::streamsize>(image.size()));
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
