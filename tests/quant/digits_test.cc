// Quantization quality on real data: the digits CNN (examples/models/digits.py, trained
// on scikit-learn's load_digits at test time) quantized by `kiln quantize` with
// power-of-two and with float scales, run by Kiln on the CPU over the held-out split:
// test accuracy within 1 percentage point of fp32. And the command's bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <algorithm>
#include <cmath>
#include <iostream>

#include "backend-cpu/graph_backend.h"
#include "backend-cpu/runtime/tensor.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "compiler/graph/passes/passes.h"
#include "tests/support/command.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

fs::path dir() { return KILN_DIGITS_DIR; }

std::string kiln(const std::string& args) { return std::string(KILN_BIN) + " " + args; }

std::string quantize_args(const std::string& scales, const fs::path& out) {
  return "quantize " + (dir() / "digits.onnx").string() + " --calibrate " + (dir() / "calibration").string() +
         " --scales " + scales + " -o " + out.string();
}

// Accuracy (in %) of `model` over the test split, run as one batch.
double accuracy(const fs::path& model) {
  cpu::NDArray x = cpu::NDArray::load_npy((dir() / "digits_test_x.npy").string()).contiguous();
  cpu::NDArray y = cpu::NDArray::load_npy((dir() / "digits_test_y.npy").string()).contiguous();
  frontend::OnnxOptions opt;
  opt.input_shapes["x"] = x.shape();
  graph::Executor ex = graph::make_executor(graph::compile(frontend::import_onnx_file(model.string(), opt)), "cpu");
  ex.set_input(0, x.data(), x.nbytes());
  ex.run();
  const float* logits = static_cast<const float*>(ex.output(0));
  int64_t n = x.shape()[0], correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits + i * 10;
    correct += std::max_element(row, row + 10) - row == y.data_as<int64_t>()[i];
  }
  return 100.0 * static_cast<double>(correct) / static_cast<double>(n);
}

class Digits : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cpu::register_graph_backend(); }
};

TEST_F(Digits, QuantizedAccuracyWithinOnePointOfFp32) {
  ASSERT_TRUE(fs::exists(dir() / "digits.onnx")) << "the quant_digits_data test makes it";
  double fp32 = accuracy(dir() / "digits.onnx");
  for (std::string scales : {"power2", "float"}) {
    SCOPED_TRACE(scales);
    fs::path q = dir() / ("digits." + scales + ".q.onnx");
    auto r = test::run_command(kiln(quantize_args(scales, q)));
    ASSERT_EQ(r.status, 0) << r.output;
    double acc = accuracy(q);
    std::cout << "digits: fp32 " << fp32 << "%, int8 (" << scales << " scales) " << acc << "%\n";
    RecordProperty("accuracy_" + scales, std::to_string(acc));
    EXPECT_LE(std::fabs(acc - fp32), 1.0);
  }
  RecordProperty("accuracy_fp32", std::to_string(fp32));
}

// With power-of-two scales every convolution but the skipped first one is the shift
// form: int8 conv2d with out_dtype int32, then add, right_shift, clip, cast.
TEST_F(Digits, PowerOfTwoModelIsTheShiftForm) {
  fs::path q = dir() / "digits.shape.q.onnx";
  auto r = test::run_command(kiln(quantize_args("power2", q)));
  ASSERT_EQ(r.status, 0) << r.output;
  graph::Graph g = graph::optimize(frontend::import_onnx_file(q.string()));
  int float_convs = 0, int_convs = 0, shifted = 0;
  for (graph::NodeId id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op == "conv2d" || n.op == "conv2d_nchwc") {
      bool is_int = n.attrs.get_string("out_dtype") == "int32";
      (is_int ? int_convs : float_convs)++;
      if (is_int) {
        EXPECT_EQ(g.type(n.inputs[0]).dtype, ir::DataType::Int(8));
      }
    }
    if (n.op == "cast" && n.type.dtype == ir::DataType::Int(8) && g.node(n.inputs[0]).op == "clip") {
      const graph::Node& sh = g.node(g.node(n.inputs[0]).inputs[0]);
      shifted += sh.op == "right_shift";
    }
  }
  EXPECT_EQ(float_convs, 1);  // the first convolution, skipped
  EXPECT_EQ(int_convs, 3);
  EXPECT_GE(shifted, 4);  // conv2, conv3, the residual add, conv4
}

TEST(QuantizeCli, BadInputIsAClearError) {
  fs::path bad = fs::temp_directory_path() / "kiln_quant_bad";
  fs::create_directories(bad / "empty");
  fs::create_directories(bad / "shape");
  cpu::NDArray::zeros({4, 3, 8, 8}, ir::DataType::Float(32)).save_npy((bad / "shape" / "a.npy").string());
  fs::create_directories(bad / "dtype");
  cpu::NDArray::zeros({4, 1, 8, 8}, ir::DataType::Int(32)).save_npy((bad / "dtype" / "a.npy").string());
  std::string model = (dir() / "digits.onnx").string();
  std::string out = (bad / "out.onnx").string();
  auto run = [&](const std::string& args) { return test::run_command(kiln("quantize " + model + " " + args + " -o " + out)); };
  auto r = run("--calibrate " + (bad / "empty").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("holds no .npy files"), std::string::npos) << r.output;
  r = run("--calibrate " + (bad / "shape").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("float32[4, 3, 8, 8]; the model's input is float32[1, 1, 8, 8]"), std::string::npos) << r.output;
  r = run("--calibrate " + (bad / "dtype").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("int32[4, 1, 8, 8]"), std::string::npos) << r.output;
  r = run("--calibrate " + (dir() / "calibration").string() + " --method median");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("unknown calibration method 'median' (max, percentile or kl)"), std::string::npos) << r.output;
  r = run("--calibrate " + (dir() / "calibration").string() + " --skip /nothing/Conv");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("'/nothing/Conv'"), std::string::npos) << r.output;
  r = run("--calibrate " + (bad / "missing").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("is not a directory"), std::string::npos) << r.output;
  fs::remove_all(bad);
}

// The other calibration methods and per-channel weights also give a working model.
TEST_F(Digits, MethodsAndPerChannel) {
  for (std::string extra : {"--method percentile", "--method kl", "--per-channel --scales float"}) {
    SCOPED_TRACE(extra);
    fs::path q = dir() / "digits.extra.q.onnx";
    auto r = test::run_command(kiln("quantize " + (dir() / "digits.onnx").string() + " --calibrate " +
                                    (dir() / "calibration").string() + " " + extra + " -o " + q.string()));
    ASSERT_EQ(r.status, 0) << r.output;
    double acc = accuracy(q);
    std::cout << "digits: int8 (" << extra << ") " << acc << "%\n";
    EXPECT_GE(acc, 90.0);
  }
}

}  // namespace
}  // namespace kiln
