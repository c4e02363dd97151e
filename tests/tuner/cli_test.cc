// kiln tune as a user runs it: killed mid-run and resumed, on 3 MPI ranks, on a model
// whose records kiln run then applies, on the accelerator's devices, and with bad input.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "backend-cpu/graph_backend.h"
#include "backend-cpu/target.h"
#include "compiler/graph/passes/passes.h"
#include "compiler/target/backend.h"
#include "tests/e2e/onnx_builder.h"
#include "tests/support/command.h"
#include "tuner/records.h"

namespace kiln::tuner {
namespace {

namespace fs = std::filesystem;

struct Result {
  int status;
  std::string out;
};

Result sh(const std::string& cmd) {
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int st = pclose(pipe);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

Result kiln(const std::string& args) { return sh(std::string(KILN_BIN) + " " + args); }

fs::path temp(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("kiln-tune-cli-" + std::to_string(getpid()) + "-" + name);
  fs::remove(p);
  return p;
}

using test::lines_of;

TEST(TuneCli, ResumesAfterBeingKilled) {
  fs::path rec = temp("resume.jsonl");
  std::string op = "--op matmul:M=64,N=64,K=64 --trials 24 --batch 2 --tuner xgb --seed 3 --records " + rec.string();
  // Killed for real once a few records are on disk.
  test::KillOutcome k = test::kill_when(std::string(KILN_BIN) + " tune " + op, [&] { return lines_of(rec).size() >= 6; });
  ASSERT_NE(k, test::KillOutcome::kExitedFirst) << "kiln tune ended before writing 6 records";
  ASSERT_EQ(k, test::KillOutcome::kKilled) << "kiln tune finished before it was killed";
  std::vector<std::string> before = lines_of(rec);
  ASSERT_GE(before.size(), 6u);
  ASSERT_LT(before.size(), 24u);

  Result r = kiln("tune " + op + " --resume");
  ASSERT_EQ(r.status, 0) << r.out;
  std::vector<std::string> after = lines_of(rec);
  ASSERT_EQ(after.size(), 24u) << r.out;
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i], before[i]) << "record " << i << " changed";
  std::set<int64_t> configs;
  for (const Record& x : load_records(rec.string())) EXPECT_TRUE(configs.insert(x.config).second) << "config " << x.config << " twice";
  EXPECT_NE(r.out.find("24/24 trials"), std::string::npos) << r.out;
  fs::remove(rec);
}

TEST(TuneCli, MpiRunWithThreeRanks) {
  fs::path rec = temp("mpi.jsonl");
  // Rank 0 searches, ranks 1 and 2 measure; candidate 0 segfaults in its worker.
  // (Under the sanitizer build, LeakSanitizer would report OpenMPI's own allocations in
  // its unloaded plugins at exit; ASAN_OPTIONS is ignored by a normal build.)
  Result r = sh("mpirun --allow-run-as-root --oversubscribe -np 3 -x KILN_TUNER_INJECT=crash:0 -x ASAN_OPTIONS=detect_leaks=0 " + std::string(KILN_BIN) +
                " tune --op matmul:M=64,N=64,K=64 --trials 10 --tuner grid --records " + rec.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("MPI: 2 measuring ranks"), std::string::npos) << r.out;
  std::vector<Record> rs = load_records(rec.string());
  ASSERT_EQ(rs.size(), 10u) << r.out;
  std::set<int64_t> configs;
  for (const Record& x : rs) configs.insert(x.config);
  EXPECT_EQ(configs.size(), 10u);
  EXPECT_NE(rs[0].error.find("crash: worker died of signal 11"), std::string::npos) << rs[0].error;
  for (size_t i = 1; i < rs.size(); ++i) EXPECT_TRUE(rs[i].ok()) << rs[i].error;
  fs::remove(rec);
}

fs::path small_model() {
  test::OnnxBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.input("a", {8, 64});
  std::vector<float> w(32 * 16 * 9), m(64 * 32);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) / 7 - 0.5f;
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(i % 5) / 5 - 0.5f;
  b.initializer("w", {32, 16, 3, 3}, w);
  b.initializer("m", {64, 32}, m);
  auto* c = b.node("Conv", {"x", "w"}, {"c"}, "conv");
  test::OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c"}, {"y"}, "relu");
  b.node("MatMul", {"a", "m"}, {"z"}, "mm");
  b.output("y");
  b.output("z");
  fs::path p = temp("model.onnx");
  std::ofstream(p, std::ios::binary) << b.bytes();
  return p;
}

