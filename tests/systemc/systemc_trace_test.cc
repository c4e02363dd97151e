// The SystemC platform's timeline (`--trace` on the systemc device): per accelerator the
// rtl harness's activity tracks, whose busy and stall totals equal the hardware's
// counters, on the platform's clock so that accelerators sharing the memory line up;
// counters of each AXI port and of the memory whose sums are the traffic the platform
// counted; and `kiln sim --device systemc`, run as a user runs it.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hw/driver/systemc/systemc_device.h"
#include "hw/sim/systemc/platform_trace.h"
#include "hw/spec/error.h"
#include "tests/support/activity_timeline.h"
#include "tests/support/command.h"
#include "tests/support/hw_test.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using driver::DeviceOptions;
using hw::regs::Counter;
using json = nlohmann::json;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / fmt::format("kiln_sctrace_{}_{}", ::getpid(), name);
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);  // throws on invalid JSON
}

// Sum over a counter track's events of one value, times the window: what the track says
// in total.
double counter_total(const json& j, int pid, const std::string& track, const std::string& key) {
  double sum = 0;
  for (const json& e : j["traceEvents"])
    if (e["ph"] == "C" && e["pid"] == pid && e["name"] == track)
      sum += e["args"].at(key).get<double>() * double(sim::sc::PlatformTrace::kWindowCycles);
  return sum;
}

std::string process_name(const json& j, int pid) {
  for (const json& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == pid) return e["args"]["name"];
  return "";
}

TEST(SystemcTrace, PipelineTimelineMatchesTheCountersAndTheTraffic) {
  hw::Config cfg = test::shipped_config("tiny");
  test::Pipeline p = test::pipeline(cfg, 6, 16);
  fs::path file = temp_path("pipeline.json");
  driver::Counters c;
  sim::sc::PlatformStats stats;
  {
    DeviceOptions opts;
    opts.dram_bytes = (p.dram.size() + 4095) / 4096 * 4096;
    opts.trace_file = file.string();
    auto devs = driver::make_systemc_devices(cfg, opts);
    devs[0]->write(0, p.dram);
    devs[0]->run(p.insn_addr, p.insn_count);
    c = devs[0]->counters();
    stats = static_cast<driver::SystemcDevice&>(*devs[0]).platform().stats();
  }
  json j = read_json(file);
  fs::remove(file);
  EXPECT_EQ(j["otherData"]["device"], "systemc");
  test::Timeline t = test::parse_timeline(j, 1);
  std::map<int, std::string> want = {
      {0, "runs"}, {1, "fetch"}, {2, "load"}, {3, "compute"}, {4, "store"}};
  EXPECT_EQ(t.threads, want);
  ASSERT_EQ(t.runs.size(), 1u);
  // On the platform's clock the run starts after the host's register writes.
  uint64_t begin = t.runs[0].ts, end = begin + t.runs[0].dur;
  EXPECT_GT(begin, 0u);
  EXPECT_EQ(t.runs[0].dur, c[Counter::kCycles]);
  test::expect_disjoint_within(t, begin, end);
  test::expect_totals_match(t, c, begin, end);
  EXPECT_GT(test::total(t, "compute", {"stall_token"}, begin, end), 0u);

  // The port's and the memory's counters add up to the traffic the platform counted.
  EXPECT_EQ(process_name(j, 2), "memory (rtl-default)");
  ASSERT_EQ(stats.ports.size(), 1u);
  EXPECT_GT(stats.ports[0].read_bytes, 0u);
  EXPECT_DOUBLE_EQ(counter_total(j, 1, "AXI bytes per cycle", "read"), double(stats.ports[0].read_bytes));
  EXPECT_DOUBLE_EQ(counter_total(j, 1, "AXI bytes per cycle", "write"), double(stats.ports[0].write_bytes));
  EXPECT_NEAR(counter_total(j, 2, "data bus occupancy", "read bus"), stats.memory.read_busy, 1e-6);
  EXPECT_GT(counter_total(j, 1, "AXI bursts outstanding", "reads"), 0.0);
}

