#include "compiler/schedule/schedule_ops.h"

#include <algorithm>

#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/schedule/tensorize.h"
#include "compiler/support/error.h"

namespace kiln::schedule {

namespace {

using ir::Stmt;

class OpsBuilder {
 public:
  OpsBuilder(const Schedule& s, Bounds* b) : s_(s), b_(b), an_(b->analyzer) {
    for (const Stage& st : s->stages) {
      if (!b->live[st.get()]) continue;
      std::string scope = st->is_placeholder() ? "global" : st->scope;
      buffers_[st.get()] = ir::Buffer(st->name(), st->op->dtype, st->op->shape, scope);
    }
  }

  ScheduledBody build() {
    Stmt body;
    for (auto it = s_->stages.rbegin(); it != s_->stages.rend(); ++it) {
      const StageNode* st = it->get();
      if (!b_->live[st] || st->is_placeholder() || st->attach_type != AttachType::Root) continue;
      body = st->is_output ? ir::make_seq({make_pipeline(st), body}) : realize(st, body);
    }
    if (!body.defined()) body = ir::make_no_op();
    return {body, buffers_};
  }

 private:
  ir::Buffer buffer_of(const ir::DataProducer* p) {
    Stage st = s_.stage_of(static_cast<const te::OperationNode*>(p));
    return buffers_.at(st.get());
  }

  // Producer loads become buffer loads; root axes become their values.
  Expr lower_expr(const Expr& e, const ir::VarMap& values) {
    class Rewriter : public ir::IRMutator {
     public:
      Rewriter(OpsBuilder* self, const ir::VarMap& v) : self_(self), v_(v) {}
      using IRMutator::mutate;

     protected:
      Expr mutate_(const ir::VarNode* op, const Expr& e) override {
        auto it = v_.find(op);
        return it == v_.end() ? e : it->second;
      }
      Expr mutate_(const ir::ProducerLoadNode* op, const Expr& e) override {
        std::vector<Expr> idx;
        mutate_all(op->indices, &idx);
        (void)e;
        return ir::make_buffer_load(self_->buffer_of(op->producer.get()), idx);
      }

     private:
      OpsBuilder* self_;
      const ir::VarMap& v_;
    };
    return an_.simplify(Rewriter(this, values).mutate(e));
  }

  Stmt realize(const StageNode* st, Stmt rest) {
    const ir::Buffer& buf = buffers_.at(st);
    Stmt inner = ir::make_seq({make_pipeline(st), rest});
    if (st->double_buffer) inner = ir::make_attr("double_buffer_scope", buf->data, 1, inner);
    return ir::make_realize(buf, b_->region.at(st), inner);
  }

  Stmt attachments(const StageNode* st, const IterVar& leaf, Stmt rest) {
    for (auto it = s_->stages.rbegin(); it != s_->stages.rend(); ++it) {
      const StageNode* p = it->get();
      if (!b_->live[p] || p->attach_type != AttachType::Scope) continue;
      if (p->attach_stage.lock().get() != st || !(p->attach_ivar == leaf)) continue;
      rest = realize(p, rest);
    }
    return rest;
  }

  Stmt make_loop(const StageNode* st, const IterVar& leaf, Stmt body) {
    const ir::Range& r = b_->dom.at(leaf.get());
    ir::ForKind kind = ir::ForKind::Serial;
    std::string tag;
    const IterAttr* attr = nullptr;
    if (auto it = st->iter_attrs.find(leaf.get()); it != st->iter_attrs.end()) {
      attr = &it->second;
      kind = attr->kind;
      tag = attr->thread_tag;
    }
    if (kind == ir::ForKind::Vectorized || kind == ir::ForKind::Unrolled) {
      if (!ir::as_const_int(an_.simplify(r.extent))) {
        throw CompileError("schedule error in stage '" + st->name() + "': " +
                           std::string(kind == ir::ForKind::Vectorized ? "vectorize" : "unroll") + " of axis '" +
                           leaf->var.name() + "': the loop extent " + ir::to_string(r.extent) + " is not a constant");
      }
    }
    Stmt loop = ir::make_for(leaf->var, ir::make_int(0, leaf->var.dtype()), r.extent, kind, body, tag);
    if (attr) {
      for (auto it = attr->pragmas.rbegin(); it != attr->pragmas.rend(); ++it) {
        // A value naming a tensor element (a prefetch) reads its buffer, as the body does.
        loop = ir::make_attr("pragma_" + it->first, leaf->var, lower_expr(it->second, {}), loop);
      }
    }
    return loop;
  }

  static Stmt guard(Stmt body, const std::vector<Expr>& preds) {
    for (auto it = preds.rbegin(); it != preds.rend(); ++it) body = ir::make_if(ir::likely(*it), body);
    return body;
  }

  // The loop nest of one stage, with the stages computed at its loops inside them.
  Stmt make_pipeline(const StageNode* st) {
    const auto& leaves = st->leaf_iter_vars;
    size_t n = leaves.size();       // loops to emit (those outside a tensorized block)
    size_t reduce_pos = n;          // the first reduction loop: the init goes before it
    Stmt body;
    if (size_t t = tensorize_position(st); t < n) {
      body = tensorized_body(st, t);
      n = t;
    } else {
      body = element_body(st);
      if (st->op->body.as<ir::ReduceNode>()) {
        reduce_pos = static_cast<size_t>(std::find_if(leaves.begin(), leaves.end(), [](const IterVar& l) {
                                            return l->kind == ir::IterKind::Reduce;
                                          }) - leaves.begin());
      }
    }
    for (size_t q = n; q-- > 0;) {
      body = attachments(st, leaves[q], body);
      body = make_loop(st, leaves[q], body);
      if (q == reduce_pos) body = ir::make_seq({make_init(st, reduce_pos), body});
    }
    return body;
  }

