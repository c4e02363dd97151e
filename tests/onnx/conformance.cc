#include "tests/onnx/conformance.h"

#include <fmt/format.h>
#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "compiler/interp/host_buffer.h"
#include "compiler/support/error.h"
#include "support/file.h"

namespace kiln::conformance {

namespace fs = std::filesystem;

namespace {

// ONNX's backend runner (onnx/backend/test/runner): np.testing.assert_allclose with
// these unless a test sets its own.
constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;

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

// A test's values as Kiln's graphs hold them: tensors, each named as the importer names
// it (a sequence "x" as "x[0]", "x[1]", ...; an optional as its value, or nothing).
struct Flat {
  std::vector<std::string> names;
  std::vector<graph::ConstData> values;
  void add(const std::string& name, graph::ConstData v) {
    names.push_back(name);
    values.push_back(std::move(v));
  }
};

graph::ConstData read_tensor(const onnx::TensorProto& t, const onnx::TypeProto& type, const std::string& source) {
  graph::ConstData v = frontend::read_onnx_tensor(t.SerializeAsString(), source);
  bool bf16 = type.has_tensor_type() && type.tensor_type().elem_type() == onnx::TensorProto::BFLOAT16;
  return bf16 ? as_bfloat16(v) : v;
}

// The value of `name` (of ONNX type `type`) in file p: a TensorProto, a SequenceProto or
// an OptionalProto as the type says. With `opt`, an input: its shapes, sequence
// lengths and emptiness go there too.
void read_value(const fs::path& p, const std::string& name, const onnx::TypeProto& type, Flat& flat,
                frontend::OnnxOptions* opt) {
  std::string bytes = read_file(p);
  auto sequence = [&](const onnx::SequenceProto& s, const onnx::TypeProto& elem) {
    if (s.elem_type() != onnx::SequenceProto::TENSOR && s.tensor_values_size() > 0)
      throw CompileError(p.string() + ": a sequence of non-tensors");
    std::vector<std::vector<int64_t>> shapes;
    for (int k = 0; k < s.tensor_values_size(); ++k) {
      auto v = read_tensor(s.tensor_values(k), elem, p.string());
      flat.add(fmt::format("{}[{}]", name, k), v);
      shapes.push_back(v->shape());
    }
    if (opt) opt->sequence_shapes[name] = shapes;
  };
  if (type.has_sequence_type()) {
    onnx::SequenceProto s;
    if (!s.ParseFromString(bytes)) throw CompileError(p.string() + ": not a serialized onnx.SequenceProto");
    sequence(s, type.sequence_type().elem_type());
  } else if (type.has_optional_type()) {
    onnx::OptionalProto o;
    if (!o.ParseFromString(bytes)) throw CompileError(p.string() + ": not a serialized onnx.OptionalProto");
    const onnx::TypeProto& elem = type.optional_type().elem_type();
    if (o.has_tensor_value()) flat.add(name, read_tensor(o.tensor_value(), elem, p.string()));
    else if (o.has_sequence_value()) sequence(o.sequence_value(), elem.sequence_type().elem_type());
    else if (opt) opt->empty_inputs.insert(name);
  } else {
    onnx::TensorProto t;
    if (!t.ParseFromString(bytes)) throw CompileError(p.string() + ": not a serialized onnx.TensorProto");
    flat.add(name, read_tensor(t, type, p.string()));
  }
}

CaseResult run_checked(const fs::path& dir) {
  CaseResult r;
  std::string bytes = read_file(dir / "model.onnx");
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) throw CompileError((dir / "model.onnx").string() + ": does not parse");
  for (const auto& n : model.graph().node()) r.op_types.insert(n.op_type());

  // The inputs are the graph inputs that are not initializers, in order; input_k.pb
  // and output_k.pb hold the k-th.
  std::set<std::string> inits;
  for (const auto& t : model.graph().initializer()) inits.insert(t.name());
  std::vector<const onnx::ValueInfoProto*> model_inputs, model_outputs;
  for (const auto& vi : model.graph().input())
    if (!inits.count(vi.name())) model_inputs.push_back(&vi);
  for (const auto& vi : model.graph().output()) model_outputs.push_back(&vi);
  fs::path set_dir = dir / "test_data_set_0";
  auto count = [&](const std::string& prefix) {
    size_t n = 0;
    while (fs::exists(set_dir / fmt::format("{}_{}.pb", prefix, n))) ++n;
    return n;
  };
  if (count("input") != model_inputs.size())
    throw CompileError(fmt::format("{} input files for {} model inputs", count("input"), model_inputs.size()));
  if (count("output") != model_outputs.size())
    throw CompileError(fmt::format("{} output files for {} model outputs", count("output"), model_outputs.size()));

