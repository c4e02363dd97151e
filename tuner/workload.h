#pragma once
// A tunable workload: one operator with fixed shapes, named by a canonical key
// ("matmul:M=1024,N=1024,K=1024"). It is what `kiln tune --op` parses, what a record
// names, and what the compile-time hook recognizes in a graph node.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "compiler/graph/graph.h"

namespace kiln::tuner {

struct Workload {
  std::string op;                        // "matmul", "dense", "conv2d"
  std::map<std::string, int64_t> params;  // the op's shape parameters
  // A workload of a template defined outside the op library (the Python API's
  // kiln.tune.template): `op` is the template's name, `args` its arguments in words
  // (as the template reads them back) and `arg_flops` its floating-point operations.
  std::string args = {};
  double arg_flops = 0;

  // Whether this is an op library workload (matmul, dense, matmul_packed, conv2d), not
  // a template's own.
  bool in_op_library() const;
  int64_t at(const std::string& key) const;
  // The canonical key: the op, then its parameters in the op's fixed order (a
  // template's own workload: the op, then its arguments).
  std::string key() const;
  double flops() const;  // floating-point operations of one run (a multiply-add is 2)
  // The workload a record names (Record::workload): an op library key is read as --op
  // is (parse_workload), any other op's key keeps its arguments as text.
  static Workload from_key(const std::string& key);
  bool operator==(const Workload& o) const { return key() == o.key(); }
};

// Parses an --op spec: "matmul:M=..,N=..,K=..", "dense:M=..,N=..,K=.." (x[M,K] times
// w[N,K] transposed), "conv2d:N=1,C=..,H=..,W=..,O=..,KH=3[,KW=3][,stride=1][,pad=1]
// [,block=16][,in_block=16][,groups=1]" (in_block: NCHWc data in blocks of that many
// channels, as CarryLayout hands a model's convolutions their data; groups: a grouped
// convolution, each group's O/groups output channels in blocks), "conv2d_winograd:[N=1,]C=..,H=..,
// W=..,O=..[,pad=1][,tile=4 or 2][,block=16][,in_block=16]" (a 3x3 stride-1 convolution
// in Winograd's tiles, tile by default as the winograd_conv pass picks it). Throws
// std::invalid_argument naming the bad part.
Workload parse_workload(const std::string& spec);

// The workload of a graph node, if it is one a template serves (2-d matmul, dense,
// conv2d_nchwc with equal strides, equal pads and no dilation, not depthwise;
// conv2d_winograd with equal pads; an accelerator's conv2d_packed with equal strides and
// pads).
std::optional<Workload> workload_of(const graph::Graph& g, graph::NodeId node);

// A graph of one operator node with the workload's shapes (every operand a graph
// input), so a candidate is lowered exactly as the compiler lowers that node.
graph::Graph workload_graph(const Workload& w, graph::NodeId* op_node);

}  // namespace kiln::tuner
