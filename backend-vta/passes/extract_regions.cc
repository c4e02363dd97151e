// extract_regions: the host part of a lowered function, run at compile time. Shapes
// are static, so the loops outside every accelerator region run here with concrete
// values; each region they meet becomes an instruction whose content is enumerated
// (pragma_dma_copy: elements; pragma_vta_uop_scope or a lone vta.gemm: micro-ops;
// pragma_alu: stores), as elements of the scratchpad tensors it touches. Nothing is
// placed yet: the lifetimes of the tensors are recorded as events for
// plan_scratchpad.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "backend-vta/intrin.h"
#include "backend-vta/passes/passes.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/printer.h"
#include "support/integer.h"

namespace kiln::vta::passes {

namespace {

using hw::Module;
using VarMap = std::unordered_map<const ir::VarNode*, int64_t>;

// Integer evaluation of index expressions and conditions with the host loops bound.
class Eval {
 public:
  Eval(const VarMap& vars, const InsnFunc& fn) : vars_(vars), fn_(fn) {}
  int64_t operator()(const ir::Expr& e) const { return eval(e); }

 private:
  int64_t eval(const ir::Expr& e) const {
    using K = ir::NodeKind;
    switch (e.kind()) {
      case K::IntImm: return e.as<ir::IntImmNode>()->value;
      case K::Var: {
        auto it = vars_.find(e.as<ir::VarNode>());
        if (it == vars_.end()) fn_.fail("'" + e.as<ir::VarNode>()->name + "' has no value at compile time");
        return it->second;
      }
#define KILN_BIN(N, expr)                                     \
  case K::N: {                                                \
    const auto* n = static_cast<const ir::N##Node*>(e.get()); \
    int64_t a = eval(n->a), b = eval(n->b);                   \
    return expr;                                              \
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
        if (b == 0) fn_.fail("division by zero in " + ir::to_string(e));
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
    fn_.fail("cannot evaluate " + ir::to_string(e) + " at compile time");
  }
  const VarMap& vars_;
  const InsnFunc& fn_;
};

class Extractor {
 public:
  Extractor(const Env& env, const schedule::LoweredFunc& f) : env_(env), f_(f), eval_(vars_, fn_) {
    fn_.name = f.name;
    fn_.program = Program(f.name, env.config());
    for (size_t i = 0; i < f.args.size(); ++i) {
      const ir::Buffer& b = f.args[i];
      if (!b->dtype.is_int() || b->dtype.lanes() != 1) fn_.fail("argument '" + b->name + "' must be a signed integer tensor");
      ProgramArg a;
      a.name = b->name;
      a.bits = b->dtype.bits();
      for (const ir::Expr& d : b->shape) {
        const int64_t* v = ir::as_const_int(d);
        if (!v) fn_.fail("argument '" + b->name + "' has a non-constant shape");
        a.shape.push_back(*v);
      }
      fn_.program.add_arg(a);
      args_[b->data.get()] = static_cast<int>(i);
    }
  }

  InsnFunc run() {
    exec(f_.body);
    return std::move(fn_);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { fn_.fail(why); }

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
        if (a->key == std::string("pragma_") + kDmaCopy) return extract_dma(a->body);
        if (a->key == std::string("pragma_") + kAlu) return extract_alu(a->body);
        if (a->key == std::string("pragma_") + kUopScope) return extract_gemm(a->body);
        return exec(a->body);
      }
      case K::Allocate: return exec_allocate(s.as<ir::AllocateNode>());
      case K::Evaluate: {
        const auto* c = s.as<ir::EvaluateNode>()->value.as<ir::CallNode>();
        if (c && (c->name == kGemmCall || c->name == kGemmResetCall)) return extract_gemm(s);
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
    SpadTensor sp;
    sp.name = a->buffer_var.name();
    sp.mem = env_.mem_type(a->scope);
    int64_t extent = eval_(a->extent);
    int64_t elem = env_.elem_scalars(sp.mem);
    if (extent % elem != 0) {
      fail(fmt::format("'{}' has {} scalars, not a whole number of {}-scalar {} elements", sp.name, extent, elem,
                       hw::mem_type_name(sp.mem)));
    }
    sp.elems = extent / elem;
    int id = static_cast<int>(fn_.tensors.size());
    fn_.tensors.push_back(sp);
    written_.push_back(false);
    const ir::VarNode* key = a->buffer_var.get();
    spads_[key] = id;
    exec(a->body);
    fn_.events.push_back(SpadEvent{SpadEvent::Kind::kFree, id, {}});
    spads_.erase(key);
  }

  int spad_of(const ir::Var& v) const { return spad_of(v.get()); }
  int spad_of(const ir::VarNode* v) const {
    auto it = spads_.find(v);
    return it == spads_.end() ? -1 : it->second;
  }
  const SpadTensor& tensor(int t) const { return fn_.tensors[static_cast<size_t>(t)]; }

  // The tensor's first write: it needs its range from here on.
  void first_write(int t) {
    if (written_[static_cast<size_t>(t)]) return;
    written_[static_cast<size_t>(t)] = true;
    fn_.events.push_back(SpadEvent{SpadEvent::Kind::kPlace, t, {}});
  }

  Insn& new_insn(Insn::Kind kind, Module stage, const ir::Stmt& source) {
    Insn& x = fn_.insns.emplace_back();
    x.kind = kind;
    x.stage = stage;
    x.region = region_;
    x.source = source;
    return x;
  }

  // ------------------------------------------------------------------ enumeration

  // A leaf of a region: a store or call, with the loops that make up one element
  // (bound to their first iteration; `at_last` rebinds them to the last).
  struct Leaf {
    const ir::StoreNode* store = nullptr;
    const ir::CallNode* call = nullptr;
    std::vector<const ir::ForNode*> elem_loops;
  };
  using LeafFn = std::function<void(const Leaf&)>;

  // Calls `cb` on every leaf of `s` in order, with the loops that cover one
  // `elem`-scalar element folded into the leaf. `part` (DMA regions): the split tree
  // of `s`, with leaf counts from `leaves_`.
  void walk(const ir::Stmt& s, int64_t elem, const LeafFn& cb, DmaPart* part = nullptr) {
    using K = ir::NodeKind;
    if (part) {
      part->begin = leaves_;
      part->body = s;
    }
    auto done = [&] {
      if (part) part->end = leaves_;
    };
    switch (s.kind()) {
      case K::For: {
        if (elem > 1) {
          std::vector<const ir::ForNode*> chain;
          std::vector<ir::Stmt> loops;
          ir::Stmt b = s;
          while (const auto* f = b.as<ir::ForNode>()) {
            chain.push_back(f);
            loops.push_back(b);
            b = f->body;
          }
          if (const auto* st = b.as<ir::StoreNode>()) {
            int64_t prod = 1;
            for (size_t i = chain.size(); i-- > 0;) {
              prod *= eval_(chain[i]->extent);
              if (prod == elem) {
                walk_chain(chain, loops, 0, i, st, cb, part);
                return done();
              }
              if (prod > elem) break;
            }
          }
        }
        const auto* f = s.as<ir::ForNode>();
        if (part) part->splittable = true;
        int64_t mn = eval_(f->min), ext = eval_(f->extent);
        for (int64_t v = mn; v < mn + ext; ++v) {
          vars_[f->var.get()] = v;
          walk(f->body, elem, cb, part ? &part->parts.emplace_back() : nullptr);
        }
        vars_.erase(f->var.get());
        return done();
      }
      case K::Seq:
        if (part) part->splittable = true;
        for (const ir::Stmt& c : s.as<ir::SeqNode>()->seq) walk(c, elem, cb, part ? &part->parts.emplace_back() : nullptr);
        return done();
      case K::LetStmt: {
        const auto* l = s.as<ir::LetStmtNode>();
        vars_[l->var.get()] = eval_(l->value);
        walk(l->body, elem, cb);
        vars_.erase(l->var.get());
        return done();
      }
      case K::IfThenElse: {
        const auto* i = s.as<ir::IfThenElseNode>();
        if (eval_(i->cond)) walk(i->then_case, elem, cb);
        else if (i->else_case.defined()) walk(i->else_case, elem, cb);
        return done();
      }
      case K::Attr: walk(s.as<ir::AttrNode>()->body, elem, cb); return done();
      case K::Store:
        if (elem > 1) fail(fmt::format("'{}' is not inside loops that cover whole {}-scalar elements", brief(s), elem));
        ++leaves_;
        cb(Leaf{s.as<ir::StoreNode>(), nullptr, {}});
        return done();
      case K::Evaluate: {
        const auto* c = s.as<ir::EvaluateNode>()->value.as<ir::CallNode>();
        if (!c) return done();
        ++leaves_;
        cb(Leaf{nullptr, c, {}});
        return done();
      }
      default: fail("'" + brief(s) + "' cannot be part of an accelerator instruction");
    }
  }

  // The loops chain[0, elem_from) run one by one; chain[elem_from, end) make up one
  // element of the store at the bottom.
  void walk_chain(const std::vector<const ir::ForNode*>& chain, const std::vector<ir::Stmt>& loops, size_t i,
                  size_t elem_from, const ir::StoreNode* st, const LeafFn& cb, DmaPart* part) {
    if (part) {
      part->begin = leaves_;
      part->body = loops[i];
    }
    if (i == elem_from) {
      Leaf leaf{st, nullptr, {chain.begin() + static_cast<std::ptrdiff_t>(elem_from), chain.end()}};
      bind_elem(leaf, false);
      ++leaves_;
      cb(leaf);
      for (const ir::ForNode* f : leaf.elem_loops) vars_.erase(f->var.get());
      if (part) part->end = leaves_;
      return;
    }
    const ir::ForNode* f = chain[i];
    if (part) part->splittable = true;
    int64_t mn = eval_(f->min), ext = eval_(f->extent);
    for (int64_t v = mn; v < mn + ext; ++v) {
      vars_[f->var.get()] = v;
      walk_chain(chain, loops, i + 1, elem_from, st, cb, part ? &part->parts.emplace_back() : nullptr);
    }
    vars_.erase(f->var.get());
    if (part) part->end = leaves_;
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

  // ------------------------------------------------------------------ DMA

  void extract_dma(const ir::Stmt& body) {
    ++region_;
    // Direction and element size from the first store.
    const ir::StoreNode* first = nullptr;
    ir::post_order_visit(body, [&](const ir::Node* n) {
      if (!first && n->kind == ir::NodeKind::Store) first = static_cast<const ir::StoreNode*>(n);
    });
    if (!first) fail("a dma_copy region without a store: '" + brief(body) + "'");
    const int dst = spad_of(first->buffer_var);
    const bool is_load = dst >= 0;
    const hw::MemType mem = is_load ? tensor(dst).mem : hw::MemType::kOut;
    const int64_t elem = env_.elem_scalars(mem);
    std::vector<DmaElem> elems;
    int arg = -1;
    int src = -1;
    DmaPart split;
    leaves_ = 0;
    walk(body, elem, [&](const Leaf& leaf) {
      if (!leaf.store) fail("a call inside a dma_copy region");
      const ir::StoreNode* st = leaf.store;
      if (is_load) {
        int d = spad_of(st->buffer_var);
        if (d != dst) fail("a dma_copy region stores to more than one scratchpad tensor");
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
        int a = args_.at(ld->buffer_var.get());
        const std::string& arg_name = fn_.program.args()[static_cast<size_t>(a)].name;
        if (arg >= 0 && arg != a) fail(fmt::format("the copy into '{}' reads more than one tensor", tensor(d).name));
        arg = a;
        auto [d0, d1] = first_last(leaf, st->index);
        if (d1 - d0 != elem - 1)
          fail(fmt::format("the copy of '{}' into '{}' is not contiguous within an element", arg_name, tensor(d).name));
        DmaElem e;
        e.spad = fn_.element(env_, d, d0, "the load");
        bool in = !cond.defined() || first_last(leaf, cond).first != 0;
        if (cond.defined() && (first_last(leaf, cond).first != 0) != (first_last(leaf, cond).second != 0))
          fail(fmt::format("the padding of '{}' (a copy of '{}') changes inside an element", tensor(d).name, arg_name));
        if (!in) {
          e.pad = true;
        } else {
          auto [s0, s1] = first_last(leaf, ld->index);
          if (s1 - s0 != elem - 1 || s0 % elem != 0)
            fail(fmt::format("the copy of '{}' into '{}' does not read whole elements", arg_name, tensor(d).name));
          e.dram = s0 / elem;
        }
        elems.push_back(e);
      } else {
        auto ait = args_.find(st->buffer_var.get());
        if (ait == args_.end())
          fail("a dma_copy region must store into a scratchpad tensor or an argument: '" + brief(body) + "'");
        const std::string& arg_name = fn_.program.args()[static_cast<size_t>(ait->second)].name;
        if (arg >= 0 && arg != ait->second) fail("a store region writes more than one tensor");
        arg = ait->second;
        ir::Expr v = st->value;
        while (const auto* c = v.as<ir::CastNode>()) v = c->value;
        const auto* ld = v.as<ir::LoadNode>();
        int s = ld ? spad_of(ld->buffer_var) : -1;
        if (s < 0 || tensor(s).mem != hw::MemType::kAcc)
          fail(fmt::format("the store into '{}' must copy an ACC tensor: '{}'", arg_name, ir::to_string(st->value)));
        if (src >= 0 && src != s) fail(fmt::format("the store into '{}' reads more than one ACC tensor", arg_name));
        src = s;
        if (!written_[static_cast<size_t>(s)])
          fail(fmt::format("'{}' is stored into '{}' before anything computed it", tensor(s).name, arg_name));
        auto [s0, s1] = first_last(leaf, ld->index);
        auto [d0, d1] = first_last(leaf, st->index);
        if (s1 - s0 != elem - 1 || d1 - d0 != elem - 1 || d0 % elem != 0)
          fail(fmt::format("the store of '{}' into '{}' does not move whole elements", tensor(s).name, arg_name));
        elems.push_back(DmaElem{fn_.element(env_, s, s0, "the store"), d0 / elem, false});
      }
    }, &split);
    if (elems.empty()) return;
    if (is_load) first_write(dst);
    Insn& x = new_insn(is_load ? Insn::Kind::kLoad : Insn::Kind::kStore,
                       hw::module_of(is_load ? hw::Opcode::kLoad : hw::Opcode::kStore, mem), body);
    x.tensor = is_load ? dst : src;
    x.mem = mem;
    x.arg = arg;
    x.elems = std::move(elems);
    x.split = std::move(split);
  }

  // ------------------------------------------------------------------ GEMM

  // What a GEMM region reads of the host and which buffers it touches. Regions repeat
  // with the same micro-ops (every tile, every reduction step); enumerating them is
  // the main cost, so a region's instructions are remembered per value of the host
  // variables it reads, with the tensors they name taken from its buffers anew.
  struct Cached {
    std::vector<Insn> insns;
    std::vector<std::pair<const ir::VarNode*, int>> tensors;  // buffer, its tensor then
  };
  struct RegionInfo {
    std::vector<const ir::VarNode*> free;     // host variables the region reads
    std::vector<const ir::VarNode*> buffers;  // buffers it accesses
    std::vector<const ir::VarNode*> written;  // accumulators it writes, in order
    std::map<std::vector<int64_t>, Cached> cache;
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
          if (const auto* ld = c->args[0].as<ir::LoadNode>())
            if (written.insert(ld->buffer_var.get()).second) info.written.push_back(ld->buffer_var.get());
      }
    });
    ir::post_order_visit(body, [&](const ir::Node* n) {
      if (n->kind != ir::NodeKind::Var) return;
      const auto* v = static_cast<const ir::VarNode*>(n);
      if (!bound.count(v) && !bufs.count(v) && seen.insert(v).second) info.free.push_back(v);
    });
    info.buffers.assign(bufs.begin(), bufs.end());
    std::sort(info.buffers.begin(), info.buffers.end());
    return regions_.emplace(body.get(), std::move(info)).first->second;
  }

