// Converters of ONNX's sequence, optional and control-flow operators, all resolved while
// importing (Kiln's graphs are static): a sequence is a list of tensors whose length is
// known now, an optional is empty or holds a value, If imports the branch its known
// condition picks (or both, selected elementwise, when the condition is computed at run
// time and the branches agree in shape), Loop and Scan are unrolled for their known trip
// counts, SequenceMap imports its body once per element. SequenceEmpty,
// SequenceConstruct, SequenceInsert, SequenceErase, SequenceAt, SequenceLength,
// SplitToSequence, ConcatFromSequence, SequenceMap, Optional, OptionalHasElement,
// OptionalGetElement, Identity (of any value), If, Loop, Scan.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/frontend/onnx/importer.h"

namespace kiln::frontend {

namespace {

// More iterations than this are refused: an unrolled loop becomes that many copies of
// its body in the graph.
constexpr int64_t kMaxUnroll = 4096;

NodeId scalar_constant(Importer& c, DataType t, int64_t v) {
  auto b = std::make_shared<interp::HostBuffer>(t, std::vector<int64_t>{});
  b->set_int(0, v);
  return c.constant(b);
}

// The single integer of known input k.
int64_t known_int(Importer& c, int k) {
  std::vector<int64_t> v = c.const_ints(k);
  if (v.size() != 1) fail(fmt::format("input {} must hold one value, it holds {}", k, v.size()));
  return v[0];
}

// Input k as a sequence (an optional holding one is taken too).
const Value& sequence_in(Importer& c, int k) {
  const Value& v = c.value(k);
  if (v.kind != Value::Kind::kSequence || !v.present)
    fail(fmt::format("input {} ('{}') is {}, not a sequence", k, c.node().input(k), v.describe()));
  return v;
}

// Sets output 0 to `v`: a tensor is returned, anything else set on the importer.
std::vector<NodeId> result(Importer& c, Value v) {
  if (v.is_tensor()) return {v.tensor};
  c.set_output(0, std::move(v));
  return {};
}

// The node's outputs from a list of values (a subgraph's).
std::vector<NodeId> results(Importer& c, const std::vector<Value>& vs) {
  std::vector<NodeId> r;
  for (size_t k = 0; k < vs.size(); ++k) {
    r.push_back(vs[k].is_tensor() ? vs[k].tensor : -1);
    if (!vs[k].is_tensor()) c.set_output(static_cast<int>(k), vs[k]);
  }
  return r;
}

NodeId unsqueeze_at(Importer& c, NodeId x, int64_t axis) {
  std::vector<int64_t> s = c.type(x).shape;
  s.insert(s.begin() + axis, 1);
  return c.reshape(x, s);
}

// The tensors stacked along a new axis `axis` (of the result's rank).
NodeId stack(Importer& c, const std::vector<NodeId>& xs, int64_t axis) {
  std::vector<NodeId> parts;
  for (NodeId x : xs) parts.push_back(unsqueeze_at(c, x, axis));
  if (parts.size() == 1) return parts[0];
  return c.op("concatenate", parts, {{"axis", axis}});
}

int64_t normalize(int64_t axis, int64_t rank, const char* what) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) fail(fmt::format("{} {} is out of range for rank {}", what, axis, rank));
  return a;
}

// ---------------------------------------------------------------- sequences

std::vector<NodeId> sequence_empty(Importer& c) {
  return result(c, Value::sequence({}, onnx_dtype(static_cast<int>(c.attr_int("dtype", onnx::TensorProto::FLOAT)))));
}

std::vector<NodeId> sequence_construct(Importer& c) {
  std::vector<NodeId> items;
  for (int k = 0; k < c.num_inputs(); ++k) items.push_back(c.in(k));
  if (items.empty()) fail("SequenceConstruct needs at least one input");
  DataType t = c.type(items[0]).dtype;
  for (NodeId x : items)
    if (c.type(x).dtype != t) fail("the inputs have different element types");
  return result(c, Value::sequence(std::move(items), t));
}

// A position into a sequence of n elements: in [-n, n - 1], or [-n, n] when `end_ok`
// (an insert after the last).
size_t position(Importer& c, int k, size_t n, bool end_ok) {
  int64_t p = known_int(c, k), len = static_cast<int64_t>(n);
  int64_t q = p < 0 ? p + len : p;
  if (q < 0 || q > len || (q == len && !end_ok))
    fail(fmt::format("position {} is out of range for a sequence of {} tensors", p, n));
  return static_cast<size_t>(q);
}

