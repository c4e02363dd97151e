#pragma once
// The graph-level operator library. Each operator has a fusion pattern (TVM's
// OpPatternKind), a type inference function and a tensor-expression compute that
// FuseOps' groups are lowered from. The list of operators and their attributes is in
// ops.cc (and docs/models.md).
#include <functional>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"
#include "compiler/te/tensor.h"

namespace kiln::graph {

// Ordered as TVM's: a group may absorb an op of a lower-or-equal kind.
enum class OpPattern {
  ElemWise = 0,         // out[i] = f(in[i])
  Broadcast = 1,        // out[i] = f(in[broadcast(i)])
  Injective = 2,        // each output element reads some input elements (reshape, slice)
  CommReduce = 3,       // a reduction (sum, mean, global pooling)
  OutEWiseFusable = 4,  // conv2d, dense, matmul, pooling: elementwise ops may follow
  Opaque = 8,           // not fused (softmax)
};
const char* pattern_name(OpPattern p);

using InferFn = std::function<TensorType(const std::vector<TensorType>&, const Attrs&)>;
// Builds the op's output from its inputs' tensors; `out` is the inferred type.
using ComputeFn = std::function<te::Tensor(const std::vector<te::Tensor>&, const Attrs&, const TensorType& out)>;

struct OpDef {
  std::string name;
  OpPattern pattern = OpPattern::Opaque;
  int num_inputs = 1;  // -1: any number (>= 1)
  int max_inputs = 0;  // > num_inputs: optional trailing inputs allowed
  InferFn infer;
  ComputeFn compute;
};

// The definition of an operator; CompileError for an unknown name.
const OpDef& op_def(const std::string& name);
bool is_known_op(const std::string& name);
std::vector<std::string> op_names();
// add, subtract, multiply, divide, maximum, minimum, power: out = f(a, b) per element,
// with broadcasting (what layout passes may move or re-block).
bool is_pointwise_binary(const std::string& op);
// 2-d pooling over each channel's plane: max_pool2d, avg_pool2d, global_avg_pool2d.
bool is_pooling2d(const std::string& op);

// Adds an operator defined outside compiler/ (an accelerator's own layouts: its
// strategy places nodes of it), before any graph uses it. CompileError when the name
// is taken or the definition lacks infer or compute.
void register_op(OpDef def);

// Registers the operators of the packed layouts (ops_packed.cc); ops.cc calls it.
void register_packed_ops(const std::function<void(OpDef)>& reg);

// The te shape of a graph tensor: rank-0 tensors are computed as shape [1].
std::vector<ir::Expr> te_shape(const TensorType& t);

}  // namespace kiln::graph
