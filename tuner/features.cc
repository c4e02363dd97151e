#include "tuner/features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "compiler/ir/analyzer.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"

namespace kiln::tuner {

namespace {

using namespace kiln::ir;

float lg(double v) { return static_cast<float>(std::log2(1.0 + std::max(0.0, v))); }

struct Loop {
  Var var;
  int64_t extent = 1;
  ForKind kind = ForKind::Serial;
};

struct Access {
  const VarNode* buffer = nullptr;
  Expr index;
  int lanes = 1;
};

struct Arith {
  double adds = 0, muls = 0, loads = 0, casts = 0, selects = 0;
  double total() const { return adds + muls; }
};

// Arithmetic and loads of an expression tree, vector ops counted per lane.
void count(const Expr& e, Arith* a, std::vector<Access>* loads) {
  post_order_visit(e, [&](const Node* n) {
    const auto* x = static_cast<const ExprNode*>(n);
    double lanes = x->dtype.lanes();
    switch (n->kind) {
      case NodeKind::Add:
      case NodeKind::Sub:
        if (x->dtype.is_float()) a->adds += lanes;
        break;
      case NodeKind::Mul:
      case NodeKind::Div:
        if (x->dtype.is_float()) a->muls += lanes;
        break;
      case NodeKind::Load: {
        const auto* l = static_cast<const LoadNode*>(n);
        a->loads += lanes;
        loads->push_back({l->buffer_var.get(), l->index, x->dtype.lanes()});
        break;
      }
      case NodeKind::Cast: a->casts += lanes; break;
      case NodeKind::Select: a->selects += lanes; break;
      default: break;
    }
  });
}

// The stride of a flat index along `v`: index(v=1) - index(v=0), every other variable
// 0; ramps count their base. `ok` is false when it is not a constant.
int64_t stride_of(const Expr& index, const Var& v, const std::vector<Var>& vars, bool* ok) {
  Expr base = index;
  if (const auto* r = index.as<RampNode>()) base = r->base;
  auto at = [&](int value) {
    VarMap m;
    for (const Var& u : vars) m[u.get()] = make_int(u.same_as(v) ? value : 0, u.dtype());
    Expr e = simplify(substitute(base, m));
    const int64_t* c = as_const_int(e);
    return c ? std::optional<int64_t>(*c) : std::nullopt;
  };
  auto a = at(1), b = at(0);
  *ok = a && b;
  return *ok ? *a - *b : 0;
}

struct Store {
  std::vector<Loop> nest;  // outermost first
  Arith arith;
  std::vector<Access> accesses;  // the stored buffer, then the loads
  double trips = 1;
};

class Walker : public IRVisitor {
 public:
  std::vector<Loop> stack;
  std::vector<Store> stores;
  double flops = 0, loads = 0, num_stores = 0, loops = 0, parallel = 0, unrolled = 0, alloc_bytes = 0;
  double max_local = 0, max_other = 0;  // the largest single allocation, local scope and other
  int max_lanes = 1;

  double trips() const {
    double t = 1;
    for (const auto& l : stack) t *= static_cast<double>(l.extent);
    return t;
  }

