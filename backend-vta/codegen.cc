#include "backend-vta/codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "backend-vta/intrin.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln::vta {

namespace {

using runtime::Stage;
using VarMap = std::unordered_map<const ir::VarNode*, int64_t>;

int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::string brief(const ir::Stmt& s) {
  std::string text = ir::to_string(s);
  auto nl = text.find('\n');
  if (nl != std::string::npos) text = text.substr(0, nl) + " ...";
  return text;
}

// Integer evaluation of index expressions and conditions with the host loops bound.
class Eval {
 public:
  explicit Eval(const VarMap& vars) : vars_(vars) {}
  int64_t operator()(const ir::Expr& e) const { return eval(e); }

 private:
  int64_t eval(const ir::Expr& e) const {
    using K = ir::NodeKind;
    switch (e.kind()) {
      case K::IntImm: return e.as<ir::IntImmNode>()->value;
      case K::Var: {
        auto it = vars_.find(e.as<ir::VarNode>());
        if (it == vars_.end())
          throw CompileError("vta codegen: '" + e.as<ir::VarNode>()->name + "' has no value at compile time");
        return it->second;
      }
#define KILN_BIN(N, expr)                                  \
  case K::N: {                                             \
    const auto* n = static_cast<const ir::N##Node*>(e.get()); \
    int64_t a = eval(n->a), b = eval(n->b);                \
    return expr;                                           \
  }
      KILN_BIN(Add, a + b)
      KILN_BIN(Sub, a - b)
      KILN_BIN(Mul, a * b)
      KILN_BIN(Min, std::min(a, b))
      KILN_BIN(Max, std::max(a, b))
      KILN_BIN(EQ, a == b)
      KILN_BIN(NE, a != b)
      KILN_BIN(LT, a < b)
      KILN_BIN(LE, a <= b)
      KILN_BIN(GT, a > b)
      KILN_BIN(GE, a >= b)
#undef KILN_BIN
      case K::Div:
      case K::Mod: {
        int64_t a, b;
        if (const auto* d = e.as<ir::DivNode>()) a = eval(d->a), b = eval(d->b);
        else a = eval(e.as<ir::ModNode>()->a), b = eval(e.as<ir::ModNode>()->b);
        if (b == 0) throw CompileError("vta codegen: division by zero in " + ir::to_string(e));
        int64_t q = floordiv(a, b);
        return e.kind() == K::Div ? q : a - q * b;
      }
      case K::And: {
        const auto* n = e.as<ir::AndNode>();
        return eval(n->a) && eval(n->b);
      }
      case K::Or: {
        const auto* n = e.as<ir::OrNode>();
        return eval(n->a) || eval(n->b);
      }
      case K::Not: return !eval(e.as<ir::NotNode>()->a);
      case K::Select: {
        const auto* n = e.as<ir::SelectNode>();
        return eval(n->cond) ? eval(n->true_value) : eval(n->false_value);
      }
      case K::Cast: return eval(e.as<ir::CastNode>()->value);
      case K::Call: {
        const auto* c = e.as<ir::CallNode>();
        if (c->name == "likely" && c->args.size() == 1) return eval(c->args[0]);
        break;
      }
      default: break;
    }
    throw CompileError("vta codegen: cannot evaluate " + ir::to_string(e) + " at compile time");
  }
  const VarMap& vars_;
};

// A micro-op tuple and a kernel fitted to a sequence of them.
struct Tup {
  int64_t d = 0, s = 0, w = 0;
};
struct Fit {
  int64_t e_out = 1, e_in = 1;
  Tup f_out, f_in;
  std::vector<Tup> uops;
};

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      d.push_back(i);
      if (i != n / i) d.push_back(n / i);
    }
  std::sort(d.begin(), d.end());
  return d;
}

// The fewest micro-ops that reproduce `t` in order as
//   for i < e_out, j < e_in, k < K: t[(i*e_in + j)*K + k] = uop[k] + i*f_out + j*f_in
// with non-negative factors no larger than `max_factor` (per operand).
Fit fit_kernel(const std::vector<Tup>& t, const std::array<int64_t, 3>& max_factor, int64_t max_iter) {
  int64_t n = static_cast<int64_t>(t.size());
  Fit best;
  best.uops = t;
  int64_t best_k = n;
  auto sub = [](const Tup& a, const Tup& b) { return Tup{a.d - b.d, a.s - b.s, a.w - b.w}; };
  auto ok_factor = [&](const Tup& f) {
    return f.d >= 0 && f.s >= 0 && f.w >= 0 && f.d <= max_factor[0] && f.s <= max_factor[1] && f.w <= max_factor[2];
  };
  for (int64_t e_out : divisors(n)) {
    if (e_out > max_iter) break;
    for (int64_t e_in : divisors(n / e_out)) {
      if (e_in > max_iter) break;
      int64_t k = n / (e_out * e_in);
      if (k >= best_k) continue;
      Tup fo = e_out > 1 ? sub(t[e_in * k], t[0]) : Tup{};
      Tup fi = e_in > 1 ? sub(t[k], t[0]) : Tup{};
      if (!ok_factor(fo) || !ok_factor(fi)) continue;
      bool good = true;
      for (int64_t i = 0; i < e_out && good; ++i)
        for (int64_t j = 0; j < e_in && good; ++j)
          for (int64_t kk = 0; kk < k; ++kk) {
            const Tup& x = t[(i * e_in + j) * k + kk];
            const Tup& u = t[kk];
            if (x.d != u.d + i * fo.d + j * fi.d || x.s != u.s + i * fo.s + j * fi.s || x.w != u.w + i * fo.w + j * fi.w) {
              good = false;
              break;
            }
          }
      if (!good) continue;
      best_k = k;
      best.e_out = e_out;
      best.e_in = e_in;
      best.f_out = fo;
      best.f_in = fi;
      best.uops.assign(t.begin(), t.begin() + k);
    }
  }
  return best;
}

struct Spad {
  std::string name;
  hw::MemType mem = hw::MemType::kInp;
  int64_t elems = 0;
  bool placed = false;
  bool owner = false;  // holds its own range (not an alias of another tensor's)
  int64_t base = 0;
};

struct ArgBuf {
  int index = 0;
  int bits = 8;
  std::string name;
};

// One memory access of an instruction, in elements of the scratchpad.
struct Access {
  hw::MemType mem;
  int64_t lo, hi;  // [lo, hi)
  bool write;
};

// An instruction before the tokens are known.
struct Pending {
  Stage stage;
  std::vector<Access> accesses;
  ProgramOp op;
};

