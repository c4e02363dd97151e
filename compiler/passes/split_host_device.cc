#include "compiler/passes/split_host_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/simplify.h"
#include "compiler/support/error.h"

namespace kiln::passes {

namespace {

const std::vector<std::string>& axis_tags() {
  static const std::vector<std::string> tags = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                                "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  return tags;
}
bool is_gpu_tag(const std::string& tag) { return tag.rfind("blockIdx.", 0) == 0 || tag.rfind("threadIdx.", 0) == 0; }
bool is_bound(const ir::ForNode* f) { return f->for_kind == ir::ForKind::ThreadBinding && is_gpu_tag(f->thread_tag); }
int axis_dim(const std::string& tag) { return tag.back() - 'x'; }

// ---------------------------------------------------------------- thread unification

// Every loop bound to a GPU axis becomes that axis's variable (plus the loop's min),
// guarded where the loop is shorter than the launch.
class Unifier : public ir::IRMutator {
 public:
  Unifier(const std::string& kernel, std::map<std::string, ThreadAxis>* axes) : kernel_(kernel), axes_(axes) {}
  using IRMutator::mutate;

  // First pass: each axis's launch extent, and the checks.
  void collect(const ir::Stmt& s, std::map<std::string, int64_t> outer = {}) {
    if (const auto* f = s.as<ir::ForNode>()) {
      if (is_bound(f)) {
        const int64_t* n = ir::as_const_int(f->extent);
        if (!n) {
          throw CompileError(fmt::format("kernel '{}': loop '{}' is bound to {} with extent {}, which is not a constant",
                                         kernel_, f->var.name(), f->thread_tag, ir::to_string(f->extent)));
        }
        auto it = outer.find(f->thread_tag);
        if (it != outer.end() && *n > it->second) {
          throw CompileError(fmt::format("kernel '{}': loop '{}' is bound to {} with extent {} inside a loop bound to the same "
                                         "axis with extent {}: a nested binding cannot be wider than the one around it",
                                         kernel_, f->var.name(), f->thread_tag, *n, it->second));
        }
        ThreadAxis& a = (*axes_)[f->thread_tag];
        if (!a.var.defined()) {
          a.tag = f->thread_tag;
          a.var = ir::Var(f->thread_tag.substr(0, f->thread_tag.find('.')) + "_" + f->thread_tag.substr(f->thread_tag.size() - 1));
        }
        a.extent = std::max(a.extent, *n);
        if (std::find(a.loops.begin(), a.loops.end(), f->var.name()) == a.loops.end()) a.loops.push_back(f->var.name());
        outer[f->thread_tag] = *n;
      } else if (f->for_kind == ir::ForKind::ThreadBinding) {
        throw CompileError(fmt::format("kernel '{}': loop '{}' is bound to '{}', which a GPU has no axis for", kernel_,
                                       f->var.name(), f->thread_tag));
      }
      collect(f->body, outer);
      return;
    }
    switch (s.kind()) {
      case ir::NodeKind::Seq:
        for (const ir::Stmt& c : s.as<ir::SeqNode>()->seq) collect(c, outer);
        break;
      case ir::NodeKind::IfThenElse:
        collect(s.as<ir::IfThenElseNode>()->then_case, outer);
        if (s.as<ir::IfThenElseNode>()->else_case.defined()) collect(s.as<ir::IfThenElseNode>()->else_case, outer);
        break;
      case ir::NodeKind::LetStmt: collect(s.as<ir::LetStmtNode>()->body, outer); break;
      case ir::NodeKind::Allocate: collect(s.as<ir::AllocateNode>()->body, outer); break;
      case ir::NodeKind::Attr: collect(s.as<ir::AttrNode>()->body, outer); break;
      default: break;
    }
  }

