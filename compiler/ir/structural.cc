#include "compiler/ir/structural.h"

#include <cstring>
#include <functional>
#include <unordered_map>

namespace kiln::ir {
namespace {

class Equal {
 public:
  bool expr(const Expr& a, const Expr& b) {
    if (a.same_as(b)) return true;
    if (!a.defined() || !b.defined()) return false;
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
    const ExprNode* x = a.get();
    const ExprNode* y = b.get();
    switch (a.kind()) {
      case NodeKind::IntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
      case NodeKind::FloatImm: {
        double u = a.as<FloatImmNode>()->value, v = b.as<FloatImmNode>()->value;
        return std::memcmp(&u, &v, sizeof u) == 0;
      }
      case NodeKind::StringImm: return a.as<StringImmNode>()->value == b.as<StringImmNode>()->value;
      case NodeKind::Var: return var(static_cast<const VarNode*>(x), static_cast<const VarNode*>(y));
#define KILN_BIN(N)                                                                     \
  case NodeKind::N: {                                                                   \
    auto* p = static_cast<const N##Node*>(x);                                           \
    auto* q = static_cast<const N##Node*>(y);                                           \
    return expr(p->a, q->a) && expr(p->b, q->b);                                        \
  }
      KILN_BIN(Add) KILN_BIN(Sub) KILN_BIN(Mul) KILN_BIN(Div) KILN_BIN(Mod) KILN_BIN(Min) KILN_BIN(Max)
      KILN_BIN(EQ) KILN_BIN(NE) KILN_BIN(LT) KILN_BIN(LE) KILN_BIN(GT) KILN_BIN(GE) KILN_BIN(And) KILN_BIN(Or)
#undef KILN_BIN
      case NodeKind::Not: return expr(a.as<NotNode>()->a, b.as<NotNode>()->a);
      case NodeKind::Cast: return expr(a.as<CastNode>()->value, b.as<CastNode>()->value);
      case NodeKind::Select: {
        auto *p = a.as<SelectNode>(), *q = b.as<SelectNode>();
        return expr(p->cond, q->cond) && expr(p->true_value, q->true_value) && expr(p->false_value, q->false_value);
      }
      case NodeKind::Load: {
        auto *p = a.as<LoadNode>(), *q = b.as<LoadNode>();
        return expr(p->buffer_var, q->buffer_var) && expr(p->index, q->index);
      }
      case NodeKind::BufferLoad: {
        auto *p = a.as<BufferLoadNode>(), *q = b.as<BufferLoadNode>();
        return p->buffer.same_as(q->buffer) && exprs(p->indices, q->indices);
      }
      case NodeKind::ProducerLoad: {
        auto *p = a.as<ProducerLoadNode>(), *q = b.as<ProducerLoadNode>();
        return p->producer == q->producer && exprs(p->indices, q->indices);
      }
      case NodeKind::Ramp: {
        auto *p = a.as<RampNode>(), *q = b.as<RampNode>();
        return p->lanes == q->lanes && expr(p->base, q->base) && expr(p->stride, q->stride);
      }
      case NodeKind::Broadcast: {
        auto *p = a.as<BroadcastNode>(), *q = b.as<BroadcastNode>();
        return p->lanes == q->lanes && expr(p->value, q->value);
      }
      case NodeKind::Call: {
        auto *p = a.as<CallNode>(), *q = b.as<CallNode>();
        return p->name == q->name && exprs(p->args, q->args);
      }
      case NodeKind::Let: {
        auto *p = a.as<LetNode>(), *q = b.as<LetNode>();
        if (!expr(p->value, q->value)) return false;
        bind(p->var.get(), q->var.get());
        return expr(p->body, q->body);
      }
      case NodeKind::Reduce: {
        auto *p = a.as<ReduceNode>(), *q = b.as<ReduceNode>();
        if (p->combiner != q->combiner || p->axis.size() != q->axis.size()) return false;
        for (size_t i = 0; i < p->axis.size(); ++i) {
          if (!expr(p->axis[i]->dom.min, q->axis[i]->dom.min) || !expr(p->axis[i]->dom.extent, q->axis[i]->dom.extent)) return false;
          bind(p->axis[i]->var.get(), q->axis[i]->var.get());
        }
        return expr(p->source, q->source) && expr(p->condition, q->condition);
      }
      default: return false;
    }
  }

