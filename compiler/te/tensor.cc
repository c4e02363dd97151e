#include "compiler/te/tensor.h"

#include <unordered_set>

#include "compiler/ir/functor.h"
#include "compiler/support/error.h"

namespace kiln::te {

std::vector<Tensor> OperationNode::input_tensors() const {
  std::vector<Tensor> out;
  if (!body.defined()) return out;
  std::unordered_set<const ir::DataProducer*> seen;
  ir::post_order_visit(body, [&](const ir::Node* n) {
    if (n->kind != ir::NodeKind::ProducerLoad) return;
    const auto* load = static_cast<const ir::ProducerLoadNode*>(n);
    if (!seen.insert(load->producer.get()).second) return;
    out.emplace_back(std::static_pointer_cast<const OperationNode>(load->producer));
  });
  return out;
}

Expr Tensor::operator()(std::vector<Expr> indices) const {
  for (Expr& i : indices) {
    if (!i.dtype().is_int()) i = ir::cast(DataType::Int(32), i);
  }
  return ir::make_producer_load(op_, std::move(indices));
}

Tensor placeholder(std::vector<Expr> shape, DataType dtype, std::string name) {
  auto op = std::make_shared<OperationNode>();
  op->op_kind = OpKind::Placeholder;
  op->name = std::move(name);
  op->dtype = dtype;
  op->shape = std::move(shape);
  return Tensor(op);
}

namespace {

std::string default_axis_name(size_t i, size_t rank) {
  static const char* names[] = {"i", "j", "k", "l", "m", "n"};
  if (rank <= 6) return names[i];
  return "ax" + std::to_string(i);
}

}  // namespace

Tensor compute(std::vector<Expr> shape, const FCompute& fcompute, std::string name, std::string tag,
               std::vector<std::string> axis_names) {
  auto op = std::make_shared<OperationNode>();
  op->op_kind = OpKind::Compute;
  op->name = std::move(name);
  op->tag = std::move(tag);
  std::vector<Var> vars;
  for (size_t i = 0; i < shape.size(); ++i) {
    std::string n = i < axis_names.size() ? axis_names[i] : default_axis_name(i, shape.size());
    Var v(n);
    vars.push_back(v);
    op->axis.emplace_back(v, Range(0, shape[i]), ir::IterKind::DataPar);
  }
  op->shape = std::move(shape);
  op->body = fcompute(vars);
  if (!op->body.defined()) throw CompileError("compute '" + op->name + "': the body is undefined");
  op->dtype = op->body.dtype();
  if (!op->dtype.is_scalar()) throw CompileError("compute '" + op->name + "': the body must be scalar, not " + op->dtype.to_string());
  if (const auto* red = op->body.as<ir::ReduceNode>()) op->reduce_axis = red->axis;
  // A reduction may only be the top node of a body.
  ir::post_order_visit(op->body, [&](const ir::Node* n) {
    if (n->kind == ir::NodeKind::Reduce && n != op->body.get()) {
      throw CompileError("compute '" + op->name + "': a reduction must be the whole body, not part of it");
    }
  });
  return Tensor(op);
}

Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var)>& f, std::string name, std::string tag) {
  if (shape.size() != 1) throw CompileError("compute '" + name + "': a 1-argument function needs a rank-1 shape");
  return compute(std::move(shape), [&](const std::vector<Var>& v) { return f(v[0]); }, std::move(name), std::move(tag));
}
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var)>& f, std::string name, std::string tag) {
  if (shape.size() != 2) throw CompileError("compute '" + name + "': a 2-argument function needs a rank-2 shape");
  return compute(std::move(shape), [&](const std::vector<Var>& v) { return f(v[0], v[1]); }, std::move(name), std::move(tag));
}
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var)>& f, std::string name, std::string tag) {
  if (shape.size() != 3) throw CompileError("compute '" + name + "': a 3-argument function needs a rank-3 shape");
  return compute(std::move(shape), [&](const std::vector<Var>& v) { return f(v[0], v[1], v[2]); }, std::move(name), std::move(tag));
}
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var, Var)>& f, std::string name,
               std::string tag) {
  if (shape.size() != 4) throw CompileError("compute '" + name + "': a 4-argument function needs a rank-4 shape");
  return compute(std::move(shape), [&](const std::vector<Var>& v) { return f(v[0], v[1], v[2], v[3]); }, std::move(name),
                 std::move(tag));
}

IterVar reduce_axis(Range dom, std::string name) { return IterVar(Var(std::move(name)), std::move(dom), ir::IterKind::Reduce); }
IterVar reduce_axis(Expr extent, std::string name) { return reduce_axis(Range(0, std::move(extent)), std::move(name)); }

namespace {

Expr reduce(ir::Combiner c, Expr source, std::vector<IterVar> axis, Expr where) {
  for (const IterVar& iv : axis) {
    if (iv->kind != ir::IterKind::Reduce) throw CompileError("reduction over '" + iv->var.name() + "', which is not a reduce axis");
  }
  return ir::make_reduce(c, std::move(source), std::move(axis), std::move(where));
}

}  // namespace

Expr sum(Expr source, std::vector<IterVar> axis, Expr where) {
  return reduce(ir::Combiner::Sum, std::move(source), std::move(axis), std::move(where));
}
Expr max_reduce(Expr source, std::vector<IterVar> axis, Expr where) {
  return reduce(ir::Combiner::Max, std::move(source), std::move(axis), std::move(where));
}
Expr min_reduce(Expr source, std::vector<IterVar> axis, Expr where) {
  return reduce(ir::Combiner::Min, std::move(source), std::move(axis), std::move(where));
}
Expr prod(Expr source, std::vector<IterVar> axis, Expr where) {
  return reduce(ir::Combiner::Prod, std::move(source), std::move(axis), std::move(where));
}

Tensor with_body(const Tensor& t, Expr body) {
  auto op = std::make_shared<OperationNode>(*t.get());
  op->body = std::move(body);
  if (const auto* red = op->body.as<ir::ReduceNode>()) op->reduce_axis = red->axis;
  return Tensor(op);
}

std::vector<Tensor> post_dfs_order(const std::vector<Tensor>& outputs) {
  std::vector<Tensor> order;
  std::unordered_set<const OperationNode*> visited;
  std::function<void(const Tensor&)> visit = [&](const Tensor& t) {
    if (!visited.insert(t.get()).second) return;
    for (const Tensor& in : t->input_tensors()) visit(in);
    order.push_back(t);
  };
  for (const Tensor& t : outputs) visit(t);
  return order;
}

}  // namespace kiln::te
