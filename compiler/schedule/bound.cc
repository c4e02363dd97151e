#include "compiler/schedule/bound.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "compiler/ir/functor.h"
#include "compiler/ir/int_set.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln::schedule {

namespace {

using Access = std::vector<Expr>;

struct Graph {
  // consumer stage -> accesses it makes of each producer stage
  std::unordered_map<const StageNode*, std::vector<std::pair<const StageNode*, std::vector<Access>>>> reads_of;
  std::unordered_map<const StageNode*, std::vector<const StageNode*>> consumers;
};

Graph build_graph(const Schedule& s) {
  Graph g;
  for (const Stage& c : s->stages) {
    if (c->is_placeholder() || c->attach_type == AttachType::Inline) continue;
    std::vector<std::pair<const StageNode*, std::vector<Access>>> reads;
    ir::post_order_visit(c->op->body, [&](const ir::Node* n) {
      if (n->kind != ir::NodeKind::ProducerLoad) return;
      const auto* load = static_cast<const ir::ProducerLoadNode*>(n);
      Stage p = s.stage_of(static_cast<const te::OperationNode*>(load->producer.get()));
      if (!p.defined()) throw CompileError("stage '" + c->name() + "' reads '" + load->producer->producer_name() + "', which has no stage");
      auto it = std::find_if(reads.begin(), reads.end(), [&](const auto& r) { return r.first == p.get(); });
      if (it == reads.end()) {
        reads.push_back({p.get(), {}});
        it = reads.end() - 1;
        g.consumers[p.get()].push_back(c.get());
      }
      it->second.push_back(load->indices);
    });
    g.reads_of[c.get()] = std::move(reads);
  }
  return g;
}

size_t leaf_pos(const StageNode* s, const IterVar& iv) {
  return std::find(s->leaf_iter_vars.begin(), s->leaf_iter_vars.end(), iv) - s->leaf_iter_vars.begin();
}

std::string where(const StageNode* s) {
  auto d = s->attach_stage.lock();
  return "compute_at of stage '" + s->name() + "' at " + describe(s->attach_ivar, d.get());
}

// Every consumer of `s` must run inside the loop `s` is attached to.
void check_attach(const Schedule& sch, const StageNode* s, const Graph& g) {
  auto d = s->attach_stage.lock();
  if (!d) throw CompileError(where(s) + ": the target stage no longer exists");
  if (d->attach_type == AttachType::Inline) throw CompileError(where(s) + ": the target stage was inlined");
  size_t x = leaf_pos(d.get(), s->attach_ivar);
  if (x == d->leaf_iter_vars.size()) {
    throw CompileError(where(s) + ": the axis is no longer a loop of '" + d->name() + "' (it was split or fused afterwards)");
  }
  auto idx = [&](const StageNode* n) {
    for (size_t i = 0; i < sch->stages.size(); ++i) {
      if (sch->stages[i].get() == n) return i;
    }
    return sch->stages.size();
  };
  if (idx(d.get()) < idx(s)) throw CompileError(where(s) + ": '" + d->name() + "' is computed before '" + s->name() + "' (it is a producer)");
  auto it = g.consumers.find(s);
  if (it == g.consumers.end()) return;
  for (const StageNode* c : it->second) {
    // Walk up c's attach chain until it reaches d.
    const StageNode* cur = c;
    bool inside = false;
    while (cur) {
      if (cur == d.get()) {
        inside = true;
        break;
      }
      auto up = cur->attach_type == AttachType::Scope ? cur->attach_stage.lock() : nullptr;
      if (up.get() == d.get()) {
        inside = leaf_pos(d.get(), cur->attach_ivar) >= x;
        break;
      }
      cur = up.get();
    }
    if (!inside) {
      throw CompileError(where(s) + ": its consumer '" + c->name() + "' is not computed inside that loop, so the values would not exist where they are read");
    }
  }
}

}  // namespace

