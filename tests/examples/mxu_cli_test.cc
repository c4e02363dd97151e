// The MXU example through the command line, as a user runs it: `kiln quantize` makes the
// int8 model, `kiln --plugin libkiln_mxu_plugin.so run MODEL --target mxu` places it on
// the MXU (a target the kiln executable does not know without the plugin), and its
// output file equals `kiln run --target cpu`'s byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "backend-cpu/runtime/tensor.h"
#include "tests/support/command.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(KILN_MXU_MODELS_DIR);

std::string kiln(const std::string& args) { return std::string(KILN_BIN) + " " + args; }
std::string plugin() { return std::string("--plugin ") + KILN_MXU_PLUGIN + " "; }

std::string bytes_of(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void save_image(const fs::path& p, uint32_t seed) {
  cpu::NDArray x = cpu::NDArray::empty({1, 3, 64, 64}, ir::DataType::Float(32));
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  for (int64_t i = 0; i < x.size(); ++i) x.data_as<float>()[i] = d(rng);
  x.save_npy(p.string());
}

std::string run(const std::string& model, const std::string& target, const std::string& out) {
  return "run " + (kDir / model).string() + " --target " + target + " --input input=" + (kDir / "input.npy").string() +
         " --output " + (kDir / out).string() + " --repeat 1";
}

TEST(MxuCli, RunsWithThePluginEqualToTheCpu) {
  fs::create_directories(kDir / "calibration");
  save_image(kDir / "calibration" / "x0.npy", 1);
  save_image(kDir / "calibration" / "x1.npy", 2);
  save_image(kDir / "input.npy", 3);
  auto q = test::run_command(kiln("quantize " + (kDir / "resnet18_64.onnx").string() + " --calibrate " +
                                  (kDir / "calibration").string() + " -o " + (kDir / "resnet18_64.cli.q.onnx").string()));
  ASSERT_EQ(q.status, 0) << q.output;
  auto cpu = test::run_command(kiln(run("resnet18_64.cli.q.onnx", "cpu", "cpu.npy")));
  ASSERT_EQ(cpu.status, 0) << cpu.output;
  auto mxu = test::run_command(kiln(plugin() + run("resnet18_64.cli.q.onnx", "mxu", "mxu.npy")));
  ASSERT_EQ(mxu.status, 0) << mxu.output;
  EXPECT_NE(mxu.output.find("placement on mxu -a_kb=32 -acc_kb=16 -dram_mb=64 -w_kb=64: 19 of 21 operators on the accelerator"),
            std::string::npos)
      << mxu.output;
  EXPECT_EQ(bytes_of(kDir / "mxu.npy"), bytes_of(kDir / "cpu.npy"));
}

// The errors come before anything is compiled: the float model does, with a random input.
std::string run_float(const std::string& target) { return "run " + (kDir / "resnet18_64.onnx").string() + " --target " + target; }

TEST(MxuCli, WithoutThePluginTheTargetIsUnknown) {
  auto r = test::run_command(kiln(run_float("mxu")));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("no target 'mxu'"), std::string::npos) << r.output;
}

TEST(MxuCli, ABadPluginIsAnError) {
  auto r = test::run_command(kiln("--plugin /nonexistent/libnothing.so " + run_float("mxu")));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--plugin /nonexistent/libnothing.so"), std::string::npos) << r.output;
  // A shared object without the entry point.
  r = test::run_command(kiln("--plugin libm.so.6 " + run_float("mxu")));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("no function kiln_register_plugin"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kiln