  bool stmt(const Stmt& a, const Stmt& b) {
    if (a.same_as(b)) return true;
    if (!a.defined() || !b.defined() || a.kind() != b.kind()) return false;
    switch (a.kind()) {
      case NodeKind::LetStmt: {
        auto *p = a.as<LetStmtNode>(), *q = b.as<LetStmtNode>();
        if (!expr(p->value, q->value)) return false;
        bind(p->var.get(), q->var.get());
        return stmt(p->body, q->body);
      }
      case NodeKind::For: {
        auto *p = a.as<ForNode>(), *q = b.as<ForNode>();
        if (p->for_kind != q->for_kind || p->thread_tag != q->thread_tag) return false;
        if (!expr(p->min, q->min) || !expr(p->extent, q->extent)) return false;
        if (p->var.dtype() != q->var.dtype()) return false;
        bind(p->var.get(), q->var.get());
        return stmt(p->body, q->body);
      }
      case NodeKind::Store: {
        auto *p = a.as<StoreNode>(), *q = b.as<StoreNode>();
        return expr(p->buffer_var, q->buffer_var) && expr(p->value, q->value) && expr(p->index, q->index);
      }
      case NodeKind::BufferStore: {
        auto *p = a.as<BufferStoreNode>(), *q = b.as<BufferStoreNode>();
        return p->buffer.same_as(q->buffer) && expr(p->value, q->value) && exprs(p->indices, q->indices);
      }
      case NodeKind::Allocate: {
        auto *p = a.as<AllocateNode>(), *q = b.as<AllocateNode>();
        if (p->dtype != q->dtype || p->scope != q->scope || !expr(p->extent, q->extent)) return false;
        bind(p->buffer_var.get(), q->buffer_var.get());
        return stmt(p->body, q->body);
      }
      case NodeKind::Realize: {
        auto *p = a.as<RealizeNode>(), *q = b.as<RealizeNode>();
        if (!p->buffer.same_as(q->buffer)) return false;
        for (size_t i = 0; i < p->bounds.size(); ++i) {
          if (!expr(p->bounds[i].min, q->bounds[i].min) || !expr(p->bounds[i].extent, q->bounds[i].extent)) return false;
        }
        return stmt(p->body, q->body);
      }
      case NodeKind::IfThenElse: {
        auto *p = a.as<IfThenElseNode>(), *q = b.as<IfThenElseNode>();
        return expr(p->cond, q->cond) && stmt(p->then_case, q->then_case) && stmt(p->else_case, q->else_case);
      }
      case NodeKind::Seq: {
        auto *p = a.as<SeqNode>(), *q = b.as<SeqNode>();
        if (p->seq.size() != q->seq.size()) return false;
        for (size_t i = 0; i < p->seq.size(); ++i) {
          if (!stmt(p->seq[i], q->seq[i])) return false;
        }
        return true;
      }
      case NodeKind::Attr: {
        auto *p = a.as<AttrNode>(), *q = b.as<AttrNode>();
        return p->key == q->key && expr(p->node, q->node) && expr(p->value, q->value) && stmt(p->body, q->body);
      }
      case NodeKind::Evaluate: return expr(a.as<EvaluateNode>()->value, b.as<EvaluateNode>()->value);
      default: return false;
    }
  }

 private:
  bool exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!expr(a[i], b[i])) return false;
    }
    return true;
  }
  bool var(const VarNode* a, const VarNode* b) {
    auto it = map_.find(a);
    if (it != map_.end()) return it->second == b;
    return a == b;
  }
  void bind(const VarNode* a, const VarNode* b) { map_[a] = b; }

  std::unordered_map<const VarNode*, const VarNode*> map_;
};

inline size_t mix(size_t seed, size_t v) { return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)); }

