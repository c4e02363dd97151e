#include "compiler/graph/graph.h"

#include <fmt/format.h>

#include <sstream>

#include "compiler/graph/op.h"
#include "compiler/support/error.h"

namespace kiln::graph {

int64_t TensorType::size() const {
  int64_t n = 1;
  // A model file may claim any shape: one whose element count int64 cannot hold is an
  // error, not an overflow (found by tests/fuzz/onnx_fuzz).
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) throw CompileError(fmt::format("tensor {} has too many elements", to_string()));
  return n;
}

std::string TensorType::to_string() const {
  return fmt::format("{}[{}]", dtype.to_string(), fmt::join(shape, ", "));
}

// ---------------------------------------------------------------- attributes

namespace {
template <typename T>
const T& attr_as(const std::map<std::string, AttrValue>& m, const std::string& key, const char* kind) {
  const AttrValue& v = m.at(key);
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw CompileError(fmt::format("attribute '{}' is not {}", key, kind));
}
}  // namespace

int64_t Attrs::get_int(const std::string& key, int64_t def) const {
  if (!has(key)) return def;
  if (const double* d = std::get_if<double>(&map_.at(key))) return static_cast<int64_t>(*d);
  return attr_as<int64_t>(map_, key, "an integer");
}
double Attrs::get_float(const std::string& key, double def) const {
  if (!has(key)) return def;
  if (const int64_t* i = std::get_if<int64_t>(&map_.at(key))) return static_cast<double>(*i);
  return attr_as<double>(map_, key, "a float");
}
std::string Attrs::get_string(const std::string& key, const std::string& def) const {
  return has(key) ? attr_as<std::string>(map_, key, "a string") : def;
}
std::vector<int64_t> Attrs::get_ints(const std::string& key, std::vector<int64_t> def) const {
  return has(key) ? attr_as<std::vector<int64_t>>(map_, key, "a list of integers") : def;
}
std::vector<double> Attrs::get_floats(const std::string& key, std::vector<double> def) const {
  return has(key) ? attr_as<std::vector<double>>(map_, key, "a list of floats") : def;
}

std::string Attrs::to_string() const {
  std::vector<std::string> parts;
  for (const auto& [k, v] : map_) {
    std::string s = std::visit(
        [](const auto& x) -> std::string {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>) return "\"" + x + "\"";
          else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) return fmt::format("{}", x);
          else return fmt::format("[{}]", fmt::join(x, ", "));
        },
        v);
    parts.push_back(k + "=" + s);
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// ---------------------------------------------------------------- graph

NodeId Graph::add_input(const std::string& name, TensorType type) {
  for (int64_t d : type.shape)
    if (d < 0) throw CompileError(fmt::format("input '{}': dimension {} is not a static size", name, d));
  Node n;
  n.op = "input";
  n.name = name;
  n.type = std::move(type);
  nodes_.push_back(std::move(n));
  inputs_.push_back(size() - 1);
  return size() - 1;
}

NodeId Graph::add_constant(const std::string& name, ConstData value) {
  Node n;
  n.op = "constant";
  n.name = name;
  n.type = TensorType{value->dtype(), value->shape()};
  n.value = std::move(value);
  nodes_.push_back(std::move(n));
  return size() - 1;
}

NodeId Graph::add_scalar(const std::string& name, DataType dtype, double value) {
  auto b = std::make_shared<interp::HostBuffer>(dtype, std::vector<int64_t>{});
  b->set(0, value);
  return add_constant(name, b);
}

NodeId Graph::add_op(const std::string& op, std::vector<NodeId> inputs, Attrs attrs, std::string name) {
  Node n;
  n.op = op;
  n.name = name.empty() ? fmt::format("{}_{}", op, size()) : std::move(name);
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  std::vector<TensorType> in_types;
  for (NodeId i : n.inputs) {
    if (i < 0 || i >= size()) throw CompileError(fmt::format("node '{}' ({}): input id {} does not exist", n.name, op, i));
    in_types.push_back(nodes_[i].type);
  }
  const OpDef& def = op_def(op);
  try {
    if (def.num_inputs >= 0 && static_cast<int>(in_types.size()) != def.num_inputs &&
        !(def.max_inputs > def.num_inputs && static_cast<int>(in_types.size()) <= def.max_inputs))
      throw CompileError(fmt::format("expects {} inputs, got {}", def.num_inputs, in_types.size()));
    n.type = def.infer(in_types, n.attrs);
  } catch (const CompileError& e) {
    std::vector<std::string> ts;
    for (const auto& t : in_types) ts.push_back(t.to_string());
    throw CompileError(fmt::format("node '{}' ({}): {} (inputs: {})", n.name, op, e.what(), fmt::join(ts, ", ")));
  }
  nodes_.push_back(std::move(n));
  return size() - 1;
}

