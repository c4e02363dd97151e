// End-to-end: models exported by PyTorch at ONNX opsets 9, 11, 13 and 17 with dynamic
// batch (and sequence) dimensions (tests/e2e/export_opset_models.py, run at test time
// into the build directory), compiled for the shapes of inputs that differ from the
// ones they were exported with, run on the CPU backend and compared with PyTorch:
// max |error| <= 1e-4 * max |reference|.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "backend-cpu/graph_backend.h"
#include "backend-cpu/runtime/tensor.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "tests/e2e/test_util.h"
#include "tests/support/command.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

fs::path models_dir() { return KILN_E2E_OPSET_MODELS_DIR; }

// The inputs the exporter wrote for `tag`: TAG.input.NAME.npy, by input name.
std::map<std::string, cpu::NDArray> inputs_of(const std::string& tag) {
  std::map<std::string, cpu::NDArray> in;
  std::string prefix = tag + ".input.";
  for (const auto& e : fs::directory_iterator(models_dir())) {
    std::string f = e.path().filename().string();
    if (f.rfind(prefix, 0) == 0 && f.size() > prefix.size() + 4 && f.substr(f.size() - 4) == ".npy")
      in[f.substr(prefix.size(), f.size() - prefix.size() - 4)] = cpu::NDArray::load_npy(e.path().string()).contiguous();
  }
  return in;
}

// The names of the model's symbolic input dimensions ("batch", "sequence").
std::set<std::string> symbolic_dims(const fs::path& model) {
  onnx::ModelProto m;
  std::ifstream f(model, std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&f)) << model;
  std::set<std::string> dims;
  for (const auto& vi : m.graph().input())
    for (const auto& d : vi.type().tensor_type().shape().dim())
      if (!d.dim_param().empty()) dims.insert(d.dim_param());
  return dims;
}

struct OpsetCase {
  std::string model;
  int opset;
  std::string tag() const { return model + "_op" + std::to_string(opset); }
};

void PrintTo(const OpsetCase& c, std::ostream* os) { *os << c.tag(); }

class OpsetModels : public ::testing::TestWithParam<OpsetCase> {
 protected:
  static void SetUpTestSuite() { cpu::register_graph_backend(); }
};

TEST_P(OpsetModels, MatchPyTorchAtInputShapes) {
  const OpsetCase& c = GetParam();
  fs::path onnx_path = models_dir() / (c.tag() + ".onnx");
  ASSERT_TRUE(fs::exists(onnx_path)) << onnx_path << " is missing: the e2e_export_opset_models test makes it";
  EXPECT_TRUE(symbolic_dims(onnx_path).count("batch")) << "the export has no dynamic batch dimension";
  if (c.model == "encoder") {
    EXPECT_TRUE(symbolic_dims(onnx_path).count("sequence"));
  }
  auto inputs = inputs_of(c.tag());
  ASSERT_FALSE(inputs.empty());
  cpu::NDArray ref = cpu::NDArray::load_npy((models_dir() / (c.tag() + ".output.npy")).string());

  frontend::OnnxOptions opt;
  for (const auto& [name, a] : inputs) opt.input_shapes[name] = a.shape();
  graph::Graph g = frontend::import_onnx_file(onnx_path.string(), opt);
  graph::Executor ex = graph::make_executor(graph::compile(g), "cpu");
  ASSERT_EQ(ex.num_inputs(), inputs.size());
  for (size_t k = 0; k < ex.num_inputs(); ++k) {
    const auto& in = ex.plan().inputs[k];
    auto it = inputs.find(in.name);
    ASSERT_NE(it, inputs.end()) << in.name;
    // The compiled model states the shapes it was compiled for: the inputs' own.
    EXPECT_EQ(in.type.shape, it->second.shape()) << in.name;
    ASSERT_EQ(in.type.dtype, it->second.dtype()) << in.name;
    ex.set_input(k, it->second.data(), it->second.nbytes());
  }
  ex.run();
  ASSERT_EQ(ex.output_type(0).shape, ref.shape());
  std::vector<float> out(static_cast<size_t>(ref.size())), want(out.size());
  std::memcpy(out.data(), ex.output(0), out.size() * sizeof(float));
  std::memcpy(want.data(), ref.data(), want.size() * sizeof(float));
  double err = test::rel_error(out, want);
  std::printf("%s: %zu kernels, max error %.2e of max |y|\n", c.tag().c_str(), ex.plan().kernels.size(), err);
  EXPECT_LE(err, 1e-4);
}

std::vector<OpsetCase> cases() {
  std::vector<OpsetCase> v;
  for (const char* m : {"resnet18", "mobilenet_v3", "lraspp", "vit", "encoder"})
    for (int opset : {9, 11, 13, 17}) v.push_back({m, opset});
  return v;
}

INSTANTIATE_TEST_SUITE_P(E2E, OpsetModels, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.tag(); });

// `kiln run MODEL --input NAME=FILE.npy` compiles for the files' shapes: the encoder
// exported at opset 9 with batch 1 and 16 tokens runs 2 sequences of 24, and its output
// is PyTorch's.
TEST(OpsetModelsCli, RunTakesShapesFromInputFiles) {
  fs::path dir = models_dir();
  std::string tag = "encoder_op9";
  fs::path out = fs::temp_directory_path() / "kiln_e2e_encoder_op9.out.npy";
  std::string cmd = std::string(KILN_BIN) + " run " + (dir / (tag + ".onnx")).string() + " -n 1" +
                    " --input ids=" + (dir / (tag + ".input.ids.npy")).string() +
                    " --input mask=" + (dir / (tag + ".input.mask.npy")).string() + " --output " + out.string();
  auto r = test::run_command(cmd);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("output 'output': float32[2, 48]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("input 'ids': int64[2, 24]"), std::string::npos) << r.output;
  cpu::NDArray got = cpu::NDArray::load_npy(out.string()), ref = cpu::NDArray::load_npy((dir / (tag + ".output.npy")).string());
  ASSERT_EQ(got.shape(), ref.shape());
  std::vector<float> a(static_cast<size_t>(got.size())), b(a.size());
  std::memcpy(a.data(), got.data(), a.size() * sizeof(float));
  std::memcpy(b.data(), ref.data(), b.size() * sizeof(float));
  EXPECT_LE(test::rel_error(a, b), 1e-4);
  fs::remove(out);

  // An --input-shape that contradicts the file is reported, naming the input.
  auto bad = test::run_command(std::string(KILN_BIN) + " run " + (dir / (tag + ".onnx")).string() + " -n 1" +
                               " --input-shape ids=1x24 --input ids=" + (dir / (tag + ".input.ids.npy")).string() +
                               " --input mask=" + (dir / (tag + ".input.mask.npy")).string());
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("input 'ids'"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace kiln