  void extract_gemm(const ir::Stmt& body) {
    ++region_;
    RegionInfo& info = region_info(body);
    for (const ir::VarNode* v : info.written) {
      int t = spad_of(v);
      if (t >= 0) first_write(t);
    }
    std::vector<int64_t> key;
    for (const ir::VarNode* v : info.free) {
      auto it = vars_.find(v);
      key.push_back(it == vars_.end() ? INT64_MIN : it->second);
    }
    auto hit = info.cache.find(key);
    if (hit != info.cache.end()) return replay(hit->second, body);
    size_t before = fn_.insns.size();
    enumerate_gemm(body);
    Cached c;
    c.insns.assign(fn_.insns.begin() + static_cast<std::ptrdiff_t>(before), fn_.insns.end());
    for (const ir::VarNode* v : info.buffers) c.tensors.emplace_back(v, spad_of(v));
    info.cache.emplace(std::move(key), std::move(c));
  }

  // A remembered region again: its instructions over the tensors its buffers name now.
  void replay(const Cached& c, const ir::Stmt& body) {
    std::vector<std::pair<int, int>> now;  // tensor then -> now (a region touches a few)
    bool same = true;
    for (const auto& [v, then] : c.tensors) {
      int t = spad_of(v);
      now.emplace_back(then, t);
      same = same && t == then;
      if (t >= 0 && !written_[static_cast<size_t>(t)] && tensor(t).mem != hw::MemType::kAcc)
        fail(fmt::format("'{}' is read by a GEMM before it was loaded", tensor(t).name));
    }
    auto remap = [&](int t) {
      for (const auto& [then, n] : now)
        if (then == t) return n;
      return t;
    };
    for (const Insn& old : c.insns) {
      Insn& x = new_insn(old.kind, old.stage, body);
      x.uops = old.uops;
      x.tensor = remap(old.tensor);
      if (same) continue;
      for (UopRef& u : x.uops)
        for (SpadRef* r : {&u.acc, &u.inp, &u.wgt})
          if (r->tensor >= 0) r->tensor = remap(r->tensor);
    }
  }

