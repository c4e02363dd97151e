#include "compiler/frontend/onnx/onnx_importer.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>

#include "compiler/frontend/onnx/external_data.h"
#include "compiler/frontend/onnx/importer.h"
#include "compiler/frontend/onnx/quant_converters.h"
#include "compiler/frontend/onnx/onnx_version.h"
#include "compiler/graph/lower_group.h"
#include "compiler/graph/op.h"
#include "compiler/support/error.h"
#include "support/file.h"

namespace kiln::frontend {


constexpr int kMinOpset = kMinNativeOpset;
constexpr int kMaxOpset = kMaxNativeOpset;
// Control flow is unrolled while importing (seqflow_converters.cc): limits on what that makes.
constexpr int64_t kMaxImportedNodes = int64_t{1} << 18;
constexpr size_t kMaxSubgraphDepth = 64;

void fail(const std::string& msg) { throw CompileError(msg); }

DataType onnx_dtype(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DataType::Float(32);
    case onnx::TensorProto::DOUBLE: return DataType::Float(64);
    case onnx::TensorProto::FLOAT16: return DataType::Float(16);
    case onnx::TensorProto::INT64: return DataType::Int(64);
    case onnx::TensorProto::INT32: return DataType::Int(32);
    case onnx::TensorProto::INT16: return DataType::Int(16);
    case onnx::TensorProto::INT8: return DataType::Int(8);
    case onnx::TensorProto::UINT8: return DataType::UInt(8);
    case onnx::TensorProto::UINT16: return DataType::UInt(16);
    case onnx::TensorProto::UINT32: return DataType::UInt(32);
    case onnx::TensorProto::UINT64: return DataType::UInt(64);
    case onnx::TensorProto::BFLOAT16: return DataType::BFloat16();
    case onnx::TensorProto::BOOL: return DataType::Bool();
    default: fail(fmt::format("unsupported tensor element type {} ({})", t, onnx::TensorProto::DataType_Name(
                                                                                   static_cast<onnx::TensorProto::DataType>(t))));
  }
}

ConstData tensor_data(const onnx::TensorProto& t) {
  // A model's external tensors are read in before (load_external_data); a lone tensor
  // file has no folder to read them from.
  if (t.data_location() == onnx::TensorProto::EXTERNAL) fail("tensor '" + t.name() + "': its data is in an external file");
  DataType dt = onnx_dtype(t.data_type());
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail("tensor '" + t.name() + "': negative dimension");
    if (d > 0 && n > (int64_t{1} << 40) / d) fail("tensor '" + t.name() + "': implausibly large (corrupt dimensions?)");
    n *= d;
  }
  // Check the stored amount before allocating (corrupt dimensions must not allocate).
  int64_t stored = t.has_raw_data() ? static_cast<int64_t>(t.raw_data().size()) / dt.storage_bytes()
                   : dt == DataType::Float(32) ? t.float_data_size()
                   : dt == DataType::Float(64) ? t.double_data_size()
                   : dt == DataType::Int(64)   ? t.int64_data_size()
                   : dt == DataType::UInt(32) || dt == DataType::UInt(64) ? t.uint64_data_size()
                                               : t.int32_data_size();
  if (stored != n)
    fail(fmt::format("tensor '{}': {} values for shape [{}] ({} expected)", t.name(), stored, fmt::join(shape, ", "), n));
  // Every element is written below (each path checks its count first).
  auto b = std::make_shared<interp::HostBuffer>(dt, shape, interp::HostBuffer::Uninitialized{});
  auto count_error = [&](int64_t got) {
    fail(fmt::format("tensor '{}': {} values for shape [{}] ({} expected)", t.name(), got, fmt::join(shape, ", "), n));
  };
  if (t.has_raw_data()) {
    int64_t bytes = n * dt.storage_bytes();
    if (static_cast<int64_t>(t.raw_data().size()) != bytes) count_error(static_cast<int64_t>(t.raw_data().size()) / dt.storage_bytes());
    if (bytes > 0) std::memcpy(b->data(), t.raw_data().data(), static_cast<size_t>(bytes));  // a null data() when empty
  } else if (dt == DataType::Float(32)) {
    if (t.float_data_size() != n) count_error(t.float_data_size());
    for (int64_t i = 0; i < n; ++i) b->set(i, t.float_data(static_cast<int>(i)));
  } else if (dt == DataType::Float(64)) {
    if (t.double_data_size() != n) count_error(t.double_data_size());
    for (int64_t i = 0; i < n; ++i) b->set(i, t.double_data(static_cast<int>(i)));
  } else if (dt == DataType::Int(64)) {
    if (t.int64_data_size() != n) count_error(t.int64_data_size());
    for (int64_t i = 0; i < n; ++i) b->set_int(i, t.int64_data(static_cast<int>(i)));
  } else if (dt == DataType::UInt(32) || dt == DataType::UInt(64)) {
    if (t.uint64_data_size() != n) count_error(t.uint64_data_size());
    for (int64_t i = 0; i < n; ++i) b->set_int(i, static_cast<int64_t>(t.uint64_data(static_cast<int>(i))));
  } else if (dt == DataType::Float(16) || dt == DataType::BFloat16()) {
    // 16-bit floats are stored as their bit patterns in int32_data.
    if (t.int32_data_size() != n) count_error(t.int32_data_size());
    for (int64_t i = 0; i < n; ++i) {
      auto bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
      b->set(i, dt == DataType::BFloat16() ? ir::bfloat_bits_to_float(bits) : ir::half_bits_to_float(bits));
    }
  } else {
    if (t.int32_data_size() != n) count_error(t.int32_data_size());
    for (int64_t i = 0; i < n; ++i) b->set_int(i, t.int32_data(static_cast<int>(i)));
  }
  return b;
}

ConstData int64_tensor(const std::vector<int64_t>& v) {
  auto b = std::make_shared<interp::HostBuffer>(DataType::Int(64), std::vector<int64_t>{static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) b->set_int(static_cast<int64_t>(i), v[i]);
  return b;
}

std::string dtype_name(DataType t) { return t.is_bool() ? "bool" : t.to_string(); }

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= v[i];
  return p;
}