 protected:
  ir::Stmt mutate_(const ir::ForNode* op, const ir::Stmt& self) override {
    if (!is_bound(op)) return IRMutator::mutate_(op, self);
    const ThreadAxis& a = axes_->at(op->thread_tag);
    int64_t n = *ir::as_const_int(op->extent);
    auto it = guarded_.find(op->thread_tag);
    bool covered = n == a.extent || (it != guarded_.end() && it->second <= n);
    int64_t saved = it != guarded_.end() ? it->second : -1;
    guarded_[op->thread_tag] = covered && it != guarded_.end() ? it->second : n;
    ir::Expr index = ir::is_const_int(op->min, 0) ? ir::Expr(a.var) : ir::make_binary(ir::NodeKind::Add, a.var, op->min);
    ir::Stmt body = mutate(ir::substitute(op->body, op->var, index));
    if (saved < 0) guarded_.erase(op->thread_tag);
    else guarded_[op->thread_tag] = saved;
    if (covered) return body;
    return ir::make_if(ir::make_binary(ir::NodeKind::LT, a.var, ir::make_int(n)), body);
  }
  ir::Stmt mutate_(const ir::AttrNode* op, const ir::Stmt&) override { return mutate(op->body); }

 private:
  std::string kernel_;
  std::map<std::string, ThreadAxis>* axes_;
  std::map<std::string, int64_t> guarded_;  // the extent each enclosing binding guarantees
};

// ---------------------------------------------------------------- shared buffers

class SharedHoister : public ir::IRMutator {
 public:
  explicit SharedHoister(const std::string& kernel) : kernel_(kernel) {}
  using IRMutator::mutate;
  std::vector<SharedBuffer> shared;
  int64_t local_bytes = 0;

 protected:
  ir::Stmt mutate_(const ir::AllocateNode* op, const ir::Stmt& self) override {
    const int64_t* n = ir::as_const_int(op->extent);
    if (op->scope == "shared" || op->scope == "local") {
      if (!n) {
        throw CompileError(fmt::format("kernel '{}': {} buffer '{}' has {} elements, which is not a constant", kernel_,
                                       op->scope, op->buffer_var.name(), ir::to_string(op->extent)));
      }
    } else {
      throw CompileError(fmt::format("kernel '{}': buffer '{}' of scope '{}' is allocated inside a kernel; give its stage "
                                     "scope \"shared\" or \"local\", or compute it at the root",
                                     kernel_, op->buffer_var.name(), op->scope));
    }
    if (op->scope == "local") {
      local_bytes += *n * op->dtype.storage_bytes();
      return IRMutator::mutate_(op, self);
    }
    shared.push_back({op->buffer_var, op->dtype, *n});
    return mutate(op->body);
  }

 private:
  std::string kernel_;
};

// ---------------------------------------------------------------- barriers

struct Access {
  std::set<const ir::VarNode*> reads, writes;
  bool has_barrier = false;
  void add(const Access& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
    has_barrier = has_barrier || o.has_barrier;
  }
};

bool intersects(const std::set<const ir::VarNode*>& a, const std::set<const ir::VarNode*>& b) {
  for (const auto* v : a)
    if (b.count(v)) return true;
  return false;
}

// Inserts a barrier wherever a shared buffer that other threads may have written since
// the last one is read, or one they may still read is written. Statements whose
// control depends on the thread are taken whole; a barrier cannot go inside them.
class ThreadSync {
 public:
  ThreadSync(const std::string& kernel, const std::set<const ir::VarNode*>& shared,
             const std::set<const ir::VarNode*>& thread_vars)
      : kernel_(kernel), shared_(shared), threads_(thread_vars) {}

  ir::Stmt run(const ir::Stmt& body) { return sync_seq(body); }

 private:
  Access accesses(const ir::Stmt& s) const {
    Access a;
    ir::post_order_visit(s, [&](const ir::Node* n) {
      if (n->kind == ir::NodeKind::Load) {
        auto* l = static_cast<const ir::LoadNode*>(n);
        if (shared_.count(l->buffer_var.get())) a.reads.insert(l->buffer_var.get());
      } else if (n->kind == ir::NodeKind::Store) {
        auto* st = static_cast<const ir::StoreNode*>(n);
        if (shared_.count(st->buffer_var.get())) a.writes.insert(st->buffer_var.get());
      } else if (n->kind == ir::NodeKind::Evaluate) {
        auto* e = static_cast<const ir::EvaluateNode*>(n);
        if (auto* c = e->value.as<ir::CallNode>(); c && c->name == kBarrier) a.has_barrier = true;
      }
    });
    return a;
  }
  bool thread_dependent(const ir::Expr& e) const {
    return ir::uses_var(e, [&](const ir::VarNode* v) { return threads_.count(v) != 0; });
  }