  void enumerate_gemm(const ir::Stmt& body) {
    std::vector<UopRef> resets, updates;
    std::unordered_set<int64_t> accumulated;  // tensor << 32 | element
    int acc = -1;
    leaves_ = 0;
    walk(body, 1, [&](const Leaf& leaf) {
      if (!leaf.call || (leaf.call->name != kGemmCall && leaf.call->name != kGemmResetCall))
        fail("a GEMM region may contain only vta.gemm calls, found '" +
             (leaf.store ? "a store into '" + leaf.store->buffer_var.name() + "'" : std::string(leaf.call->name)) + "'");
      const ir::CallNode* c = leaf.call;
      auto operand = [&](size_t i, hw::MemType want, bool write) {
        const auto* ld = c->args[i].as<ir::LoadNode>();
        int t = ld ? spad_of(ld->buffer_var) : -1;
        if (t < 0 || tensor(t).mem != want)
          fail(fmt::format("operand {} of {} is not a {} scratchpad tensor: '{}'", i, c->name, hw::mem_type_name(want),
                           ir::to_string(c->args[i])));
        if (!write && !written_[static_cast<size_t>(t)])
          fail(fmt::format("'{}' is read by a GEMM before it was loaded", tensor(t).name));
        return SpadRef{t, fn_.element(env_, t, eval_(ld->index), c->name.c_str())};
      };
      SpadRef d = operand(0, hw::MemType::kAcc, true);
      acc = d.tensor;
      int64_t key = (int64_t{d.tensor} << 32) | d.elem;
      if (c->name == kGemmResetCall) {
        if (accumulated.count(key))
          fail(fmt::format("a GEMM region resets '{}' after accumulating into it; split the reduction differently",
                           tensor(d.tensor).name));
        resets.push_back(UopRef{d, {}, {}});
      } else {
        updates.push_back(UopRef{d, operand(1, hw::MemType::kInp, false), operand(2, hw::MemType::kWgt, false)});
        accumulated.insert(key);
      }
    });
    if (!resets.empty()) {
      Insn& x = new_insn(Insn::Kind::kGemmReset, Module::kCompute, body);
      x.tensor = acc;
      x.uops = std::move(resets);
    }
    if (!updates.empty()) {
      Insn& x = new_insn(Insn::Kind::kGemm, Module::kCompute, body);
      x.tensor = acc;
      x.uops = std::move(updates);
    }
  }