// Thrown by a bank-aware ACC layout that ran out of room; codegen() then starts over
// with first fit everywhere.
struct AccLayoutFull {};

class Codegen {
 public:
  // `centre_acc`: ACC tensors are placed centred on ACC's bank boundary where they fit
  // (see place()).
  Codegen(const Env& env, const schedule::LoweredFunc& f, bool centre_acc)
      : env_(env), f_(f), centre_acc_(centre_acc), layout_(env.config()), prog_(f.name, env.config()),
        eval_(vars_) {
    for (size_t i = 0; i < f.args.size(); ++i) {
      const ir::Buffer& b = f.args[i];
      if (!b->dtype.is_int() || b->dtype.lanes() != 1) fail("argument '" + b->name + "' must be a signed integer tensor");
      ProgramArg a;
      a.name = b->name;
      a.bits = b->dtype.bits();
      for (const ir::Expr& d : b->shape) {
        const int64_t* v = ir::as_const_int(d);
        if (!v) fail("argument '" + b->name + "' has a non-constant shape");
        a.shape.push_back(*v);
      }
      prog_.add_arg(a);
      args_[b->data.get()] = ArgBuf{static_cast<int>(i), a.bits, b->name};
    }
  }

  Program run() {
    exec(f_.body);
    finalize();
    return std::move(prog_);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw CompileError("vta codegen of '" + f_.name + "': " + why);
  }

  // ------------------------------------------------------------------ host walk

  void exec(const ir::Stmt& s) {
    using K = ir::NodeKind;
    switch (s.kind()) {
      case K::For: {
        const auto* f = s.as<ir::ForNode>();
        int64_t mn = eval_(f->min), ext = eval_(f->extent);
        for (int64_t v = mn; v < mn + ext; ++v) {
          vars_[f->var.get()] = v;
          exec(f->body);
        }
        vars_.erase(f->var.get());
        return;
      }
      case K::Seq:
        for (const ir::Stmt& c : s.as<ir::SeqNode>()->seq) exec(c);
        return;
      case K::LetStmt: {
        const auto* l = s.as<ir::LetStmtNode>();
        vars_[l->var.get()] = eval_(l->value);
        exec(l->body);
        vars_.erase(l->var.get());
        return;
      }
      case K::IfThenElse: {
        const auto* i = s.as<ir::IfThenElseNode>();
        if (eval_(i->cond)) exec(i->then_case);
        else if (i->else_case.defined()) exec(i->else_case);
        return;
      }
      case K::Attr: {
        const auto* a = s.as<ir::AttrNode>();
        if (a->key == std::string("pragma_") + kDmaCopy) return emit_dma(a->body);
        if (a->key == std::string("pragma_") + kAlu) return emit_alu(a->body);
        if (a->key == std::string("pragma_") + kUopScope) return emit_gemm(a->body);
        return exec(a->body);
      }
      case K::Allocate: return exec_allocate(s.as<ir::AllocateNode>());
      case K::Evaluate: {
        const auto* c = s.as<ir::EvaluateNode>()->value.as<ir::CallNode>();
        if (c && (c->name == kGemmCall || c->name == kGemmResetCall)) return emit_gemm(s);
        if (ir::as_const_int(s.as<ir::EvaluateNode>()->value)) return;
        fail("'" + brief(s) + "' is not an accelerator operation");
      }
      case K::Store:
        fail("'" + brief(s) +
             "' runs outside every accelerator region: give its stage a dma_copy or alu pragma, or tensorize it");
      default: fail("unexpected statement '" + brief(s) + "'");
    }
  }

  void exec_allocate(const ir::AllocateNode* a) {
    if (!Env::is_scratchpad(a->scope)) {
      fail("'" + a->buffer_var.name() + "' is allocated in scope '" + a->scope +
           "'; every intermediate tensor of a VTA program lives in a scratchpad (" + kInpScope + ", " + kWgtScope + ", " +
           kAccScope + ")");
    }
    Spad sp;
    sp.name = a->buffer_var.name();
    sp.mem = env_.mem_type(a->scope);
    int64_t extent = eval_(a->extent);
    int64_t elem = env_.elem_scalars(sp.mem);
    if (extent % elem != 0) {
      fail(fmt::format("'{}' has {} scalars, not a whole number of {}-scalar {} elements", sp.name, extent, elem,
                       hw::mem_type_name(sp.mem)));
    }
    sp.elems = extent / elem;
    const ir::VarNode* key = a->buffer_var.get();
    spads_[key] = sp;
    exec(a->body);
    Spad& done = spads_[key];
    if (done.placed && done.owner) used_[static_cast<int>(done.mem)].erase(done.base);
    spads_.erase(key);
  }

  // True when [at, at + n) overlaps no range in use.
  static bool free_range(const std::map<int64_t, int64_t>& used, int64_t at, int64_t n) {
    if (at < 0) return false;
    for (const auto& [start, len] : used)
      if (start < at + n && at < start + len) return false;
    return true;
  }

  // Gives a scratchpad tensor its range: first fit in its buffer. With centre_acc_, an
  // ACC tensor is first tried centred on the middle of ACC, the boundary of the RTL's
  // two ACC banks (docs/hardware.md): virtual threads make a tensor one copy per
  // thread, back to back, so two threads' copies then sit in different banks, and the
  // store module reading one thread's results does not wait for compute working on the
  // other's. Centring can leave too little contiguous room for a later tensor; then
  // the whole program is generated again with first fit (AccLayoutFull).
  void place(Spad& sp) {
    if (sp.placed) return;
    auto& used = used_[static_cast<int>(sp.mem)];
    int64_t depth = env_.depth(sp.mem);
    const bool centre = centre_acc_ && sp.mem == hw::MemType::kAcc;
    int64_t at = depth / 2 - sp.elems / 2;
    if (!centre || sp.elems > depth || !free_range(used, at, sp.elems)) {
      at = 0;
      for (const auto& [start, len] : used) {
        if (start - at >= sp.elems) break;
        at = std::max(at, start + len);
      }
    }
    if (at + sp.elems > depth) {
      if (centre) throw AccLayoutFull{};
      std::string live;
      for (const auto& [start, len] : used) live += fmt::format(" [{}, {})", start, start + len);
      fail(fmt::format("'{}' needs {} {} elements but only {} of {} are free (in use:{}); choose smaller tiles", sp.name,
                       sp.elems, hw::mem_type_name(sp.mem), depth - at, depth, live));
    }
    used[at] = sp.elems;
    sp.base = at;
    sp.placed = true;
    sp.owner = true;
  }

