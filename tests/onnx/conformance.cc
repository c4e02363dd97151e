#include "tests/onnx/conformance.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "compiler/interp/host_buffer.h"
#include "compiler/support/error.h"

namespace kiln::conformance {

namespace fs = std::filesystem;

namespace {

// ONNX's backend runner (onnx/backend/test/runner): np.testing.assert_allclose with
// these unless a test sets its own.
constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw CompileError(p.string() + ": cannot open the file");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<graph::ConstData> read_tensors(const fs::path& set_dir, const std::string& prefix) {
  std::vector<graph::ConstData> r;
  for (int k = 0;; ++k) {
    fs::path p = set_dir / fmt::format("{}_{}.pb", prefix, k);
    if (!fs::exists(p)) break;
    r.push_back(frontend::read_onnx_tensor(read_file(p), p.string()));
  }
  return r;
}

// ONNX's test data stores bfloat16 tensors as their uint16 bit patterns (numpy has no
// bfloat16): read such a tensor as the bfloat16 the model declares.
graph::ConstData as_bfloat16(const graph::ConstData& v) {
  if (v->dtype() != ir::DataType::UInt(16)) return v;
  auto b = std::make_shared<interp::HostBuffer>(ir::DataType::BFloat16(), v->shape());
  std::memcpy(b->data(), v->data(), static_cast<size_t>(v->size()) * 2);
  return b;
}

std::string shape_str(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// "" when `got` (raw bytes of type `t`) matches `want` within the tolerances.
std::string compare(const std::string& name, const graph::TensorType& t, const uint8_t* got, const interp::HostBuffer& want) {
  if (t.dtype != want.dtype())
    return fmt::format("output '{}': type {}, expected {}", name, t.dtype.to_string(), want.dtype().to_string());
  if (t.shape != want.shape())
    return fmt::format("output '{}': shape {}, expected {}", name, shape_str(t.shape), shape_str(want.shape()));
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    bool ok;
    if (t.dtype.is_float()) {
      double g = interp::load_float(got, i, t.dtype), w = want.get(i);
      if (std::isnan(w) || std::isnan(g)) ok = std::isnan(w) && std::isnan(g);
      else if (std::isinf(w) || std::isinf(g)) ok = g == w;
      else ok = std::fabs(g - w) <= kAtol + kRtol * std::fabs(w);
      if (!ok && std::isfinite(g) && std::isfinite(w)) worst = std::max(worst, std::fabs(g - w));
    } else {
      ok = interp::load_int(got, i, t.dtype) == want.get_int(i);
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  std::string g = t.dtype.is_float() ? fmt::format("{}", interp::load_float(got, first, t.dtype))
                                     : fmt::format("{}", interp::load_int(got, first, t.dtype));
  std::string w = t.dtype.is_float() ? fmt::format("{}", want.get(first)) : fmt::format("{}", want.get_int(first));
  return fmt::format("output '{}': {} of {} elements differ (rtol {}, atol {}); first at {}: {} vs {} expected; largest "
                     "difference {}",
                     name, bad, want.size(), kRtol, kAtol, first, g, w, worst);
}

CaseResult run_checked(const fs::path& dir) {
  CaseResult r;
  std::string bytes = read_file(dir / "model.onnx");
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) throw CompileError((dir / "model.onnx").string() + ": does not parse");
  for (const auto& n : model.graph().node()) r.op_types.insert(n.op_type());

  // The inputs are the graph inputs that are not initializers, in order.
  std::set<std::string> inits;
  for (const auto& t : model.graph().initializer()) inits.insert(t.name());
  std::vector<std::string> input_names, output_names;
  std::vector<bool> input_bf16, output_bf16;
  auto is_bf16 = [](const onnx::ValueInfoProto& vi) {
    return vi.type().has_tensor_type() && vi.type().tensor_type().elem_type() == onnx::TensorProto::BFLOAT16;
  };
  for (const auto& vi : model.graph().input())
    if (!inits.count(vi.name())) {
      input_names.push_back(vi.name());
      input_bf16.push_back(is_bf16(vi));
    }
  for (const auto& vi : model.graph().output()) {
    output_names.push_back(vi.name());
    output_bf16.push_back(is_bf16(vi));
  }

  fs::path set_dir = dir / "test_data_set_0";
  auto inputs = read_tensors(set_dir, "input");
  auto outputs = read_tensors(set_dir, "output");
  if (inputs.size() != input_names.size())
    throw CompileError(fmt::format("{} input files for {} model inputs", inputs.size(), input_names.size()));
  if (outputs.size() != output_names.size())
    throw CompileError(fmt::format("{} output files for {} model outputs", outputs.size(), output_names.size()));
  for (size_t k = 0; k < inputs.size(); ++k)
    if (input_bf16[k]) inputs[k] = as_bfloat16(inputs[k]);
  for (size_t k = 0; k < outputs.size(); ++k)
    if (output_bf16[k]) outputs[k] = as_bfloat16(outputs[k]);

  // Shapes come from the inputs given; so do values that shapes are computed from.
  frontend::OnnxOptions opt;
  for (size_t k = 0; k < inputs.size(); ++k) {
    opt.input_shapes[input_names[k]] = inputs[k]->shape();
    opt.input_values[input_names[k]] = inputs[k];
  }
  graph::Graph g = frontend::import_onnx_bytes(bytes, opt, (dir / "model.onnx").string());
  graph::Executor ex = graph::make_executor(graph::compile(g), "cpu");

  for (size_t k = 0; k < ex.num_inputs(); ++k) {
    const auto& name = ex.plan().inputs[k].name;
    auto it = std::find(input_names.begin(), input_names.end(), name);
    if (it == input_names.end()) throw CompileError("the compiled model has an input '" + name + "' the test does not give");
    const auto& v = inputs[static_cast<size_t>(it - input_names.begin())];
    ex.set_input(k, v->data(), v->size() * v->dtype().storage_bytes());
  }
  ex.run();
  if (ex.num_outputs() != outputs.size())
    throw CompileError(fmt::format("the compiled model has {} outputs, the test expects {}", ex.num_outputs(), outputs.size()));
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::string m = compare(output_names[k], ex.output_type(k), static_cast<const uint8_t*>(ex.output(k)), *outputs[k]);
    if (!m.empty()) {
      r.message = r.message.empty() ? m : r.message + "; " + m;
    }
  }
  r.passed = r.message.empty();
  return r;
}

}  // namespace

CaseResult run_case(const fs::path& dir) {
  try {
    return run_checked(dir);
  } catch (const std::exception& e) {
    CaseResult r;
    r.message = e.what();
    r.op_types = model_ops(dir);
    return r;
  }
}

std::set<std::string> model_ops(const fs::path& dir) {
  std::set<std::string> r;
  onnx::ModelProto model;
  try {
    if (model.ParseFromString(read_file(dir / "model.onnx")))
      for (const auto& n : model.graph().node()) r.insert(n.op_type());
  } catch (const std::exception&) {
  }
  return r;
}

std::map<std::string, std::string> read_exclusions(const fs::path& file) {
  std::map<std::string, std::string> r;
  std::istringstream in(read_file(file));
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    auto hash = line.find('#');
    if (hash == 0) continue;
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    size_t e = line.find_first_of(" \t", b);
    std::string key = line.substr(b, e - b);
    size_t rb = e == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", e);
    if (rb == std::string::npos)
      throw CompileError(fmt::format("{}:{}: '{}' has no reason; every exclusion says why", file.string(), no, key));
    if (key.find('/') == std::string::npos)
      throw CompileError(fmt::format("{}:{}: '{}' is not suite/test_name", file.string(), no, key));
    if (!r.emplace(key, line.substr(rb)).second)
      throw CompileError(fmt::format("{}:{}: '{}' is listed twice", file.string(), no, key));
  }
  return r;
}

std::vector<SuiteCase> list_cases(const fs::path& data_dir, const std::vector<std::string>& suites) {
  std::vector<SuiteCase> r;
  for (const auto& s : suites) {
    if (!fs::is_directory(data_dir / s)) continue;
    for (const auto& e : fs::directory_iterator(data_dir / s))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) r.push_back({s, e.path().filename().string(), e.path()});
  }
  std::sort(r.begin(), r.end(), [](const SuiteCase& a, const SuiteCase& b) { return a.key() < b.key(); });
  return r;
}

}  // namespace kiln::conformance