std::vector<IterVar> enclosing_leaves(const StageNode* stage) {
  if (stage->attach_type != AttachType::Scope) return {};
  auto d = stage->attach_stage.lock();
  std::vector<IterVar> out = enclosing_leaves(d.get());
  size_t x = leaf_pos(d.get(), stage->attach_ivar);
  out.insert(out.end(), d->leaf_iter_vars.begin(), d->leaf_iter_vars.begin() + x + 1);
  return out;
}

namespace {

using FixedSet = std::unordered_set<const ir::IterVarNode*>;

// What consumer `c` reads of `st` (one interval per dimension, unset if it reads
// nothing), for fixed values of the loops around `st`: c's other loops sweep their
// ranges, and so do the loops around c that are not around st.
void add_reads(const StageNode* st, const StageNode* c, const Graph& g, const FixedSet& fixed, Bounds* out,
               std::vector<std::optional<ir::IntSet>>* sets) {
  ir::Analyzer& an = out->analyzer;
  ir::IntSetMap relax;
  ir::VarMap values;
  ValueMap up = pass_up_values(c, out->dom, {});
  for (const IterVar& r : c->root_iter_vars()) {
    auto leaves = descendant_leaves(c, r);
    bool any_fixed = std::any_of(leaves.begin(), leaves.end(), [&](auto* l) { return fixed.count(l) != 0; });
    if (!any_fixed) {  // the whole axis sweeps: use its range directly, not its pieces
      relax[r->var.get()] = ir::IntSet::from_range(out->dom.at(r.get()));
      continue;
    }
    values[r->var.get()] = up.at(r.get());
    for (const IterVar& l : c->leaf_iter_vars) {
      if (leaves.count(l.get()) && !fixed.count(l.get())) relax[l->var.get()] = ir::IntSet::from_range(loop_range(out->dom, l));
    }
  }
  ir::IntSetMap outer;
  for (const IterVar& l : enclosing_leaves(c)) {
    if (!fixed.count(l.get())) outer[l->var.get()] = ir::IntSet::from_range(loop_range(out->dom, l));
  }
  auto uses_outer = [&](const Expr& e) { return ir::uses_var(e, [&](const ir::VarNode* v) { return outer.count(v) != 0; }); };
  for (const auto& [p, accesses] : g.reads_of.at(c)) {
    if (p != st) continue;
    for (const Access& acc : accesses) {
      for (size_t d = 0; d < acc.size(); ++d) {
        ir::IntSet set = ir::eval_int_set(ir::substitute(acc[d], values), relax, &an);
        // c's own range may be expressed in loops around c: sweep those too
        for (int round = 0; round < 8 && set.bounded() && (uses_outer(set.min) || uses_outer(set.max)); ++round) {
          set = {ir::eval_int_set(set.min, outer, &an).min, ir::eval_int_set(set.max, outer, &an).max};
        }
        auto& slot = (*sets)[d];
        slot = slot ? ir::union_int_set(*slot, set, &an) : set;
      }
    }
  }
}

// The region of `st` to realize: its domain for an output, else what its consumers
// read, clamped to the domain where that cannot be proven to hold.
std::vector<ir::Range> needed_region(const StageNode* st, const Graph& g, Bounds* out) {
  std::vector<ir::Range> region;
  for (const IterVar& ax : st->op->axis) region.push_back(ax->dom);
  if (st->is_output) return region;
  // A "shared" stage inside a GPU kernel serves every thread of the block: the loops
  // around it that are bound to threadIdx sweep their ranges (as TVM's bound inference).
  std::unordered_set<const ir::IterVarNode*> threads;
  if (st->scope == "shared") {
    for (auto d = st->attach_stage.lock(); d; d = d->attach_stage.lock()) {
      for (const auto& [iv, a] : d->iter_attrs)
        if (a.kind == ir::ForKind::ThreadBinding && a.thread_tag.rfind("threadIdx.", 0) == 0) threads.insert(iv);
      if (d->attach_type != AttachType::Scope) break;
    }
  }
  FixedSet fixed;
  for (const IterVar& iv : enclosing_leaves(st))
    if (!threads.count(iv.get())) fixed.insert(iv.get());
  std::vector<std::optional<ir::IntSet>> sets(region.size());
  for (const StageNode* c : g.consumers.at(st)) {
    if (out->live[c]) add_reads(st, c, g, fixed, out, &sets);
  }
  ir::Analyzer& an = out->analyzer;
  // A register tile (a "local" stage computed at a loop, not tensorized) may reach past
  // its domain where that makes its extent constant.
  bool overreaches = st->attach_type == AttachType::Scope && st->scope == "local" &&
                     std::none_of(st->iter_attrs.begin(), st->iter_attrs.end(), [](const auto& a) { return a.second.tensorize; });
  for (size_t d = 0; d < region.size(); ++d) {
    if (!sets[d] || !sets[d]->bounded()) continue;
    const ir::Range& dom = st->op->axis[d]->dom;
    Expr dmax = an.simplify(dom.min + dom.extent - 1);
    Expr lo = sets[d]->min, hi = sets[d]->max;
    Expr lo_in = lo, hi_in = hi;
    if (!an.can_prove(lo >= dom.min)) lo_in = an.simplify(ir::max(lo, dom.min));
    if (!an.can_prove(hi <= dmax)) hi_in = an.simplify(ir::min(hi, dmax));
    region[d] = ir::Range(lo_in, an.simplify(hi_in - lo_in + 1));
    if (lo_in.same_as(lo) && hi_in.same_as(hi)) continue;
    // Clamped, the extent varies with the enclosing loops; unclamped it may be the
    // split's constant: then keep it, and guard the computation by the domain.
    Expr extent = an.simplify(hi - lo + 1);
    if (!overreaches || ir::as_const_int(region[d].extent) || !ir::as_const_int(extent)) continue;
    region[d] = ir::Range(lo, extent);
    const ir::Var& v = st->op->axis[d]->var;
    std::vector<Expr>& conds = out->within_domain[st];
    if (!lo_in.same_as(lo)) conds.push_back(v >= dom.min);
    if (!hi_in.same_as(hi)) conds.push_back(v <= dmax);
  }
  if (st->attach_type != AttachType::Scope) return region;
  for (size_t d = 0; d < region.size(); ++d) {
    if (an.const_bound(region[d].extent).max == ir::ConstBound::kPosInf) {
      throw CompileError(where(st) + ": the region of '" + st->name() + "' needed inside that loop has no constant bound in dimension " +
                         std::to_string(d) + " (extent " + ir::to_string(region[d].extent) + ")");
    }
  }
  return region;
}

}  // namespace