void check_split_sizes(const std::vector<int64_t>& sizes, int64_t axis, int64_t dim) {
  // Taken from the dimension one by one: a plain sum of sizes near INT64_MAX overflows.
  int64_t left = dim;
  bool fits = true;
  for (int64_t n : sizes) {
    fits = fits && n >= 0 && n <= left;
    if (fits) left -= n;
  }
  if (!fits || left != 0)
    fail(fmt::format("split sizes [{}] do not add up to dimension {} ({})", fmt::join(sizes, ", "), axis, dim));
}

std::string Value::describe() const {
  if (optional && !present) return "an empty optional";
  std::string what = kind == Kind::kTensor ? "a tensor" : fmt::format("a sequence of {} tensors", items.size());
  return optional ? "an optional holding " + what : what;
}

const Value* Importer::lookup(const std::string& name) const {
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
    auto it = s->find(name);
    if (it != s->end()) return &it->second;
  }
  return nullptr;
}

const Value& Importer::value(int k) const {
  if (!has_input(k)) fail(fmt::format("input {} is missing", k));
  const Value* v = lookup(node_->input(k));
  if (!v) fail(fmt::format("input {} ('{}') is not produced by any node, input or initializer", k, node_->input(k)));
  return *v;
}

NodeId Importer::in(int k) const {
  const Value& v = value(k);
  if (!v.is_tensor()) fail(fmt::format("input {} ('{}') is {}; {} takes a tensor there", k, node_->input(k), v.describe(), node_->op_type()));
  return v.tensor;
}

void Importer::set_output(int k, Value v) { set_outputs_[k] = std::move(v); }

const graph::Node* Importer::known(NodeId id) const {
  if (auto given = input_consts_.find(id); given != input_consts_.end()) return &g_.node(given->second);
  const graph::Node& n = g_.node(id);
  if (n.is_constant()) return &n;
  return derived_value(id) ? &derived_.at(id) : nullptr;
}

const graph::Node& Importer::const_input(int k) const {
  const graph::Node* n = known(in(k));
  if (!n)
    fail(fmt::format("input {} ('{}') must be a constant (Kiln needs static shapes), but it is computed at run time", k,
                     node_->input(k)));
  return *n;
}

double Importer::const_value(int k, const std::string& what) const {
  std::vector<double> v = graph::constant_values(const_input(k));
  if (v.size() != 1) fail(fmt::format("{} (input {}) must hold one value, it holds {}", what, k, v.size()));
  return v[0];
}

ConstData Importer::derived_value(NodeId id) const {
  const graph::Node& n = g_.node(id);
  if (n.is_constant()) return n.value;
  if (auto given = input_consts_.find(id); given != input_consts_.end()) return g_.node(given->second).value;
  if (n.is_input()) return nullptr;
  if (auto d = derived_.find(id); d != derived_.end()) return d->second.value;
  graph::Node& c = derived_[id];  // null until evaluated: a cycle-free graph never asks again meanwhile
  c.op = "constant";
  c.name = n.name;
  c.type = n.type;
  Graph scratch;
  std::vector<NodeId> si;
  for (NodeId i : n.inputs) {
    ConstData v = derived_value(i);
    if (!v) return nullptr;
    si.push_back(scratch.add_constant(g_.node(i).name, v));
  }
  NodeId r = scratch.add_op(n.op, si, n.attrs, n.name);
  if (scratch.type(r).size() > kFoldLimit) return nullptr;
  ConstData v = graph::evaluate_op(scratch, r);
  derived_.at(id).value = v;
  return v;
}