std::vector<NodeId> sequence_insert(Importer& c) {
  Value s = sequence_in(c, 0);
  NodeId t = c.in(1);
  if (!s.items.empty() && c.type(t).dtype != s.elem_type)
    fail(fmt::format("inserting a {} tensor into a sequence of {}", dtype_name(c.type(t).dtype), dtype_name(s.elem_type)));
  size_t p = c.has_input(2) ? position(c, 2, s.items.size(), true) : s.items.size();
  s.items.insert(s.items.begin() + static_cast<std::ptrdiff_t>(p), t);
  s.elem_type = c.type(t).dtype;
  s.optional = false;
  return result(c, std::move(s));
}

std::vector<NodeId> sequence_erase(Importer& c) {
  Value s = sequence_in(c, 0);
  if (s.items.empty()) fail("erasing from an empty sequence");
  size_t p = c.has_input(1) ? position(c, 1, s.items.size(), false) : s.items.size() - 1;
  s.items.erase(s.items.begin() + static_cast<std::ptrdiff_t>(p));
  s.optional = false;
  return result(c, std::move(s));
}

std::vector<NodeId> sequence_at(Importer& c) {
  const Value& s = sequence_in(c, 0);
  return {s.items[position(c, 1, s.items.size(), false)]};
}

std::vector<NodeId> sequence_length(Importer& c) {
  return {scalar_constant(c, DataType::Int(64), static_cast<int64_t>(sequence_in(c, 0).items.size()))};
}

std::vector<NodeId> split_to_sequence(Importer& c) {
  NodeId x = c.in(0);
  std::vector<int64_t> shape = c.type(x).shape;
  int64_t axis = normalize(c.attr_int("axis", 0), static_cast<int64_t>(shape.size()), "axis");
  int64_t dim = shape[axis];
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!c.has_input(1)) {
    sizes.assign(static_cast<size_t>(dim), 1);
    squeeze = c.attr_int("keepdims", 1) == 0;
  } else if (c.type(c.in(1)).ndim() == 0) {
    int64_t chunk = known_int(c, 1);
    if (chunk <= 0) fail(fmt::format("split {} must be positive", chunk));
    for (int64_t at = 0; at < dim; at += chunk) sizes.push_back(std::min(chunk, dim - at));
  } else {
    sizes = c.const_ints(1);
    check_split_sizes(sizes, axis, dim);
  }
  std::vector<NodeId> items;
  int64_t at = 0;
  for (int64_t s : sizes) {
    std::vector<int64_t> b(shape.size(), 0), e = shape, st(shape.size(), 1);
    b[axis] = at;
    e[axis] = at + s;
    NodeId part = c.op("strided_slice", {x}, {{"begin", b}, {"end", e}, {"steps", st}});
    if (squeeze) {
      std::vector<int64_t> out = shape;
      out.erase(out.begin() + axis);
      part = c.reshape(part, out);
    }
    items.push_back(part);
    at += s;
  }
  return result(c, Value::sequence(std::move(items), c.type(x).dtype));
}

std::vector<NodeId> concat_from_sequence(Importer& c) {
  const Value& s = sequence_in(c, 0);
  if (!c.has_attr("axis")) fail("the attribute 'axis' is required");
  if (s.items.empty()) fail("the sequence is empty: there is nothing to concatenate");
  int64_t rank = c.type(s.items[0]).ndim();
  if (c.attr_int("new_axis", 0)) return {stack(c, s.items, normalize(c.attr_int("axis", 0), rank + 1, "axis"))};
  int64_t axis = normalize(c.attr_int("axis", 0), rank, "axis");
  if (s.items.size() == 1) return {s.items[0]};
  return {c.op("concatenate", s.items, {{"axis", axis}})};
}

