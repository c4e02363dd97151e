#pragma once
// The ONNX importer's conversion state, shared by the converter files
// (onnx_importer.cc and the *_converters.cc beside it): a converter reads its node's
// inputs and attributes through an Importer and adds graph operators with op(), which
// folds operators whose inputs are all constants.
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/graph.h"

namespace kiln::frontend {

using graph::Attrs;
using graph::ConstData;
using graph::Graph;
using graph::NodeId;
using graph::TensorType;
using ir::DataType;

[[noreturn]] void fail(const std::string& msg);
// Constant subgraphs up to this many elements are folded while importing.
constexpr int64_t kFoldLimit = int64_t{1} << 22;
// The Kiln type of an ONNX element type; a CompileError for one Kiln has not.
DataType onnx_dtype(int t);
ConstData tensor_data(const onnx::TensorProto& t);
ConstData int64_tensor(const std::vector<int64_t>& v);
int64_t product(const std::vector<int64_t>& v, size_t from, size_t to);
std::string dtype_name(DataType t);
// Refuses split sizes that are negative or do not add up to `dim`, the size of
// dimension `axis` (Split, SplitToSequence).
void check_split_sizes(const std::vector<int64_t>& sizes, int64_t axis, int64_t dim);

// An ONNX value while importing. Kiln's graphs hold tensors only, so a sequence is a
// list of tensors whose length is known now, and an optional is empty or holds a tensor
// or a sequence (seqflow_converters.cc converts the operators on them).
struct Value {
  enum class Kind { kTensor, kSequence };
  Kind kind = Kind::kTensor;
  NodeId tensor = -1;          // kTensor
  std::vector<NodeId> items;   // kSequence
  DataType elem_type;          // kSequence: the element type (an empty sequence has one too)
  bool optional = false;       // an ONNX optional ...
  bool present = true;         // ... holding a value

  static Value of(NodeId t) { return Value{Kind::kTensor, t, {}, {}, false, true}; }
  static Value sequence(std::vector<NodeId> items, DataType elem) {
    return Value{Kind::kSequence, -1, std::move(items), elem, false, true};
  }
  bool is_tensor() const { return kind == Kind::kTensor && !optional; }
  std::string describe() const;  // "a tensor", "a sequence of 3 tensors", "an empty optional"
};

class Importer {
 public:
  Importer(const onnx::ModelProto& model, const OnnxOptions& opt, std::string source)
      : model_(model), opt_(opt), source_(std::move(source)) {}

  Graph run();