const onnx::AttributeProto* Importer::find_attr(const std::string& name) const {
  for (const auto& a : node_->attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
bool Importer::has_attr(const std::string& name) const { return find_attr(name) != nullptr; }
int64_t Importer::attr_int(const std::string& name, int64_t def) const {
  const auto* a = find_attr(name);
  return a ? a->i() : def;
}
double Importer::attr_float(const std::string& name, double def) const {
  const auto* a = find_attr(name);
  return a ? a->f() : def;
}
std::string Importer::attr_string(const std::string& name, const std::string& def) const {
  const auto* a = find_attr(name);
  return a ? a->s() : def;
}
std::vector<int64_t> Importer::attr_ints(const std::string& name, std::vector<int64_t> def) const {
  const auto* a = find_attr(name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : def;
}
const onnx::TensorProto* Importer::attr_tensor(const std::string& name) const {
  const auto* a = find_attr(name);
  return a && a->has_t() ? &a->t() : nullptr;
}

NodeId Importer::constant(ConstData value, const std::string& suffix) {
  return g_.add_constant(fmt::format("{}{}_{}", node_->name(), suffix, counter_++), std::move(value));
}

namespace {
// The type `op` would give these inputs, when it accepts them (add_op reports why not).
std::optional<TensorType> inferred_type(const Graph& g, const std::string& op, const std::vector<NodeId>& inputs,
                                        const Attrs& attrs) {
  std::vector<TensorType> types;
  for (NodeId i : inputs) types.push_back(g.type(i));
  try {
    return graph::op_def(op).infer(types, attrs);
  } catch (const CompileError&) {
    return std::nullopt;
  }
}
}  // namespace

NodeId Importer::op(const std::string& name, std::vector<NodeId> inputs, Attrs attrs) {
  // A tensor without elements is known at compile time: an input without elements is
  // an empty constant (so a reduction over it folds to its identity), and an operator
  // whose result has no elements is an empty constant too, with no kernel.
  auto empty = [&](const TensorType& t) { return constant(std::make_shared<interp::HostBuffer>(t.dtype, t.shape), "_empty"); };
  for (NodeId& i : inputs)
    if (!is_const(i) && type(i).size() == 0) i = empty(TensorType(type(i)));
  if (auto t = inferred_type(g_, name, inputs, attrs); t && t->size() == 0) return empty(*t);
  bool all_const = std::all_of(inputs.begin(), inputs.end(), [&](NodeId i) { return is_const(i); });
  if (!all_const) return g_.add_op(name, std::move(inputs), std::move(attrs), fmt::format("{}_{}", node_->name(), counter_++));
  // Evaluate on a scratch graph so that the operator node does not stay behind.
  Graph scratch;
  std::vector<NodeId> si;
  for (NodeId i : inputs) si.push_back(scratch.add_constant(g_.node(i).name, g_.node(i).value));
  NodeId r = scratch.add_op(name, si, attrs, node_->name());
  if (scratch.type(r).size() > kFoldLimit) return g_.add_op(name, std::move(inputs), std::move(attrs), node_->name());
  return constant(graph::evaluate_op(scratch, r));
}

std::string Importer::where() const {
  std::string name = node_->name().empty() ? "(unnamed)" : "'" + node_->name() + "'";
  if (scopes_.size() > 1) return fmt::format("node {} ({})", name, node_->op_type());  // inside a subgraph
  return fmt::format("{}: node {} ({}, opset {})", source_, name, node_->op_type(), opset_);
}

Graph Importer::run() {
  for (const auto& o : model_.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = static_cast<int>(o.version());
  if (opset_ == 0) fail(source_ + ": the model imports no opset of the default ONNX domain");
  if (opset_ < kMinOpset || opset_ > kMaxOpset)
    fail(fmt::format("{}: opset {} is not supported (Kiln reads opsets {} to {}; re-export the model with one of them)", source_,
                     opset_, kMinOpset, kMaxOpset));
  const onnx::GraphProto& gp = model_.graph();
  if (gp.node_size() == 0) fail(source_ + ": the graph has no nodes");

  // Every unsupported operator, listed at once (subgraphs' too).
  std::map<std::string, std::vector<std::string>> unsupported;
  std::function<void(const onnx::GraphProto&)> check = [&](const onnx::GraphProto& g) {
    for (const auto& n : g.node()) {
      std::string key = n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : n.domain() + "::" + n.op_type();
      if (key != n.op_type() || !converters().count(n.op_type())) unsupported[key].push_back(n.name());
      for (const auto& a : n.attribute()) {
        if (a.has_g()) check(a.g());
        for (const auto& sub : a.graphs()) check(sub);
      }
    }
  };
  check(gp);
  if (!unsupported.empty()) {
    std::vector<std::string> items;
    for (const auto& [op, names] : unsupported)
      items.push_back(fmt::format("{} ({} node{}: '{}')", op, names.size(), names.size() > 1 ? "s" : "",
                                  fmt::join(names.begin(), names.begin() + std::min<size_t>(names.size(), 3), "', '")));
    fail(fmt::format("{}: {} unsupported operator{} (opset {}): {}", source_, unsupported.size(), unsupported.size() > 1 ? "s" : "",
                     opset_, fmt::join(items, "; ")));
  }

  scopes_.emplace_back();
  std::set<std::string> init_names;
  for (const auto& t : gp.initializer()) {
    try {
      scopes_[0][t.name()] = Value::of(g_.add_constant(t.name(), tensor_data(t)));
    } catch (const CompileError& e) {
      fail(fmt::format("{}: initializer '{}': {}", source_, t.name(), e.what()));
    }
    init_names.insert(t.name());
  }
  for (const auto& vi : gp.input())
    if (!init_names.count(vi.name())) add_graph_input(vi);

  import_nodes(gp);
  if (gp.output_size() == 0) fail(source_ + ": the graph has no outputs");
  for (const auto& o : gp.output()) {
    const Value* v = lookup(o.name());
    if (!v) fail(fmt::format("{}: output '{}' is not produced by any node", source_, o.name()));
    add_graph_output(o.name(), *v);
  }
  return std::move(g_);
}

NodeId Importer::add_tensor_input(const std::string& name, const onnx::TypeProto_Tensor& tt, const std::vector<int64_t>* shape) {
  TensorType t;
  try {
    t.dtype = onnx_dtype(tt.elem_type());
  } catch (const CompileError& e) {
    fail(fmt::format("{}: input '{}': {}", source_, name, e.what()));
  }
  if (shape) {
    t.shape = *shape;
  } else {
    if (!tt.has_shape()) fail(fmt::format("{}: input '{}' has no shape; give one", source_, name));
    for (const auto& d : tt.shape().dim()) t.shape.push_back(d.has_dim_value() ? d.dim_value() : opt_.symbolic_dim);
  }
  NodeId id;
  try {
    id = g_.add_input(name, t);
  } catch (const CompileError& e) {
    fail(fmt::format("{}: {}", source_, e.what()));
  }
  // Its value as a constant, for the places that need one (made now: adding nodes
  // while converting would move the types converters hold).
  auto value = opt_.input_values.find(name);
  if (value != opt_.input_values.end()) {
    if (value->second->shape() != t.shape || value->second->dtype() != t.dtype)
      fail(fmt::format("{}: the value given for input '{}' is not of its type {}", source_, name, t.to_string()));
    input_consts_[id] = g_.add_constant(name + "_value", value->second);
  }
  return id;
}

// A tensor input as it is; a sequence input as one input per element (its shapes from
// OnnxOptions::sequence_shapes); an optional input empty (OnnxOptions::empty_inputs) or
// holding its element.
void Importer::add_graph_input(const onnx::ValueInfoProto& vi) {
  const onnx::TypeProto* type = &vi.type();
  Value v;
  if (type->has_optional_type()) {
    if (opt_.empty_inputs.count(vi.name())) {
      v.optional = true;
      v.present = false;
      scopes_[0][vi.name()] = v;
      return;
    }
    type = &type->optional_type().elem_type();
  }
  if (type->has_tensor_type()) {
    auto given = opt_.input_shapes.find(vi.name());
    v.tensor = add_tensor_input(vi.name(), type->tensor_type(), given != opt_.input_shapes.end() ? &given->second : nullptr);
  } else if (type->has_sequence_type() && type->sequence_type().elem_type().has_tensor_type()) {
    const auto& tt = type->sequence_type().elem_type().tensor_type();
    v.kind = Value::Kind::kSequence;
    try {
      v.elem_type = onnx_dtype(tt.elem_type());
    } catch (const CompileError& e) {
      fail(fmt::format("{}: input '{}': {}", source_, vi.name(), e.what()));
    }
    auto given = opt_.sequence_shapes.find(vi.name());
    if (given == opt_.sequence_shapes.end())
      fail(fmt::format("{}: input '{}' is a sequence: give the shapes of its elements (OnnxOptions::sequence_shapes; Kiln "
                       "fixes a sequence's length when compiling)",
                       source_, vi.name()));
    for (size_t k = 0; k < given->second.size(); ++k)
        v.items.push_back(add_tensor_input(fmt::format("{}[{}]", vi.name(), k), tt, &given->second[k]));
  } else {
    fail(fmt::format("{}: input '{}' is neither a tensor, a sequence of tensors nor an optional of one", source_, vi.name()));
  }
  v.optional = vi.type().has_optional_type();
  scopes_[0][vi.name()] = v;
}

void Importer::add_graph_output(const std::string& name, const Value& v) {
  if (v.optional && !v.present) return;
  if (v.kind == Value::Kind::kTensor) {
    g_.add_output(v.tensor, name);
    return;
  }
  for (size_t k = 0; k < v.items.size(); ++k) g_.add_output(v.items[k], fmt::format("{}[{}]", name, k));
}

void Importer::import_nodes(const onnx::GraphProto& gp) {
  for (const auto& n : gp.node()) {
    // Unrolled loops copy their bodies: nested ones could multiply without end.
    if (++nodes_imported_ > kMaxImportedNodes)
      fail(fmt::format("{}: the model unrolls to more than {} nodes (nested loops?); Kiln unrolls control flow while importing",
                       source_, kMaxImportedNodes));
    node_ = &n;
    set_outputs_.clear();
    std::vector<NodeId> outs;
    try {
      outs = converters().at(n.op_type())(*this);
    } catch (const CompileError& e) {
      fail(fmt::format("{}: {}", where(), e.what()));
    }
    for (int k = 0; k < n.output_size(); ++k) {
      if (n.output(k).empty()) continue;
      auto set = set_outputs_.find(k);
      if (set != set_outputs_.end()) scopes_.back()[n.output(k)] = set->second;
      else if (k < static_cast<int>(outs.size())) scopes_.back()[n.output(k)] = Value::of(outs[k]);
    }
  }
}

const onnx::GraphProto& Importer::subgraph(const std::string& attr) const {
  const auto* a = find_attr(attr);
  if (!a || !a->has_g()) fail(fmt::format("the graph attribute '{}' is missing", attr));
  return a->g();
}

std::vector<Value> Importer::import_subgraph(const std::string& attr, const std::vector<Value>& args, const std::string& what) {
  const onnx::GraphProto& sg = subgraph(attr);
  if (scopes_.size() > kMaxSubgraphDepth) fail(fmt::format("subgraphs are nested more than {} deep", kMaxSubgraphDepth));
  if (sg.input_size() != static_cast<int>(args.size()))
    fail(fmt::format("{} has {} inputs, {} expected", attr, sg.input_size(), args.size()));
  const onnx::NodeProto* outer = node_;
  std::map<int, Value> outer_outputs = std::move(set_outputs_);
  scopes_.emplace_back();
  for (int k = 0; k < sg.input_size(); ++k) scopes_.back()[sg.input(k).name()] = args[static_cast<size_t>(k)];
  try {
    for (const auto& t : sg.initializer()) scopes_.back()[t.name()] = Value::of(g_.add_constant(t.name(), tensor_data(t)));
    import_nodes(sg);
  } catch (const CompileError& e) {
    scopes_.pop_back();
    node_ = outer;
    fail(fmt::format("{}{}: {}", attr, what.empty() ? "" : " (" + what + ")", e.what()));
  }
  std::vector<Value> outs;
  for (const auto& o : sg.output()) {
    const Value* v = lookup(o.name());
    if (!v) {
      scopes_.pop_back();
      node_ = outer;
      fail(fmt::format("{}: output '{}' is not produced by any node", attr, o.name()));
    }
    outs.push_back(*v);
  }
  scopes_.pop_back();
  node_ = outer;
  set_outputs_ = std::move(outer_outputs);
  return outs;
}

namespace {

// ---------------------------------------------------------------- converters

std::vector<NodeId> batch_norm(Importer& c) {
  if (c.attr_int("training_mode", 0) != 0) fail("training_mode=1 is not supported (inference only)");
  return {c.op("batch_norm", {c.in(0), c.in(1), c.in(2), c.in(3), c.in(4)}, {{"epsilon", c.attr_float("epsilon", 1e-5)}})};
}

std::vector<NodeId> gemm(Importer& c) {
  NodeId a = c.in(0), b = c.in(1);
  if (c.in_type(0).ndim() != 2 || c.in_type(1).ndim() != 2) fail("Gemm takes matrices");
  if (c.attr_int("transA", 0)) a = c.op("transpose", {a}, {{"perm", std::vector<int64_t>{1, 0}}});
  if (!c.attr_int("transB", 0)) b = c.op("transpose", {b}, {{"perm", std::vector<int64_t>{1, 0}}});
  NodeId y = c.op("dense", {a, b});
  DataType t = c.type(y).dtype;
  double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  if (alpha != 1.0) y = c.op("multiply", {y, c.scalar(t, alpha)});
  if (!c.has_input(2) || beta == 0.0) return {y};
  NodeId bias = c.in(2);
  if (beta != 1.0) bias = c.op("multiply", {bias, c.scalar(t, beta)});
  return {c.op("add", {y, bias})};
}

std::vector<NodeId> matmul(Importer& c) {
  NodeId a = c.in(0), b = c.in(1);
  TensorType at = c.in_type(0), bt = c.in_type(1);
  if (at.ndim() == 0 || bt.ndim() == 0) fail("MatMul operands need at least one dimension (a scalar is not a matrix)");
  bool a1 = at.ndim() == 1, b1 = bt.ndim() == 1;
  if (a1) a = c.reshape(a, {1, at.shape[0]});
  if (b1) b = c.reshape(b, {bt.shape[0], 1});
  TensorType an = c.type(a), bn = c.type(b);
  NodeId y;
  if (bn.ndim() == 2 && c.is_const(b)) {
    // x @ W with a constant W is a dense layer on the rows of x.
    // Rows: the leading dimensions' product, not size / K, which divides by zero for K = 0.
    TensorType leading = an;
    leading.shape.pop_back();
    std::vector<int64_t> rows{leading.size(), an.shape.back()};
    NodeId wt = c.op("transpose", {b}, {{"perm", std::vector<int64_t>{1, 0}}});
    y = c.op("dense", {c.reshape(a, rows), wt});
    std::vector<int64_t> out = an.shape;
    out.back() = bn.shape[1];
    y = c.reshape(y, out);
  } else {
    y = c.op("matmul", {a, b});
  }
  std::vector<int64_t> shape = c.type(y).shape;
  if (a1) shape.erase(shape.end() - 2);
  if (b1) shape.pop_back();
  return {c.reshape(y, shape)};
}

std::vector<NodeId> flatten(Importer& c) {
  std::vector<int64_t> s = c.in_type(0).shape;
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  if (axis < 0 || axis > static_cast<int64_t>(s.size())) fail("axis out of range");
  return {c.reshape(c.in(0), {product(s, 0, axis), product(s, axis, s.size())})};
}

std::vector<NodeId> reshape(Importer& c) {
  std::vector<int64_t> in = c.in_type(0).shape;
  std::vector<int64_t> shape = c.const_ints(1);
  bool allowzero = c.attr_int("allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowzero) {
      if (i >= in.size()) fail("a 0 in the shape refers to a dimension the input does not have");
      shape[i] = in[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) fail("more than one -1 in the shape");
      infer = static_cast<int>(i);
    } else if (shape[i] < 0 || __builtin_mul_overflow(known, shape[i], &known)) {
      fail(fmt::format("the shape [{}] has a negative or too large dimension", fmt::join(shape, ", ")));
    }
  }
  int64_t total = c.in_type(0).size();
  if (infer >= 0) {
    if (known == 0 || total % known) fail(fmt::format("cannot infer the -1 of [{}] from {} elements", fmt::join(shape, ", "), total));
    shape[infer] = total / known;
  }
  return {c.reshape(c.in(0), shape)};
}

std::vector<NodeId> transpose(Importer& c) {
  int n = c.in_type(0).ndim();
  std::vector<int64_t> rev(n);
  for (int i = 0; i < n; ++i) rev[i] = n - 1 - i;
  return {c.op("transpose", {c.in(0)}, {{"perm", c.attr_ints("perm", rev)}})};
}

std::vector<NodeId> concat(Importer& c) {
  std::vector<NodeId> in;
  for (int k = 0; k < c.num_inputs(); ++k)
    if (c.has_input(k) && c.type(c.in(k)).size() > 0) in.push_back(c.in(k));
  if (in.size() == 1) return in;
  return {c.op("concatenate", in, {{"axis", c.attr_int("axis", 0)}})};
}

NodeId slice_axis(Importer& c, NodeId x, int axis, int64_t begin, int64_t end, int64_t step) {
  const auto& s = c.type(x).shape;
  std::vector<int64_t> b(s.size(), 0), e = s, st(s.size(), 1);
  b[axis] = begin;
  e[axis] = end;
  st[axis] = step;
  return c.op("strided_slice", {x}, {{"begin", b}, {"end", e}, {"steps", st}});
}

std::vector<NodeId> split(Importer& c) {
  std::vector<int64_t> s = c.in_type(0).shape;
  int64_t axis = c.attr_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) fail("axis out of range");
  std::vector<int64_t> parts;
  if (c.opset() >= 13 && c.has_input(1)) parts = c.const_ints(1);
  else parts = c.attr_ints("split", {});
  int n = c.node().output_size();
  if (n == 0) fail("no outputs");
  if (c.opset() >= 18 && c.has_attr("num_outputs")) {
    // Opset 18: parts of ceil(dim / num_outputs), the last one what is left.
    int64_t k = c.attr_int("num_outputs", 0);
    if (!parts.empty()) fail("num_outputs and split sizes are given both");
    if (k != n) fail(fmt::format("num_outputs is {}, the node has {} outputs", k, n));
    int64_t chunk = (s[axis] + n - 1) / n;
    if (chunk * (n - 1) >= s[axis] && s[axis] > 0)
      fail(fmt::format("dimension {} ({}) leaves no elements for the last of {} parts", axis, s[axis], n));
    parts.assign(n, chunk);
    parts.back() = s[axis] - chunk * (n - 1);
  }
  if (parts.empty()) {
    if (s[axis] % n) fail(fmt::format("dimension {} ({}) does not split into {} equal parts", axis, s[axis], n));
    parts.assign(n, s[axis] / n);
  }
  if (static_cast<int>(parts.size()) != n) fail(fmt::format("{} split sizes for {} outputs", parts.size(), n));
  check_split_sizes(parts, axis, s[axis]);
  std::vector<NodeId> outs;
  int64_t off = 0;
  for (int64_t p : parts) {
    outs.push_back(slice_axis(c, c.in(0), static_cast<int>(axis), off, off + p, 1));
    off += p;
  }
  return outs;
}

std::vector<NodeId> slice(Importer& c) {
  std::vector<int64_t> s = c.in_type(0).shape;
  int n = static_cast<int>(s.size());
  std::vector<int64_t> starts = c.const_ints(1), ends = c.const_ints(2), axes, steps;
  if (c.has_input(3)) axes = c.const_ints(3);
  else for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (c.has_input(4)) steps = c.const_ints(4);
  else steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail("starts, ends, axes and steps differ in length");
  std::vector<int64_t> b(n, 0), e = s, st(n, 1);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t ax = axes[i] < 0 ? axes[i] + n : axes[i];
    if (ax < 0 || ax >= n) fail(fmt::format("axis {} out of range", axes[i]));
    int64_t dim = s[ax], step = steps[i];
    if (step == 0) fail("a step is zero");
    int64_t lo = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t hi = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (step > 0) {
      lo = std::clamp<int64_t>(lo, 0, dim);
      hi = std::clamp<int64_t>(hi, 0, dim);
    } else {
      lo = std::clamp<int64_t>(lo, 0, dim - 1);
      hi = std::clamp<int64_t>(hi, -1, dim - 1);
    }
    b[ax] = lo;
    e[ax] = hi;
    st[ax] = step;
  }
  return {c.op("strided_slice", {c.in(0)}, {{"begin", b}, {"end", e}, {"steps", st}})};
}

std::vector<int64_t> axes_of(Importer& c, int input) {
  if (c.opset() >= 13 && c.has_input(input)) return c.const_ints(input);
  return c.attr_ints("axes", {});
}

std::vector<NodeId> squeeze(Importer& c) {
  std::vector<int64_t> s = c.in_type(0).shape;
  int n = static_cast<int>(s.size());
  std::vector<int64_t> axes = axes_of(c, 1);
  std::vector<bool> drop(n, false);
  if (axes.empty())
    for (int d = 0; d < n; ++d) drop[d] = s[d] == 1;
  for (int64_t a : axes) {
    int64_t d = a < 0 ? a + n : a;
    if (d < 0 || d >= n) fail(fmt::format("axis {} out of range", a));
    if (s[d] != 1) fail(fmt::format("cannot squeeze dimension {} of size {}", d, s[d]));
    drop[d] = true;
  }
  std::vector<int64_t> out;
  for (int d = 0; d < n; ++d)
    if (!drop[d]) out.push_back(s[d]);
  return {c.reshape(c.in(0), out)};
}

std::vector<NodeId> unsqueeze(Importer& c) {
  std::vector<int64_t> s = c.in_type(0).shape;
  std::vector<int64_t> axes = axes_of(c, 1);
  int n = static_cast<int>(s.size() + axes.size());
  std::vector<bool> ins(n, false);
  for (int64_t a : axes) {
    int64_t d = a < 0 ? a + n : a;
    if (d < 0 || d >= n || ins[d]) fail(fmt::format("axis {} out of range or repeated", a));
    ins[d] = true;
  }
  std::vector<int64_t> out;
  size_t k = 0;
  for (int d = 0; d < n; ++d) out.push_back(ins[d] ? 1 : s[k++]);
  return {c.reshape(c.in(0), out)};
}

std::vector<NodeId> shape(Importer& c) {
  std::vector<int64_t> s = c.in_type(0).shape;
  int64_t n = static_cast<int64_t>(s.size());
  int64_t start = c.attr_int("start", 0), end = c.attr_int("end", n);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  return {c.constant(int64_tensor(std::vector<int64_t>(s.begin() + start, s.begin() + end)))};
}

std::vector<NodeId> gather(Importer& c) {
  return {c.op("take", {c.in(0), c.in(1)}, {{"axis", c.attr_int("axis", 0)}})};
}

std::vector<NodeId> softmax(Importer& c) {
  std::vector<int64_t> s = c.in_type(0).shape;
  int n = static_cast<int>(s.size());
  int64_t axis = c.attr_int("axis", c.opset() >= 13 ? -1 : 1);
  if (axis < 0) axis += n;
  if (axis < 0 || axis >= std::max(n, 1)) fail("axis out of range");
  if (c.opset() >= 13 || axis == n - 1) return {c.op("softmax", {c.in(0)}, {{"axis", axis}})};
  // Opsets before 13 flatten to 2-d at the axis.
  NodeId x = c.reshape(c.in(0), {product(s, 0, axis), product(s, axis, s.size())});
  return {c.reshape(c.op("softmax", {x}, {{"axis", int64_t{1}}}), s)};
}

std::vector<NodeId> reduce(Importer& c, const std::string& kind) {
  const ReduceAxes r = reduce_axes(c);
  if (r.noop) return {c.in(0)};
  return {c.op(kind, {c.in(0)}, {{"axes", r.axes}, {"keepdims", c.attr_int("keepdims", 1)}})};
}

// Edge, reflect and wrap padding: per padded dimension, a take of the source index of
// each output position (clamped for edge, mirrored without repeating the border for
// reflect, modulo the dimension for wrap).
NodeId pad_by_index(Importer& c, NodeId x, const std::vector<int64_t>& pads, const std::string& mode) {
  std::vector<int64_t> shape = c.type(x).shape;
  size_t n = shape.size();
  if (pads.size() != 2 * n) fail(fmt::format("pads has {} entries for rank {}", pads.size(), n));
  for (size_t d = 0; d < n; ++d) {
    int64_t before = pads[d], after = pads[d + n], len = shape[d];
    if (before == 0 && after == 0) continue;
    if (mode == "reflect" && (before >= len || after >= len)) fail("reflect pads must be smaller than the dimension");
    if (len == 0) fail(fmt::format("{} padding of an empty dimension ({})", mode, d));
    // One index per output position: a hostile pad must not allocate without bound.
    constexpr int64_t kMaxPadded = int64_t{1} << 24;
    if (before < -len || after < -len || before > kMaxPadded || after > kMaxPadded || len + before + after > kMaxPadded)
      fail(fmt::format("{} pads {} and {} of dimension {} ({}) leave a length outside 0 to 2^24", mode, before, after, d, len));
    std::vector<int64_t> idx;
    for (int64_t j = 0; j < len + before + after; ++j) {
      int64_t src = j - before;
      if (mode == "edge") src = std::clamp<int64_t>(src, 0, len - 1);
      else if (mode == "wrap") src = (src % len + len) % len;
      else if (src < 0) src = -src;
      else if (src >= len) src = 2 * (len - 1) - src;
      idx.push_back(src);
    }
    x = c.op("take", {x, c.constant(int64_tensor(idx), "_pad_index")}, {{"axis", static_cast<int64_t>(d)}});
  }
  return x;
}

std::vector<NodeId> pad(Importer& c) {
  std::string mode = c.attr_string("mode", "constant");
  std::vector<int64_t> pads = c.const_ints(1);
  if (c.opset() >= 18 && c.has_input(3)) {
    // Opset 18: the pads of the axes listed (begins, then ends), the others 0.
    const int n = c.in_type(0).ndim();
    std::vector<int64_t> axes = c.const_ints(3), full(2 * static_cast<size_t>(n), 0);
    if (pads.size() != 2 * axes.size()) fail(fmt::format("pads has {} entries for {} axes", pads.size(), axes.size()));
    std::vector<bool> seen(static_cast<size_t>(n), false);
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t a = axes[k] < 0 ? axes[k] + n : axes[k];
      if (a < 0 || a >= n) fail(fmt::format("axis {} out of range for rank {}", axes[k], n));
      if (seen[static_cast<size_t>(a)]) fail(fmt::format("axis {} is listed twice", axes[k]));
      seen[static_cast<size_t>(a)] = true;
      full[static_cast<size_t>(a)] = pads[k];
      full[static_cast<size_t>(a + n)] = pads[k + axes.size()];
    }
    pads = full;
  }
  if (mode == "edge" || mode == "reflect" || (mode == "wrap" && c.opset() >= 19))
    return {pad_by_index(c, c.in(0), pads, mode)};
  if (mode != "constant") fail("pad mode '" + mode + "' is not supported (constant, edge, reflect, and wrap from opset 19)");
  double value = 0;
  if (c.has_input(2)) value = c.const_value(2, "constant_value");
  return {c.op("pad", {c.in(0)}, {{"pads", pads}, {"value", value}})};
}

std::vector<NodeId> cast(Importer& c) {
  DataType t = onnx_dtype(static_cast<int>(c.attr_int("to", 1)));
  if (t == c.in_type(0).dtype) return {c.in(0)};
  // To bool is "not zero" (a plain conversion keeps the low bit: 2.0 would be false).
  if (t.is_bool()) return {c.op("logical_not", {c.op("equal", {c.in(0), c.scalar(c.in_type(0).dtype, 0)})})};
  return {c.op("cast", {c.in(0)}, {{"dtype", dtype_name(t)}})};
}

std::vector<NodeId> constant_op(Importer& c) {
  if (const auto* t = c.attr_tensor("value")) return {c.constant(tensor_data(*t))};
  for (const auto& a : c.node().attribute()) {
    if (a.name() == "value_float") {
      auto b = std::make_shared<interp::HostBuffer>(DataType::Float(32), std::vector<int64_t>{});
      b->set(0, a.f());
      return {c.constant(b)};
    }
    if (a.name() == "value_int") return {c.constant(int64_tensor({a.i()}))};
    if (a.name() == "value_ints") return {c.constant(int64_tensor(std::vector<int64_t>(a.ints().begin(), a.ints().end())))};
    if (a.name() == "value_floats") {
      auto b = std::make_shared<interp::HostBuffer>(DataType::Float(32), std::vector<int64_t>{a.floats_size()});
      for (int i = 0; i < a.floats_size(); ++i) b->set(i, a.floats(i));
      return {c.constant(b)};
    }
  }
  fail("no supported value attribute (value, value_float(s), value_int(s))");
}

std::vector<NodeId> constant_of_shape(Importer& c) {
  std::vector<int64_t> shape = c.const_ints(0);
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > kFoldLimit / d)) fail(fmt::format("shape [{}] is negative or too large", fmt::join(shape, ", ")));
    n *= d;
  }
  DataType t = DataType::Float(32);
  double v = 0;
  if (const auto* tp = c.attr_tensor("value")) {
    ConstData d = tensor_data(*tp);
    if (d->size() != 1) fail("value must have one element");
    t = d->dtype();
    v = t.is_float() ? d->get(0) : static_cast<double>(d->get_int(0));
  }
  auto b = std::make_shared<interp::HostBuffer>(t, shape);
  for (int64_t i = 0; i < b->size(); ++i) {
    if (t.is_float()) b->set(i, v);
    else b->set_int(i, static_cast<int64_t>(v));
  }
  return {c.constant(b)};
}

