// End-to-end: ONNX models exported from PyTorch (examples/models/export_models.py, run
// at test time into the build directory) compiled by Kiln, run on the CPU backend
// and compared with PyTorch's outputs: max |error| <= 1e-4 * max |reference|.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "backend-cpu/runtime/tensor.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "compiler/graph/passes/passes.h"
#include "compiler/support/error.h"
#include "backend-cpu/graph_backend.h"
#include "tests/e2e/test_util.h"

namespace kiln {
namespace {

std::filesystem::path models_dir() { return KILN_E2E_MODELS_DIR; }

struct ModelCase {
  std::string name;
  int max_fused_kernels;  // FuseOps must bring the kernel count to at most this
};

void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.name; }

class Models : public ::testing::TestWithParam<ModelCase> {
 protected:
  static void SetUpTestSuite() { cpu::register_graph_backend(); }
};

TEST_P(Models, MatchPyTorch) {
  const ModelCase& mc = GetParam();
  auto dir = models_dir();
  auto onnx_path = dir / (mc.name + ".onnx");
  ASSERT_TRUE(std::filesystem::exists(onnx_path)) << onnx_path << " is missing: the e2e_export_models test makes it";
  cpu::NDArray input = cpu::NDArray::load_npy((dir / (mc.name + ".input.npy")).string());
  cpu::NDArray ref = cpu::NDArray::load_npy((dir / (mc.name + ".output.npy")).string());

  auto t0 = std::chrono::steady_clock::now();
  graph::Graph g = frontend::import_onnx_file(onnx_path.string());
  int unfused_ops = graph::optimize(g).num_ops();
  auto model = std::make_shared<graph::CompiledModel>(graph::compile(g));
  auto t1 = std::chrono::steady_clock::now();
  graph::Executor ex = graph::make_executor(*model, "cpu");
  auto t2 = std::chrono::steady_clock::now();
  ASSERT_EQ(ex.num_inputs(), 1u);
  ASSERT_EQ(ex.input_type(0).dtype, input.dtype());
  ex.set_input(0, input.data(), input.nbytes());
  ex.run();
  auto t3 = std::chrono::steady_clock::now();
  ASSERT_EQ(ex.output_type(0).size(), ref.size());
  std::vector<float> out(static_cast<size_t>(ref.size())), want(static_cast<size_t>(ref.size()));
  std::memcpy(out.data(), ex.output(0), out.size() * sizeof(float));
  std::memcpy(want.data(), ref.data(), want.size() * sizeof(float));
  double err = test::rel_error(out, want);
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("%s: %d ops -> %zu kernels; memory %.1f MB (%.1f MB without reuse); compile %.0f ms, codegen %.0f ms, "
              "first run %.1f ms; max error %.2e of max |y|\n",
              mc.name.c_str(), unfused_ops, model->kernels.size(), model->memory.total_bytes() / 1e6,
              model->memory.unshared_bytes / 1e6, ms(t0, t1), ms(t1, t2), ms(t2, t3), err);
  EXPECT_LE(err, 1e-4);
  EXPECT_LE(static_cast<int>(model->kernels.size()), mc.max_fused_kernels);
  EXPECT_LT(static_cast<int>(model->kernels.size()), unfused_ops);
}

// compile -> save -> load (dlopen of the saved kernels, nothing compiled) -> same output.
TEST(SavedModel, RoundTrip) {
  cpu::register_graph_backend();
  auto dir = models_dir();
  cpu::NDArray input = cpu::NDArray::load_npy((dir / "bert_tiny.input.npy").string());
  graph::Graph g = frontend::import_onnx_file((dir / "bert_tiny.onnx").string());
  graph::Executor ex = graph::make_executor(graph::compile(g), "cpu");
  ex.set_input(0, input.data(), input.nbytes());
  ex.run();
  std::string path = (std::filesystem::temp_directory_path() / "kiln_e2e_bert_tiny.kiln").string();
  graph::save_model(path, ex, "cpu", "llvm");
  graph::Executor loaded = graph::load_model(path);
  ASSERT_EQ(loaded.num_inputs(), 1u);
  EXPECT_EQ(loaded.plan().inputs[0].name, "input");
  loaded.set_input(0, input.data(), input.nbytes());
  loaded.run();
  ASSERT_EQ(loaded.output_bytes(0), ex.output_bytes(0));
  EXPECT_EQ(std::memcmp(loaded.output(0), ex.output(0), static_cast<size_t>(ex.output_bytes(0))), 0);

  // A truncated file is an error, not a crash.
  std::string bytes;
  {
    std::ifstream f(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  for (size_t cut : {size_t{4}, size_t{40}, bytes.size() / 2}) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(cut));
    try {
      graph::load_model(path);
      ADD_FAILURE() << "cut at " << cut << " loaded";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(E2E, Models,
                         ::testing::Values(ModelCase{"resnet18", 40}, ModelCase{"mobilenet_v2", 80}, ModelCase{"bert_tiny", 80},
                                           // The rest of the zoo the frontend covers: only fewer kernels than ops.
                                           ModelCase{"vgg11", 1000}, ModelCase{"squeezenet1_1", 1000},
                                           ModelCase{"shufflenet_v2_x0_5", 1000}, ModelCase{"densenet121", 1000},
                                           ModelCase{"googlenet", 1000}, ModelCase{"efficientnet_b0", 1000},
                                           ModelCase{"convnext_tiny", 1000},
                                           // Grouped convolutions (groups of 8 channels) and squeeze-and-excitation.
                                           ModelCase{"regnet_y_400mf", 1000},
                                           // LSTM and GRU layers, unrolled over their 12 steps.
                                           ModelCase{"rnn_tiny", 1000}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kiln