  // ------------------------------------------------------------------ ALU

  void extract_alu(const ir::Stmt& body) {
    ++region_;
    const int64_t elem = env_.elem_scalars(hw::MemType::kAcc);
    std::vector<AluLeaf> leaves;
    int dst = -1;
    leaves_ = 0;
    walk(body, elem, [&](const Leaf& leaf) {
      if (!leaf.store) fail("a call inside an alu region");
      const ir::StoreNode* st = leaf.store;
      int d = spad_of(st->buffer_var);
      if (d < 0 || tensor(d).mem != hw::MemType::kAcc)
        fail("an alu region must write an ACC tensor, not '" + st->buffer_var.name() + "'");
      if (dst >= 0 && dst != d) fail(fmt::format("an alu region writes more than one tensor ('{}', '{}')", tensor(dst).name, tensor(d).name));
      dst = d;
      AluLeaf l;
      l.store = st;
      std::tie(l.first, l.last) = first_last(leaf, st->index);
      std::vector<const ir::LoadNode*> loads;
      ir::post_order_visit(st->value, [&](const ir::Node* n) {
        if (n->kind == ir::NodeKind::Load) loads.push_back(static_cast<const ir::LoadNode*>(n));
      });
      for (const ir::LoadNode* ld : loads) {
        AluLeaf::Operand o;
        o.load = ld;
        o.tensor = spad_of(ld->buffer_var);
        o.written = o.tensor >= 0 && written_[static_cast<size_t>(o.tensor)];
        std::tie(o.first, o.last) = first_last(leaf, ld->index);
        l.operands.push_back(o);
      }
      leaves.push_back(std::move(l));
    });
    if (leaves.empty()) return;
    Insn& x = new_insn(Insn::Kind::kAlu, Module::kCompute, body);
    x.tensor = dst;
    x.leaves = std::move(leaves);
    // A result that has no range yet takes over the storage of the operand it
    // overwrites (match_alu names it).
    if (!written_[static_cast<size_t>(dst)]) {
      written_[static_cast<size_t>(dst)] = true;
      x.alias_event = static_cast<int>(fn_.events.size());
      fn_.events.push_back(SpadEvent{SpadEvent::Kind::kAlias, dst, {}});
    }
  }

  const Env& env_;
  const schedule::LoweredFunc& f_;
  InsnFunc fn_;
  VarMap vars_;
  Eval eval_;
  std::unordered_map<const ir::VarNode*, int> args_;
  std::unordered_map<const ir::VarNode*, int> spads_;  // live buffer -> tensor
  std::vector<bool> written_;                          // per tensor: has been written
  std::unordered_map<const ir::StmtNode*, RegionInfo> regions_;
  int region_ = 0;
  size_t leaves_ = 0;
};

}  // namespace

InsnFunc extract_regions(const Env& env, const schedule::LoweredFunc& f) { return Extractor(env, f).run(); }

}  // namespace kiln::vta::passes