void infer_bound(const Schedule& s, Bounds* out) {
  Graph g = build_graph(s);
  ir::Analyzer& an = out->analyzer;
  // Liveness, consumers first.
  for (auto it = s->stages.rbegin(); it != s->stages.rend(); ++it) {
    const StageNode* st = it->get();
    bool live = st->is_output;
    for (const StageNode* c : g.consumers[st]) live = live || out->live[c];
    out->live[st] = live && st->attach_type != AttachType::Inline;
  }
  for (const Stage& st : s->stages) {
    if (out->live[st.get()] && st->attach_type == AttachType::Scope) check_attach(s, st.get(), g);
  }
  for (auto it = s->stages.rbegin(); it != s->stages.rend(); ++it) {
    const StageNode* st = it->get();
    if (!out->live[st] || st->is_placeholder()) continue;
    std::vector<ir::Range> region = needed_region(st, g, out);
    out->region[st] = region;
    for (size_t d = 0; d < region.size(); ++d) {
      out->dom[st->op->axis[d].get()] = region[d];
      an.bind(st->op->axis[d]->var, region[d]);
    }
    for (const IterVar& r : st->op->reduce_axis) {
      out->dom[r.get()] = r->dom;
      an.bind(r->var, r->dom);
    }
    pass_down_domain(st, &out->dom, &an);
    for (const IterVar& l : st->leaf_iter_vars) an.bind(l->var, loop_range(out->dom, l));
  }
}

}  // namespace kiln::schedule
