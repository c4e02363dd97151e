#include "compiler/schedule/tensorize.h"

#include "compiler/ir/int_set.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/structural.h"
#include "compiler/support/error.h"

namespace kiln::schedule {

std::vector<Expr> BufferRegion::index(const std::vector<Expr>& local) const {
  std::vector<Expr> idx = base;
  size_t off = base.size() - local.size();
  for (size_t d = 0; d < local.size(); ++d) idx[off + d] = ir::simplify(base[off + d] + local[d]);
  return idx;
}

Expr BufferRegion::load(const std::vector<Expr>& local) const { return ir::make_buffer_load(buffer, index(local)); }

ir::Stmt BufferRegion::store(Expr value, const std::vector<Expr>& local) const {
  return ir::make_buffer_store(buffer, std::move(value), index(local));
}

std::shared_ptr<const TensorIntrin> decl_tensor_intrin(
    std::string name, te::Tensor compute,
    std::function<IntrinImpl(const std::vector<BufferRegion>& inputs, const BufferRegion& output)> impl) {
  if (!compute.defined() || compute->is_placeholder()) throw CompileError("tensor intrinsic '" + name + "': the pattern must be a compute");
  for (const te::Tensor& in : compute->input_tensors()) {
    if (!in->is_placeholder()) {
      throw CompileError("tensor intrinsic '" + name + "': input '" + in->name + "' of the pattern must be a placeholder");
    }
  }
  return std::make_shared<TensorIntrin>(TensorIntrin{std::move(name), std::move(compute), std::move(impl)});
}

namespace {

class Matcher {
 public:
  Matcher(std::string where, ir::Analyzer* an, std::unordered_set<const ir::VarNode*> intrin_vars)
      : where_(std::move(where)), an_(an), intrin_vars_(std::move(intrin_vars)) {}

  // Stage tensors bound to each intrinsic input, and the base index of each access.
  std::unordered_map<const ir::DataProducer*, const ir::DataProducer*> tensor_map;
  std::unordered_map<const ir::DataProducer*, std::vector<Expr>> base;

  void match(const Expr& s, const Expr& i, const Expr& whole_s, const Expr& whole_i) {
    if (const auto* pi = i.as<ir::ProducerLoadNode>()) {
      const auto* ps = s.as<ir::ProducerLoadNode>();
      if (!ps) mismatch(whole_s, whole_i, s, i);
      return match_load(ps, pi, whole_s, whole_i);
    }
    if (s.kind() != i.kind() || s.dtype() != i.dtype()) mismatch(whole_s, whole_i, s, i);
    switch (s.kind()) {
      case ir::NodeKind::IntImm:
      case ir::NodeKind::FloatImm:
      case ir::NodeKind::Var:
        if (!ir::structural_equal(s, i)) mismatch(whole_s, whole_i, s, i);
        return;
#define KILN_BIN(N)                                                     \
  case ir::NodeKind::N: {                                               \
    auto *a = s.as<ir::N##Node>(), *b = i.as<ir::N##Node>();            \
    match(a->a, b->a, whole_s, whole_i);                                \
    match(a->b, b->b, whole_s, whole_i);                                \
    return;                                                             \
  }
        KILN_BIN(Add) KILN_BIN(Sub) KILN_BIN(Mul) KILN_BIN(Div) KILN_BIN(Mod) KILN_BIN(Min) KILN_BIN(Max)
        KILN_BIN(EQ) KILN_BIN(NE) KILN_BIN(LT) KILN_BIN(LE) KILN_BIN(GT) KILN_BIN(GE) KILN_BIN(And) KILN_BIN(Or)
#undef KILN_BIN
      case ir::NodeKind::Cast: return match(s.as<ir::CastNode>()->value, i.as<ir::CastNode>()->value, whole_s, whole_i);
      case ir::NodeKind::Not: return match(s.as<ir::NotNode>()->a, i.as<ir::NotNode>()->a, whole_s, whole_i);
      case ir::NodeKind::Select: {
        auto *a = s.as<ir::SelectNode>(), *b = i.as<ir::SelectNode>();
        match(a->cond, b->cond, whole_s, whole_i);
        match(a->true_value, b->true_value, whole_s, whole_i);
        return match(a->false_value, b->false_value, whole_s, whole_i);
      }
      case ir::NodeKind::Call: {
        auto *a = s.as<ir::CallNode>(), *b = i.as<ir::CallNode>();
        if (a->name != b->name || a->args.size() != b->args.size()) mismatch(whole_s, whole_i, s, i);
        for (size_t k = 0; k < a->args.size(); ++k) match(a->args[k], b->args[k], whole_s, whole_i);
        return;
      }
      default: mismatch(whole_s, whole_i, s, i);
    }
  }