void Graph::add_output(NodeId id, std::string name) {
  outputs_.push_back(id);
  output_names_.push_back(name.empty() ? nodes_.at(id).name : std::move(name));
}

int Graph::num_ops() const {
  int n = 0;
  for (const Node& x : nodes_) n += !x.is_input() && !x.is_constant();
  return n;
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> uses(nodes_.size(), 0);
  for (const Node& n : nodes_)
    for (NodeId i : n.inputs) uses[i]++;
  for (NodeId o : outputs_) uses[o]++;
  return uses;
}

// ---------------------------------------------------------------- rewriter

GraphRewriter::GraphRewriter(const Graph& old) : old_(old), map_(old.size(), -1) {
  for (NodeId i : old.inputs()) map_[i] = g_.add_input(old.node(i).name, old.node(i).type);
}

std::vector<NodeId> GraphRewriter::mapped_inputs(NodeId old_id) const {
  std::vector<NodeId> in;
  for (NodeId i : old_.node(old_id).inputs) in.push_back(map(i));
  return in;
}

NodeId GraphRewriter::copy(NodeId old_id) {
  const Node& n = old_.node(old_id);
  NodeId id = n.is_constant() ? g_.add_constant(n.name, n.value) : g_.add_op(n.op, mapped_inputs(old_id), n.attrs, n.name);
  map_[old_id] = id;
  return id;
}

Graph GraphRewriter::finish() {
  for (size_t k = 0; k < old_.outputs().size(); ++k) g_.add_output(map(old_.outputs()[k]), old_.output_names()[k]);
  return std::move(g_);
}

// ---------------------------------------------------------------- printing

std::ostream& operator<<(std::ostream& os, const Graph& g) {
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    os << "%" << id << " = ";
    if (n.is_input()) {
      os << "input \"" << n.name << "\"";
    } else if (n.is_constant()) {
      os << "constant \"" << n.name << "\"";
      if (n.type.size() <= 4) {
        std::vector<std::string> v;
        for (double x : constant_values(n)) v.push_back(fmt::format("{}", x));
        os << " [" << fmt::format("{}", fmt::join(v, ", ")) << "]";
      }
    } else {
      std::vector<std::string> in;
      for (NodeId i : n.inputs) in.push_back("%" + std::to_string(i));
      os << n.op << "(" << fmt::format("{}", fmt::join(in, ", ")) << ")";
      if (!n.attrs.map().empty()) os << " {" << n.attrs.to_string() << "}";
    }
    os << " : " << n.type.to_string() << "\n";
  }
  std::vector<std::string> outs;
  for (NodeId o : g.outputs()) outs.push_back("%" + std::to_string(o));
  os << "outputs: " << fmt::format("{}", fmt::join(outs, ", ")) << "\n";
  return os;
}

std::string to_string(const Graph& g) {
  std::ostringstream os;
  os << g;
  return os.str();
}

std::vector<double> constant_values(const Node& n) {
  if (!n.is_constant()) throw CompileError("node '" + n.name + "' is not a constant");
  std::vector<double> v(n.value->size());
  for (int64_t i = 0; i < n.value->size(); ++i)
    v[i] = n.value->dtype().is_float() ? n.value->get(i) : static_cast<double>(n.value->get_int(i));
  return v;
}

std::vector<int64_t> constant_ints(const Node& n) {
  if (!n.is_constant()) throw CompileError("node '" + n.name + "' is not a constant");
  std::vector<int64_t> v(n.value->size());
  for (int64_t i = 0; i < n.value->size(); ++i) {
    if (!n.value->dtype().is_float()) {
      v[i] = n.value->get_int(i);
      continue;
    }
    double x = n.value->get(i);
    // 2^63 is the first double past int64's range; NaN fails both comparisons.
    if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
      throw CompileError(fmt::format("constant '{}': element {} ({}) is not an integer value", n.name, i, x));
    v[i] = static_cast<int64_t>(x);
  }
  return v;
}

}  // namespace kiln::graph