// Applies the body to each position of the input sequences (tensor inputs are passed to
// every position as they are).
std::vector<NodeId> sequence_map(Importer& c) {
  size_t n = sequence_in(c, 0).items.size();
  for (int k = 1; k < c.num_inputs(); ++k) {
    const Value& v = c.value(k);
    if (v.kind == Value::Kind::kSequence && v.items.size() != n)
      fail(fmt::format("input {} has {} tensors, input 0 has {}", k, v.items.size(), n));
  }
  const onnx::GraphProto& body = c.subgraph("body");
  std::vector<Value> outs;
  for (int k = 0; k < c.node().output_size(); ++k) {
    const auto& tt = body.output(k).type();
    DataType t = tt.has_tensor_type() ? onnx_dtype(tt.tensor_type().elem_type()) : DataType::Float(32);
    outs.push_back(Value::sequence({}, t));
  }
  if (body.output_size() != c.node().output_size())
    fail(fmt::format("the body has {} outputs, the node {}", body.output_size(), c.node().output_size()));
  for (size_t i = 0; i < n; ++i) {
    std::vector<Value> args;
    for (int k = 0; k < c.num_inputs(); ++k) {
      const Value& v = c.value(k);
      args.push_back(v.kind == Value::Kind::kSequence ? Value::of(v.items[i]) : v);
    }
    std::vector<Value> r = c.import_subgraph("body", args, fmt::format("element {}", i));
    for (size_t k = 0; k < r.size(); ++k) {
      if (!r[k].is_tensor()) fail(fmt::format("the body's output {} is {}, not a tensor", k, r[k].describe()));
      outs[k].items.push_back(r[k].tensor);
      outs[k].elem_type = c.type(r[k].tensor).dtype;
    }
  }
  return results(c, outs);
}

// ---------------------------------------------------------------- optionals

std::vector<NodeId> optional(Importer& c) {
  Value v;
  if (c.has_input(0)) {
    v = c.value(0);
    if (v.optional) fail("the input is an optional already");
  } else {
    v.present = false;
    for (const auto& a : c.node().attribute())
      if (a.name() == "type" && a.has_tp() && a.tp().has_sequence_type()) v.kind = Value::Kind::kSequence;
  }
  v.optional = true;
  c.set_output(0, std::move(v));
  return {};
}

std::vector<NodeId> optional_has_element(Importer& c) {
  bool has = c.has_input(0) && c.value(0).present;
  return {scalar_constant(c, DataType::Bool(), has ? 1 : 0)};
}

std::vector<NodeId> optional_get_element(Importer& c) {
  Value v = c.value(0);
  if (!v.present) fail(fmt::format("the optional input '{}' is empty", c.node().input(0)));
  v.optional = false;
  return result(c, std::move(v));
}

std::vector<NodeId> identity(Importer& c) { return result(c, c.value(0)); }

// ---------------------------------------------------------------- control flow

// Output k of the two branches of an If whose condition is computed at run time: both
// were imported, and the output is selected elementwise when their shapes agree.
Value select(Importer& c, NodeId cond, const Value& a, const Value& b, size_t k) {
  auto mismatch = [&](const std::string& why) {
    fail(fmt::format("the condition is computed at run time (Kiln picks the branch while importing only when it is known: "
                     "a constant or a graph input given a value), and output {} differs between the branches: {}",
                     k, why));
  };
  if (a.kind != b.kind || a.optional != b.optional || a.present != b.present)
    mismatch(fmt::format("{} and {}", a.describe(), b.describe()));
  auto pick = [&](NodeId x, NodeId y) {
    if (c.type(x) != c.type(y)) mismatch(fmt::format("{} and {}", c.type(x).to_string(), c.type(y).to_string()));
    return c.op("where", {cond, x, y});
  };
  Value r = a;
  if (a.kind == Value::Kind::kTensor) {
    if (a.present) r.tensor = pick(a.tensor, b.tensor);
    return r;
  }
  if (a.items.size() != b.items.size()) mismatch(fmt::format("sequences of {} and {} tensors", a.items.size(), b.items.size()));
  for (size_t i = 0; i < a.items.size(); ++i) r.items[i] = pick(a.items[i], b.items[i]);
  return r;
}

std::vector<NodeId> if_op(Importer& c) {
  NodeId cond = c.in(0);
  if (c.type(cond).size() != 1) fail(fmt::format("the condition has {} elements, not one", c.type(cond).size()));
  if (const graph::Node* known = c.known(cond)) {
    bool taken = graph::constant_values(*known).at(0) != 0;
    return results(c, c.import_subgraph(taken ? "then_branch" : "else_branch", {}, ""));
  }
  cond = c.reshape(cond, {});  // a [1] condition must not broadcast scalar outputs to [1]
  std::vector<Value> a = c.import_subgraph("then_branch", {}, "");
  std::vector<Value> b = c.import_subgraph("else_branch", {}, "");
  if (a.size() != b.size()) fail(fmt::format("then_branch has {} outputs, else_branch {}", a.size(), b.size()));
  std::vector<Value> r;
  for (size_t k = 0; k < a.size(); ++k) r.push_back(select(c, cond, a[k], b[k], k));
  return results(c, r);
}