 private:
  void match_load(const ir::ProducerLoadNode* s, const ir::ProducerLoadNode* i, const Expr& ws, const Expr& wi) {
    auto [it, fresh] = tensor_map.emplace(i->producer.get(), s->producer.get());
    if (!fresh && it->second != s->producer.get()) {
      throw CompileError(where_ + ": intrinsic input '" + i->producer->producer_name() + "' would be both '" + it->second->producer_name() +
                         "' and '" + s->producer->producer_name() + "'");
    }
    if (s->indices.size() < i->indices.size()) {
      throw CompileError(where_ + ": tensor '" + s->producer->producer_name() + "' has fewer dimensions than intrinsic input '" +
                         i->producer->producer_name() + "'");
    }
    size_t off = s->indices.size() - i->indices.size();
    std::vector<Expr> b;
    for (size_t d = 0; d < s->indices.size(); ++d) {
      Expr diff = d < off ? s->indices[d] : an_->simplify(s->indices[d] - i->indices[d - off]);
      if (ir::uses_var(diff, [&](const ir::VarNode* v) { return intrin_vars_.count(v) != 0; })) {
        throw CompileError(where_ + ": the access " + ir::to_string(Expr(std::make_shared<ir::ProducerLoadNode>(*s))) +
                           " does not move with the intrinsic's access " + ir::to_string(Expr(std::make_shared<ir::ProducerLoadNode>(*i))) +
                           " in dimension " + std::to_string(d));
      }
      b.push_back(diff);
    }
    auto [bt, first] = base.emplace(i->producer.get(), b);
    if (!first) {
      for (size_t d = 0; d < b.size(); ++d) {
        if (!an_->can_prove_equal(bt->second[d], b[d])) {
          throw CompileError(where_ + ": intrinsic input '" + i->producer->producer_name() + "' is read at two different offsets");
        }
      }
    }
    (void)ws;
    (void)wi;
  }

  [[noreturn]] void mismatch(const Expr& ws, const Expr& wi, const Expr& s, const Expr& i) {
    throw CompileError(where_ + ": the stage computes " + ir::to_string(ws) + " but the intrinsic computes " + ir::to_string(wi) +
                       " (they differ at " + ir::to_string(s) + " versus " + ir::to_string(i) + ")");
  }

