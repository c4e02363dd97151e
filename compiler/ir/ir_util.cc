#include "compiler/ir/ir_util.h"

#include "compiler/ir/functor.h"
#include "compiler/support/error.h"

namespace kiln::ir {
namespace {

class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& map) : map_(map) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_(const VarNode* op, const Expr& self) override {
    auto it = map_.find(op);
    return it == map_.end() ? self : it->second;
  }
  Expr mutate_(const LoadNode* op, const Expr& self) override {
    Expr idx = mutate(op->index);
    auto it = map_.find(op->buffer_var.get());
    if (it == map_.end() && idx.same_as(op->index)) return self;
    Var buf = it == map_.end() ? op->buffer_var : Var(std::static_pointer_cast<const VarNode>(it->second.ptr()));
    return make_load(op->dtype.with_lanes(idx.dtype().lanes()), buf, idx);
  }
  Stmt mutate_(const StoreNode* op, const Stmt& self) override {
    Expr v = mutate(op->value), idx = mutate(op->index);
    auto it = map_.find(op->buffer_var.get());
    if (it == map_.end() && idx.same_as(op->index) && v.same_as(op->value)) return self;
    Var buf = it == map_.end() ? op->buffer_var : Var(std::static_pointer_cast<const VarNode>(it->second.ptr()));
    return make_store(buf, v, idx);
  }

 private:
  const VarMap& map_;
};

class VarFinder : public IRVisitor {
 public:
  explicit VarFinder(const std::function<bool(const VarNode*)>& pred) : pred_(pred) {}
  using IRVisitor::visit;
  bool found = false;
  void visit(const Expr& e) override {
    if (!found) IRVisitor::visit(e);
  }
  void visit(const Stmt& s) override {
    if (!found) IRVisitor::visit(s);
  }

 protected:
  void visit_(const VarNode* op) override { found = found || pred_(op); }
  void visit_(const ForNode* op) override {
    found = found || pred_(op->var.get());
    IRVisitor::visit_(op);
  }

 private:
  const std::function<bool(const VarNode*)>& pred_;
};

}  // namespace

Expr substitute(const Expr& e, const VarMap& map) { return map.empty() ? e : Substituter(map).mutate(e); }
Stmt substitute(const Stmt& s, const VarMap& map) { return map.empty() ? s : Substituter(map).mutate(s); }
Expr substitute(const Expr& e, const Var& v, const Expr& value) { return substitute(e, VarMap{{v.get(), value}}); }
Stmt substitute(const Stmt& s, const Var& v, const Expr& value) { return substitute(s, VarMap{{v.get(), value}}); }

bool uses_var(const Expr& e, const std::function<bool(const VarNode*)>& pred) {
  VarFinder f(pred);
  f.visit(e);
  return f.found;
}
bool uses_var(const Stmt& s, const std::function<bool(const VarNode*)>& pred) {
  VarFinder f(pred);
  f.visit(s);
  return f.found;
}
bool uses_var(const Expr& e, const Var& v) {
  const VarNode* p = v.get();
  return uses_var(e, [p](const VarNode* x) { return x == p; });
}
bool uses_var(const Stmt& s, const Var& v) {
  const VarNode* p = v.get();
  return uses_var(s, [p](const VarNode* x) { return x == p; });
}

namespace {

// Collects variables with their owning handles, in first-use order.
class VarCollector : public IRVisitor {
 public:
  using IRVisitor::visit;
  void visit(const Expr& e) override {
    if (e.defined() && e.kind() == NodeKind::Var) {
      if (seen.insert(e.as<VarNode>()).second) vars.emplace_back(std::static_pointer_cast<const VarNode>(e.ptr()));
      return;
    }
    IRVisitor::visit(e);
  }
  std::vector<Var> vars;
  std::unordered_set<const VarNode*> seen;
};

}  // namespace

std::vector<Var> free_vars(const Expr& e) {
  VarCollector c;
  c.visit(e);
  return c.vars;
}

std::optional<NodeKind> lane_reduction_kind(const std::string& call_name) {
  if (call_name == "vector_reduce_add") return NodeKind::Add;
  if (call_name == "vector_reduce_max") return NodeKind::Max;
  if (call_name == "vector_reduce_min") return NodeKind::Min;
  return std::nullopt;
}

std::string lane_reduction_name(NodeKind kind) {
  switch (kind) {
    case NodeKind::Add: return "vector_reduce_add";
    case NodeKind::Max: return "vector_reduce_max";
    case NodeKind::Min: return "vector_reduce_min";
    default: throw CompileError(std::string("no lane reduction for ") + kind_name(kind));
  }
}

}  // namespace kiln::ir