 protected:
  void visit_(const ForNode* op) override {
    const int64_t* e = as_const_int(op->extent);
    Loop l{op->var, e ? *e : 1, op->for_kind};
    loops += 1;
    if (op->for_kind == ForKind::Parallel) parallel += 1;
    if (op->for_kind == ForKind::Unrolled) unrolled += 1;
    stack.push_back(l);
    IRVisitor::visit_(op);
    stack.pop_back();
  }
  void visit_(const AllocateNode* op) override {
    const int64_t* e = as_const_int(op->extent);
    double bytes = (e ? static_cast<double>(*e) : 0) * op->dtype.storage_bytes();
    alloc_bytes += bytes * trips();
    double& largest = op->scope == "local" ? max_local : max_other;
    largest = std::max(largest, bytes);
    IRVisitor::visit_(op);
  }
  void visit_(const StoreNode* op) override {
    Store s;
    s.nest = stack;
    s.trips = trips();
    int lanes = op->value.dtype().lanes();
    max_lanes = std::max(max_lanes, lanes);
    s.accesses.push_back({op->buffer_var.get(), op->index, lanes});
    std::vector<Access> ld;
    count(op->value, &s.arith, &ld);
    for (auto& a : ld) {
      max_lanes = std::max(max_lanes, a.lanes);
      s.accesses.push_back(a);
    }
    flops += s.arith.total() * s.trips;
    loads += s.arith.loads * s.trips;
    num_stores += lanes * s.trips;
    stores.push_back(std::move(s));
  }
};

}  // namespace

std::vector<std::string> loop_feature_names() {
  std::vector<std::string> n = {"flops", "loads", "stores", "loops", "parallel_loops", "unrolled_loops", "local_bytes", "max_lanes",
                                "local_tile_bytes", "other_alloc_bytes"};
  for (int l = 0; l < kMaxLoops; ++l) {
    for (const char* f : {"extent", "serial", "parallel", "unrolled", "inner_product"}) n.push_back(fmt::format("loop{}.{}", l, f));
    for (int b = 0; b < kMaxBuffers; ++b) {
      n.push_back(fmt::format("loop{}.buf{}.stride", l, b));
      n.push_back(fmt::format("loop{}.buf{}.reuse", l, b));
    }
  }
  for (int b = 0; b < kMaxBuffers; ++b)
    for (const char* f : {"lanes", "touched", "reuse"}) n.push_back(fmt::format("buf{}.{}", b, f));
  for (const char* f : {"adds", "muls", "loads", "casts", "selects"}) n.push_back(fmt::format("body.{}", f));
  return n;
}

std::vector<float> loop_features(const schedule::LoweredFunc& f) {
  Walker w;
  w.visit(f.body);
  std::vector<float> r = {lg(w.flops), lg(w.loads), lg(w.num_stores), lg(w.loops), lg(w.parallel), lg(w.unrolled),
                          lg(w.alloc_bytes), lg(w.max_lanes), lg(w.max_local), lg(w.max_other)};
  const Store* heavy = nullptr;
  for (const auto& s : w.stores)
    if (!heavy || s.arith.total() * s.trips > heavy->arith.total() * heavy->trips) heavy = &s;
  size_t per_loops = static_cast<size_t>(kMaxLoops * kLoopFeatures);
  size_t tail = static_cast<size_t>(kMaxBuffers * 3 + 5);
  if (!heavy) {
    r.resize(r.size() + per_loops + tail, 0.0f);
    return r;
  }
  // Distinct buffers of the store, the stored one first.
  std::vector<const Access*> bufs;
  for (const auto& a : heavy->accesses) {
    bool seen = std::any_of(bufs.begin(), bufs.end(), [&](const Access* b) { return b->buffer == a.buffer; });
    if (!seen && bufs.size() < static_cast<size_t>(kMaxBuffers)) bufs.push_back(&a);
  }
  std::vector<Var> vars;
  for (const auto& l : heavy->nest) vars.push_back(l.var);
  size_t n = heavy->nest.size();
  size_t first = n > static_cast<size_t>(kMaxLoops) ? n - kMaxLoops : 0;
  std::vector<float> loops(per_loops, 0.0f);
  size_t pad = static_cast<size_t>(kMaxLoops) - (n - first);
  std::vector<double> touched(bufs.size(), 1.0);
  double inner = 1;
  std::vector<double> inner_products(n, 1.0);
  for (size_t i = n; i-- > 0;) {
    inner *= static_cast<double>(heavy->nest[i].extent);
    inner_products[i] = inner;
  }
  for (size_t i = 0; i < n; ++i) {
    const Loop& l = heavy->nest[i];
    std::vector<int64_t> strides;
    for (size_t b = 0; b < bufs.size(); ++b) {
      bool ok = false;
      int64_t st = stride_of(bufs[b]->index, l.var, vars, &ok);
      if (!ok || st != 0) touched[b] *= static_cast<double>(l.extent);
      strides.push_back(ok ? st : -1);
    }
    if (i < first) continue;
    float* p = &loops[(pad + i - first) * kLoopFeatures];
    p[0] = lg(static_cast<double>(l.extent));
    p[1] = l.kind == ForKind::Serial;
    p[2] = l.kind == ForKind::Parallel;
    p[3] = l.kind == ForKind::Unrolled;
    p[4] = lg(inner_products[i]);
    for (size_t b = 0; b < bufs.size(); ++b) {
      p[5 + 2 * b] = strides[b] < 0 ? -1.0f : lg(static_cast<double>(std::llabs(strides[b])));
      p[6 + 2 * b] = strides[b] == 0;
    }
  }
  r.insert(r.end(), loops.begin(), loops.end());
  for (int b = 0; b < kMaxBuffers; ++b) {
    if (static_cast<size_t>(b) < bufs.size()) {
      double t = touched[b] * bufs[b]->lanes;
      r.push_back(lg(bufs[b]->lanes));
      r.push_back(lg(t));
      r.push_back(lg(heavy->trips * bufs[b]->lanes / std::max(t, 1.0)));
    } else {
      r.insert(r.end(), {0.0f, 0.0f, 0.0f});
    }
  }
  const Arith& a = heavy->arith;
  r.insert(r.end(), {lg(a.adds), lg(a.muls), lg(a.loads), lg(a.casts), lg(a.selects)});
  return r;
}

double float_ops(const std::vector<schedule::LoweredFunc>& funcs) {
  double ops = 0;
  for (const schedule::LoweredFunc& f : funcs) {
    Walker w;
    w.visit(f.body);
    ops += w.flops;
  }
  return ops;
}

std::vector<float> knob_features(const ConfigSpace& space, const Config& c) {
  std::vector<float> r;
  for (size_t k = 0; k < space.knobs().size(); ++k) {
    const Knob& knob = space.knobs()[k];
    const Choice& ch = knob.choices[c.digits()[k]];
    if (knob.kind == KnobKind::Split) {
      for (size_t i = 1; i < ch.ints.size(); ++i) r.push_back(lg(static_cast<double>(ch.ints[i])));
    } else {
      r.push_back(static_cast<float>(c.digits()[k]));
    }
  }
  return r;
}

std::vector<float> candidate_features(const std::vector<schedule::LoweredFunc>& funcs, const ConfigSpace& space, const Config& c) {
  std::vector<float> r;
  for (const auto& f : funcs) {
    std::vector<float> l = loop_features(f);
    if (r.empty()) r = l;
    else
      for (size_t i = 0; i < r.size(); ++i) r[i] += l[i];
  }
  std::vector<float> k = knob_features(space, c);
  r.insert(r.end(), k.begin(), k.end());
  return r;
}

}  // namespace kiln::tuner