  // Shapes come from the inputs given; so do values that shapes are computed from.
  frontend::OnnxOptions opt;
  Flat inputs, outputs;
  for (size_t k = 0; k < model_inputs.size(); ++k)
    read_value(set_dir / fmt::format("input_{}.pb", k), model_inputs[k]->name(), model_inputs[k]->type(), inputs, &opt);
  for (size_t k = 0; k < model_outputs.size(); ++k)
    read_value(set_dir / fmt::format("output_{}.pb", k), model_outputs[k]->name(), model_outputs[k]->type(), outputs, nullptr);
  for (size_t k = 0; k < inputs.names.size(); ++k) {
    opt.input_shapes[inputs.names[k]] = inputs.values[k]->shape();
    opt.input_values[inputs.names[k]] = inputs.values[k];
  }
  graph::Graph g = frontend::import_onnx_bytes(bytes, opt, (dir / "model.onnx").string());
  graph::Executor ex = graph::make_executor(graph::compile(g), "cpu");

  for (size_t k = 0; k < ex.num_inputs(); ++k) {
    const auto& name = ex.plan().inputs[k].name;
    auto it = std::find(inputs.names.begin(), inputs.names.end(), name);
    if (it == inputs.names.end()) throw CompileError("the compiled model has an input '" + name + "' the test does not give");
    const auto& v = inputs.values[static_cast<size_t>(it - inputs.names.begin())];
    ex.set_input(k, v->data(), v->size() * v->dtype().storage_bytes());
  }
  ex.run();
  if (ex.num_outputs() != outputs.names.size())
    throw CompileError(fmt::format("the compiled model has {} outputs, the test expects {} ({})", ex.num_outputs(),
                                   outputs.names.size(), fmt::join(outputs.names, ", ")));
  for (size_t k = 0; k < outputs.names.size(); ++k) {
    const std::string& name = outputs.names[k];
    size_t at = ex.num_outputs();
    for (size_t j = 0; j < ex.num_outputs(); ++j)
      if (ex.plan().outputs[j].name == name) at = j;
    std::string m = at == ex.num_outputs() ? fmt::format("output '{}' is missing", name)
                                           : compare(name, ex.output_type(at), static_cast<const uint8_t*>(ex.output(at)),
                                                     *outputs.values[k]);
    if (!m.empty()) r.message = r.message.empty() ? m : r.message + "; " + m;
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

std::map<std::string, std::string> read_reasons(const fs::path& file) {
  std::map<std::string, std::string> r;
  std::istringstream in(read_file(file));
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.find('#') == 0) continue;
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    size_t e = line.find_first_of(" \t", b);
    std::string key = line.substr(b, e - b);
    size_t rb = e == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", e);
    if (rb == std::string::npos)
      throw CompileError(fmt::format("{}:{}: '{}' has no reason; every entry says why", file.string(), no, key));
    if (!r.emplace(key, line.substr(rb)).second)
      throw CompileError(fmt::format("{}:{}: '{}' is listed twice", file.string(), no, key));
  }
  return r;
}

std::map<std::string, std::string> read_exclusions(const fs::path& file) {
  auto r = read_reasons(file);
  for (const auto& [key, reason] : r)
    if (key.find('/') == std::string::npos)
      throw CompileError(fmt::format("{}: '{}' is not suite/test_name", file.string(), key));
  return r;
}

std::vector<std::string> onnx_operators(int max_opset) {
  std::set<std::string> names;
  // Each operator's newest schema: one deprecated there (Upsample, Scatter) was replaced
  // by another operator, to which ONNX's version converter brings older models.
  for (const auto& s : onnx::OpSchemaRegistry::get_all_schemas())
    if (s.domain().empty() && s.since_version() <= max_opset && !s.Deprecated()) names.insert(s.Name());
  return {names.begin(), names.end()};
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