  // Used by the converters.
  const onnx::NodeProto& node() const { return *node_; }
  int opset() const { return opset_; }
  int num_inputs() const { return node_->input_size(); }
  bool has_input(int k) const { return k < node_->input_size() && !node_->input(k).empty(); }
  NodeId in(int k) const;
  // Input k as any value (a tensor, a sequence or an optional).
  const Value& value(int k) const;
  // Output k of the current node when it is not a tensor (a converter returns the
  // tensor outputs; a sequence or an optional output is set here instead).
  void set_output(int k, Value v);
  // Imports the graph attribute `attr` of the current node inline: its inputs are bound
  // to `args` in a new scope that also sees every name of the enclosing graphs; returns
  // its outputs. `what` names the copy in messages ("iteration 3").
  std::vector<Value> import_subgraph(const std::string& attr, const std::vector<Value>& args, const std::string& what);
  const onnx::GraphProto& subgraph(const std::string& attr) const;
  // The value of a tensor computed from constants and from graph inputs that have a
  // value in OnnxOptions::input_values (evaluated now), or null when it depends on an
  // input with no value.
  const graph::Node* known(NodeId id) const;
  const TensorType& type(NodeId id) const { return g_.type(id); }
  const TensorType& in_type(int k) const { return type(in(k)); }
  bool is_const(NodeId id) const { return g_.node(id).is_constant(); }
  const graph::Node& graph_node(NodeId id) const { return g_.node(id); }
  // The value of constant input k (an error naming the input when it is computed at run
  // time); a graph input with a value in OnnxOptions::input_values becomes that constant,
  // and so does a value computed from such inputs and constants (a size cast to float).
  const graph::Node& const_input(int k) const;
  std::vector<int64_t> const_ints(int k) const { return graph::constant_ints(const_input(k)); }
  // The one value of constant input k (a scalar or a one-element tensor), `what` in the
  // error when it holds none or several.
  double const_value(int k, const std::string& what) const;

  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t def) const;
  double attr_float(const std::string& name, double def) const;
  std::string attr_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def) const;
  const onnx::TensorProto* attr_tensor(const std::string& name) const;

  // Adds an operator; when every input is a constant and the result is small it is
  // evaluated now and a constant is added instead.
  NodeId op(const std::string& name, std::vector<NodeId> inputs, Attrs attrs = {});
  // An operator that stays in the graph even on constant inputs.
  NodeId op_kept(const std::string& name, std::vector<NodeId> inputs, Attrs attrs) {
    return g_.add_op(name, std::move(inputs), std::move(attrs), fmt::format("{}_{}", node_->name(), counter_++));
  }
  NodeId constant(ConstData value, const std::string& suffix = "");
  NodeId scalar(DataType t, double v) { return g_.add_scalar(node_->name() + "_scalar", t, v); }
  NodeId reshape(NodeId x, std::vector<int64_t> shape) {
    return type(x).shape == shape ? x : op("reshape", {x}, {{"shape", std::move(shape)}});
  }

 private:
  const onnx::ModelProto& model_;
  const OnnxOptions& opt_;
  std::string source_;
  Graph g_;
  // The names visible now: the main graph's, then one scope per subgraph being imported.
  // (A deque: references to the outer scopes' values stay valid while subgraphs come and go.)
  std::deque<std::map<std::string, Value>> scopes_;
  std::map<NodeId, NodeId> input_consts_;  // input -> its value from OnnxOptions::input_values
  // Operator nodes evaluated for const_input from the given input values (value null
  // where the node depends on a value known only at run time).
  mutable std::map<NodeId, graph::Node> derived_;
  std::map<int, Value> set_outputs_;
  const onnx::NodeProto* node_ = nullptr;
  int opset_ = 0;
  int counter_ = 0;
  int64_t nodes_imported_ = 0;  // main graph and unrolled subgraphs together

  const onnx::AttributeProto* find_attr(const std::string& name) const;
  ConstData derived_value(NodeId id) const;
  std::string where() const;
  const Value* lookup(const std::string& name) const;
  void import_nodes(const onnx::GraphProto& gp);
  void add_graph_input(const onnx::ValueInfoProto& vi);
  void add_graph_output(const std::string& name, const Value& v);
  NodeId add_tensor_input(const std::string& name, const onnx::TypeProto_Tensor& tt, const std::vector<int64_t>* shape);
};

using Converter = std::function<std::vector<NodeId>(Importer&)>;
const std::map<std::string, Converter>& converters();

// A converter to graph op `op` of input 0 (unary) or inputs 0 and 1 (binary; a constant
// operand of another type is cast to the first's).
Converter unary(const std::string& op);
Converter binary(const std::string& op);

// The converters of one family, added to the importer's table.
void add_math_converters(std::map<std::string, Converter>& m);
void add_tensor_converters(std::map<std::string, Converter>& m);
void add_signal_converters(std::map<std::string, Converter>& m);
void add_index_converters(std::map<std::string, Converter>& m);  // index_converters.cc
void add_rnn_converters(std::map<std::string, Converter>& m);
void add_seqflow_converters(std::map<std::string, Converter>& m);
void add_window_converters(std::map<std::string, Converter>& m);  // window_converters.cc

// A reduction's axes: an input from opset 13 for ReduceSum and from opset 18 for the
// others, an attribute before. `noop` is set where the axes are an input that is empty
// or absent and noop_with_empty_axes asks for the input unreduced (else empty axes
// reduce every axis).
struct ReduceAxes {
  std::vector<int64_t> axes;
  bool noop = false;
};
ReduceAxes reduce_axes(Importer& c);

// The window attributes (strides, dilations, pads, groups) of a convolution of data x
// by weight w, from the node's attributes (window_converters.cc).
Attrs conv_window_attrs(Importer& c, const TensorType& x, const TensorType& w);

}  // namespace kiln::frontend