  // A statement with its inner barriers in place (where its control is uniform).
  ir::Stmt sync(const ir::Stmt& s) {
    if (const auto* f = s.as<ir::ForNode>()) {
      if (thread_dependent(f->min) || thread_dependent(f->extent)) return s;
      Access a = accesses(f->body);
      if (a.writes.empty()) return s;
      ir::Stmt body = sync_seq(f->body);
      // The next iteration's writes must wait for this one's reads by other threads.
      if (intersects(a.writes, a.reads)) {
        std::vector<ir::Stmt> seq = {body, make_barrier()};
        body = ir::make_seq(seq);
      }
      return ir::make_for(f->var, f->min, f->extent, f->for_kind, body, f->thread_tag);
    }
    if (const auto* l = s.as<ir::LetStmtNode>()) {
      if (thread_dependent(l->value)) return s;  // per-thread values: uniform control cannot be assumed
      return ir::make_let_stmt(l->var, l->value, sync_seq(l->body));
    }
    if (const auto* al = s.as<ir::AllocateNode>()) return ir::make_allocate(al->buffer_var, al->dtype, al->extent, al->scope, sync_seq(al->body));
    if (s.as<ir::SeqNode>()) return sync_seq(s);
    return s;
  }

  ir::Stmt sync_seq(const ir::Stmt& s) {
    std::vector<ir::Stmt> items;
    if (const auto* q = s.as<ir::SeqNode>()) items = q->seq;
    else items = {s};
    std::vector<ir::Stmt> out;
    std::set<const ir::VarNode*> pend_r, pend_w;
    for (const ir::Stmt& item : items) {
      ir::Stmt c = sync(item);
      Access a = accesses(c);
      if (is_barrier(c)) {
        pend_r.clear();
        pend_w.clear();
        out.push_back(c);
        continue;
      }
      if (intersects(a.reads, pend_w) || intersects(a.writes, pend_r)) {
        out.push_back(make_barrier());
        pend_r.clear();
        pend_w.clear();
      }
      // Inside a statement with barriers of its own, only what follows the last one is
      // pending; taking all of it is conservative (at worst one barrier too many).
      if (a.has_barrier) {
        pend_r.clear();
        pend_w.clear();
      }
      pend_r.insert(a.reads.begin(), a.reads.end());
      pend_w.insert(a.writes.begin(), a.writes.end());
      out.push_back(c);
    }
    if (out.size() == 1) return out[0];
    return ir::make_seq(out);
  }

  std::string kernel_;
  std::set<const ir::VarNode*> shared_, threads_;
};

// Barriers under conditions that depend on the thread deadlock a GPU: refused.
void check_barriers(const std::string& kernel, const ir::Stmt& s, const std::set<const ir::VarNode*>& threads, bool divergent) {
  auto dep = [&](const ir::Expr& e) { return ir::uses_var(e, [&](const ir::VarNode* v) { return threads.count(v) != 0; }); };
  if (is_barrier(s)) {
    if (divergent) {
      throw CompileError(fmt::format("kernel '{}': a barrier is needed under a condition that depends on the thread; bind "
                                     "the loops around the shared buffer's readers and writers to extents that fill the block",
                                     kernel));
    }
    return;
  }
  switch (s.kind()) {
    case ir::NodeKind::Seq:
      for (const ir::Stmt& c : s.as<ir::SeqNode>()->seq) check_barriers(kernel, c, threads, divergent);
      break;
    case ir::NodeKind::For: {
      auto* f = s.as<ir::ForNode>();
      check_barriers(kernel, f->body, threads, divergent || dep(f->min) || dep(f->extent));
      break;
    }
    case ir::NodeKind::IfThenElse: {
      auto* i = s.as<ir::IfThenElseNode>();
      bool d = divergent || dep(i->cond);
      check_barriers(kernel, i->then_case, threads, d);
      if (i->else_case.defined()) check_barriers(kernel, i->else_case, threads, d);
      break;
    }
    case ir::NodeKind::LetStmt: check_barriers(kernel, s.as<ir::LetStmtNode>()->body, threads, divergent); break;
    case ir::NodeKind::Allocate: check_barriers(kernel, s.as<ir::AllocateNode>()->body, threads, divergent); break;
    case ir::NodeKind::Attr: check_barriers(kernel, s.as<ir::AttrNode>()->body, threads, divergent); break;
    default: break;
  }
}

// ---------------------------------------------------------------- the host side

bool has_bound_loop(const ir::Stmt& s) {
  bool found = false;
  ir::post_order_visit(s, [&](const ir::Node* n) {
    if (n->kind == ir::NodeKind::For && is_bound(static_cast<const ir::ForNode*>(n))) found = true;
  });
  return found;
}

class Splitter {
 public:
  Splitter(const schedule::LoweredFunc& f, const SplitOptions& o) : f_(f), o_(o) {
    out_.name = f.name;
    out_.args = f.args;
    for (size_t i = 0; i < f.args.size(); ++i) {
      const ir::Buffer& b = f.args[i];
      int64_t n = 1;
      for (const ir::Expr& d : b->shape) {
        const int64_t* c = ir::as_const_int(d);
        if (!c) throw CompileError(fmt::format("'{}': argument '{}' has a shape that is not constant", f.name, b->name));
        n *= *c;
      }
      index_[b->data.get()] = static_cast<int>(out_.buffers.size());
      out_.buffers.push_back({b->data, b->dtype, n, true, static_cast<int>(i), false});
    }
  }