// Two accelerators started together: each its own process, their runs overlapping on the
// one timeline.
TEST(SystemcTrace, AcceleratorsShareOneTimeline) {
  hw::Config cfg = test::shipped_config("tiny");
  test::Pipeline p = test::pipeline(cfg, 4, 8);
  fs::path file = temp_path("two.json");
  driver::Counters c[2];
  {
    DeviceOptions opts;
    opts.dram_bytes = 2 * ((p.dram.size() + 4095) / 4096 * 4096);
    opts.accelerators = 2;
    opts.trace_file = file.string();
    auto devs = driver::make_systemc_devices(cfg, opts);
    for (auto& d : devs) d->write(0, p.dram);
    driver::run_together(devs, p.insn_addr, p.insn_count);
    for (int i = 0; i < 2; ++i) c[i] = devs[size_t(i)]->counters();
  }
  json j = read_json(file);
  fs::remove(file);
  EXPECT_EQ(process_name(j, 1), "accelerator 0 (tiny)");
  EXPECT_EQ(process_name(j, 2), "accelerator 1 (tiny)");
  EXPECT_EQ(process_name(j, 3), "memory (rtl-default)");
  test::Timeline a = test::parse_timeline(j, 1), b = test::parse_timeline(j, 2);
  ASSERT_EQ(a.runs.size(), 1u);
  ASSERT_EQ(b.runs.size(), 1u);
  EXPECT_EQ(a.runs[0].dur, c[0][Counter::kCycles]);
  EXPECT_EQ(b.runs[0].dur, c[1][Counter::kCycles]);
  test::expect_totals_match(a, c[0], a.runs[0].ts, a.runs[0].ts + a.runs[0].dur);
  test::expect_totals_match(b, c[1], b.runs[0].ts, b.runs[0].ts + b.runs[0].dur);
  EXPECT_LT(b.runs[0].ts, a.runs[0].ts + a.runs[0].dur) << "the runs did not overlap";
  EXPECT_LT(a.runs[0].ts, b.runs[0].ts + b.runs[0].dur) << "the runs did not overlap";
}

TEST(SystemcTrace, AnUnwritableFileIsAnErrorNamingIt) {
  DeviceOptions opts;
  opts.dram_bytes = 1 << 16;
  opts.trace_file = "/nonexistent-kiln-dir/trace.json";
  test::expect_error([&] { driver::make_systemc_devices(test::shipped_config("tiny"), opts); },
                     {"/nonexistent-kiln-dir/trace.json"});
}

#ifdef KILN_BIN
test::CommandResult kiln_cli(const std::string& args) {
  return test::run_command(std::string(KILN_BIN) + " " + args);
}

// `kiln sim --device systemc`: the figures as JSON, the timeline, a memory preset and
// two accelerators, and the options it refuses by name.
TEST(SystemcCli, SimRunsOnThePlatform) {
  hw::Config cfg = test::shipped_config("tiny");
  test::Pipeline p = test::pipeline(cfg, 4, 8);
  fs::path dir = temp_path("cli");
  test::write_sim_inputs(p, dir);
  std::string prog = (dir / "p.bin").string(), trace = (dir / "t.json").string();
  std::string in = " --program " + prog + " --dram " + (dir / "in.bin").string();
  test::CommandResult a = kiln_cli("asm --config tiny " + (dir / "pipeline.s").string() + " -o " + prog +
                                   " -u " + (dir / "p.uop").string());
  ASSERT_EQ(a.status, 0) << a.output;

  test::CommandResult rtl = kiln_cli("sim --device rtl --config tiny" + in + " --json");
  ASSERT_EQ(rtl.status, 0) << rtl.output;
  test::CommandResult r = kiln_cli("sim --device systemc --config tiny" + in + " --trace " + trace + " --json");
  ASSERT_EQ(r.status, 0) << r.output;
  json out = json::parse(r.output);
  uint64_t cycles = out["counters"]["cycles"];
  EXPECT_NEAR(double(cycles), double(json::parse(rtl.output)["counters"]["cycles"].get<uint64_t>()),
              0.02 * double(cycles));
  json j = read_json(trace);
  test::Timeline t = test::parse_timeline(j, 1);
  ASSERT_EQ(t.runs.size(), 1u);
  EXPECT_EQ(t.runs[0].dur, cycles);
  EXPECT_EQ(test::total(t, "compute", {"busy"}), out["counters"]["compute_busy_cycles"].get<uint64_t>());

  test::CommandResult two =
      kiln_cli("sim --device systemc --config tiny --memory ddr4-2400-x64 --accelerators 2" + in + " --json");
  ASSERT_EQ(two.status, 0) << two.output;
  json platform = json::parse(two.output)["platform"];
  EXPECT_EQ(platform["accelerators"], 2);
  EXPECT_EQ(platform["per_accelerator"].size(), 2u);
  EXPECT_EQ(platform["memory"]["name"], "ddr4-2400-x64");

  test::CommandResult preset = kiln_cli("sim --device systemc --config tiny --memory nosuch" + in);
  EXPECT_NE(preset.status, 0);
  EXPECT_NE(preset.output.find("nosuch"), std::string::npos) << preset.output;
  EXPECT_NE(preset.output.find("ddr4-2400-x64"), std::string::npos) << preset.output;
  test::CommandResult zero = kiln_cli("sim --device systemc --config tiny --dram-gbps 0" + in);
  EXPECT_NE(zero.status, 0);
  EXPECT_NE(zero.output.find("--dram-gbps 0: expected a number above 0"), std::string::npos) << zero.output;
  test::CommandResult small = kiln_cli("sim --device systemc --config tiny --dram-bytes 4096" + in);
  EXPECT_NE(small.status, 0);
  EXPECT_NE(small.output.find("too small"), std::string::npos) << small.output;
  fs::remove_all(dir);
}
#endif  // KILN_BIN

}  // namespace
}  // namespace kiln
