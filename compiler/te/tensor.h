#pragma once
// Tensor expressions: say what to compute. A tensor is the output of an operation,
// either a placeholder (an input) or a compute (a function of its axes, possibly a
// reduction over reduce axes). Tensors are used inside other tensors' bodies by
// calling them: `A(i, k) * B(k, j)`.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/node.h"
#include "compiler/ir/op.h"

namespace kiln::te {

using ir::DataType;
using ir::Expr;
using ir::IterVar;
using ir::Range;
using ir::Var;

enum class OpKind { Placeholder, Compute };

struct OperationNode;
class Tensor;

struct OperationNode : ir::DataProducer {
  OpKind op_kind = OpKind::Placeholder;
  std::string name;
  std::string tag;  // "elemwise", "broadcast", "injective", "reduce", "conv2d", ...
  DataType dtype;
  std::vector<Expr> shape;
  // compute only
  std::vector<IterVar> axis;         // one data-parallel axis per output dimension
  std::vector<IterVar> reduce_axis;  // the axes of a top-level reduction
  Expr body;

  const std::string& producer_name() const override { return name; }
  DataType producer_dtype() const override { return dtype; }
  const std::vector<Expr>& producer_shape() const override { return shape; }
  bool is_placeholder() const { return op_kind == OpKind::Placeholder; }
  // The tensors this operation reads, in first-use order.
  std::vector<Tensor> input_tensors() const;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<const OperationNode> op) : op_(std::move(op)) {}

  const OperationNode* operator->() const { return op_.get(); }
  const OperationNode* get() const { return op_.get(); }
  const std::shared_ptr<const OperationNode>& op() const { return op_; }
  bool defined() const { return op_ != nullptr; }
  bool same_as(const Tensor& o) const { return op_ == o.op_; }
  size_t ndim() const { return op_->shape.size(); }

  Expr operator()(std::vector<Expr> indices) const;
  template <typename... Args>
  Expr operator()(Args... indices) const {
    return (*this)(std::vector<Expr>{Expr(indices)...});
  }

 private:
  std::shared_ptr<const OperationNode> op_;
};

using FCompute = std::function<Expr(const std::vector<Var>&)>;

Tensor placeholder(std::vector<Expr> shape, DataType dtype = DataType::Float(32), std::string name = "placeholder");

// A tensor of `shape` whose element at the axes is fcompute(axes). A body whose top
// node is a reduction (sum/max_reduce/min_reduce) makes a reduction op.
Tensor compute(std::vector<Expr> shape, const FCompute& fcompute, std::string name = "compute",
               std::string tag = "", std::vector<std::string> axis_names = {});
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var)>& f, std::string name = "compute", std::string tag = "");
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var)>& f, std::string name = "compute", std::string tag = "");
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var)>& f, std::string name = "compute",
               std::string tag = "");
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var, Var)>& f,
               std::string name = "compute", std::string tag = "");

// A reduction axis over `dom` (a range [0, extent) when given an extent).
IterVar reduce_axis(Range dom, std::string name = "k");
IterVar reduce_axis(Expr extent, std::string name = "k");

// Reductions with their identities: 0, the lowest, the highest value of the type.
Expr sum(Expr source, std::vector<IterVar> axis, Expr where = Expr());
Expr max_reduce(Expr source, std::vector<IterVar> axis, Expr where = Expr());
Expr min_reduce(Expr source, std::vector<IterVar> axis, Expr where = Expr());
Expr prod(Expr source, std::vector<IterVar> axis, Expr where = Expr());  // identity 1

// A copy of `op` with a new body (same axes); used by schedule rewrites.
Tensor with_body(const Tensor& op, Expr body);

// Every operation reachable from `outputs`, producers before consumers.
std::vector<Tensor> post_dfs_order(const std::vector<Tensor>& outputs);

}  // namespace kiln::te
