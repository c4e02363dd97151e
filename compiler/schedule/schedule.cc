#include "compiler/schedule/schedule.h"

#include <algorithm>
#include <unordered_set>

#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"
#include "compiler/support/error.h"

namespace kiln::schedule {

std::string describe(const IterVar& iv, const StageNode* stage) {
  std::string s = "axis '" + (iv.defined() ? iv->var.name() : std::string("(undefined)")) + "'";
  if (stage) s += " of stage '" + stage->name() + "'";
  return s;
}

namespace {

[[noreturn]] void fail(const StageNode* stage, const std::string& primitive, const IterVar& iv, const std::string& reason) {
  std::string msg = "schedule error in stage '" + stage->name() + "': " + primitive;
  if (iv.defined()) msg += " of axis '" + iv->var.name() + "'";
  throw CompileError(msg + ": " + reason);
}

bool contains(const std::vector<IterVar>& v, const IterVar& iv) { return std::find(v.begin(), v.end(), iv) != v.end(); }

IterVar derived(const IterVar& from, const std::string& suffix, Range dom = Range()) {
  return IterVar(ir::Var(from->var.name() + suffix), dom, from->kind);
}

// Replaces loads of every op of `target` by `f(indices)` in an op body.
class ReplaceLoads : public ir::IRMutator {
 public:
  ReplaceLoads(const ScheduleNode* s, const StageNode* target, std::function<Expr(const std::vector<Expr>&)> f)
      : s_(s), target_(target), f_(std::move(f)) {}
  using IRMutator::mutate;
  bool replaced = false;

 protected:
  Expr mutate_(const ir::ProducerLoadNode* op, const Expr& self) override {
    Expr e = IRMutator::mutate_(op, self);
    const auto* load = e.as<ir::ProducerLoadNode>();
    auto it = s_->stage_map.find(static_cast<const te::OperationNode*>(load->producer.get()));
    if (it == s_->stage_map.end() || it->second.get() != target_) return e;
    replaced = true;
    return f_(load->indices);
  }

