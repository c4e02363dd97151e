#include "compiler/schedule/message_passing.h"

#include "compiler/ir/op.h"

namespace kiln::schedule {

void pass_down_domain(const StageNode* stage, DomMap* dom, ir::Analyzer* an) {
  for (const Relation& r : stage->relations) {
    if (r.kind == Relation::Split) {
      const ir::Range& p = dom->at(r.parent.get());
      Expr inner, outer;
      if (r.factor.defined()) {
        inner = r.factor;
        const int64_t* e = ir::as_const_int(p.extent);
        if (e && *e < *ir::as_const_int(r.factor)) inner = p.extent;
        outer = an->simplify(ir::ceil_div(p.extent, inner));
      } else {
        outer = r.nparts;
        inner = an->simplify(ir::ceil_div(p.extent, r.nparts));
      }
      (*dom)[r.outer.get()] = ir::Range(0, outer);
      (*dom)[r.inner.get()] = ir::Range(0, inner);
      an->bind(r.outer->var, dom->at(r.outer.get()));
      an->bind(r.inner->var, dom->at(r.inner.get()));
    } else {
      Expr ext = an->simplify(dom->at(r.outer.get()).extent * dom->at(r.inner.get()).extent);
      (*dom)[r.fused.get()] = ir::Range(0, ext);
      an->bind(r.fused->var, dom->at(r.fused.get()));
    }
  }
}

ir::Range loop_range(const DomMap& dom, const IterVar& leaf) { return ir::Range(0, dom.at(leaf.get()).extent); }

Expr leaf_value(const DomMap& dom, const IterVar& leaf, const Expr& loop_var) {
  const Expr& mn = dom.at(leaf.get()).min;
  return ir::is_const_int(mn, 0) ? loop_var : loop_var + mn;
}

ValueMap pass_up_values(const StageNode* stage, const DomMap& dom, ValueMap values) {
  for (const IterVar& leaf : stage->leaf_iter_vars) {
    if (!values.count(leaf.get())) values[leaf.get()] = leaf_value(dom, leaf, leaf->var);
  }
  for (auto it = stage->relations.rbegin(); it != stage->relations.rend(); ++it) {
    const Relation& r = *it;
    if (r.kind == Relation::Split) {
      Expr v = values.at(r.outer.get()) * dom.at(r.inner.get()).extent + values.at(r.inner.get());
      const ir::Range& p = dom.at(r.parent.get());
      if (!ir::is_const_int(p.min, 0)) v = v + p.min;
      values[r.parent.get()] = v;
    } else {
      Expr f = values.at(r.fused.get());
      Expr ei = dom.at(r.inner.get()).extent;
      Expr o = f / ei, i = f % ei;
      if (!ir::is_const_int(dom.at(r.outer.get()).min, 0)) o = o + dom.at(r.outer.get()).min;
      if (!ir::is_const_int(dom.at(r.inner.get()).min, 0)) i = i + dom.at(r.inner.get()).min;
      values[r.outer.get()] = o;
      values[r.inner.get()] = i;
    }
  }
  return values;
}

std::vector<Expr> split_predicates(const StageNode* stage, const DomMap& dom, const ValueMap& values, ir::Analyzer* an,
                                   bool only_data_par) {
  std::vector<Expr> preds;
  for (const Relation& r : stage->relations) {
    if (r.kind != Relation::Split) continue;
    if (only_data_par && r.parent->kind == ir::IterKind::Reduce) continue;
    const ir::Range& p = dom.at(r.parent.get());
    const ir::Range& in = dom.at(r.inner.get());
    const ir::Range& out = dom.at(r.outer.get());
    if (an->can_prove(out.extent * in.extent <= p.extent)) continue;
    Expr v = values.at(r.parent.get());
    preds.push_back(an->simplify(v < p.min + p.extent));
  }
  return preds;
}

std::unordered_set<const ir::IterVarNode*> descendant_leaves(const StageNode* stage, const IterVar& iv) {
  std::unordered_set<const ir::IterVarNode*> set{iv.get()};
  for (const Relation& r : stage->relations) {
    if (r.kind == Relation::Split && set.count(r.parent.get())) {
      set.insert(r.outer.get());
      set.insert(r.inner.get());
    } else if (r.kind == Relation::Fuse && (set.count(r.outer.get()) || set.count(r.inner.get()))) {
      set.insert(r.fused.get());
    }
  }
  std::unordered_set<const ir::IterVarNode*> leaves;
  for (const IterVar& l : stage->leaf_iter_vars) {
    if (set.count(l.get())) leaves.insert(l.get());
  }
  return leaves;
}

}  // namespace kiln::schedule