std::vector<NodeId> expand(Importer& c) {
  return {c.op("broadcast_to", {c.in(0)}, {{"shape", c.const_ints(1)}})};
}

std::vector<NodeId> clip(Importer& c) {
  Attrs a;
  if (c.opset() >= 11) {
    if (c.has_input(1)) a.set("min", c.const_value(1, "min"));
    if (c.has_input(2)) a.set("max", c.const_value(2, "max"));
  }
  return {c.op("clip", {c.in(0)}, a)};
}

std::vector<NodeId> layer_norm(Importer& c) {
  std::vector<int64_t> s = c.in_type(0).shape;
  int n = static_cast<int>(s.size());
  int64_t axis = c.attr_int("axis", -1);
  if (axis < 0) axis += n;
  if (axis < 0 || axis >= n) fail("axis out of range");
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < n; ++d) axes.push_back(d);
  DataType t = c.in_type(0).dtype;
  NodeId x = c.in(0);
  NodeId mean = c.op("mean", {x}, {{"axes", axes}, {"keepdims", int64_t{1}}});
  NodeId d = c.op("subtract", {x, mean});
  NodeId var = c.op("mean", {c.op("multiply", {d, d})}, {{"axes", axes}, {"keepdims", int64_t{1}}});
  NodeId den = c.op("sqrt", {c.op("add", {var, c.scalar(t, c.attr_float("epsilon", 1e-5))})});
  NodeId y = c.op("multiply", {c.op("divide", {d, den}), c.in(1)});
  if (c.has_input(2)) y = c.op("add", {y, c.in(2)});
  if (c.node().output_size() == 1) return {y};
  return {y, mean, c.op("reciprocal", {den})};  // the optional Mean and InvStdDev outputs
}

}  // namespace