  Spad* spad_of(const ir::Var& v) {
    auto it = spads_.find(v.get());
    return it == spads_.end() ? nullptr : &it->second;
  }

  // The element of scratchpad tensor `sp` that flat scalar index `idx` starts.
  int64_t element(const Spad& sp, int64_t idx, const char* what) const {
    int64_t elem = env_.elem_scalars(sp.mem);
    if (idx % elem != 0) fail(fmt::format("{} of '{}' at scalar {} is not at an element boundary", what, sp.name, idx));
    int64_t e = idx / elem;
    if (e < 0 || e >= sp.elems) fail(fmt::format("{} of '{}' at element {} is outside its {} elements", what, sp.name, e, sp.elems));
    return sp.base + e;
  }

  // ------------------------------------------------------------------ enumeration

  // A leaf of a region: a store or call, with the loops that make up one element
  // (bound to their first iteration; `at_last` rebinds them to the last).
  struct Leaf {
    const ir::StoreNode* store = nullptr;
    const ir::CallNode* call = nullptr;
    std::vector<const ir::ForNode*> elem_loops;
  };

  void walk(const ir::Stmt& s, int64_t elem, const std::function<void(const Leaf&)>& cb) {
    using K = ir::NodeKind;
    switch (s.kind()) {
      case K::For: {
        if (elem > 1) {
          std::vector<const ir::ForNode*> chain;
          ir::Stmt b = s;
          while (const auto* f = b.as<ir::ForNode>()) {
            chain.push_back(f);
            b = f->body;
          }
          if (const auto* st = b.as<ir::StoreNode>()) {
            int64_t prod = 1;
            for (size_t i = chain.size(); i-- > 0;) {
              prod *= eval_(chain[i]->extent);
              if (prod == elem) {
                walk_chain(chain, 0, i, st, cb);
                return;
              }
              if (prod > elem) break;
            }
          }
        }
        const auto* f = s.as<ir::ForNode>();
        int64_t mn = eval_(f->min), ext = eval_(f->extent);
        for (int64_t v = mn; v < mn + ext; ++v) {
          vars_[f->var.get()] = v;
          walk(f->body, elem, cb);
        }
        vars_.erase(f->var.get());
        return;
      }
      case K::Seq:
        for (const ir::Stmt& c : s.as<ir::SeqNode>()->seq) walk(c, elem, cb);
        return;
      case K::LetStmt: {
        const auto* l = s.as<ir::LetStmtNode>();
        vars_[l->var.get()] = eval_(l->value);
        walk(l->body, elem, cb);
        vars_.erase(l->var.get());
        return;
      }
      case K::IfThenElse: {
        const auto* i = s.as<ir::IfThenElseNode>();
        if (eval_(i->cond)) walk(i->then_case, elem, cb);
        else if (i->else_case.defined()) walk(i->else_case, elem, cb);
        return;
      }
      case K::Attr: return walk(s.as<ir::AttrNode>()->body, elem, cb);
      case K::Store:
        if (elem > 1) fail(fmt::format("'{}' is not inside loops that cover whole {}-scalar elements", brief(s), elem));
        cb(Leaf{s.as<ir::StoreNode>(), nullptr, {}});
        return;
      case K::Evaluate: {
        const auto* c = s.as<ir::EvaluateNode>()->value.as<ir::CallNode>();
        if (!c) return;
        cb(Leaf{nullptr, c, {}});
        return;
      }
      default: fail("'" + brief(s) + "' cannot be part of an accelerator instruction");
    }
  }

  void walk_chain(const std::vector<const ir::ForNode*>& chain, size_t i, size_t elem_from, const ir::StoreNode* st,
                  const std::function<void(const Leaf&)>& cb) {
    if (i == elem_from) {
      Leaf leaf{st, nullptr, {chain.begin() + static_cast<std::ptrdiff_t>(elem_from), chain.end()}};
      bind_elem(leaf, false);
      cb(leaf);
      for (const ir::ForNode* f : leaf.elem_loops) vars_.erase(f->var.get());
      return;
    }
    const ir::ForNode* f = chain[i];
    int64_t mn = eval_(f->min), ext = eval_(f->extent);
    for (int64_t v = mn; v < mn + ext; ++v) {
      vars_[f->var.get()] = v;
      walk_chain(chain, i + 1, elem_from, st, cb);
    }
    vars_.erase(f->var.get());
  }

  void bind_elem(const Leaf& leaf, bool last) {
    for (const ir::ForNode* f : leaf.elem_loops) vars_[f->var.get()] = eval_(f->min) + (last ? eval_(f->extent) - 1 : 0);
  }

  // Evaluates `e` at the first and the last scalar of the leaf's element.
  std::pair<int64_t, int64_t> first_last(const Leaf& leaf, const ir::Expr& e) {
    bind_elem(leaf, false);
    int64_t a = eval_(e);
    bind_elem(leaf, true);
    int64_t b = eval_(e);
    bind_elem(leaf, false);
    return {a, b};
  }

  // ------------------------------------------------------------------ tokens

  void instruction(Stage stage, std::vector<Access> accesses, const ProgramOp& op) {
    pending_.push_back(Pending{stage, std::move(accesses), op});
  }

  static bool conflict(const Pending& a, const Pending& b) {
    for (const Access& x : a.accesses)
      for (const Access& y : b.accesses) {
        auto key = [](hw::MemType m) { return m == hw::MemType::kOut ? hw::MemType::kAcc : m; };
        if (key(x.mem) == key(y.mem) && (x.write || y.write) && x.lo < y.hi && y.lo < x.hi) return true;
      }
    return false;
  }