  DeviceFunc run() {
    host(f_.body);
    return std::move(out_);
  }

 private:
  void host(const ir::Stmt& s) {
    switch (s.kind()) {
      case ir::NodeKind::Seq:
        for (const ir::Stmt& c : s.as<ir::SeqNode>()->seq) host(c);
        return;
      case ir::NodeKind::Attr: host(s.as<ir::AttrNode>()->body); return;
      case ir::NodeKind::Allocate: {
        auto* a = s.as<ir::AllocateNode>();
        if (a->scope == "global" && has_bound_loop(a->body)) {
          const int64_t* n = ir::as_const_int(a->extent);
          if (!n) throw CompileError(fmt::format("'{}': temporary '{}' has a size that is not constant", f_.name, a->buffer_var.name()));
          index_[a->buffer_var.get()] = static_cast<int>(out_.buffers.size());
          out_.buffers.push_back({a->buffer_var, a->dtype, *n, false, -1, false});
          host(a->body);
          return;
        }
        break;
      }
      case ir::NodeKind::For:
        if (is_bound(s.as<ir::ForNode>())) {
          kernel(s);
          return;
        }
        break;
      default: break;
    }
    if (ir::is_no_op(s)) return;
    std::string text = ir::to_string(s);
    if (text.size() > 300) text = text.substr(0, 300) + "...";
    throw CompileError(fmt::format("'{}': a statement is not inside any loop bound to blockIdx/threadIdx, so no GPU thread "
                                   "would run it; bind its stage's loops (e.g. split and bind to blockIdx.x and threadIdx.x):\n{}",
                                   f_.name, text));
  }

