// ResNet-18 (torchvision, random weights with calibrated batch norms, on a 64x64 image
// to keep CI short) quantized by Kiln with power-of-two scales, the first convolution
// left in float as `kiln quantize` does by default, then compiled for the MXU example
// (examples/matrix-unit): every other convolution is placed on the MXU through the
// same placement, strategies and executor as the VTA's, and the output equals Kiln's
// CPU execution of the same quantized graph bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "backend-cpu/graph_backend.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "compiler/quantize/quantize.h"
#include "examples/matrix-unit/mxu_target.h"

namespace kiln {
namespace {

constexpr int64_t kSize = 64;

graph::ConstData random_image(uint32_t seed) {
  auto b = std::make_shared<interp::HostBuffer>(ir::DataType::Float(32), std::vector<int64_t>{1, 3, kSize, kSize});
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  for (int64_t i = 0; i < b->size(); ++i) reinterpret_cast<float*>(b->data())[i] = d(rng);
  return b;
}

class MxuResNet18 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cpu::register_graph_backend();
    mxu::register_mxu_target();
    std::ifstream f(std::string(KILN_MXU_MODELS_DIR) + "/resnet18_64.onnx", std::ios::binary);
    ASSERT_TRUE(f) << "the model fixture (mxu_export_resnet18) did not run";
    std::stringstream bytes;
    bytes << f.rdbuf();
    quantize::Options o;  // max calibration, power-of-two scales, the first convolution skipped
    std::string q = quantize::quantize_onnx(bytes.str(), {random_image(1), random_image(2)}, o, "resnet18_64.onnx");
    graph_ = new graph::Graph(frontend::import_onnx_bytes(q, {}, "resnet18_64.q.onnx"));
  }
  static void TearDownTestSuite() { delete graph_; }

  static std::vector<float> run(const std::string& target, graph::CompiledModel* out = nullptr,
                                graph::AcceleratorReport* report = nullptr) {
    graph::CompileOptions co;
    co.target = target::Target::parse(target);
    graph::CompiledModel m = graph::compile(*graph_, co);
    graph::Executor ex = graph::make_executor(m, "cpu", "llvm");
    graph::ConstData x = random_image(3);
    ex.set_input(0, x->data(), x->size() * 4);
    std::vector<double> ms = ex.run_profiled();
    if (report) *report = graph::accelerator_report(ex, ms);
    std::vector<float> y(static_cast<size_t>(ex.output_type(0).size()));
    std::memcpy(y.data(), ex.output(0), y.size() * sizeof(float));
    if (out) *out = std::move(m);
    return y;
  }

  static graph::Graph* graph_;
};

graph::Graph* MxuResNet18::graph_ = nullptr;

TEST_F(MxuResNet18, ConvolutionsRunOnTheMxuBitExactWithTheCpu) {
  graph::CompiledModel m;
  graph::AcceleratorReport r;
  std::vector<float> mxu = run("mxu", &m, &r);
  std::vector<float> cpu = run("cpu");
  ASSERT_EQ(mxu.size(), 1000u);
  EXPECT_EQ(mxu, cpu);
  // ResNet-18 has 20 convolutions (17 3x3 or 7x7, 3 strided 1x1 shortcuts) and one dense
  // layer, whose int32 result is dequantized to float (not requantized to int8: no MXU chain).
  int convs = 0, on_mxu = 0, float_convs = 0;
  for (const auto& p : m.placement) {
    if (p.target != "mxu") std::cout << "on the CPU: " << p.node << " (" << p.op << "): " << p.reason << "\n";
    // The float convolution was given the CPU's NCHWc layout by optimize() before placement.
    if (p.op != "conv2d" && p.op != "conv2d_nchwc") continue;
    convs++;
    if (p.target == "mxu") on_mxu++;
    else if (p.reason == "not quantized") float_convs++;
    else ADD_FAILURE() << p.node << " stayed on the CPU: " << p.reason;
  }
  EXPECT_EQ(convs, 20);
  EXPECT_EQ(on_mxu, 19);
  EXPECT_EQ(float_convs, 1);  // the first, skipped by quantization
  int kernels = 0;
  for (const auto& k : m.kernels) kernels += k.on_accelerator;
  EXPECT_GE(kernels, 19);
  std::cout << fmt::format("ResNet-18 at {}x{} on the MXU: {} kernels, {:.3f} M cycles, {:.1f}% of the array busy\n", kSize,
                           kSize, kernels, r.cycles / 1e6, 100 * r.utilization());
}

}  // namespace
}  // namespace kiln