Converter unary(const std::string& op) {
  return [op](Importer& c) { return std::vector<NodeId>{c.op(op, {c.in(0)})}; };
}
Converter binary(const std::string& op) {
  return [op](Importer& c) {
    NodeId a = c.in(0), b = c.in(1);
    // Keep operand types equal: a constant scalar of another type (x ** 2 with an
    // int64 exponent, for instance) is cast now.
    if (c.type(a).dtype != c.type(b).dtype && c.is_const(b))
      b = c.op("cast", {b}, {{"dtype", dtype_name(c.type(a).dtype)}});
    return std::vector<NodeId>{c.op(op, {a, b})};
  };
}

// The quantization operators (quant_converters.cc) see the importer through NodeContext.
class QuantContext : public NodeContext {
 public:
  explicit QuantContext(Importer& c) : c_(c) {}
  bool has_input(int k) const override { return c_.has_input(k); }
  NodeId in(int k) const override { return c_.in(k); }
  const TensorType& type(NodeId id) const override { return c_.type(id); }
  const graph::Node& node_of(NodeId id) const override { return c_.graph_node(id); }
  int64_t attr_int(const std::string& n, int64_t def) const override { return c_.attr_int(n, def); }
  std::vector<int64_t> attr_ints(const std::string& n, std::vector<int64_t> def) const override { return c_.attr_ints(n, def); }
  Attrs conv_attrs(const TensorType& x, const TensorType& w) const override { return conv_window_attrs(c_, x, w); }
  NodeId op(const std::string& n, std::vector<NodeId> in, Attrs a) override { return c_.op(n, std::move(in), std::move(a)); }
  NodeId op_kept(const std::string& n, std::vector<NodeId> in, Attrs a) override { return c_.op_kept(n, std::move(in), std::move(a)); }
  NodeId constant(ConstData v) override { return c_.constant(std::move(v)); }