 private:
  const ScheduleNode* s_;
  const StageNode* target_;
  std::function<Expr(const std::vector<Expr>&)> f_;
};

// Installs `op` as the stage's operation, keeping the old one mapped to the stage.
void install_op(ScheduleNode* s, const Stage& stage, const Tensor& op) {
  stage->op = op;
  s->stage_map[op.get()] = stage;
}

}  // namespace

std::vector<IterVar> StageNode::root_iter_vars() const {
  std::vector<IterVar> roots = op->axis;
  roots.insert(roots.end(), op->reduce_axis.begin(), op->reduce_axis.end());
  return roots;
}

// ---------------------------------------------------------------- checks

void Stage::check_schedulable(const char* primitive) const {
  if (node_->is_placeholder()) fail(node_.get(), primitive, IterVar(), "a placeholder has no loops to schedule");
  if (node_->attach_type == AttachType::Inline) fail(node_.get(), primitive, IterVar(), "the stage was inlined");
}

void Stage::check_leaf(const IterVar& iv, const char* primitive) const {
  check_schedulable(primitive);
  if (!iv.defined()) fail(node_.get(), primitive, iv, "the axis is undefined");
  if (contains(node_->leaf_iter_vars, iv)) return;
  if (contains(node_->all_iter_vars, iv)) {
    fail(node_.get(), primitive, iv, "the axis was already split or fused; schedule the axes that replaced it");
  }
  if (node_->schedule) {
    for (const Stage& other : node_->schedule->stages) {
      if (contains(other->all_iter_vars, iv)) {
        fail(node_.get(), primitive, iv, "the axis belongs to stage '" + other->name() + "', not to this stage");
      }
    }
  }
  fail(node_.get(), primitive, iv, "the axis is not an axis of this stage");
}

size_t Stage::leaf_position(const IterVar& iv) const {
  return std::find(node_->leaf_iter_vars.begin(), node_->leaf_iter_vars.end(), iv) - node_->leaf_iter_vars.begin();
}

IterAttr& Stage::attr(const IterVar& iv) { return node_->iter_attrs[iv.get()]; }

// ---------------------------------------------------------------- loop transformations

std::pair<IterVar, IterVar> Stage::split(const IterVar& parent, int factor) {
  check_leaf(parent, "split");
  if (factor <= 0) fail(node_.get(), "split", parent, "the factor must be positive, not " + std::to_string(factor));
  IterVar outer = derived(parent, ".outer"), inner = derived(parent, ".inner");
  node_->relations.push_back({Relation::Split, parent, outer, inner, IterVar(), Expr(factor), Expr()});
  node_->all_iter_vars.push_back(outer);
  node_->all_iter_vars.push_back(inner);
  auto& leaves = node_->leaf_iter_vars;
  auto pos = leaves.erase(leaves.begin() + leaf_position(parent));
  leaves.insert(pos, {outer, inner});
  return {outer, inner};
}

std::pair<IterVar, IterVar> Stage::split_nparts(const IterVar& parent, int nparts) {
  check_leaf(parent, "split");
  if (nparts <= 0) fail(node_.get(), "split", parent, "the number of parts must be positive, not " + std::to_string(nparts));
  IterVar outer = derived(parent, ".outer"), inner = derived(parent, ".inner");
  node_->relations.push_back({Relation::Split, parent, outer, inner, IterVar(), Expr(), Expr(nparts)});
  node_->all_iter_vars.push_back(outer);
  node_->all_iter_vars.push_back(inner);
  auto& leaves = node_->leaf_iter_vars;
  auto pos = leaves.erase(leaves.begin() + leaf_position(parent));
  leaves.insert(pos, {outer, inner});
  return {outer, inner};
}

std::vector<IterVar> Stage::tile(const IterVar& x, const IterVar& y, int x_factor, int y_factor) {
  auto [xo, xi] = split(x, x_factor);
  auto [yo, yi] = split(y, y_factor);
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

IterVar Stage::fuse(const IterVar& outer, const IterVar& inner) {
  check_leaf(outer, "fuse");
  check_leaf(inner, "fuse");
  if (outer == inner) fail(node_.get(), "fuse", outer, "an axis cannot be fused with itself");
  if (outer->kind != inner->kind) {
    fail(node_.get(), "fuse", outer, "cannot fuse it with '" + inner->var.name() + "': one is a reduction axis and the other is not");
  }
  size_t po = leaf_position(outer), pi = leaf_position(inner);
  if (pi != po + 1) {
    fail(node_.get(), "fuse", outer, "'" + inner->var.name() + "' must be the loop directly inside it (reorder first)");
  }
  IterVar fused(ir::Var(outer->var.name() + "." + inner->var.name() + ".fused"), Range(), outer->kind);
  node_->relations.push_back({Relation::Fuse, IterVar(), outer, inner, fused, Expr(), Expr()});
  node_->all_iter_vars.push_back(fused);
  auto& leaves = node_->leaf_iter_vars;
  leaves.erase(leaves.begin() + po, leaves.begin() + po + 2);
  leaves.insert(leaves.begin() + po, fused);
  return fused;
}

void Stage::reorder(const std::vector<IterVar>& order) {
  std::vector<size_t> positions;
  for (const IterVar& iv : order) {
    check_leaf(iv, "reorder");
    size_t p = leaf_position(iv);
    if (std::find(positions.begin(), positions.end(), p) != positions.end()) {
      fail(node_.get(), "reorder", iv, "the axis appears twice");
    }
    positions.push_back(p);
  }
  std::vector<size_t> slots = positions;
  std::sort(slots.begin(), slots.end());
  for (size_t i = 0; i < order.size(); ++i) node_->leaf_iter_vars[slots[i]] = order[i];
}

// ---------------------------------------------------------------- annotations

void Stage::vectorize(const IterVar& iv) {
  check_leaf(iv, "vectorize");
  // A reduction's axis, where the reduction is a sum, maximum or minimum: innermost, its
  // lanes are combined as a tree into the one element (vectorize_loop's lane reduction).
  if (iv->kind == ir::IterKind::Reduce) {
    const auto* r = node_->op->body.as<ir::ReduceNode>();
    if (!r || r->combiner == ir::Combiner::Prod)
      fail(node_.get(), "vectorize", iv, "a reduction axis can be vectorized only in a sum, maximum or minimum");
  }
  attr(iv).kind = ir::ForKind::Vectorized;
}

void Stage::unroll(const IterVar& iv) {
  check_leaf(iv, "unroll");
  attr(iv).kind = ir::ForKind::Unrolled;
}

void Stage::parallel(const IterVar& iv) {
  check_leaf(iv, "parallel");
  if (iv->kind == ir::IterKind::Reduce) fail(node_.get(), "parallel", iv, "a reduction axis cannot run in parallel");
  attr(iv).kind = ir::ForKind::Parallel;
}

void Stage::bind(const IterVar& iv, const std::string& thread_tag) {
  check_leaf(iv, "bind");
  static const std::unordered_set<std::string> tags = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x",
                                                       "threadIdx.y", "threadIdx.z", "vthread"};
  if (!tags.count(thread_tag)) fail(node_.get(), "bind", iv, "unknown thread axis '" + thread_tag + "'");
  if (iv->kind == ir::IterKind::Reduce) fail(node_.get(), "bind", iv, "a reduction axis cannot be bound to a thread axis");
  for (const auto& [other, a] : node_->iter_attrs) {
    if (a.thread_tag == thread_tag && other != iv.get() && thread_tag != "vthread") {
      fail(node_.get(), "bind", iv, "thread axis '" + thread_tag + "' is already bound to '" + other->var.name() + "'");
    }
  }
  attr(iv).kind = ir::ForKind::ThreadBinding;
  attr(iv).thread_tag = thread_tag;
}

void Stage::pragma(const IterVar& iv, const std::string& key, Expr value) {
  check_leaf(iv, "pragma");
  attr(iv).pragmas.emplace_back(key, std::move(value));
}

void Stage::tensorize(const IterVar& iv, std::shared_ptr<const TensorIntrin> intrin) {
  check_leaf(iv, "tensorize");
  if (!intrin) fail(node_.get(), "tensorize", iv, "the intrinsic is null");
  attr(iv).tensorize = std::move(intrin);
}

// ---------------------------------------------------------------- placement

void Stage::compute_at(const Stage& parent, const IterVar& iv) {
  check_schedulable("compute_at");
  if (!parent.defined()) fail(node_.get(), "compute_at", iv, "the target stage is undefined");
  if (parent == *this) fail(node_.get(), "compute_at", iv, "a stage cannot be computed at itself");
  if (node_->is_output) fail(node_.get(), "compute_at", iv, "an output stage must be computed at the root");
  if (parent->schedule != node_->schedule) fail(node_.get(), "compute_at", iv, "the target stage is in another schedule");
  parent.check_leaf(iv, "compute_at target");
  node_->attach_type = AttachType::Scope;
  node_->attach_stage = parent.node();
  node_->attach_ivar = iv;
}

void Stage::compute_root() {
  check_schedulable("compute_root");
  node_->attach_type = AttachType::Root;
  node_->attach_stage.reset();
  node_->attach_ivar = IterVar();
}

void Stage::compute_inline() {
  check_schedulable("compute_inline");
  if (node_->is_output) fail(node_.get(), "compute_inline", IterVar(), "an output stage cannot be inlined");
  if (!node_->op->reduce_axis.empty()) fail(node_.get(), "compute_inline", IterVar(), "a reduction cannot be inlined");
  ScheduleNode* s = node_->schedule;
  const te::OperationNode* op = node_->op.get();
  auto inline_body = [op](const std::vector<Expr>& idx) {
    ir::VarMap map;
    for (size_t d = 0; d < op->axis.size(); ++d) map[op->axis[d]->var.get()] = idx[d];
    return ir::substitute(op->body, map);
  };
  for (const Stage& consumer : s->stages) {
    if (consumer == *this || consumer->is_placeholder()) continue;
    ReplaceLoads r(s, node_.get(), inline_body);
    Expr body = r.mutate(consumer->op->body);
    if (r.replaced) install_op(s, consumer, te::with_body(consumer->op, body));
  }
  node_->attach_type = AttachType::Inline;
}

void Stage::set_scope(const std::string& scope) {
  check_schedulable("set_scope");
  if (node_->is_output && scope != "global") fail(node_.get(), "set_scope", IterVar(), "an output lives in global memory");
  node_->scope = scope;
}

void Stage::double_buffer() {
  check_schedulable("double_buffer");
  if (node_->is_output) fail(node_.get(), "double_buffer", IterVar(), "an output cannot be double buffered");
  node_->double_buffer = true;
}

// ---------------------------------------------------------------- schedule

namespace {

Stage make_stage(ScheduleNode* s, const Tensor& op) {
  auto n = std::make_shared<StageNode>();
  n->op = op;
  n->origin_op = op;
  n->all_iter_vars = n->root_iter_vars();
  n->leaf_iter_vars = n->all_iter_vars;
  n->schedule = s;
  return Stage(n);
}

size_t index_of(const ScheduleNode* s, const Stage& st) {
  return std::find(s->stages.begin(), s->stages.end(), st) - s->stages.begin();
}

}  // namespace

Schedule create_schedule(const std::vector<Tensor>& outputs) {
  auto s = std::make_shared<ScheduleNode>();
  s->outputs = outputs;
  for (const Tensor& t : te::post_dfs_order(outputs)) {
    Stage st = make_stage(s.get(), t);
    s->stages.push_back(st);
    s->stage_map[t.get()] = st;
  }
  for (const Tensor& t : outputs) {
    if (t->is_placeholder()) throw CompileError("create_schedule: output '" + t->name + "' is a placeholder");
    s->stage_map.at(t.get())->is_output = true;
  }
  return Schedule(s);
}

Stage Schedule::stage_of(const te::OperationNode* op) const {
  auto it = node_->stage_map.find(op);
  return it == node_->stage_map.end() ? Stage() : it->second;
}

Stage Schedule::operator[](const Tensor& t) const {
  Stage st = stage_of(t.get());
  if (!st.defined()) throw CompileError("schedule has no stage for tensor '" + t->name + "'");
  return st;
}

Tensor Schedule::cache_read(const Tensor& t, const std::string& scope, const std::vector<Tensor>& readers) {
  Stage src = (*this)[t];
  if (src->attach_type == AttachType::Inline) fail(src.get(), "cache_read", IterVar(), "the stage was inlined");
  Tensor data = src->op;
  Tensor cache = te::compute(data->shape, [&](const std::vector<ir::Var>& i) { return data(std::vector<Expr>(i.begin(), i.end())); },
                             data->name + "." + scope, "cache");
  Stage cst = make_stage(node_.get(), cache);
  cst->scope = scope;
  for (const Tensor& reader : readers) {
    Stage rs = (*this)[reader];
    if (rs->is_placeholder()) fail(src.get(), "cache_read", IterVar(), "reader '" + reader->name + "' is a placeholder");
    ReplaceLoads r(node_.get(), src.get(), [&](const std::vector<Expr>& idx) { return cache(idx); });
    Expr body = r.mutate(rs->op->body);
    if (!r.replaced) fail(src.get(), "cache_read", IterVar(), "stage '" + reader->name + "' does not read '" + t->name + "'");
    install_op(node_.get(), rs, te::with_body(rs->op, body));
  }
  node_->stages.insert(node_->stages.begin() + index_of(node_.get(), src) + 1, cst);
  node_->stage_map[cache.get()] = cst;
  return cache;
}

Tensor Schedule::cache_write(const Tensor& t, const std::string& scope) {
  Stage st = (*this)[t];
  if (st->is_placeholder()) fail(st.get(), "cache_write", IterVar(), "a placeholder is not written");
  if (st->attach_type == AttachType::Inline) fail(st.get(), "cache_write", IterVar(), "the stage was inlined");
  if (!st->relations.empty() || !st->iter_attrs.empty()) {
    fail(st.get(), "cache_write", IterVar(), "cache_write must come before any other primitive on the stage");
  }
  Tensor op = st->op;
  // The cache computes the original body over fresh axes.
  std::vector<IterVar> red;
  ir::VarMap map;
  for (const IterVar& r : op->reduce_axis) {
    red.push_back(te::reduce_axis(r->dom, r->var.name()));
    map[r->var.get()] = red.back()->var;
  }
  Tensor cache = te::compute(
      op->shape,
      [&](const std::vector<ir::Var>& i) {
        ir::VarMap m = map;
        for (size_t d = 0; d < i.size(); ++d) m[op->axis[d]->var.get()] = i[d];
        if (const auto* r = op->body.as<ir::ReduceNode>()) {
          return ir::make_reduce(r->combiner, ir::substitute(r->source, m), red, ir::substitute(r->condition, m));
        }
        return ir::substitute(op->body, m);
      },
      op->name + "." + scope, op->tag, [&] {
        std::vector<std::string> names;
        for (const IterVar& a : op->axis) names.push_back(a->var.name() + ".c");
        return names;
      }());
  Stage cst = make_stage(node_.get(), cache);
  cst->scope = scope;
  // The original stage now copies the cache out, over its original axes.
  auto copy = std::make_shared<te::OperationNode>(*op.get());
  std::vector<Expr> idx;
  for (const IterVar& a : op->axis) idx.push_back(a->var);
  copy->body = cache(idx);
  copy->reduce_axis.clear();
  install_op(node_.get(), st, Tensor(copy));
  st->all_iter_vars = st->root_iter_vars();
  st->leaf_iter_vars = st->all_iter_vars;
  node_->stages.insert(node_->stages.begin() + index_of(node_.get(), st), cst);
  node_->stage_map[cache.get()] = cst;
  return cache;
}

}  // namespace kiln::schedule