  // The load module runs its queue in order, so a run of loads is best issued in the
  // order compute needs them: virtual threads give [inp t0, inp t1, wgt t0, wgt t1,
  // gemm t0, gemm t1], and issuing wgt t0 before inp t1 lets gemm t0 start while
  // thread 1's data is still coming. A run is reordered only when its loads touch
  // disjoint ranges, so the result is the same.
  void order_loads() {
    const size_t kLookahead = 256;
    size_t n = pending_.size();
    for (size_t b = 0; b < n;) {
      size_t e = b;
      while (e < n && pending_[e].stage == Stage::kLoad) ++e;
      if (e - b > 1) {
        bool disjoint = true;
        for (size_t i = b; i < e && disjoint; ++i)
          for (size_t j = i + 1; j < e && disjoint; ++j) disjoint = !conflict(pending_[i], pending_[j]);
        if (disjoint) {
          std::vector<std::pair<size_t, size_t>> key;  // first consumer, position
          for (size_t i = b; i < e; ++i) {
            size_t first = SIZE_MAX;
            for (size_t j = e; j < n && j < e + kLookahead; ++j)
              if (pending_[j].stage != Stage::kLoad && conflict(pending_[i], pending_[j])) {
                first = j;
                break;
              }
            key.emplace_back(first, i);
          }
          std::stable_sort(key.begin(), key.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
          std::vector<Pending> run;
          for (const auto& [first, i] : key) run.push_back(pending_[i]);
          std::move(run.begin(), run.end(), pending_.begin() + static_cast<std::ptrdiff_t>(b));
        }
      }
      b = std::max(e, b + 1);
    }
  }

  // Virtual threads give the epilogue as [shr t0, shr t1, clip t0, clip t1, ...]; the
  // store of thread 0 can start only after its last ALU instruction, and the next
  // tile's reset of thread 0 waits for that store. Thread-major order [shr t0, clip t0,
  // ..., shr t1, clip t1, ...] lets the store of thread 0 overlap thread 1's epilogue.
  // A run of ALU instructions is stably sorted by the accumulator range it writes when
  // instructions on different ranges do not conflict, so the result is the same.
  void order_alu_runs() {
    size_t n = pending_.size();
    auto key = [&](const Pending& p) {
      for (const Access& a : p.accesses)
        if (a.write) return a.lo;
      return int64_t{-1};
    };
    for (size_t b = 0; b < n;) {
      size_t e = b;
      while (e < n && pending_[e].op.kind == ProgramOp::Kind::kAlu) ++e;
      if (e - b > 2) {
        bool ok = true;
        for (size_t i = b; i < e && ok; ++i)
          for (size_t j = i + 1; j < e && ok; ++j)
            if (key(pending_[i]) != key(pending_[j]) && conflict(pending_[i], pending_[j])) ok = false;
        if (ok)
          std::stable_sort(pending_.begin() + static_cast<std::ptrdiff_t>(b), pending_.begin() + static_cast<std::ptrdiff_t>(e),
                           [&](const Pending& x, const Pending& y) { return key(x) < key(y); });
      }
      b = std::max(e, b + 1);
    }
  }

  // Dependency tokens, once every instruction is known: instruction X of module S must
  // wait for the latest earlier instruction P of module T whose access conflicts with
  // X's (overlapping ranges, one of them a write). P pushes a token right after it
  // runs, X pops it. Waits already implied by an earlier pop of S are skipped, so the
  // pushes of each pair of modules come in program order, as the token queues need.
  void finalize() {
    order_loads();
    order_alu_runs();
    size_t n = pending_.size();
    std::vector<std::array<bool, 3>> push_after(n), pop_before(n);
    std::array<std::array<int64_t, 3>, 3> covered;
    for (auto& row : covered) row.fill(-1);
    struct Seen {
      int64_t idx;
      Stage stage;
      int64_t lo, hi;
      bool write;
    };
    std::map<int, std::vector<Seen>> history;
    auto key_of = [](hw::MemType m) { return static_cast<int>(m == hw::MemType::kOut ? hw::MemType::kAcc : m); };
    for (size_t i = 0; i < n; ++i) {
      const Pending& x = pending_[i];
      int s = static_cast<int>(x.stage);
      std::array<int64_t, 3> best{-1, -1, -1};
      for (const Access& a : x.accesses) {
        for (const Seen& p : history[key_of(a.mem)]) {
          int t = static_cast<int>(p.stage);
          if (t == s || !(p.write || a.write) || p.hi <= a.lo || a.hi <= p.lo || p.idx <= covered[t][s]) continue;
          best[t] = std::max(best[t], p.idx);
        }
      }
      for (int t = 0; t < 3; ++t) {
        if (best[t] < 0) continue;
        push_after[static_cast<size_t>(best[t])][s] = true;
        pop_before[i][t] = true;
        covered[t][s] = best[t];
      }
      for (const Access& a : x.accesses) {
        auto& list = history[key_of(a.mem)];
        // A later access of the same module that covers an earlier one replaces it: any
        // conflict with the earlier one is a conflict with the later one.
        std::erase_if(list, [&](const Seen& p) {
          return p.stage == x.stage && a.lo <= p.lo && p.hi <= a.hi && (a.write || !p.write);
        });
        list.push_back(Seen{static_cast<int64_t>(i), x.stage, a.lo, a.hi, a.write});
      }
    }
    for (size_t i = 0; i < n; ++i) {
      const Pending& x = pending_[i];
      for (int t = 0; t < 3; ++t) {
        if (!pop_before[i][t]) continue;
        ProgramOp p;
        p.kind = ProgramOp::Kind::kDepPop;
        p.from = static_cast<Stage>(t);
        p.to = x.stage;
        prog_.add_op(p);
      }
      prog_.add_op(x.op);
      for (int t = 0; t < 3; ++t) {
        if (!push_after[i][t]) continue;
        ProgramOp p;
        p.kind = ProgramOp::Kind::kDepPush;
        p.from = x.stage;
        p.to = static_cast<Stage>(t);
        prog_.add_op(p);
      }
    }
  }

  // ------------------------------------------------------------------ DMA

  struct DmaElem {
    int64_t dst = 0;
    int64_t src = 0;
    bool pad = false;
  };

  void emit_dma(const ir::Stmt& body) {
    if (try_dma(body)) return;
    if (const auto* f = body.as<ir::ForNode>()) {
      int64_t mn = eval_(f->min), ext = eval_(f->extent);
      for (int64_t v = mn; v < mn + ext; ++v) {
        vars_[f->var.get()] = v;
        emit_dma(f->body);
      }
      vars_.erase(f->var.get());
      return;
    }
    if (const auto* q = body.as<ir::SeqNode>()) {
      for (const ir::Stmt& c : q->seq) emit_dma(c);
      return;
    }
    fail("the copy '" + brief(body) + "' is not a 2D transfer, even one row at a time");
  }

  // One 2D transfer for the whole of `body`, if its elements form one.
  bool try_dma(const ir::Stmt& body) {
    // Direction and element size from the first store.
    const ir::StoreNode* first = nullptr;
    ir::post_order_visit(body, [&](const ir::Node* n) {
      if (!first && n->kind == ir::NodeKind::Store) first = static_cast<const ir::StoreNode*>(n);
    });
    if (!first) fail("a dma_copy region without a store: '" + brief(body) + "'");
    Spad* dst_sp = spad_of(first->buffer_var);
    bool is_load = dst_sp != nullptr;
    hw::MemType mem = is_load ? dst_sp->mem : hw::MemType::kOut;
    int64_t elem = env_.elem_scalars(mem);
    std::vector<DmaElem> elems;
    int arg = -1;
    Spad* sp = nullptr;
    walk(body, elem, [&](const Leaf& leaf) {
      if (!leaf.store) fail("a call inside a dma_copy region");
      const ir::StoreNode* st = leaf.store;
      if (is_load) {
        Spad* d = spad_of(st->buffer_var);
        if (!d || d != dst_sp) fail("a dma_copy region stores to more than one scratchpad tensor");
        ir::Expr v = st->value;
        ir::Expr cond;
        if (const auto* sel = v.as<ir::SelectNode>()) {
          const int64_t* z = ir::as_const_int(sel->false_value);
          if (!z || *z != 0) fail("a padded copy must select zero outside the data: '" + ir::to_string(v) + "'");
          cond = sel->cond;
          v = sel->true_value;
        }
        while (const auto* c = v.as<ir::CastNode>()) v = c->value;
        const auto* ld = v.as<ir::LoadNode>();
        if (!ld || !args_.count(ld->buffer_var.get()))
          fail("a load region must copy an argument tensor into the scratchpad: '" + ir::to_string(st->value) + "'");
        const ArgBuf& ab = args_.at(ld->buffer_var.get());
        if (arg >= 0 && arg != ab.index) fail("a dma_copy region reads more than one tensor");
        arg = ab.index;
        auto [d0, d1] = first_last(leaf, st->index);
        if (d1 - d0 != elem - 1) fail(fmt::format("the copy into '{}' is not contiguous within an element", d->name));
        DmaElem e;
        e.dst = d0;
        bool in = !cond.defined() || first_last(leaf, cond).first != 0;
        if (cond.defined() && (first_last(leaf, cond).first != 0) != (first_last(leaf, cond).second != 0))
          fail(fmt::format("the padding of '{}' changes inside an element", d->name));
        if (!in) {
          e.pad = true;
        } else {
          auto [s0, s1] = first_last(leaf, ld->index);
          if (s1 - s0 != elem - 1 || s0 % elem != 0)
            fail(fmt::format("the copy of '{}' into '{}' does not read whole elements", ab.name, d->name));
          e.src = s0 / elem;
        }
        elems.push_back(e);
      } else {
        auto ait = args_.find(st->buffer_var.get());
        if (ait == args_.end())
          fail("a dma_copy region must store into a scratchpad tensor or an argument: '" + brief(body) + "'");
        if (arg >= 0 && arg != ait->second.index) fail("a store region writes more than one tensor");
        arg = ait->second.index;
        ir::Expr v = st->value;
        while (const auto* c = v.as<ir::CastNode>()) v = c->value;
        const auto* ld = v.as<ir::LoadNode>();
        Spad* s = ld ? spad_of(ld->buffer_var) : nullptr;
        if (!s || s->mem != hw::MemType::kAcc)
          fail("a store region must copy an ACC tensor to an argument: '" + ir::to_string(st->value) + "'");
        if (sp && sp != s) fail("a store region reads more than one ACC tensor");
        sp = s;
        if (!s->placed) fail(fmt::format("'{}' is stored before anything computed it", s->name));
        auto [s0, s1] = first_last(leaf, ld->index);
        auto [d0, d1] = first_last(leaf, st->index);
        if (s1 - s0 != elem - 1 || d1 - d0 != elem - 1 || d0 % elem != 0)
          fail(fmt::format("the store of '{}' into '{}' does not move whole elements", s->name, ait->second.name));
        elems.push_back(DmaElem{d0 / elem, element(*s, s0, "the store"), false});
      }
    });
    if (elems.empty()) return true;
    if (is_load) {
      place(*dst_sp);
      int expected_bits = mem == hw::MemType::kInp   ? env_.config().inp_width()
                          : mem == hw::MemType::kWgt ? env_.config().wgt_width()
                                                     : env_.config().acc_width();
      if (prog_.args()[arg].bits != expected_bits)
        fail(fmt::format("'{}' is int{}, a {} load needs int{}", prog_.args()[arg].name, prog_.args()[arg].bits,
                         hw::mem_type_name(mem), expected_bits));
      for (DmaElem& e : elems) e.dst = element(*dst_sp, e.dst, "the load");
      return fit_load(elems, mem, arg);
    }
    return fit_store(elems, arg);
  }

  bool fit_load(const std::vector<DmaElem>& el, hw::MemType mem, int arg) {
    int64_t n = static_cast<int64_t>(el.size());
    for (int64_t i = 0; i < n; ++i)
      if (el[i].dst != el[0].dst + i) return false;
    int64_t max_pad = layout_.field_max(hw::Opcode::kLoad, hw::Field::kYPad0);
    int64_t max_size = layout_.field_max(hw::Opcode::kLoad, hw::Field::kXSize);
    int64_t max_rows = layout_.field_max(hw::Opcode::kLoad, hw::Field::kYSize);
    int64_t max_stride = layout_.field_max(hw::Opcode::kLoad, hw::Field::kXStride);
    std::vector<int64_t> ds = divisors(n);
    for (auto it = ds.rbegin(); it != ds.rend(); ++it) {
      int64_t r = *it, rows = n / r;
      auto row_pad = [&](int64_t y) {
        for (int64_t x = 0; x < r; ++x)
          if (!el[y * r + x].pad) return false;
        return true;
      };
      int64_t y0 = 0, y1 = 0;
      while (y0 < rows && row_pad(y0)) ++y0;
      if (y0 == rows) continue;
      while (row_pad(rows - 1 - y1)) ++y1;
      int64_t x0 = 0;
      while (el[y0 * r + x0].pad) ++x0;
      int64_t xs = 0;
      while (x0 + xs < r && !el[y0 * r + x0 + xs].pad) ++xs;
      int64_t x1 = r - x0 - xs;
      int64_t ys = rows - y0 - y1;
      int64_t src0 = el[y0 * r + x0].src;
      int64_t stride = ys > 1 ? el[(y0 + 1) * r + x0].src - src0 : xs;
      if (y0 > max_pad || y1 > max_pad || x0 > max_pad || x1 > max_pad || xs > max_size || ys > max_rows ||
          stride < 0 || stride > max_stride)
        continue;
      bool good = true;
      for (int64_t y = 0; y < rows && good; ++y)
        for (int64_t x = 0; x < r; ++x) {
          const DmaElem& e = el[y * r + x];
          bool inside = y >= y0 && y < y0 + ys && x >= x0 && x < x0 + xs;
          if (inside != !e.pad || (inside && e.src != src0 + (y - y0) * stride + (x - x0))) {
            good = false;
            break;
          }
        }
      if (!good) continue;
      ProgramOp op;
      op.kind = ProgramOp::Kind::kLoad;
      op.mem = mem;
      op.sram = static_cast<uint32_t>(el[0].dst);
      op.arg = arg;
      op.dram_elem = static_cast<uint64_t>(src0);
      op.y_size = static_cast<uint32_t>(ys);
      op.x_size = static_cast<uint32_t>(xs);
      op.x_stride = static_cast<uint32_t>(stride);
      op.pad = runtime::Pad{static_cast<uint32_t>(y0), static_cast<uint32_t>(y1), static_cast<uint32_t>(x0),
                            static_cast<uint32_t>(x1)};
      Stage stage = mem == hw::MemType::kAcc ? Stage::kCompute : Stage::kLoad;
      instruction(stage, {Access{mem, el[0].dst, el[0].dst + n, true}}, op);
      return true;
    }
    return false;
  }

  bool fit_store(const std::vector<DmaElem>& el, int arg) {
    // el[i].dst: DRAM element, el[i].src: OUT element.
    int64_t n = static_cast<int64_t>(el.size());
    for (int64_t i = 0; i < n; ++i)
      if (el[i].src != el[0].src + i) return false;
    int64_t max_size = layout_.field_max(hw::Opcode::kStore, hw::Field::kXSize);
    int64_t max_stride = layout_.field_max(hw::Opcode::kStore, hw::Field::kXStride);
    std::vector<int64_t> ds = divisors(n);
    for (auto it = ds.rbegin(); it != ds.rend(); ++it) {
      int64_t r = *it, rows = n / r;
      if (r > max_size) continue;
      int64_t stride = rows > 1 ? el[r].dst - el[0].dst : r;
      if (stride < 0 || stride > max_stride) continue;
      bool good = true;
      for (int64_t y = 0; y < rows && good; ++y)
        for (int64_t x = 0; x < r; ++x)
          if (el[y * r + x].dst != el[0].dst + y * stride + x) {
            good = false;
            break;
          }
      if (!good) continue;
      ProgramOp op;
      op.kind = ProgramOp::Kind::kStore;
      op.mem = hw::MemType::kOut;
      op.sram = static_cast<uint32_t>(el[0].src);
      op.arg = arg;
      op.dram_elem = static_cast<uint64_t>(el[0].dst);
      op.y_size = static_cast<uint32_t>(rows);
      op.x_size = static_cast<uint32_t>(r);
      op.x_stride = static_cast<uint32_t>(stride);
      instruction(Stage::kStore, {Access{hw::MemType::kOut, el[0].src, el[0].src + n, false}}, op);
      return true;
    }
    return false;
  }

  // ------------------------------------------------------------------ kernels

  void emit_kernel(runtime::KernelKind kind, const std::vector<Tup>& t, bool reset, hw::AluOp alu_op, bool use_imm,
                   int64_t imm, const std::string& what) {
    bool gemm = kind == runtime::KernelKind::kGemm;
    hw::Opcode opc = gemm ? hw::Opcode::kGemm : hw::Opcode::kAlu;
    std::array<int64_t, 3> max_factor{layout_.field_max(opc, hw::Field::kDstFactorOut),
                                       layout_.field_max(opc, hw::Field::kSrcFactorOut),
                                       gemm ? layout_.field_max(opc, hw::Field::kWgtFactorOut) : 0};
    int64_t max_iter = std::min(layout_.field_max(opc, hw::Field::kIterOut), layout_.field_max(opc, hw::Field::kIterIn));
    Fit fit = fit_kernel(t, max_factor, max_iter);
    if (static_cast<int64_t>(fit.uops.size()) > env_.depth(hw::MemType::kUop)) {
      fail(fmt::format("{} needs {} micro-ops, more than the uop buffer's {}; choose smaller tiles", what,
                       fit.uops.size(), env_.depth(hw::MemType::kUop)));
    }
    std::string name = f_.name + "." + what;
    runtime::UopKernelBuilder b = gemm ? runtime::UopKernelBuilder::gemm(name, reset)
                                  : use_imm ? runtime::UopKernelBuilder::alu_imm(name, alu_op, static_cast<int32_t>(imm))
                                            : runtime::UopKernelBuilder::alu(name, alu_op);
    bool loops = fit.e_out > 1 || fit.e_in > 1;
    if (loops) {
      b.loop_begin(static_cast<uint32_t>(fit.e_out), static_cast<uint32_t>(fit.f_out.d), static_cast<uint32_t>(fit.f_out.s),
                   static_cast<uint32_t>(fit.f_out.w));
      b.loop_begin(static_cast<uint32_t>(fit.e_in), static_cast<uint32_t>(fit.f_in.d), static_cast<uint32_t>(fit.f_in.s),
                   static_cast<uint32_t>(fit.f_in.w));
    }
    for (const Tup& u : fit.uops)
      b.push(static_cast<uint32_t>(u.d), static_cast<uint32_t>(u.s), static_cast<uint32_t>(u.w));
    if (loops) b.loop_end().loop_end();
    ProgramOp op;
    op.kind = gemm ? ProgramOp::Kind::kGemm : ProgramOp::Kind::kAlu;
    op.kernel = prog_.add_kernel(b.finish());
    // Access ranges.
    auto range = [&](int64_t Tup::*m) {
      int64_t lo = INT64_MAX, hi = INT64_MIN;
      for (const Tup& x : t) {
        lo = std::min(lo, x.*m);
        hi = std::max(hi, x.*m);
      }
      return std::pair<int64_t, int64_t>{lo, hi + 1};
    };
    std::vector<Access> acc;
    auto [dl, dh] = range(&Tup::d);
    acc.push_back(Access{hw::MemType::kAcc, dl, dh, true});
    if (gemm && !reset) {
      auto [sl, sh] = range(&Tup::s);
      auto [wl, wh] = range(&Tup::w);
      acc.push_back(Access{hw::MemType::kInp, sl, sh, false});
      acc.push_back(Access{hw::MemType::kWgt, wl, wh, false});
    } else if (!gemm && !use_imm) {
      auto [sl, sh] = range(&Tup::s);
      acc.push_back(Access{hw::MemType::kAcc, sl, sh, false});
    }
    instruction(Stage::kCompute, acc, op);
  }

  // GEMM regions repeat with the same micro-ops (every tile, every reduction step);
  // enumerating them is the code generator's main cost, so a region's instructions
  // are remembered per value of the host variables it reads and the placement of the
  // scratchpad tensors it touches.
  void emit_gemm(const ir::Stmt& body) {
    RegionInfo& info = region_info(body);
    for (const ir::VarNode* v : info.written) {
      auto it = spads_.find(v);
      if (it != spads_.end()) place(it->second);
    }
    std::vector<int64_t> key;
    for (const ir::VarNode* v : info.free) {
      auto it = vars_.find(v);
      key.push_back(it == vars_.end() ? INT64_MIN : it->second);
    }
    for (const ir::VarNode* v : info.buffers) {
      auto it = spads_.find(v);
      key.push_back(it == spads_.end() || !it->second.placed ? -1 : it->second.base);
    }
    auto hit = info.cache.find(key);
    if (hit != info.cache.end()) {
      for (const Pending& p : hit->second) pending_.push_back(p);
      return;
    }
    size_t before = pending_.size();
    enumerate_gemm(body);
    info.cache[key] = std::vector<Pending>(pending_.begin() + static_cast<std::ptrdiff_t>(before), pending_.end());
  }

  struct RegionInfo {
    std::vector<const ir::VarNode*> free;     // host variables the region reads
    std::vector<const ir::VarNode*> buffers;  // buffers it accesses
    std::vector<const ir::VarNode*> written;  // accumulators it writes
    std::map<std::vector<int64_t>, std::vector<Pending>> cache;
  };

  RegionInfo& region_info(const ir::Stmt& body) {
    auto it = regions_.find(body.get());
    if (it != regions_.end()) return it->second;
    RegionInfo info;
    std::unordered_set<const ir::VarNode*> bound, seen, bufs, written;
    ir::post_order_visit(body, [&](const ir::Node* n) {
      if (n->kind == ir::NodeKind::For) bound.insert(static_cast<const ir::ForNode*>(n)->var.get());
      if (n->kind == ir::NodeKind::LetStmt) bound.insert(static_cast<const ir::LetStmtNode*>(n)->var.get());
      if (n->kind == ir::NodeKind::Load) bufs.insert(static_cast<const ir::LoadNode*>(n)->buffer_var.get());
      if (n->kind == ir::NodeKind::Call) {
        const auto* c = static_cast<const ir::CallNode*>(n);
        if (!c->args.empty())
          if (const auto* ld = c->args[0].as<ir::LoadNode>()) written.insert(ld->buffer_var.get());
      }
    });
    ir::post_order_visit(body, [&](const ir::Node* n) {
      if (n->kind != ir::NodeKind::Var) return;
      const auto* v = static_cast<const ir::VarNode*>(n);
      if (!bound.count(v) && !bufs.count(v) && seen.insert(v).second) info.free.push_back(v);
    });
    info.buffers.assign(bufs.begin(), bufs.end());
    std::sort(info.buffers.begin(), info.buffers.end());
    info.written.assign(written.begin(), written.end());
    return regions_.emplace(body.get(), std::move(info)).first->second;
  }

  void enumerate_gemm(const ir::Stmt& body) {
    std::vector<Tup> resets, updates;
    std::unordered_map<int64_t, bool> accumulated;
    walk(body, 1, [&](const Leaf& leaf) {
      if (!leaf.call || (leaf.call->name != kGemmCall && leaf.call->name != kGemmResetCall))
        fail("a GEMM region may contain only vta.gemm calls, found '" +
             (leaf.store ? brief(ir::Stmt()) : std::string(leaf.call->name)) + "'");
      const ir::CallNode* c = leaf.call;
      auto operand = [&](size_t i, hw::MemType want, bool write) {
        const auto* ld = c->args[i].as<ir::LoadNode>();
        Spad* sp = ld ? spad_of(ld->buffer_var) : nullptr;
        if (!sp || sp->mem != want)
          fail(fmt::format("operand {} of {} is not a {} scratchpad tensor: '{}'", i, c->name, hw::mem_type_name(want),
                           ir::to_string(c->args[i])));
        if (write) place(*sp);
        else if (!sp->placed) fail(fmt::format("'{}' is read by a GEMM before it was loaded", sp->name));
        return element(*sp, eval_(ld->index), c->name.c_str());
      };
      if (c->name == kGemmResetCall) {
        int64_t d = operand(0, hw::MemType::kAcc, true);
        if (accumulated.count(d))
          fail("a GEMM region resets an accumulator after accumulating into it; split the reduction differently");
        resets.push_back(Tup{d, 0, 0});
      } else {
        int64_t d = operand(0, hw::MemType::kAcc, true);
        updates.push_back(Tup{d, operand(1, hw::MemType::kInp, false), operand(2, hw::MemType::kWgt, false)});
        accumulated[d] = true;
      }
    });
    if (!resets.empty()) emit_kernel(runtime::KernelKind::kGemm, resets, true, hw::AluOp::kMin, false, 0, "gemm_reset");
    if (!updates.empty()) emit_kernel(runtime::KernelKind::kGemm, updates, false, hw::AluOp::kMin, false, 0, "gemm");
  }

  // ------------------------------------------------------------------ ALU

  struct AluForm {
    hw::AluOp op;
    ir::Expr a, b;  // operands: a is a load; b a load or an immediate
    bool commutative = false;
    bool negate_imm = false;
  };

  AluForm alu_form(const ir::Expr& v) const {
    using K = ir::NodeKind;
    auto bin = [&](hw::AluOp op, const ir::Expr& a, const ir::Expr& b, bool comm) { return AluForm{op, a, b, comm, false}; };
    switch (v.kind()) {
      case K::Add: return bin(hw::AluOp::kAdd, v.as<ir::AddNode>()->a, v.as<ir::AddNode>()->b, true);
      case K::Mul: return bin(hw::AluOp::kMul, v.as<ir::MulNode>()->a, v.as<ir::MulNode>()->b, true);
      case K::Min: return bin(hw::AluOp::kMin, v.as<ir::MinNode>()->a, v.as<ir::MinNode>()->b, true);
      case K::Max: return bin(hw::AluOp::kMax, v.as<ir::MaxNode>()->a, v.as<ir::MaxNode>()->b, true);
      case K::Sub: {
        const auto* s = v.as<ir::SubNode>();
        if (ir::as_const_int(s->b)) return AluForm{hw::AluOp::kAdd, s->a, s->b, false, true};
        break;
      }
      case K::Call: {
        const auto* c = v.as<ir::CallNode>();
        if (c->args.size() == 2 && c->name == "shift_right") return bin(hw::AluOp::kShr, c->args[0], c->args[1], false);
        if (c->args.size() == 2 && c->name == "shift_left" && ir::as_const_int(c->args[1]))
          return AluForm{hw::AluOp::kShr, c->args[0], c->args[1], false, true};
        break;
      }
      case K::Load: return AluForm{hw::AluOp::kShr, v, ir::make_int(0, v.dtype()), false, false};  // a copy
      default: break;
    }
    fail("'" + ir::to_string(v) + "' is not an ALU operation (add, mul, min, max, shifts, subtracting a constant)");
  }

  void emit_alu(const ir::Stmt& body) {
    struct Rec {
      const ir::StoreNode* st;
      int64_t d;
      Spad* a;
      int64_t ai;
      Spad* b;
      int64_t bi;
    };
    std::vector<Rec> recs;
    std::optional<AluForm> form;
    int64_t imm = 0;
    bool use_imm = false;
    int64_t elem = env_.elem_scalars(hw::MemType::kAcc);
    Spad* dst = nullptr;
    walk(body, elem, [&](const Leaf& leaf) {
      if (!leaf.store) fail("a call inside an alu region");
      const ir::StoreNode* st = leaf.store;
      Spad* d = spad_of(st->buffer_var);
      if (!d || d->mem != hw::MemType::kAcc) fail("an alu region must write an ACC tensor: '" + brief(ir::Stmt()) + "'");
      if (dst && dst != d) fail("an alu region writes more than one tensor");
      dst = d;
      AluForm fm = alu_form(st->value);
      if (!form) {
        form = fm;
        if (const int64_t* c = ir::as_const_int(fm.b)) {
          use_imm = true;
          imm = fm.negate_imm ? -*c : *c;
        } else if (fm.negate_imm) {
          fail("'" + ir::to_string(st->value) + "' is not an ALU operation");
        }
      }
      auto load_of = [&](const ir::Expr& e, const char* which) -> std::pair<Spad*, int64_t> {
        const auto* ld = e.as<ir::LoadNode>();
        Spad* sp = ld ? spad_of(ld->buffer_var) : nullptr;
        if (!sp || sp->mem != hw::MemType::kAcc)
          fail(fmt::format("the {} operand of '{}' is not an ACC tensor", which, ir::to_string(st->value)));
        if (!sp->placed) fail(fmt::format("'{}' is read by the ALU before anything wrote it", sp->name));
        auto [x0, x1] = first_last(leaf, ld->index);
        if (x1 - x0 != elem - 1) fail(fmt::format("the ALU reads '{}' not one whole element at a time", sp->name));
        return {sp, x0};
      };
      auto [d0, d1] = first_last(leaf, st->index);
      if (d1 - d0 != elem - 1) fail(fmt::format("the ALU writes '{}' not one whole element at a time", d->name));
      auto [a, ai] = load_of(fm.a, "first");
      Spad* b = nullptr;
      int64_t bi = 0;
      if (!use_imm) std::tie(b, bi) = load_of(fm.b, "second");
      recs.push_back(Rec{st, d0, a, ai, b, bi});
    });
    if (recs.empty()) return;
    // In place: dst is operand a (or b for commutative ops); an unplaced dst takes over
    // the storage of that operand.
    const Rec& r0 = recs.front();
    bool swap = false;
    if (!dst->placed) {
      int64_t off = (r0.ai - r0.d) / elem;
      dst->base = r0.a->base + off;
      dst->placed = true;
      dst->owner = false;
    } else if (!use_imm && form->commutative && r0.b && r0.b->placed &&
               element(*r0.b, r0.bi, "the ALU") == element(*dst, r0.d, "the ALU") &&
               element(*r0.a, r0.ai, "the ALU") != element(*dst, r0.d, "the ALU")) {
      swap = true;
    }
    std::vector<Tup> t;
    for (const Rec& r : recs) {
      int64_t d = element(*dst, r.d, "the ALU");
      Spad* in = swap ? r.b : r.a;
      int64_t ii = swap ? r.bi : r.ai;
      if (element(*in, ii, "the ALU") != d)
        fail(fmt::format("the ALU stage writing '{}' reads '{}' at another element; the ALU works in place", dst->name,
                         in->name));
      Tup x{d, 0, 0};
      if (!use_imm) x.s = swap ? element(*r.a, r.ai, "the ALU") : element(*r.b, r.bi, "the ALU");
      t.push_back(x);
    }
    int64_t max_imm = layout_.field_max(hw::Opcode::kAlu, hw::Field::kImm);
    if (use_imm && (imm > max_imm || imm < -max_imm - 1))
      fail(fmt::format("the immediate {} of the ALU stage writing '{}' does not fit the imm field", imm, dst->name));
    // SHR reads its amount from the low LOG_ACC_WIDTH bits, signed (shared/ISA.md).
    int64_t half = env_.config().acc_width() / 2;
    if (use_imm && form->op == hw::AluOp::kShr && (imm < -half || imm >= half))
      fail(fmt::format("the ALU stage writing '{}' shifts by {}; the ALU shifts by -{} to {}", dst->name,
                       form->negate_imm ? -imm : imm, half, half - 1));
    emit_kernel(runtime::KernelKind::kAlu, t, false, form->op, use_imm, imm, "alu");
  }


  const Env& env_;
  const schedule::LoweredFunc& f_;
  bool centre_acc_;
  hw::InsnLayout layout_;
  Program prog_;
  VarMap vars_;
  Eval eval_;
  std::unordered_map<const ir::VarNode*, ArgBuf> args_;
  std::unordered_map<const ir::VarNode*, Spad> spads_;
  std::array<std::map<int64_t, int64_t>, 5> used_;  // per memory type: start -> length
  std::vector<Pending> pending_;
  std::unordered_map<const ir::StmtNode*, RegionInfo> regions_;
};

}  // namespace

Program codegen(const Env& env, const schedule::LoweredFunc& f) {
  try {
    return Codegen(env, f, /*centre_acc=*/true).run();
  } catch (const AccLayoutFull&) {
    return Codegen(env, f, /*centre_acc=*/false).run();
  }
}

}  // namespace kiln::vta