 private:
  Importer& c_;
};

Converter quant(const std::string& op_type) {
  return [f = quant_converters().at(op_type)](Importer& c) {
    QuantContext q(c);
    return f(q);
  };
}

const std::map<std::string, Converter>& converters() {
  static const std::map<std::string, Converter> table = [] {
  std::map<std::string, Converter> m = {
      {"BatchNormalization", batch_norm},
      {"Relu", unary("relu")},
      {"Sigmoid", unary("sigmoid")},
      {"Tanh", unary("tanh")},
      {"Exp", unary("exp")},
      {"Sqrt", unary("sqrt")},
      {"Erf", unary("erf")},
      {"Neg", unary("negative")},
      {"Abs", unary("abs")},
      {"Identity", [](Importer& c) { return std::vector<NodeId>{c.in(0)}; }},
      {"Dropout",
       [](Importer& c) {
         // training_mode=true drops elements at random, which inference has no use for,
         // but with a ratio of 0 it drops none and scales by 1: the identity. PyTorch
         // exports that for dropouts it calls with training=True and p=0 (torchvision's
         // Swin Transformer attention).
         if (c.has_input(2) && c.const_value(2, "training_mode") != 0) {
           const double ratio = c.has_input(1) ? c.const_value(1, "ratio") : 0.5;
           if (ratio != 0)
             fail(fmt::format("training_mode=true with ratio {} drops elements at random (training only); export the "
                              "model in inference mode (PyTorch: model.eval())",
                              ratio));
         }
         NodeId y = c.op("dropout", {c.in(0)});
         if (c.node().output_size() < 2) return std::vector<NodeId>{y};
         // Inference keeps every element: the mask is all true.
         auto mask = std::make_shared<interp::HostBuffer>(DataType::Bool(), c.in_type(0).shape);
         mask->fill(1);
         return std::vector<NodeId>{y, c.constant(mask, "_mask")};
       }},
      {"LeakyRelu", [](Importer& c) { return std::vector<NodeId>{c.op("leaky_relu", {c.in(0)}, {{"alpha", c.attr_float("alpha", 0.01)}})}; }},
      {"HardSigmoid",
       [](Importer& c) {
         return std::vector<NodeId>{
             c.op("hard_sigmoid", {c.in(0)}, {{"alpha", c.attr_float("alpha", 0.2)}, {"beta", c.attr_float("beta", 0.5)}})};
       }},
      {"HardSwish", unary("hard_swish")},
      {"Clip", clip},
      {"Add", binary("add")},
      {"Sub", binary("subtract")},
      {"Mul", binary("multiply")},
      {"Div", binary("divide")},
      {"Equal", binary("equal")},
      {"Where", [](Importer& c) { return std::vector<NodeId>{c.op("where", {c.in(0), c.in(1), c.in(2)})}; }},
      {"Gemm", gemm},
      {"MatMul", matmul},
      {"Flatten", flatten},
      {"Reshape", reshape},
      {"Transpose", transpose},
      {"Concat", concat},
      {"Split", split},
      {"Slice", slice},
      {"Gather", gather},
      {"Squeeze", squeeze},
      {"Unsqueeze", unsqueeze},
      {"Shape", shape},
      {"Softmax", softmax},
      {"ReduceMean", [](Importer& c) { return reduce(c, "mean"); }},
      {"ReduceSum", [](Importer& c) { return reduce(c, "sum"); }},
      {"ReduceMax", [](Importer& c) { return reduce(c, "max"); }},
      {"Pad", pad},
      {"Cast", cast},
      {"Constant", constant_op},
      {"ConstantOfShape", constant_of_shape},
      {"Expand", expand},
      {"LayerNormalization", layer_norm},
      {"QuantizeLinear", quant("QuantizeLinear")},
      {"DequantizeLinear", quant("DequantizeLinear")},
      {"QLinearConv", quant("QLinearConv")},
      {"QLinearMatMul", quant("QLinearMatMul")},
      {"ConvInteger", quant("ConvInteger")},
      {"MatMulInteger", quant("MatMulInteger")},
      {"DynamicQuantizeLinear", quant("DynamicQuantizeLinear")},
  };
  add_math_converters(m);
  add_tensor_converters(m);
  add_signal_converters(m);
  add_index_converters(m);
  add_rnn_converters(m);
  add_seqflow_converters(m);
  add_window_converters(m);
  return m;
  }();
  return table;
}


