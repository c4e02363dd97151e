#include "tests/compiler/random_program.h"

#include <cstdlib>
#include <unordered_set>

#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/te/ops.h"

namespace kiln::test {

using ir::DataType;
using ir::IterVar;
using schedule::Schedule;
using schedule::Stage;
using te::Tensor;

Program random_matmul(Rng& r) {
  // int32, float32, int8 inputs accumulated in int32, float16, uint16, float64.
  static const DataType kTypes[] = {DataType::Int(32), DataType::Float(32), DataType::Int(32),
                                    DataType::Float(16), DataType::UInt(16), DataType::Float(64)};
  int kind = r.uniform(0, 5);
  bool widening = kind == 2;
  DataType t = kTypes[kind];
  int m = r.uniform(3, 17), n = r.uniform(3, 17), k = r.uniform(2, 12);
  auto a = te::placeholder({m, k}, widening ? DataType::Int(8) : t, "A");
  auto b = te::placeholder({k, n}, widening ? DataType::Int(8) : t, "B");
  Tensor c;
  if (widening) {
    auto rk = te::reduce_axis(k, "k");
    c = te::compute({m, n}, [&](ir::Var i, ir::Var j) {
      return te::sum(ir::cast(t, a(i, rk->var)) * ir::cast(t, b(rk->var, j)), {rk});
    }, "C");
  } else {
    c = te::matmul(a, b, "C");
  }
  if (r.chance(0.4)) {  // a bias/relu epilogue gives another stage to move around
    auto d = te::compute({m, n}, [&](ir::Var i, ir::Var j) { return ir::max(c(i, j) + 1, ir::make_const(t, 0)); }, "D");
    return {{a, b, d}};
  }
  return {{a, b, c}};
}

Program random_conv(Rng& r) {
  te::Conv2DParams p;
  p.stride = {r.uniform(1, 2), r.uniform(1, 2)};
  p.padding = {r.uniform(0, 1), r.uniform(0, 1)};
  p.dilation = {r.uniform(1, 2), 1};
  p.groups = r.chance(0.3) ? 2 : 1;
  int c = 2 * r.uniform(1, 2), o = 2 * r.uniform(1, 2);
  auto x = te::placeholder({1, c, r.uniform(6, 9), r.uniform(6, 9)}, DataType::Int(32), "X");
  auto w = te::placeholder({o, c / p.groups, 3, 3}, DataType::Int(32), "W");
  return {{x, w, te::conv2d_nchw(x, w, p, "Y")}};
}

Program random_chain(Rng& r) {
  int n = r.uniform(4, 14), m = r.uniform(4, 14);
  DataType t = DataType::Int(32);
  auto a = te::placeholder({n, m + 2}, t, "A");
  auto b = te::compute({n, m + 2}, [&](ir::Var i, ir::Var j) { return a(i, j) * 3 + 1; }, "B");
  auto c = te::compute({n, m}, [&](ir::Var i, ir::Var j) { return b(i, j) + b(i, j + 1) * 2 - b(i, j + 2); }, "C");
  auto d = te::compute({n, m}, [&](ir::Var i, ir::Var j) { return ir::max(c(i, j), 0) + c(i, j) / 3; }, "D");
  if (r.chance(0.5)) {
    auto e = te::compute({n, m}, [&](ir::Var i, ir::Var j) { return d(i, j) * d(n - 1 - i, j); }, "E");
    return {{a, e}};
  }
  return {{a, d}};
}

// ---------------------------------------------------------------- schedules

namespace {

std::vector<Stage> consumers_of(const Schedule& s, const Stage& st) {
  std::vector<Stage> out;
  for (const Stage& c : s->stages) {
    if (c->is_placeholder() || c->attach_type == schedule::AttachType::Inline) continue;
    bool reads = false;
    ir::post_order_visit(c->op->body, [&](const ir::Node* n) {
      if (n->kind != ir::NodeKind::ProducerLoad) return;
      auto* p = static_cast<const te::OperationNode*>(static_cast<const ir::ProducerLoadNode*>(n)->producer.get());
      reads = reads || s.stage_of(p) == st;
    });
    if (reads) out.push_back(c);
  }
  return out;
}

// Splits, fuses and reorders the loops of one stage; annotations when `root`.
void transform_loops(Stage st, Rng& r, bool root, std::string* log) {
  for (int round = r.uniform(0, 3); round > 0; --round) {
    IterVar iv = r.pick(st->leaf_iter_vars);
    if (r.chance(0.8)) {
      int f = r.uniform(1, 6);
      st.split(iv, f);
      *log += " split(" + iv->var.name() + "," + std::to_string(f) + ")";
    } else {
      int p = r.uniform(1, 4);
      st.split_nparts(iv, p);
      *log += " split_nparts(" + iv->var.name() + "," + std::to_string(p) + ")";
    }
  }
  if (r.chance(0.3) && st->leaf_iter_vars.size() >= 2) {
    size_t p = static_cast<size_t>(r.uniform(0, static_cast<int>(st->leaf_iter_vars.size()) - 2));
    IterVar a = st->leaf_iter_vars[p], b = st->leaf_iter_vars[p + 1];
    if (a->kind == b->kind) {
      st.fuse(a, b);
      *log += " fuse(" + a->var.name() + "," + b->var.name() + ")";
    }
  }
  if (r.chance(0.5)) {
    std::vector<IterVar> order = st->leaf_iter_vars;
    std::shuffle(order.begin(), order.end(), r.engine());
    st.reorder(order);
    *log += " reorder";
  }
  if (!root) return;
  const auto& leaves = st->leaf_iter_vars;
  if (r.chance(0.4)) {
    const IterVar& inner = leaves.back();
    // A reduction axis too, in an integer sum (a lane reduction, exact where a float
    // sum would be reassociated).
    const auto* red = st->op->body.as<ir::ReduceNode>();
    bool int_sum = red && red->combiner == ir::Combiner::Sum && !st->op->dtype.is_float();
    if (inner->kind == ir::IterKind::DataPar || (inner->kind == ir::IterKind::Reduce && int_sum)) {
      st.vectorize(inner);
      *log += " vectorize(" + inner->var.name() + ")";
    }
  }
  if (r.chance(0.3) && leaves.size() >= 2) {
    const IterVar& iv = leaves[leaves.size() - 2];
    st.unroll(iv);
    *log += " unroll(" + iv->var.name() + ")";
  }
  if (r.chance(0.4) && leaves.front()->kind == ir::IterKind::DataPar) {
    st.parallel(leaves.front());
    *log += " parallel(" + leaves.front()->var.name() + ")";
  } else if (r.chance(0.3) && leaves.size() >= 2 && leaves[1]->kind == ir::IterKind::DataPar) {
    st.bind(leaves[1], "vthread");
    *log += " bind(" + leaves[1]->var.name() + ",vthread)";
  }
}

}  // namespace

std::string random_schedule(Schedule s, const Program& prog, Rng& r) {
  std::string log;
  Tensor out = prog.output();
  if (r.chance(0.3)) {
    Tensor local = s.cache_write(out, "local");
    log += " cache_write(" + out->name + ")";
    (void)local;
  }
  for (size_t i = 0; i + 1 < prog.args.size(); ++i) {
    const Tensor& in = prog.args[i];
    if (!r.chance(0.3)) continue;
    std::vector<Tensor> readers;
    for (const Stage& c : consumers_of(s, s[in])) readers.push_back(c->op);
    s.cache_read(in, "shared", readers);
    log += " cache_read(" + in->name + ")";
  }
  // Consumers first, so a producer attaches to loops that are final.
  std::vector<Stage> stages = s->stages;
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
    Stage st = *it;
    if (st->is_placeholder()) continue;
    log += " |" + st->name() + ":";
    bool root = true;
    if (!st->is_output) {
      std::vector<Stage> cons = consumers_of(s, st);
      int choice = r.uniform(0, 2);
      if (choice == 0 && st->op->reduce_axis.empty() && !cons.empty()) {
        st.compute_inline();
        log += " inline";
        continue;
      }
      if (choice == 1 && cons.size() == 1) {
        transform_loops(st, r, false, &log);
        const IterVar& at = r.pick(cons[0]->leaf_iter_vars);
        st.compute_at(cons[0], at);
        log += " compute_at(" + cons[0]->name() + "," + at->var.name() + ")";
        if (r.chance(0.3)) {
          st.double_buffer();
          log += " double_buffer";
        }
        continue;
      }
      log += " root";
    }
    transform_loops(st, r, root, &log);
  }
  return log;
}

uint64_t replay_seed() {
  const char* env = std::getenv("KILN_SEED");
  return env ? std::strtoull(env, nullptr, 10) : 0;
}

}  // namespace kiln::test