bool known_bool(Importer& c, NodeId x, const std::string& what) {
  const graph::Node* n = c.known(x);
  if (!n)
    fail(fmt::format("{} is computed at run time: Kiln unrolls loops while importing, so it must be known then (a "
                     "constant or computed from graph inputs given values)",
                     what));
  std::vector<double> v = graph::constant_values(*n);
  if (v.size() != 1) fail(fmt::format("{} must hold one value, it holds {}", what, v.size()));
  return v[0] != 0;
}

// Loop: unrolled while importing. The trip count M and the condition (the input and the
// body's cond_out of each iteration) must be known now.
std::vector<NodeId> loop(Importer& c) {
  bool has_trip = c.has_input(0), has_cond = c.has_input(1);
  if (!has_trip && !has_cond) fail("neither a trip count nor a condition is given: the loop would not end");
  int64_t trip = 0;
  if (has_trip) {
    if (!c.known(c.in(0)))
      fail(fmt::format("the trip count M ('{}') is computed at run time: Kiln unrolls loops while importing, so it must "
                       "be known then (a constant or computed from graph inputs given values)",
                       c.node().input(0)));
    trip = known_int(c, 0);
  }
  bool cond = !has_cond || known_bool(c, c.in(1), fmt::format("the condition ('{}')", c.node().input(1)));
  std::vector<Value> carried;
  for (int k = 2; k < c.num_inputs(); ++k) carried.push_back(c.value(k));
  size_t n_carried = carried.size();
  int n_scan = c.node().output_size() - static_cast<int>(n_carried);
  if (n_scan < 0) fail(fmt::format("{} loop-carried inputs but {} outputs", n_carried, c.node().output_size()));
  std::vector<std::vector<NodeId>> scans(static_cast<size_t>(n_scan));
  int64_t i = 0;
  for (; (!has_trip || i < trip) && cond; ++i) {
    if (i >= kMaxUnroll) fail(fmt::format("the loop runs more than {} iterations, too many to unroll", kMaxUnroll));
    std::vector<Value> args{Value::of(scalar_constant(c, DataType::Int(64), i)),
                            Value::of(scalar_constant(c, DataType::Bool(), cond ? 1 : 0))};
    args.insert(args.end(), carried.begin(), carried.end());
    std::string what = fmt::format("iteration {}", i);
    std::vector<Value> outs = c.import_subgraph("body", args, what);
    if (outs.size() != 1 + n_carried + scans.size())
      fail(fmt::format("the body has {} outputs, {} expected (the condition, {} carried, {} scanned)", outs.size(),
                       1 + n_carried + scans.size(), n_carried, scans.size()));
    if (!outs[0].is_tensor()) fail("the body's condition output is not a tensor");
    cond = known_bool(c, outs[0].tensor, fmt::format("the body's condition output ({})", what));
    std::copy(outs.begin() + 1, outs.begin() + 1 + static_cast<std::ptrdiff_t>(n_carried), carried.begin());
    for (size_t j = 0; j < scans.size(); ++j) {
      const Value& v = outs[1 + n_carried + j];
      if (!v.is_tensor()) fail(fmt::format("the body's scan output {} is {}, not a tensor", j, v.describe()));
      scans[j].push_back(v.tensor);
    }
  }
  if (i == 0 && !scans.empty()) fail("the loop runs no iteration, so its scan outputs have no element type or shape");
  std::vector<Value> r = carried;
  for (const auto& s : scans) r.push_back(Value::of(stack(c, s, 0)));
  return results(c, r);
}