  void kernel(const ir::Stmt& s) {
    DeviceKernel k;
    k.name = fmt::format("{}_kernel{}", f_.name, out_.kernels.size());
    for (char& c : k.name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
    std::map<std::string, ThreadAxis> axes;
    Unifier u(k.name, &axes);
    u.collect(s);
    ir::Stmt body = u.mutate(s);
    SharedHoister h(k.name);
    body = h.mutate(body);
    k.shared = h.shared;
    k.local_bytes = h.local_bytes;
    std::set<const ir::VarNode*> threads, shared;
    for (const std::string& tag : axis_tags()) {
      auto it = axes.find(tag);
      if (it == axes.end()) continue;
      k.axes.push_back(it->second);
      if (tag.rfind("threadIdx.", 0) == 0) threads.insert(it->second.var.get());
    }
    for (const SharedBuffer& b : k.shared) shared.insert(b.data.get());
    body = passes::simplify(body);
    if (o_.insert_barriers && !shared.empty()) body = ThreadSync(k.name, shared, threads).run(body);
    check_barriers(k.name, body, threads, false);
    k.body = body;
    // Parameters: the device buffers the body uses, in buffer order; vector code refused.
    std::set<int> used;
    ir::post_order_visit(body, [&](const ir::Node* n) {
      const ir::VarNode* v = nullptr;
      if (n->kind == ir::NodeKind::Load) v = static_cast<const ir::LoadNode*>(n)->buffer_var.get();
      if (n->kind == ir::NodeKind::Store) {
        v = static_cast<const ir::StoreNode*>(n)->buffer_var.get();
        if (auto it = index_.find(v); it != index_.end()) out_.buffers[it->second].written = true;
      }
      if (v)
        if (auto it = index_.find(v); it != index_.end()) used.insert(it->second);
      if (n->kind >= ir::NodeKind::IntImm && n->kind <= ir::NodeKind::Reduce) {
        auto* e = static_cast<const ir::ExprNode*>(n);
        if (e->dtype.is_vector()) {
          throw CompileError(fmt::format("kernel '{}': vector code ({}) is not supported on a GPU; do not vectorize the "
                                         "stages of a GPU schedule",
                                         k.name, e->dtype.to_string()));
        }
      }
    });
    k.params.assign(used.begin(), used.end());
    verify(k);
    out_.kernels.push_back(std::move(k));
  }

  void verify(const DeviceKernel& k) const {
    const GpuLimits& l = o_.limits;
    auto loops = [](const ThreadAxis& a) { return fmt::format("'{}'", fmt::join(a.loops, "', '")); };
    for (const ThreadAxis& a : k.axes) {
      bool block = a.tag.rfind("threadIdx.", 0) == 0;
      int64_t max = block ? l.max_block[axis_dim(a.tag)] : l.max_grid[axis_dim(a.tag)];
      if (a.extent > max) {
        throw CompileError(fmt::format("kernel '{}': {} has extent {} (loops {}), more than the device's {}; split that axis "
                                       "with a smaller factor",
                                       k.name, a.tag, a.extent, loops(a), max));
      }
    }
    if (k.threads_per_block() > l.max_threads_per_block) {
      std::vector<std::string> parts;
      for (const ThreadAxis& a : k.axes)
        if (a.tag.rfind("threadIdx.", 0) == 0) parts.push_back(fmt::format("{} {} (loops {})", a.tag, a.extent, loops(a)));
      throw CompileError(fmt::format("kernel '{}' uses {} threads per block ({}), more than the device's {}", k.name,
                                     k.threads_per_block(), fmt::join(parts, ", "), l.max_threads_per_block));
    }
    if (k.shared_bytes() > l.max_shared_bytes) {
      std::vector<std::string> parts;
      for (const SharedBuffer& b : k.shared)
        parts.push_back(fmt::format("'{}' {} bytes", b.data.name(), b.elements * b.dtype.storage_bytes()));
      throw CompileError(fmt::format("kernel '{}' uses {} bytes of shared memory ({}), more than the device's {}", k.name,
                                     k.shared_bytes(), fmt::join(parts, ", "), l.max_shared_bytes));
    }
    if (k.local_bytes > l.max_local_bytes) {
      throw CompileError(fmt::format("kernel '{}' uses {} bytes of local memory per thread, more than the device's {}", k.name,
                                     k.local_bytes, l.max_local_bytes));
    }
  }

  const schedule::LoweredFunc& f_;
  const SplitOptions& o_;
  DeviceFunc out_;
  std::unordered_map<const ir::VarNode*, int> index_;
};

}  // namespace

int64_t DeviceKernel::extent(const std::string& tag) const {
  for (const ThreadAxis& a : axes)
    if (a.tag == tag) return a.extent;
  return 1;
}

int64_t DeviceKernel::threads_per_block() const {
  return extent("threadIdx.x") * extent("threadIdx.y") * extent("threadIdx.z");
}

int64_t DeviceKernel::shared_bytes() const {
  int64_t n = 0;
  for (const SharedBuffer& b : shared) n += b.elements * b.dtype.storage_bytes();
  return n;
}

ir::Stmt make_barrier() {
  return ir::make_evaluate(ir::make_call(ir::DataType::Int(32), kBarrier, {ir::make_string("shared")}));
}

bool is_barrier(const ir::Stmt& s) {
  const auto* e = s.as<ir::EvaluateNode>();
  const auto* c = e ? e->value.as<ir::CallNode>() : nullptr;
  return c && c->name == kBarrier;
}

DeviceFunc split_host_device(const schedule::LoweredFunc& f, const SplitOptions& options) {
  return Splitter(f, options).run();
}

}  // namespace kiln::passes
