#pragma once
// ONNX's quantization operators (QuantizeLinear, DequantizeLinear, QLinearConv,
// QLinearMatMul, ConvInteger, MatMulInteger, DynamicQuantizeLinear) in the graph IR's integer form:
// quantize_linear / dequantize_linear, and conv2d / matmul with out_dtype="int32" on
// int8 or uint8 operands (zero points subtracted in int32 first where they are not
// all zero). quant_converters.cc converts them; onnx_importer.cc calls them through
// the NodeContext it implements.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"

namespace kiln::frontend {

// What a converter sees of the ONNX node being imported (the importer implements it).
class NodeContext {
 public:
  virtual ~NodeContext() = default;
  virtual bool has_input(int k) const = 0;
  virtual graph::NodeId in(int k) const = 0;  // an error naming the input when it is missing
  virtual const graph::TensorType& type(graph::NodeId id) const = 0;
  virtual const graph::Node& node_of(graph::NodeId id) const = 0;
  virtual int64_t attr_int(const std::string& name, int64_t def) const = 0;
  virtual std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def) const = 0;
  // strides, dilations, pads (auto_pad resolved) and groups of a Conv-like node.
  virtual graph::Attrs conv_attrs(const graph::TensorType& x, const graph::TensorType& w) const = 0;
  // Adds an operator (folded now when its inputs are constants) or a constant.
  virtual graph::NodeId op(const std::string& name, std::vector<graph::NodeId> inputs, graph::Attrs attrs = {}) = 0;
  // Adds an operator that is not folded (a dequantized weight stays int8 and scale).
  virtual graph::NodeId op_kept(const std::string& name, std::vector<graph::NodeId> inputs, graph::Attrs attrs) = 0;
  virtual graph::NodeId constant(graph::ConstData value) = 0;
};

using QuantConverter = std::function<std::vector<graph::NodeId>(NodeContext&)>;
// ONNX op type -> converter.
const std::map<std::string, QuantConverter>& quant_converters();

}  // namespace kiln::frontend
