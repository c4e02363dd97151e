// `kiln run` and `kiln compile` (tools/kiln/run_cmd.cc) on the exported tiny BERT.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

#include "backend-cpu/runtime/tensor.h"
#include "compiler/ir/type.h"
#include "tests/e2e/onnx_builder.h"
#include "tests/support/command.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string out;
};

Result kiln(const std::string& args) {
  kiln::test::CommandResult r = kiln::test::run_command(std::string(KILN_BIN) + " " + args);
  return {r.status, r.output};
}

fs::path models() { return KILN_E2E_MODELS_DIR; }

double max_rel_error(const kiln::cpu::NDArray& a, const kiln::cpu::NDArray& b) {
  double m = 1e-30, e = 0;
  for (int64_t i = 0; i < b.size(); ++i) {
    m = std::max(m, std::fabs(static_cast<double>(b.data_as<float>()[i])));
    e = std::max(e, std::fabs(static_cast<double>(a.data_as<float>()[i]) - b.data_as<float>()[i]));
  }
  return e / m;
}

TEST(KilnRun, OnnxWithInputsOutputsAndJson) {
  fs::path out = fs::temp_directory_path() / "kiln_cli_bert_out.npy";
  Result r = kiln("run " + (models() / "bert_tiny.onnx").string() + " --target cpu --input input=" +
                  (models() / "bert_tiny.input.npy").string() + " --output " + out.string() + " --repeat 3 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  const auto& lat = j.at("latency_ms");
  EXPECT_GT(lat.at("median").get<double>(), 0);
  EXPECT_LE(lat.at("min").get<double>(), lat.at("median").get<double>());
  EXPECT_GE(lat.at("max").get<double>(), lat.at("median").get<double>());
  EXPECT_EQ(j.at("repeat").get<int>(), 3);
  EXPECT_EQ(j.at("profile").size(), j.at("kernels").get<size_t>());
  auto got = kiln::cpu::NDArray::load_npy(out.string());
  auto want = kiln::cpu::NDArray::load_npy((models() / "bert_tiny.output.npy").string());
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_LE(max_rel_error(got, want), 1e-4);
  fs::remove(out);
}

TEST(KilnRun, CompileThenRunTheSavedModel) {
  fs::path saved = fs::temp_directory_path() / "kiln_cli_bert.kiln";
  Result c = kiln("compile " + (models() / "bert_tiny.onnx").string() + " --target cpu -o " + saved.string());
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("kernels"), std::string::npos) << c.out;
  Result r = kiln("run " + saved.string() + " --repeat 2");  // random inputs
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("latency: median"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("profile (median per kernel"), std::string::npos) << r.out;
  fs::remove(saved);
}

// A float16 model: random inputs of its type when none are given, float16 outputs, and
// its convolution compiled as the CPU's blocked float32 one (promote_half).
TEST(KilnRun, HalfPrecisionModels) {
  kiln::test::OnnxBuilder b(13);
  b.input("x", {1, 16, 8, 8}, onnx::TensorProto::FLOAT16);
  auto* w = b.model().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT16);
  for (int64_t d : {16, 16, 3, 3}) w->add_dims(d);
  for (int k = 0; k < 16 * 16 * 9; ++k) w->add_int32_data(kiln::ir::float_to_half_bits((k % 7 - 3) * 0.01));
  auto* c = b.node("Conv", {"x", "w"}, {"c"});
  kiln::test::OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c"}, {"y"});
  b.output("y");
  fs::path model = fs::temp_directory_path() / ("kiln_cli_half_" + std::to_string(getpid()) + ".onnx");
  fs::path out = model.string() + ".y.npy";
  std::ofstream(model, std::ios::binary) << b.bytes();
  Result r = kiln("run " + model.string() + " --repeat 2 --json --output " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("inputs").at(0).at("type"), "float16[1, 16, 8, 8]") << r.out;
  EXPECT_EQ(j.at("outputs").at(0).at("type"), "float16[1, 16, 8, 8]") << r.out;
  EXPECT_NE(j.at("profile").dump().find("conv2d_nchwc"), std::string::npos) << r.out;
  kiln::cpu::NDArray y = kiln::cpu::NDArray::load_npy(out.string());
  EXPECT_EQ(y.dtype(), kiln::ir::DataType::Float(16));
  fs::remove(model);
  fs::remove(out);
}

TEST(KilnRun, BrokenModelsGiveClearErrors) {
  fs::path bad = fs::temp_directory_path() / "kiln_cli_truncated.onnx";
  {
    std::ifstream in(models() / "bert_tiny.onnx", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(bad, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 3));
  }
  Result r = kiln("run " + bad.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("kiln: error: " + bad.string()), std::string::npos) << r.out;
  fs::remove(bad);
  r = kiln("run " + (models() / "bert_tiny.onnx").string() + " --input nosuch=x.npy");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("no input named 'nosuch'"), std::string::npos) << r.out;
}

// The errors of every layer (the command line's own, hw/, the compiler, the tuner's
// records) reach the user as one kiln::Error, printed one way.
TEST(KilnCli, EveryLayersErrorPrintsOneWay) {
  fs::path bad = fs::temp_directory_path() / ("kiln_cli_one_way_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(bad) << "{\"version\":1}\n";
  const std::string model = (models() / "bert_tiny.onnx").string();
  const std::pair<std::string, std::string> cases[] = {
      {"--plugin /nonexistent/libnone.so hw show", "kiln: error: --plugin /nonexistent/libnone.so: "},
      {"hw show --config /nonexistent/none.json", "kiln: error: "},
      {"run " + model + " --input-shape nonsense", "kiln: error: --input-shape 'nonsense'"},
      {"run " + model + " --records " + bad.string(), "kiln: error: "},
  };
  for (const auto& [args, want] : cases) {
    Result r = kiln(args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(want), std::string::npos) << args << "\n" << r.out;
    EXPECT_EQ(r.out.find("internal error"), std::string::npos) << args << "\n" << r.out;
  }
  fs::remove(bad);
}

}  // namespace
