// Whole models on the OpenCL target (pocl on this machine's CPU): ResNet-18 and
// MobileNetV2 exported by PyTorch (tests/e2e's fixture), compiled with the GPU's
// default schedules, every kernel run through OpenCL, against PyTorch's outputs:
// max |error| <= 1e-4 * max |reference|.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "backend-cpu/runtime/tensor.h"
#include "backend-gpu/graph_backend.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "compiler/target/target.h"
#include "tests/e2e/test_util.h"

namespace kiln {
namespace {

class GpuModels : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { gpu::register_graph_backends(); }
};

TEST_P(GpuModels, MatchPyTorchOnOpenCL) {
  std::filesystem::path dir = KILN_E2E_MODELS_DIR;
  const std::string& name = GetParam();
  auto onnx_path = dir / (name + ".onnx");
  ASSERT_TRUE(std::filesystem::exists(onnx_path)) << onnx_path << " is missing: the e2e_export_models test makes it";
  cpu::NDArray input = cpu::NDArray::load_npy((dir / (name + ".input.npy")).string());
  cpu::NDArray ref = cpu::NDArray::load_npy((dir / (name + ".output.npy")).string());

  auto t0 = std::chrono::steady_clock::now();
  graph::CompileOptions o;
  o.target = target::Target::parse("opencl");
  graph::CompiledModel model = graph::compile(frontend::import_onnx_file(onnx_path.string()), o);
  graph::Executor ex = graph::make_executor(model);
  auto t1 = std::chrono::steady_clock::now();
  ex.set_input(0, input.data(), input.nbytes());
  ex.run();
  auto t2 = std::chrono::steady_clock::now();
  ASSERT_EQ(ex.output_type(0).size(), ref.size());
  std::vector<float> out(static_cast<size_t>(ref.size())), want(static_cast<size_t>(ref.size()));
  std::memcpy(out.data(), ex.output(0), out.size() * sizeof(float));
  std::memcpy(want.data(), ref.data(), want.size() * sizeof(float));
  double err = test::rel_error(out, want);
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("%s on opencl: %zu kernels; compile and build %.0f ms, first run %.0f ms; max error %.2e of max |y|\n",
              name.c_str(), model.kernels.size(), ms(t0, t1), ms(t1, t2), err);
  EXPECT_LE(err, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Models, GpuModels, ::testing::Values("resnet18", "mobilenet_v2"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kiln