TEST(TuneCli, TunesAModelAndRunAppliesTheRecords) {
  fs::path model = small_model(), rec = temp("model.jsonl"), empty = temp("empty.jsonl");
  Result t = kiln("tune " + model.string() + " --trials 4 --tuner random --records " + rec.string());
  ASSERT_EQ(t.status, 0) << t.out;
  EXPECT_NE(t.out.find("kiln tune: 2 tasks"), std::string::npos) << t.out;
  // Then the candidates inside the model (--in-model 3 by default): the default's
  // in-model record of each workload, and a line for each.
  EXPECT_NE(t.out.find("in the model: the tuned workloads' kernels"), std::string::npos) << t.out;
  std::set<std::string> workloads, in_model;
  for (const Record& x : load_records(rec.string())) {
    workloads.insert(x.workload);
    if (x.in_model()) in_model.insert(x.workload);
  }
  EXPECT_EQ(in_model, workloads);
  // The matmul's panel is as wide as this machine's registers make it (32 columns with
  // AVX-512, 16 with AVX2), as `kiln` picks it for the host.
  cpu::register_graph_backend();
  const int64_t panel = graph::register_tile_columns(
      32, target::make_backend("cpu")->traits(cpu::Target::default_host_string()));
  const std::string matmul = "matmul_packed:M=8,N=32,K=64,block=" + std::to_string(panel);
  EXPECT_EQ(workloads, (std::set<std::string>{"conv2d:N=1,C=16,H=8,W=8,O=32,KH=3,KW=3,stride=1,pad=1,block=16", matmul}));

  Result run = kiln("run " + model.string() + " --repeat 1 --records " + rec.string());
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out.find("warning"), std::string::npos) << run.out;

  std::ofstream(empty) << "";
  Result cold = kiln("run " + model.string() + " --repeat 1 --records " + empty.string());
  ASSERT_EQ(cold.status, 0) << cold.out;
  EXPECT_NE(cold.out.find("warning: no tuning record in " + empty.string() + " for " + matmul), std::string::npos) << cold.out;
  EXPECT_NE(cold.out.find("for conv2d:N=1,C=16"), std::string::npos) << cold.out;
  // A records file that is not there is an error, not a run on the default schedules.
  const std::string typo = rec.string() + ".typo";
  Result missing = kiln("run " + model.string() + " --repeat 1 --records " + typo);
  EXPECT_EQ(missing.status, 1) << missing.out;
  EXPECT_NE(missing.out.find("kiln: error: " + typo + ": no such records file"), std::string::npos) << missing.out;

  fs::path saved = temp("model.kiln");
  Result comp = kiln("compile " + model.string() + " --records " + rec.string() + " -o " + saved.string());
  ASSERT_EQ(comp.status, 0) << comp.out;
  EXPECT_TRUE(fs::exists(saved));
  for (const fs::path& p : {model, rec, empty, saved}) fs::remove(p);
}

TEST(TuneCli, BadInputIsNamed) {
  fs::path rec = temp("bad.jsonl");
  Result r = kiln("tune --op matmul:M=64,N=64 --trials 2 --records " + rec.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("matmul needs K"), std::string::npos) << r.out;
  r = kiln("tune --op matmul:M=8,N=8,K=8 --in-model -1 --records " + rec.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("--in-model must be 0 (none) or a number of candidates"), std::string::npos) << r.out;
  r = kiln("tune --op matmul:M=8,N=8,K=8 --tuner sa --records " + rec.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("unknown tuner 'sa'"), std::string::npos) << r.out;
  {
    std::ofstream f(rec);
    f << "{\"version\":1}\n";
  }
  r = kiln("tune --op matmul:M=8,N=8,K=8 --trials 2 --records " + rec.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(rec.string() + ":1: no field 'template'"), std::string::npos) << r.out;
  fs::path model = small_model();
  r = kiln("run " + model.string() + " --records " + rec.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(rec.string() + ":1:"), std::string::npos) << r.out;
  fs::remove(rec);
  fs::remove(model);
}

#ifdef KILN_TUNE_VTA_ON_RTL
// kiln tune --target vta takes the device flags (docs/cli.md) and measures the same
// candidates on the device they describe; a flag for another device, a file per run, a
// device that counts no cycles and the flags without an accelerator are refused, naming
// the problem, before any candidate.
TEST(TuneCli, VtaMeasuresOnTheDeviceOfTheFlags) {
  fs::path rec = temp("vta.jsonl");
  const std::string tune = "tune --op conv2d:C=16,H=8,W=8,O=16,KH=3,pad=1 -n 3 --tuner random --seed 4 -r " + rec.string();
  // The cost of each configuration measured, by its index.
  auto costs = [&](const std::string& flags, const std::string& device) {
    fs::remove(rec);
    Result r = kiln(tune + " --target vta" + flags);
    EXPECT_EQ(r.status, 0) << flags << ": " << r.out;
    EXPECT_NE(r.out.find("cycles on " + device), std::string::npos) << r.out;
    std::map<int64_t, double> out;
    for (const Record& x : load_records(rec.string()))
      if (x.ok()) out[x.config] = x.cost;
    EXPECT_FALSE(out.empty()) << flags << ": " << r.out;
    return out;
  };
  std::map<int64_t, double> base = costs("", "rtl");
  std::map<int64_t, double> slow = costs(" --dram-latency 400", "rtl");
  std::map<int64_t, double> inorder = costs(" --device rtl --core inorder", "rtl");
  // The same seed: the same candidates on each device.
  ASSERT_EQ(slow.size(), base.size());
  ASSERT_EQ(inorder.size(), base.size());
  for (const auto& [config, cycles] : base) {
    EXPECT_GT(slow[config], cycles) << config;
    EXPECT_NE(inorder[config], cycles) << config;
  }
  const std::pair<std::string, std::string> refused[] = {
      {" --target vta --device fsim", "conv2d.vta measures cycles, which the fsim device does not count"},
      {" --target vta --memory ddr4-2400-x64", "--memory applies to --device systemc; the device is rtl"},
      {" --target vta --dram-latency soon", "--dram-latency soon: expected a whole number"},
      {" --target vta --wave " + temp("vta.fst").string(), "--wave: kiln tune runs every candidate on a device of its own"},
      {" --target 'vta -host=llvm'", "-host does not apply"},
      {" --target cpu --core inorder", "--device and the device flags apply to --target vta, not to cpu"},
  };
  for (const auto& [flags, want] : refused) {
    fs::remove(rec);
    Result r = kiln(tune + flags);
    EXPECT_EQ(r.status, 1) << flags << ": " << r.out;
    EXPECT_NE(r.out.find(want), std::string::npos) << flags << ": " << r.out;
    EXPECT_FALSE(fs::exists(rec)) << flags;
  }
}
#endif

}  // namespace
}  // namespace kiln::tuner