class Hash {
 public:
  size_t expr(const Expr& e) {
    if (!e.defined()) return 7;
    size_t h = mix(static_cast<size_t>(e.kind()), std::hash<std::string>()(e.dtype().to_string()));
    switch (e.kind()) {
      case NodeKind::IntImm: return mix(h, std::hash<int64_t>()(e.as<IntImmNode>()->value));
      case NodeKind::FloatImm: return mix(h, std::hash<double>()(e.as<FloatImmNode>()->value));
      case NodeKind::StringImm: return mix(h, std::hash<std::string>()(e.as<StringImmNode>()->value));
      case NodeKind::Var: {
        auto it = bound_.find(e.as<VarNode>());
        if (it != bound_.end()) return mix(h, it->second);
        return mix(h, std::hash<const void*>()(e.get()));
      }
#define KILN_BIN(N)                                          \
  case NodeKind::N: {                                        \
    auto* p = e.as<N##Node>();                               \
    return mix(mix(h, expr(p->a)), expr(p->b));              \
  }
      KILN_BIN(Add) KILN_BIN(Sub) KILN_BIN(Mul) KILN_BIN(Div) KILN_BIN(Mod) KILN_BIN(Min) KILN_BIN(Max)
      KILN_BIN(EQ) KILN_BIN(NE) KILN_BIN(LT) KILN_BIN(LE) KILN_BIN(GT) KILN_BIN(GE) KILN_BIN(And) KILN_BIN(Or)
#undef KILN_BIN
      case NodeKind::Not: return mix(h, expr(e.as<NotNode>()->a));
      case NodeKind::Cast: return mix(h, expr(e.as<CastNode>()->value));
      case NodeKind::Select: {
        auto* p = e.as<SelectNode>();
        return mix(mix(mix(h, expr(p->cond)), expr(p->true_value)), expr(p->false_value));
      }
      case NodeKind::Load: return mix(mix(h, expr(e.as<LoadNode>()->buffer_var)), expr(e.as<LoadNode>()->index));
      case NodeKind::BufferLoad: {
        auto* p = e.as<BufferLoadNode>();
        return exprs(mix(h, std::hash<const void*>()(p->buffer.get())), p->indices);
      }
      case NodeKind::ProducerLoad: {
        auto* p = e.as<ProducerLoadNode>();
        return exprs(mix(h, std::hash<const void*>()(p->producer.get())), p->indices);
      }
      case NodeKind::Ramp: return mix(mix(h, expr(e.as<RampNode>()->base)), expr(e.as<RampNode>()->stride));
      case NodeKind::Broadcast: return mix(h, expr(e.as<BroadcastNode>()->value));
      case NodeKind::Call: return exprs(mix(h, std::hash<std::string>()(e.as<CallNode>()->name)), e.as<CallNode>()->args);
      case NodeKind::Let: {
        auto* p = e.as<LetNode>();
        h = mix(h, expr(p->value));
        bound_[p->var.get()] = next_++;
        return mix(h, expr(p->body));
      }
      case NodeKind::Reduce: {
        auto* p = e.as<ReduceNode>();
        h = mix(h, static_cast<size_t>(p->combiner));
        for (const IterVar& iv : p->axis) {
          h = mix(mix(h, expr(iv->dom.min)), expr(iv->dom.extent));
          bound_[iv->var.get()] = next_++;
        }
        return mix(mix(h, expr(p->source)), expr(p->condition));
      }
      default: return h;
    }
  }

  size_t stmt(const Stmt& s) {
    if (!s.defined()) return 11;
    size_t h = static_cast<size_t>(s.kind()) + 100;
    switch (s.kind()) {
      case NodeKind::LetStmt: {
        auto* p = s.as<LetStmtNode>();
        h = mix(h, expr(p->value));
        bound_[p->var.get()] = next_++;
        return mix(h, stmt(p->body));
      }
      case NodeKind::For: {
        auto* p = s.as<ForNode>();
        h = mix(mix(mix(h, expr(p->min)), expr(p->extent)), static_cast<size_t>(p->for_kind));
        bound_[p->var.get()] = next_++;
        return mix(h, stmt(p->body));
      }
      case NodeKind::Store: {
        auto* p = s.as<StoreNode>();
        return mix(mix(mix(h, expr(p->buffer_var)), expr(p->value)), expr(p->index));
      }
      case NodeKind::BufferStore: {
        auto* p = s.as<BufferStoreNode>();
        return exprs(mix(mix(h, std::hash<const void*>()(p->buffer.get())), expr(p->value)), p->indices);
      }
      case NodeKind::Allocate: {
        auto* p = s.as<AllocateNode>();
        h = mix(h, expr(p->extent));
        bound_[p->buffer_var.get()] = next_++;
        return mix(h, stmt(p->body));
      }
      case NodeKind::Realize: {
        auto* p = s.as<RealizeNode>();
        h = mix(h, std::hash<const void*>()(p->buffer.get()));
        for (const Range& r : p->bounds) h = mix(mix(h, expr(r.min)), expr(r.extent));
        return mix(h, stmt(p->body));
      }
      case NodeKind::IfThenElse: {
        auto* p = s.as<IfThenElseNode>();
        return mix(mix(mix(h, expr(p->cond)), stmt(p->then_case)), stmt(p->else_case));
      }
      case NodeKind::Seq:
        for (const Stmt& c : s.as<SeqNode>()->seq) h = mix(h, stmt(c));
        return h;
      case NodeKind::Attr: {
        auto* p = s.as<AttrNode>();
        return mix(mix(mix(h, std::hash<std::string>()(p->key)), expr(p->value)), stmt(p->body));
      }
      case NodeKind::Evaluate: return mix(h, expr(s.as<EvaluateNode>()->value));
      default: return h;
    }
  }

 private:
  size_t exprs(size_t h, const std::vector<Expr>& v) {
    for (const Expr& e : v) h = mix(h, expr(e));
    return h;
  }
  std::unordered_map<const VarNode*, size_t> bound_;
  size_t next_ = 1;
};

}  // namespace

bool structural_equal(const Expr& a, const Expr& b) { return Equal().expr(a, b); }
bool structural_equal(const Stmt& a, const Stmt& b) { return Equal().stmt(a, b); }
size_t structural_hash(const Expr& e) { return Hash().expr(e); }
size_t structural_hash(const Stmt& s) { return Hash().stmt(s); }

}  // namespace kiln::ir