  std::string where_;
  ir::Analyzer* an_;
  std::unordered_set<const ir::VarNode*> intrin_vars_;
};

}  // namespace

ir::Stmt make_tensorized_body(const StageNode* stage, size_t pos, const DomMap& dom, ir::Analyzer* an,
                              const std::function<ir::Buffer(const ir::DataProducer*)>& buffer_of, const ir::Buffer& output) {
  const auto& leaves = stage->leaf_iter_vars;
  const TensorIntrin& intrin = *stage->iter_attrs.at(leaves[pos].get()).tensorize;
  std::string where = "tensorize of stage '" + stage->name() + "' at axis '" + leaves[pos]->var.name() + "' with intrinsic '" + intrin.name + "'";
  const te::OperationNode* iop = intrin.compute.get();

  // Root values split into a part fixed by the outer loops and a part swept inside.
  ValueMap values = pass_up_values(stage, dom, {});
  ir::VarMap inner_zero;
  ir::IntSetMap inner_sets;
  for (size_t q = pos; q < leaves.size(); ++q) {
    inner_zero[leaves[q]->var.get()] = ir::make_int(0, leaves[q]->var.dtype());
    inner_sets[leaves[q]->var.get()] = ir::IntSet::from_range(loop_range(dom, leaves[q]));
  }
  auto split_root = [&](const IterVar& r, Expr* base, int64_t* extent) {
    Expr v = an->simplify(values.at(r.get()));
    *base = an->simplify(ir::substitute(v, inner_zero));
    ir::IntSet set = ir::eval_int_set(an->simplify(v - *base), inner_sets, an);
    const int64_t* lo = set.bounded() ? ir::as_const_int(set.min) : nullptr;
    const int64_t* hi = set.bounded() ? ir::as_const_int(set.max) : nullptr;
    if (!lo || !hi || *lo != 0) {
      throw CompileError(where + ": axis '" + r->var.name() + "' does not map to a constant block inside the tensorized loops");
    }
    *extent = *hi + 1;
  };
  int64_t inner_points = 1;
  for (size_t q = pos; q < leaves.size(); ++q) {
    const int64_t* e = ir::as_const_int(an->simplify(dom.at(leaves[q].get()).extent));
    if (!e) throw CompileError(where + ": loop '" + leaves[q]->var.name() + "' has no constant extent");
    inner_points *= *e;
  }

  // Pair the stage's trailing axes with the intrinsic's axes.
  ir::VarMap to_intrin;
  std::unordered_set<const ir::VarNode*> intrin_vars;
  std::vector<Expr> out_base;
  int64_t block_points = 1;
  auto pair_axes = [&](const std::vector<IterVar>& mine, const std::vector<IterVar>& theirs, const char* what) {
    if (mine.size() < theirs.size()) {
      throw CompileError(where + ": the stage has " + std::to_string(mine.size()) + " " + what + " axes, the intrinsic " +
                         std::to_string(theirs.size()));
    }
    size_t off = mine.size() - theirs.size();
    for (size_t d = 0; d < mine.size(); ++d) {
      Expr base;
      int64_t ext = 0;
      split_root(mine[d], &base, &ext);
      block_points *= ext;
      if (what[0] == 'd') out_base.push_back(base);
      if (d < off) {
        if (ext != 1) {
          throw CompileError(where + ": axis '" + mine[d]->var.name() + "' sweeps " + std::to_string(ext) +
                             " values inside the tensorized loops but has no counterpart in the intrinsic");
        }
        to_intrin[mine[d]->var.get()] = base;
        continue;
      }
      const IterVar& t = theirs[d - off];
      const int64_t* te = ir::as_const_int(ir::simplify(t->dom.extent));
      if (!te || *te != ext) {
        throw CompileError(where + ": axis '" + mine[d]->var.name() + "' covers " + std::to_string(ext) +
                           " values inside the tensorized loops but the intrinsic's axis '" + t->var.name() + "' covers " +
                           (te ? std::to_string(*te) : ir::to_string(t->dom.extent)));
      }
      to_intrin[mine[d]->var.get()] = an->simplify(base + t->var);
      intrin_vars.insert(t->var.get());
    }
  };
  pair_axes(stage->op->axis, iop->axis, "data-parallel");
  pair_axes(stage->op->reduce_axis, iop->reduce_axis, "reduction");
  if (block_points != inner_points) {
    throw CompileError(where + ": the tensorized loops do not sweep one block of the output exactly once");
  }
  for (const IterVar& t : iop->axis) an->bind(t->var, t->dom);
  for (const IterVar& t : iop->reduce_axis) an->bind(t->var, t->dom);

  // Compare the bodies.
  Matcher m(where, an, intrin_vars);
  const auto* sred = stage->op->body.as<ir::ReduceNode>();
  const auto* ired = iop->body.as<ir::ReduceNode>();
  if ((sred == nullptr) != (ired == nullptr)) {
    throw CompileError(where + std::string(": the ") + (sred ? "stage is a reduction and the intrinsic is not" : "intrinsic is a reduction and the stage is not"));
  }
  if (sred && sred->combiner != ired->combiner) {
    throw CompileError(where + ": the stage reduces with " + ir::combiner_name(sred->combiner) + ", the intrinsic with " +
                       ir::combiner_name(ired->combiner));
  }
  Expr s_expr = an->simplify(ir::substitute(sred ? sred->source : stage->op->body, to_intrin));
  Expr i_expr = an->simplify(ired ? ired->source : iop->body);
  m.match(s_expr, i_expr, s_expr, i_expr);
  if (sred) {
    Expr sc = an->simplify(ir::substitute(sred->condition, to_intrin)), ic = an->simplify(ired->condition);
    if (!ir::is_const_int(sc, 1) || !ir::is_const_int(ic, 1)) m.match(sc, ic, sc, ic);
  }

  // Regions handed to the implementation.
  std::vector<BufferRegion> inputs;
  for (const te::Tensor& in : iop->input_tensors()) {
    auto it = m.tensor_map.find(in.get());
    if (it == m.tensor_map.end()) throw CompileError(where + ": intrinsic input '" + in->name + "' is not read");
    inputs.push_back({buffer_of(it->second), m.base.at(in.get()), in->shape});
  }
  BufferRegion out{output, out_base, iop->shape};
  IntrinImpl impl = intrin.impl(inputs, out);

  // Reductions whose loops are partly outside the tensorized block.
  std::vector<IterVar> outer_reduce;
  for (size_t q = 0; q < pos; ++q) {
    if (leaves[q]->kind == ir::IterKind::Reduce) outer_reduce.push_back(leaves[q]);
  }
  ir::Stmt body;
  if (outer_reduce.empty()) {
    body = impl.body;
    if (!body.defined()) throw CompileError(where + ": the intrinsic has no body");
  } else {
    if (!impl.reduce_init.defined() || !impl.reduce_update.defined()) {
      throw CompileError(where + ": reduction axis '" + outer_reduce[0]->var.name() +
                         "' is outside the tensorized loops and the intrinsic has no reduce_init/reduce_update");
    }
    Expr first = ir::make_bool(true);
    for (const IterVar& r : outer_reduce) first = first && ir::eq(r->var, 0);
    body = ir::make_seq({ir::make_if(first, impl.reduce_init), impl.reduce_update});
  }
  // Tails are not allowed inside the block; outside it they guard the whole block.
  std::vector<Expr> preds = split_predicates(stage, dom, values, an);
  for (const Expr& p : preds) {
    bool inner = ir::uses_var(p, [&](const ir::VarNode* v) { return inner_zero.count(v) != 0; });
    if (inner) throw CompileError(where + ": a split inside the tensorized loops does not divide evenly (" + ir::to_string(p) + ")");
    body = ir::make_if(ir::likely(p), body);
  }
  return body;
}

}  // namespace kiln::schedule