  static size_t tensorize_position(const StageNode* st) {
    const auto& leaves = st->leaf_iter_vars;
    for (size_t q = 0; q < leaves.size(); ++q) {
      auto it = st->iter_attrs.find(leaves[q].get());
      if (it != st->iter_attrs.end() && it->second.tensorize) return q;
    }
    return leaves.size();
  }

  Stmt tensorized_body(const StageNode* st, size_t pos) {
    const auto& leaves = st->leaf_iter_vars;
    for (size_t q = pos; q < leaves.size(); ++q) {
      for (const StageNode* p : attached_at(st, leaves[q])) {
        throw CompileError("tensorize of stage '" + st->name() + "' at axis '" + leaves[pos]->var.name() + "': stage '" + p->name() +
                           "' is computed inside the tensorized loops (at '" + leaves[q]->var.name() + "')");
      }
    }
    return make_tensorized_body(st, pos, b_->dom, &an_, [this](const ir::DataProducer* p) { return buffer_of(p); },
                                buffers_.at(st));
  }

  // The store of one element (or one reduction step), guarded by the tail checks.
  Stmt element_body(const StageNode* st) {
    const te::OperationNode* op = st->op.get();
    const ir::Buffer& buf = buffers_.at(st);
    ValueMap values = pass_up_values(st, b_->dom, {});
    ir::VarMap root_values;
    for (const IterVar& r : st->root_iter_vars()) root_values[r->var.get()] = an_.simplify(values.at(r.get()));
    std::vector<Expr> out_idx;
    for (const IterVar& a : op->axis) out_idx.push_back(root_values.at(a->var.get()));
    Stmt body;
    if (const auto* red = op->body.as<ir::ReduceNode>()) {
      Expr current = ir::make_buffer_load(buf, out_idx);
      Expr source = lower_expr(red->source, root_values);
      Expr value;
      switch (red->combiner) {
        case ir::Combiner::Sum: value = current + source; break;
        case ir::Combiner::Max: value = ir::max(current, source); break;
        case ir::Combiner::Min: value = ir::min(current, source); break;
        case ir::Combiner::Prod: value = current * source; break;
      }
      body = ir::make_buffer_store(buf, value, out_idx);
      Expr cond = lower_expr(red->condition, root_values);
      if (!ir::is_const_int(cond, 1)) body = ir::make_if(cond, body);
    } else {
      body = ir::make_buffer_store(buf, lower_expr(op->body, root_values), out_idx);
    }
    std::vector<Expr> preds = split_predicates(st, b_->dom, values, &an_);
    if (auto it = b_->within_domain.find(st); it != b_->within_domain.end()) {
      for (const Expr& c : it->second) preds.push_back(lower_expr(c, root_values));
    }
    return guard(body, preds);
  }

  std::vector<const StageNode*> attached_at(const StageNode* st, const IterVar& leaf) {
    std::vector<const StageNode*> out;
    for (const Stage& p : s_->stages) {
      if (b_->live[p.get()] && p->attach_type == AttachType::Scope && p->attach_stage.lock().get() == st && p->attach_ivar == leaf) {
        out.push_back(p.get());
      }
    }
    return out;
  }

  // The reduction's identity stored over the data-parallel loops inside `pos`.
  Stmt make_init(const StageNode* st, size_t pos) {
    const auto& leaves = st->leaf_iter_vars;
    const auto* red = st->op->body.as<ir::ReduceNode>();
    ValueMap leaf_values;
    std::vector<std::pair<IterVar, ir::Var>> loops;
    for (size_t q = pos + 1; q < leaves.size(); ++q) {
      if (leaves[q]->kind == ir::IterKind::Reduce) continue;
      ir::Var v(leaves[q]->var.name() + ".init");
      leaf_values[leaves[q].get()] = leaf_value(b_->dom, leaves[q], v);
      loops.emplace_back(leaves[q], v);
    }
    ValueMap values = pass_up_values(st, b_->dom, leaf_values);
    std::vector<Expr> idx;
    for (const IterVar& a : st->op->axis) idx.push_back(an_.simplify(values.at(a.get())));
    Stmt init = ir::make_buffer_store(buffers_.at(st), ir::reduce_identity(red->combiner, red->dtype), idx);
    init = guard(init, split_predicates(st, b_->dom, values, &an_, true));
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
      const ir::Range& r = b_->dom.at(it->first.get());
      ir::ForKind kind = ir::ForKind::Serial;
      std::string tag;
      if (auto a = st->iter_attrs.find(it->first.get()); a != st->iter_attrs.end()) {
        kind = a->second.kind;
        tag = a->second.thread_tag;
      }
      init = ir::make_for(it->second, ir::make_int(0, it->second.dtype()), r.extent, kind, init, tag);
    }
    return init;
  }

  const Schedule& s_;
  Bounds* b_;
  ir::Analyzer& an_;
  std::unordered_map<const StageNode*, ir::Buffer> buffers_;
};

}  // namespace

ScheduledBody schedule_ops(const Schedule& s, Bounds* bounds) { return OpsBuilder(s, bounds).build(); }

}  // namespace kiln::schedule