namespace {

// `dir`: the folder external data is read from (empty for a model given as bytes).
graph::Graph import_model(const std::string& bytes, const OnnxOptions& options, const std::string& source,
                          const std::string& dir) {
  onnx::ModelProto model;
  if (bytes.empty()) fail(source + ": the file is empty");
  if (!model.ParseFromString(bytes))
    fail(source + ": not a valid ONNX model (the protobuf does not parse: the file is truncated or not an ONNX file)");
  if (!model.has_graph()) fail(source + ": the model has no graph (truncated or not an ONNX file)");
  load_external_data(model, dir, source);
  upgrade_opset(model, options, source);
  return Importer(model, options, source).run();
}

}  // namespace

graph::Graph import_onnx_bytes(const std::string& bytes, const OnnxOptions& options, const std::string& source) {
  return import_model(bytes, options, source, "");
}

graph::Graph import_onnx_file(const std::string& path, const OnnxOptions& options) {
  return import_model(read_file(path), options, path, model_folder(path));
}

std::string model_folder(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

graph::ConstData read_onnx_tensor(const std::string& bytes, const std::string& source) {
  onnx::TensorProto t;
  if (!t.ParseFromString(bytes)) fail(source + ": not a serialized onnx.TensorProto");
  try {
    return tensor_data(t);
  } catch (const CompileError& e) {
    fail(fmt::format("{}: {}", source, e.what()));
  }
}

std::vector<std::string> supported_onnx_ops() {
  std::vector<std::string> r;
  for (const auto& [k, v] : converters()) r.push_back(k);
  return r;
}

}  // namespace kiln::frontend
