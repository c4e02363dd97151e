#include "tests/gpu/gpu_test_util.h"

namespace kiln::gpu::testing {

using ir::DataType;
using ir::Expr;
using ir::Stmt;
using ir::Var;

namespace {

const DataType f32 = DataType::Float(32);
const DataType i32 = DataType::Int(32);

Expr load(DataType t, const Var& buf, Expr i) { return ir::make_load(t, buf, std::move(i)); }

// i = bx * 64 + tx over ceil(n / 64) blocks of 64 threads, the body guarded by i < n.
Stmt guarded(passes::DeviceKernel& k, int n, const std::function<Stmt(Expr)>& body) {
  Var bx = axis(k, "blockIdx.x", (n + 63) / 64);
  Var tx = axis(k, "threadIdx.x", 64);
  Var i("i", i32);
  return ir::make_let_stmt(i, bx * 64 + tx, ir::make_if(i < n, body(i)));
}

}  // namespace

passes::DeviceFunc vector_add(int n) {
  FuncBuilder fb("vector_add");
  Var a = fb.arg("a", f32, n), b = fb.arg("b", f32, n), c = fb.arg("c", f32, n, true);
  passes::DeviceKernel& k = fb.kernel({a, b, c});
  k.body = guarded(k, n, [&](Expr i) { return ir::make_store(c, load(f32, a, i) + load(f32, b, i), i); });
  return fb.func();
}

passes::DeviceFunc shared_reverse(int blocks) {
  FuncBuilder fb("shared_reverse");
  Var in = fb.arg("in", i32, blocks * 64), out = fb.arg("out", i32, blocks * 64, true);
  passes::DeviceKernel& k = fb.kernel({in, out});
  Var bx = axis(k, "blockIdx.x", blocks);
  Var tx = axis(k, "threadIdx.x", 64);
  Var s("s.shared", DataType::Handle());
  k.shared.push_back({s, i32, 64});
  k.body = ir::make_seq({ir::make_store(s, load(i32, in, bx * 64 + tx), tx), barrier(),
                         ir::make_store(out, load(i32, s, Expr(63) - tx), bx * 64 + tx)});
  return fb.func();
}

passes::DeviceFunc floor_divmod(DataType t, int n) {
  FuncBuilder fb("floor_divmod_" + t.to_string());
  Var a = fb.arg("a", t, n), b = fb.arg("b", t, n), q = fb.arg("q", t, n, true), r = fb.arg("r", t, n, true);
  passes::DeviceKernel& k = fb.kernel({a, b, q, r});
  Var tx = axis(k, "threadIdx.x", n);
  Expr x = load(t, a, tx), y = load(t, b, tx);
  k.body = ir::make_seq({ir::make_store(q, ir::make_binary(ir::NodeKind::Div, x, y), tx),
                         ir::make_store(r, ir::make_binary(ir::NodeKind::Mod, x, y), tx)});
  return fb.func();
}

passes::DeviceFunc casts(int n) {
  FuncBuilder fb("casts");
  Var x = fb.arg("x", f32, n), m = fb.arg("m", i32, n);
  Var o_i32 = fb.arg("o_i32", i32, n, true), o_u8 = fb.arg("o_u8", DataType::UInt(8), n, true);
  Var o_i8 = fb.arg("o_i8", DataType::Int(8), n, true), o_f64 = fb.arg("o_f64", DataType::Float(64), n, true);
  Var o_b = fb.arg("o_b", DataType::Bool(), n, true), o_i64 = fb.arg("o_i64", DataType::Int(64), n, true);
  Var o_f32 = fb.arg("o_f32", f32, n, true);
  passes::DeviceKernel& k = fb.kernel({x, m, o_i32, o_u8, o_i8, o_f64, o_b, o_i64, o_f32});
  Var tx = axis(k, "threadIdx.x", n);
  Expr xv = load(f32, x, tx), mv = load(i32, m, tx);
  k.body = ir::make_seq({
      ir::make_store(o_i32, ir::make_cast(i32, xv), tx),
      ir::make_store(o_u8, ir::make_cast(DataType::UInt(8), xv), tx),
      ir::make_store(o_i8, ir::make_cast(DataType::Int(8), mv), tx),
      ir::make_store(o_f64, ir::make_cast(DataType::Float(64), xv), tx),
      ir::make_store(o_b, ir::make_cast(DataType::Bool(), xv), tx),
      ir::make_store(o_i64, ir::make_cast(DataType::Int(64), xv), tx),
      ir::make_store(o_f32, ir::make_cast(f32, mv), tx),
  });
  return fb.func();
}

passes::DeviceFunc intrinsics(int n) {
  FuncBuilder fb("intrinsics");
  Var x = fb.arg("x", f32, n), y = fb.arg("y", f32, n), o = fb.arg("o", f32, 13 * n, true);
  passes::DeviceKernel& k = fb.kernel({x, y, o});
  Var tx = axis(k, "threadIdx.x", n);
  Expr xv = load(f32, x, tx), yv = load(f32, y, tx);
  std::vector<Expr> outs = {ir::exp(xv),
                            ir::log(ir::abs(xv) + 1.0f),
                            ir::sqrt(ir::abs(xv)),
                            ir::tanh(xv),
                            ir::sigmoid(xv),
                            ir::floor(xv),
                            ir::ceil(xv),
                            ir::round(xv),
                            ir::pow(ir::abs(xv), yv),
                            ir::make_call(f32, "erf", {xv}),
                            ir::make_binary(ir::NodeKind::Mod, xv, yv),
                            ir::select(ir::likely(xv < yv), xv, yv),
                            ir::make_binary(ir::NodeKind::Max, xv, yv)};
  std::vector<Stmt> body;
  for (size_t j = 0; j < outs.size(); ++j) body.push_back(ir::make_store(o, outs[j], tx + static_cast<int>(j) * n));
  k.body = ir::make_seq(body);
  return fb.func();
}

passes::DeviceFunc int_ops(int n) {
  FuncBuilder fb("int_ops");
  Var x = fb.arg("x", i32, n), y = fb.arg("y", i32, n), o = fb.arg("o", i32, 12 * n, true);
  passes::DeviceKernel& k = fb.kernel({x, y, o});
  Var tx = axis(k, "threadIdx.x", n);
  Expr xv = load(i32, x, tx), yv = load(i32, y, tx);
  std::vector<Expr> outs = {
      ir::abs(xv),
      ir::shift_left(xv, yv),
      ir::shift_right(xv, yv),
      ir::shift_left(xv, 3),
      ir::shift_right(xv, 2),
      ir::bitwise_and(xv, yv),
      ir::bitwise_or(xv, yv),
      ir::bitwise_xor(xv, yv),
      ir::make_binary(ir::NodeKind::Min, xv, yv),
      ir::make_binary(ir::NodeKind::Max, xv, yv),
      ir::select(xv > yv, xv - yv, yv * 3),
      ir::make_cast(i32, ((xv > 0) && ir::make_not(yv > 5)) || ir::eq(xv, yv)),
  };
  std::vector<Stmt> body;
  for (size_t j = 0; j < outs.size(); ++j) body.push_back(ir::make_store(o, outs[j], tx + static_cast<int>(j) * n));
  k.body = ir::make_seq(body);
  return fb.func();
}

passes::DeviceFunc two_kernels(int n) {
  FuncBuilder fb("two_kernels");
  Var a = fb.arg("a", f32, n), out = fb.arg("out", f32, n, true);
  Var tmp = fb.temp("tmp", f32, n);
  passes::DeviceKernel& k0 = fb.kernel({a, tmp});
  k0.body = guarded(k0, n, [&](Expr i) { return ir::make_store(tmp, load(f32, a, i) * 2.0f, i); });
  passes::DeviceKernel& k1 = fb.kernel({tmp, out});
  k1.body = guarded(k1, n, [&](Expr i) { return ir::make_store(out, load(f32, tmp, i) + 1.0f, i); });
  return fb.func();
}

passes::DeviceFunc local_sum(int n) {
  FuncBuilder fb("local_sum");
  Var in = fb.arg("in", i32, 4 * n), out = fb.arg("out", i32, n, true);
  passes::DeviceKernel& k = fb.kernel({in, out});
  Var tx = axis(k, "threadIdx.x", n);
  Var acc("acc", DataType::Handle()), j("j", i32), s("s", i32);
  Stmt fill = ir::make_for(j, 0, 4, ir::ForKind::Unrolled,
                           ir::make_store(acc, load(i32, in, tx * 4 + j) * (j + 1), j));
  Expr sum2 = load(i32, acc, 0) + load(i32, acc, 1);
  Expr total = ir::make_let(s, sum2, s + load(i32, acc, 2) + load(i32, acc, 3));
  k.body = ir::make_allocate(acc, i32, 4, "local", ir::make_seq({fill, ir::make_store(out, total, tx)}));
  return fb.func();
}

}  // namespace kiln::gpu::testing