// Scan (opset 9 and later): unrolled along the scan axis of its scan inputs.
std::vector<NodeId> scan(Importer& c) {
  int64_t m = c.attr_int("num_scan_inputs", 0);
  int64_t n = c.num_inputs() - m;
  if (m <= 0 || n < 0) fail(fmt::format("num_scan_inputs {} is out of range for {} inputs", m, c.num_inputs()));
  int64_t k_out = c.node().output_size() - n;
  if (k_out < 0) fail(fmt::format("{} state inputs but {} outputs", n, c.node().output_size()));
  auto in_axes = c.attr_ints("scan_input_axes", std::vector<int64_t>(static_cast<size_t>(m), 0));
  auto in_dirs = c.attr_ints("scan_input_directions", std::vector<int64_t>(static_cast<size_t>(m), 0));
  auto out_axes = c.attr_ints("scan_output_axes", std::vector<int64_t>(static_cast<size_t>(k_out), 0));
  auto out_dirs = c.attr_ints("scan_output_directions", std::vector<int64_t>(static_cast<size_t>(k_out), 0));
  if (static_cast<int64_t>(in_axes.size()) != m || static_cast<int64_t>(in_dirs.size()) != m)
    fail("scan_input_axes and scan_input_directions need one entry per scan input");
  if (static_cast<int64_t>(out_axes.size()) != k_out || static_cast<int64_t>(out_dirs.size()) != k_out)
    fail("scan_output_axes and scan_output_directions need one entry per scan output");
  std::vector<Value> states;
  for (int k = 0; k < n; ++k) states.push_back(c.value(k));
  int64_t len = -1;
  std::vector<NodeId> xs;
  for (int64_t j = 0; j < m; ++j) {
    NodeId x = c.in(static_cast<int>(n + j));
    in_axes[j] = normalize(in_axes[j], c.type(x).ndim(), "scan_input_axes entry");
    int64_t l = c.type(x).shape[in_axes[j]];
    if (len >= 0 && l != len) fail(fmt::format("scan input {} has {} positions along its axis, scan input 0 has {}", j, l, len));
    len = l;
    xs.push_back(x);
  }
  if (len == 0) fail("the scan inputs are empty, so the scan outputs have no shape");
  if (len > kMaxUnroll) fail(fmt::format("the scan runs {} iterations, more than the {} Kiln unrolls", len, kMaxUnroll));
  std::vector<std::vector<NodeId>> scans(static_cast<size_t>(k_out));
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Value> args = states;
    for (int64_t j = 0; j < m; ++j) {
      int64_t at = in_dirs[j] ? len - 1 - t : t;
      args.push_back(Value::of(c.op("take", {xs[j], scalar_constant(c, DataType::Int(64), at)}, {{"axis", in_axes[j]}})));
    }
    std::vector<Value> outs = c.import_subgraph("body", args, fmt::format("iteration {}", t));
    if (static_cast<int64_t>(outs.size()) != n + k_out)
      fail(fmt::format("the body has {} outputs, {} expected", outs.size(), n + k_out));
    std::copy(outs.begin(), outs.begin() + n, states.begin());
    for (int64_t j = 0; j < k_out; ++j) {
      if (!outs[n + j].is_tensor()) fail(fmt::format("the body's scan output {} is not a tensor", j));
      scans[j].push_back(outs[n + j].tensor);
    }
  }
  std::vector<Value> r = states;
  for (int64_t j = 0; j < k_out; ++j) {
    if (out_dirs[j]) std::reverse(scans[j].begin(), scans[j].end());
    int64_t axis = normalize(out_axes[j], c.type(scans[j][0]).ndim() + 1, "scan_output_axes entry");
    r.push_back(Value::of(stack(c, scans[j], axis)));
  }
  return results(c, r);
}

}  // namespace

void add_seqflow_converters(std::map<std::string, Converter>& m) {
  m["SequenceEmpty"] = sequence_empty;
  m["SequenceConstruct"] = sequence_construct;
  m["SequenceInsert"] = sequence_insert;
  m["SequenceErase"] = sequence_erase;
  m["SequenceAt"] = sequence_at;
  m["SequenceLength"] = sequence_length;
  m["SplitToSequence"] = split_to_sequence;
  m["ConcatFromSequence"] = concat_from_sequence;
  m["SequenceMap"] = sequence_map;
  m["Optional"] = optional;
  m["OptionalHasElement"] = optional_has_element;
  m["OptionalGetElement"] = optional_get_element;
  // Identity passes sequences and optionals through too (the table's first entry takes tensors only).
  m["Identity"] = identity;
  m["If"] = if_op;
  m["Loop"] = loop;
  m["Scan"] = scan;
}

}  // namespace kiln::frontend
