#pragma once
// The graph IR: a dataflow graph of operators on tensors with static shapes. Every
// node produces exactly one tensor (multi-output ONNX ops such as Split become one
// node per output). Nodes are kept in topological order; a node refers to its inputs
// by index. Constants (weights) carry their data. Types are inferred when a node is
// added, so a graph is always well typed; a shape or type mismatch is a CompileError
// naming the node and its op.
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "compiler/interp/host_buffer.h"
#include "compiler/ir/type.h"

namespace kiln::graph {

using ir::DataType;
using NodeId = int;

// A tensor's element type and static shape.
struct TensorType {
  DataType dtype = DataType::Float(32);
  std::vector<int64_t> shape;

  int64_t size() const;  // number of elements
  int ndim() const { return static_cast<int>(shape.size()); }
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
  std::string to_string() const;  // "float32[1, 3, 224, 224]"
};

// Operator attributes: integers, floats, strings and lists of integers or floats.
using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> init) : map_(init) {}

  bool has(const std::string& key) const { return map_.count(key) != 0; }
  void set(const std::string& key, AttrValue v) { map_[key] = std::move(v); }
  // Typed getters; a missing key returns the default, a wrong kind throws.
  int64_t get_int(const std::string& key, int64_t def = 0) const;
  double get_float(const std::string& key, double def = 0) const;
  std::string get_string(const std::string& key, const std::string& def = "") const;
  std::vector<int64_t> get_ints(const std::string& key, std::vector<int64_t> def = {}) const;
  std::vector<double> get_floats(const std::string& key, std::vector<double> def = {}) const;

  const std::map<std::string, AttrValue>& map() const { return map_; }
  bool operator==(const Attrs& o) const { return map_ == o.map_; }
  std::string to_string() const;  // "axis=1, pads=[0, 1, 0, 1]"

 private:
  std::map<std::string, AttrValue> map_;
};

using ConstData = std::shared_ptr<const interp::HostBuffer>;

struct Node {
  std::string op;  // "input", "constant", or an operator of the op library (ops.h)
  std::string name;
  std::vector<NodeId> inputs;
  Attrs attrs;
  TensorType type;
  ConstData value;  // constants only

  bool is_input() const { return op == "input"; }
  bool is_constant() const { return op == "constant"; }
};

class Graph {
 public:
  // Graph inputs and constants.
  NodeId add_input(const std::string& name, TensorType type);
  NodeId add_constant(const std::string& name, ConstData value);
  NodeId add_scalar(const std::string& name, DataType dtype, double value);
  // An operator node; its type is inferred now (CompileError on a mismatch).
  NodeId add_op(const std::string& op, std::vector<NodeId> inputs, Attrs attrs = {}, std::string name = "");
  void add_output(NodeId id, std::string name = "");

  const Node& node(NodeId id) const { return nodes_.at(id); }
  const TensorType& type(NodeId id) const { return nodes_.at(id).type; }
  int size() const { return static_cast<int>(nodes_.size()); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<NodeId>& inputs() const { return inputs_; }
  const std::vector<NodeId>& outputs() const { return outputs_; }
  const std::vector<std::string>& output_names() const { return output_names_; }

  // How many operator nodes (not inputs or constants) the graph has.
  int num_ops() const;
  // The number of uses of every node (as an input of a node or as a graph output).
  std::vector<int> use_counts() const;

 private:
  std::vector<Node> nodes_;
  std::vector<NodeId> inputs_;
  std::vector<NodeId> outputs_;
  std::vector<std::string> output_names_;
};

// Rebuilding a graph in a pass: copies inputs and keeps an old-to-new id map.
class GraphRewriter {
 public:
  explicit GraphRewriter(const Graph& old);
  Graph& graph() { return g_; }
  const Graph& old() const { return old_; }
  NodeId map(NodeId old_id) const { return map_.at(old_id); }
  void set(NodeId old_id, NodeId new_id) { map_.at(old_id) = new_id; }
  // Copies an old node (constants and ops) with its inputs mapped.
  NodeId copy(NodeId old_id);
  std::vector<NodeId> mapped_inputs(NodeId old_id) const;
  // Adds the old graph's outputs (mapped) and returns the new graph.
  Graph finish();

 private:
  const Graph& old_;
  Graph g_;
  std::vector<NodeId> map_;
};

// Text form, one node per line:
//   %3 = conv2d(%0, %1, %2) {strides=[2, 2], ...} : float32[1, 64, 112, 112]
std::ostream& operator<<(std::ostream& os, const Graph& g);
std::string to_string(const Graph& g);

// The constant's data as float64 values (for small constants: shapes, axes, scalars).
std::vector<double> constant_values(const Node& n);
std::vector<int64_t> constant_ints(const Node& n);

}  // namespace kiln::graph
