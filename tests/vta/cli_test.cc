// `kiln vta`: the real binary compiles, writes assembly, a program and a timeline, runs
// and checks; bad input exits with a message naming the problem.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>

#include "tests/support/command.h"

namespace kiln {
namespace {

test::CommandResult run(const std::string& args) { return test::run_command(std::string(KILN_BIN) + " " + args); }

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(VtaCli, Conv2dWritesAssemblyProgramAndTimeline) {
  auto dir = std::filesystem::temp_directory_path() / ("kiln_vta_cli_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string device = KILN_HAVE_RTL_DEVICE ? "rtl" : "fsim";
  std::string args = "vta conv2d --layer C11 --device " + device + " --json --asm " + (dir / "c11.asm").string() +
                     " --program " + (dir / "c11.json").string();
  if (KILN_HAVE_RTL_DEVICE) args += " --trace " + (dir / "c11.trace.json").string();
  auto r = run(args);
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_TRUE(j.at("matches_reference").get<bool>());
  EXPECT_GT(j.at("gemm_uops").get<uint64_t>(), 0u);
  // The assembly reads back with `kiln asm`.
  auto a = run("asm " + (dir / "c11.asm").string() + " -o " + (dir / "c11.bin").string());
  EXPECT_EQ(a.status, 0) << a.output;
  EXPECT_GT(std::filesystem::file_size(dir / "c11.bin"), 0u);
  nlohmann::json prog = nlohmann::json::parse(slurp(dir / "c11.json"));
  EXPECT_EQ(prog.at("format"), "kiln-vta-program");
  if (KILN_HAVE_RTL_DEVICE) {
    EXPECT_GT(j.at("cycles").get<uint64_t>(), j.at("ideal_cycles").get<uint64_t>() / 2);
    nlohmann::json trace = nlohmann::json::parse(slurp(dir / "c11.trace.json"));
    EXPECT_GT(trace.at("traceEvents").size(), 10u);
  }
  std::filesystem::remove_all(dir);
}

TEST(VtaCli, BadInputNamesTheProblem) {
  auto r = run("vta conv2d --in-channels 20");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("BLOCK_IN"), std::string::npos) << r.output;
  r = run("vta conv2d --knobs 3,3");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("--knobs"), std::string::npos) << r.output;
  r = run("vta conv2d --layer C2 --knobs 5,56,1,1,1,1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("tile_h=5"), std::string::npos) << r.output;
  r = run("vta conv2d --device fsim --trace /tmp/x.json");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("--trace"), std::string::npos) << r.output;
}

#if KILN_HAVE_RTL_DEVICE
// kiln vta takes the device flags every device command takes (docs/cli.md): a slower
// DRAM costs cycles, the in-order core runs the same program, and a flag for another
// device is refused by name.
TEST(VtaCli, TakesTheDeviceFlags) {
  std::string conv = "vta conv2d --in-channels 16 --out-channels 16 --height 8 --width 8 --device rtl --json";
  auto cycles = [&](const std::string& flags) {
    auto r = run(conv + flags);
    EXPECT_EQ(r.status, 0) << flags << ": " << r.output;
    nlohmann::json j = nlohmann::json::parse(r.output);
    EXPECT_TRUE(j.at("matches_reference").get<bool>()) << flags;
    return j.at("cycles").get<uint64_t>();
  };
  uint64_t base = cycles("");
  EXPECT_GT(cycles(" --dram-latency 400 --dram-bytes-per-cycle 2"), base);
  EXPECT_GT(cycles(" --core inorder"), 0u);
  auto r = run(conv + " --memory ddr4-2400-x64");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("--memory applies to --device systemc"), std::string::npos) << r.output;
  r = run(conv + " --dram-latency soon");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("--dram-latency soon: expected a whole number"), std::string::npos) << r.output;
}

TEST(VtaCli, TuneRecordsApplyToKilnVta) {
  auto records = std::filesystem::temp_directory_path() / ("kiln_vta_cli_" + std::to_string(::getpid()) + ".jsonl");
  std::filesystem::remove(records);
  auto t = run("tune --op conv2d:C=32,H=8,W=8,O=32,KH=3,pad=1 --target vta -n 4 -j 2 -r " + records.string());
  ASSERT_EQ(t.status, 0) << t.output;
  EXPECT_NE(t.output.find("cycles on rtl"), std::string::npos) << t.output;
  auto v = run("vta conv2d --in-channels 32 --out-channels 32 --height 8 --width 8 --device rtl --records " +
               records.string());
  EXPECT_EQ(v.status, 0) << v.output;
  EXPECT_EQ(v.output.find("warning"), std::string::npos) << v.output;
  // Another shape has no record: a visible warning, and the default schedule.
  auto w = run("vta conv2d --in-channels 16 --records " + records.string());
  EXPECT_EQ(w.status, 0) << w.output;
  EXPECT_NE(w.output.find("warning"), std::string::npos) << w.output;
  std::filesystem::remove(records);
}
#endif

#ifdef KILN_HAVE_TARGET_COMMANDS
// kiln run, kiln compile and kiln tune read --target with the one parser
// (target::Target::parse): the same bad string is the same error in each, naming the
// string and listing the kinds or the kind's options, before any model is read.
TEST(VtaCli, EveryCommandReadsTargetsWithTheOneParser) {
  std::string records = (std::filesystem::temp_directory_path() / ("kiln_vta_cli_targets_" + std::to_string(::getpid()))).string();
  const std::string commands[] = {"run nosuch.onnx", "compile nosuch.onnx -o " + records + ".kiln",
                                  "tune --op matmul:M=8,N=8,K=8 -n 1 -r " + records};
  // The registered kinds, the GPU's where this kiln has them.
#ifdef KILN_HAVE_CUDA_TARGET
  const std::string cuda = "cuda, ";
#else
  const std::string cuda;
#endif
#ifdef KILN_HAVE_OPENCL_TARGET
  const std::string opencl = ", opencl";
#else
  const std::string opencl;
#endif
  const std::string kinds = "cpu, " + cuda + "interp" + opencl + ", vta", hosts = "cpu, " + cuda + "interp" + opencl;
  const std::pair<std::string, std::string> cases[] = {
      {"npu", "no target 'npu' (targets: " + kinds + ")"},
      {"'npu -config=tiny'", "target 'npu -config=tiny': no target 'npu' (targets: " + kinds + ")"},
      {"'vta -colour=red'", "target 'vta -colour=red': vta takes no option -colour (it takes -config -device"},
      {"'cpu -config=tiny'", "target 'cpu -config=tiny': cpu takes no option -config (it takes none)"},
      {"'interp -host=cpu'", "interp takes no option -host"},
      {"'vta config=tiny'", "target 'vta config=tiny': option 'config=tiny' is not -key=value"},
      {"'vta -host=vta'", "-host=vta is not a host target (" + hosts + ")"},
      {"'llvm -colour=red'", "unknown option '-colour'"},
  };
  for (const auto& [target, want] : cases) {
    std::string first;
    for (const std::string& cmd : commands) {
      auto r = run(cmd + " --target " + target);
      EXPECT_EQ(r.status, 1) << cmd << " --target " << target << ": " << r.output;
      EXPECT_NE(r.output.find(want), std::string::npos) << cmd << " --target " << target << ": " << r.output;
      if (first.empty()) first = r.output;
      EXPECT_EQ(r.output, first) << cmd << " --target " << target;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(records));
}
#endif

}  // namespace
}  // namespace kiln
