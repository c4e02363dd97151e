// ONNX's own node tests of the quantization operators (Debian's libonnx-testdata):
// each model is imported, optimized, compiled for the CPU backend and run on the
// test's inputs; integer outputs must equal ONNX's exactly, float outputs to 1e-6.
// The tests were written for opset 10 (13 for the axis variants); ONNX's version
// converter brings them to opset 13, which Kiln reads.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <onnx/version_converter/convert.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend-cpu/graph_backend.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "compiler/support/error.h"
#include "tests/e2e/onnx_builder.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ir::DataType;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

onnx::TensorProto read_tensor(const fs::path& p) {
  onnx::TensorProto t;
  if (!t.ParseFromString(slurp(p))) throw std::runtime_error(p.string() + ": not a TensorProto");
  return t;
}

// The tensor's elements as doubles.
std::vector<double> values(const onnx::TensorProto& t) {
  std::vector<double> v;
  const std::string& raw = t.raw_data();
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (t.has_raw_data())
        for (size_t i = 0; i < raw.size(); i += 4) {
          float f;
          std::memcpy(&f, raw.data() + i, 4);
          v.push_back(f);
        }
      else
        v.assign(t.float_data().begin(), t.float_data().end());
      break;
    case onnx::TensorProto::INT8:
      if (t.has_raw_data()) for (char c : raw) v.push_back(static_cast<int8_t>(c));
      else v.assign(t.int32_data().begin(), t.int32_data().end());
      break;
    case onnx::TensorProto::UINT8:
      if (t.has_raw_data()) for (char c : raw) v.push_back(static_cast<uint8_t>(c));
      else v.assign(t.int32_data().begin(), t.int32_data().end());
      break;
    case onnx::TensorProto::INT32:
      if (t.has_raw_data())
        for (size_t i = 0; i < raw.size(); i += 4) {
          int32_t x;
          std::memcpy(&x, raw.data() + i, 4);
          v.push_back(x);
        }
      else
        v.assign(t.int32_data().begin(), t.int32_data().end());
      break;
    default: throw std::runtime_error("unexpected element type " + std::to_string(t.data_type()));
  }
  return v;
}

// Host bytes of `t` in the executor's element type.
std::vector<uint8_t> bytes_of(const onnx::TensorProto& t, DataType dt) {
  std::vector<double> v = values(t);
  std::vector<uint8_t> b(v.size() * dt.storage_bytes());
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DataType::Float(32)) {
      float f = static_cast<float>(v[i]);
      std::memcpy(&b[i * 4], &f, 4);
    } else if (dt == DataType::Int(32)) {
      int32_t x = static_cast<int32_t>(v[i]);
      std::memcpy(&b[i * 4], &x, 4);
    } else {
      b[i] = static_cast<uint8_t>(static_cast<int>(v[i]));
    }
  }
  return b;
}

double element(const void* data, DataType dt, size_t i) {
  if (dt == DataType::Float(32)) return static_cast<const float*>(data)[i];
  if (dt == DataType::Int(32)) return static_cast<const int32_t*>(data)[i];
  if (dt == DataType::Int(8)) return static_cast<const int8_t*>(data)[i];
  return static_cast<const uint8_t*>(data)[i];
}

class OnnxQuantNode : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { cpu::register_graph_backend(); }
};

TEST_P(OnnxQuantNode, MatchesOnnx) {
  fs::path dir = fs::path(KILN_ONNX_NODE_DIR) / GetParam();
  ASSERT_TRUE(fs::exists(dir / "model.onnx")) << dir;
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(slurp(dir / "model.onnx")));
  int64_t opset = 0;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset < 13) model = onnx::version_conversion::ConvertVersion(model, 13);

  graph::Graph g = frontend::import_onnx_bytes(model.SerializeAsString(), {}, (dir / "model.onnx").string());
  graph::Executor ex = graph::make_executor(graph::compile(g), "cpu");
  fs::path data = dir / "test_data_set_0";
  for (size_t k = 0; k < ex.num_inputs(); ++k) {
    auto b = bytes_of(read_tensor(data / ("input_" + std::to_string(k) + ".pb")), ex.input_type(k).dtype);
    ASSERT_EQ(static_cast<int64_t>(b.size()), ex.input_type(k).size() * ex.input_type(k).dtype.storage_bytes()) << "input " << k;
    ex.set_input(k, b.data(), static_cast<int64_t>(b.size()));
  }
  ex.run();
  for (size_t k = 0; k < ex.num_outputs(); ++k) {
    onnx::TensorProto want = read_tensor(data / ("output_" + std::to_string(k) + ".pb"));
    std::vector<double> w = values(want);
    DataType dt = ex.output_type(k).dtype;
    ASSERT_EQ(static_cast<int64_t>(w.size()), ex.output_type(k).size());
    for (size_t i = 0; i < w.size(); ++i) {
      double got = element(ex.output(k), dt, i);
      if (dt.is_float()) EXPECT_NEAR(got, w[i], 1e-6 * std::max(1.0, std::fabs(w[i]))) << "output " << k << " element " << i;
      else EXPECT_EQ(got, w[i]) << "output " << k << " element " << i;
    }
  }
}

// All-zero data has a scale of 0: y and the zero point are 0, not 0 / 0.
TEST(DynamicQuantizeLinear, AllZeroDataQuantizesToZero) {
  cpu::register_graph_backend();
  test::OnnxBuilder b(13);
  b.input("x", {2, 3});
  b.node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zero_point"});
  for (const char* o : {"y", "scale", "zero_point"}) b.output(o);
  graph::Executor ex = graph::make_executor(graph::compile(frontend::import_onnx_bytes(b.bytes())), "cpu");
  std::vector<float> x(6, 0.0f);
  ex.set_input(0, x.data(), static_cast<int64_t>(x.size() * sizeof(float)));
  ex.run();
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(element(ex.output(0), DataType::UInt(8), static_cast<size_t>(i)), 0.0) << i;
  EXPECT_EQ(element(ex.output(1), DataType::Float(32), 0), 0.0);
  EXPECT_EQ(element(ex.output(2), DataType::UInt(8), 0), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Node, OnnxQuantNode,
                         ::testing::Values("test_quantizelinear", "test_quantizelinear_axis", "test_dequantizelinear",
                                           "test_dequantizelinear_axis", "test_qlinearconv", "test_qlinearmatmul_2D",
                                           "test_qlinearmatmul_3D", "test_basic_convinteger", "test_convinteger_with_padding",
                                           "test_convinteger_without_padding", "test_matmulinteger",
                                           "test_dynamicquantizelinear", "test_dynamicquantizelinear_max_adjusted",
                                           "test_dynamicquantizelinear_min_adjusted"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param.substr(5); });

}  // namespace
}  // namespace kiln
