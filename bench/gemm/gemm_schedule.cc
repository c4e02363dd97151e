#include "bench/gemm/gemm_schedule.h"

#include <cstdlib>
#include <iostream>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/schedule/lower.h"
#include "compiler/schedule/schedule.h"
#include "compiler/schedule/tensorize.h"
#include "compiler/te/tensor.h"
#include "support/debug.h"
#include "support/integer.h"

namespace kiln::bench {

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

// The largest divisor of n that is <= want.
int fit(int n, int want) { return kiln::largest_divisor_at_most(n, want); }

// Packed-B GEMM with an MR x NR register tile; `acc` is the accumulator type.
cpu::Module build_packed_gemm(int m, int n, int k, ir::DataType ta, ir::DataType tb, ir::DataType acc,
                              const std::string& name, const cpu::Target& target, int mr, int nr, int ku) {
  using ir::Var;
  mr = fit(m, mr);
  nr = fit(n, nr);
  ku = fit(k, ku);
  te::Tensor a = te::placeholder({m, k}, ta, "A");
  te::Tensor b = te::placeholder({k, n}, tb, "B");
  // B in panels of nr columns: packed(jo, kk, ji) = B(kk, jo*nr + ji), contiguous along k.
  te::Tensor packed = te::compute(
      {n / nr, k, nr}, [&](Var jo, Var kk, Var ji) { return b(kk, jo * nr + ji); }, "packedB");
  // Optionally A in panels of mr rows, interleaved along k: one cache line per k step.
  bool pack_a = env_int("KILN_GEMM_PACK_A", 0) != 0;
  te::Tensor packed_a;
  if (pack_a) {
    packed_a = te::compute(
        {m / mr, k, mr}, [&](Var io, Var kk, Var ii) { return a(io * mr + ii, kk); }, "packedA");
  }
  ir::IterVar kr = te::reduce_axis(k, "k");
  te::Tensor c = te::compute(
      {m, n},
      [&](Var i, Var j) {
        ir::Expr av = pack_a ? packed_a(i / mr, kr->var, i % mr) : a(i, kr->var);
        return te::sum(ir::cast(acc, av) * ir::cast(acc, packed(j / nr, kr->var, j % nr)), {kr});
      },
      "C");
  schedule::Schedule s = schedule::create_schedule({c});
  if (pack_a) s[packed_a].parallel(packed_a->axis[0]);
  te::Tensor cc = s.cache_write(c, "local");
  std::vector<ir::IterVar> t = s[c].tile(c->axis[0], c->axis[1], mr, nr);  // io, jo, ii, ji
  s[c].reorder({t[1], t[0], t[2], t[3]});  // column panel outermost: its packed B stays in cache
  s[cc].compute_at(s[c], t[0]);
  auto [ko, ki] = s[cc].split(cc->reduce_axis[0], ku);
  s[cc].reorder({ko, ki, cc->axis[0], cc->axis[1]});
  s[cc].unroll(ki);
  s[cc].unroll(cc->axis[0]);
  s[cc].vectorize(cc->axis[1]);
  s[c].vectorize(t[3]);
  s[c].parallel(t[1]);
  s[packed].vectorize(packed->axis[2]);
  s[packed].parallel(packed->axis[0]);
  schedule::LoweredFunc f = schedule::lower(s, {a, b, c}, name);
  if (debug_enabled("gemm")) std::cerr << f.body;
  cpu::Module mod = cpu::build({f}, target);
  if (debug_enabled("gemm_asm")) std::cerr << mod.assembly();
  return mod;
}

// 16 int32 lanes += 4 uint8 (broadcast) . 16x4 int8, one AVX-512 VNNI instruction.
std::shared_ptr<const schedule::TensorIntrin> dot_16x4_u8s8s32() {
  using ir::DataType;
  te::Tensor data = te::placeholder({4}, DataType::UInt(8), "data");
  te::Tensor kernel = te::placeholder({16, 4}, DataType::Int(8), "kernel");
  ir::IterVar k = te::reduce_axis(4, "k");
  te::Tensor out = te::compute(
      {16},
      [&](ir::Var i) {
        return te::sum(ir::cast(DataType::Int(32), data(k->var)) * ir::cast(DataType::Int(32), kernel(i, k->var)), {k});
      },
      "out");
  return schedule::decl_tensor_intrin(
      "dot_16x4_u8s8s32_vnni", out, [](const std::vector<schedule::BufferRegion>& in, const schedule::BufferRegion& o) {
        auto addr = [](const schedule::BufferRegion& r, std::vector<ir::Expr> at) {
          return ir::make_call(DataType::Handle(), "address_of", {r.load(std::move(at))});
        };
        DataType v16 = DataType::Int(32, 16);
        ir::Expr acc = ir::make_call(v16, "vload", {addr(o, {0})});
        ir::Expr a4 = ir::make_call(DataType::Int(32), "vload", {addr(in[0], {0})});  // 4 bytes as one int32
        ir::Expr b64 = ir::make_call(v16, "vload", {addr(in[1], {0, 0})});           // 64 bytes
        auto dot = [&](ir::Expr c) {
          return ir::make_call(v16, "llvm.x86.avx512.vpdpbusd.512", {std::move(c), ir::make_broadcast(a4, 16), b64});
        };
        auto store = [&](ir::Expr v) { return ir::make_evaluate(ir::make_call(DataType::Int(32), "vstore", {addr(o, {0}), std::move(v)})); };
        ir::Stmt init = store(ir::make_const(v16, 0));
        ir::Stmt update = store(dot(acc));
        return schedule::IntrinImpl{store(dot(ir::make_const(v16, 0))), init, update};
      });
}

// u8 x s8 -> s32 with VNNI: B packed as [N/16, K/4, 16, 4] so that one 64-byte load
// feeds one vpdpbusd; an MR x NR tile of int32 accumulators stays in registers.
cpu::Module build_vnni_gemm(int m, int n, int k, const cpu::Target& target, int mr, int nr) {
  using ir::DataType;
  using ir::Var;
  mr = fit(m, mr);
  nr = fit(n, nr);
  te::Tensor a = te::placeholder({m, k}, DataType::UInt(8), "A");
  te::Tensor b = te::placeholder({k, n}, DataType::Int(8), "B");
  te::Tensor packed = te::compute(
      {n / 16, k / 4, 16, 4}, [&](const std::vector<Var>& v) { return b(v[1] * 4 + v[3], v[0] * 16 + v[2]); }, "packedB");
  ir::IterVar kr = te::reduce_axis(k, "k");
  te::Tensor c = te::compute(
      {m, n},
      [&](Var i, Var j) {
        return te::sum(ir::cast(DataType::Int(32), a(i, kr->var)) *
                           ir::cast(DataType::Int(32), packed({j / 16, kr->var / 4, j % 16, kr->var % 4})),
                       {kr});
      },
      "C");
  schedule::Schedule s = schedule::create_schedule({c});
  te::Tensor cc = s.cache_write(c, "local");
  std::vector<ir::IterVar> t = s[c].tile(c->axis[0], c->axis[1], mr, nr);
  s[c].reorder({t[1], t[0], t[2], t[3]});
  s[cc].compute_at(s[c], t[0]);
  auto [ko, ki] = s[cc].split(cc->reduce_axis[0], 4);
  auto [no, ni] = s[cc].split(cc->axis[1], 16);
  s[cc].reorder({ko, cc->axis[0], no, ni, ki});
  s[cc].unroll(cc->axis[0]);
  s[cc].unroll(no);
  s[cc].tensorize(ni, dot_16x4_u8s8s32());
  s[c].vectorize(t[3]);
  s[c].parallel(t[1]);
  s[packed].parallel(packed->axis[0]);
  s[packed].vectorize(packed->axis[3]);
  schedule::LoweredFunc f = schedule::lower(s, {a, b, c}, "gemm_u8s8s32");
  if (debug_enabled("gemm")) std::cerr << f.body;
  cpu::Module mod = cpu::build({f}, target);
  if (debug_enabled("gemm_asm")) std::cerr << mod.assembly();
  return mod;
}

}  // namespace

cpu::Module build_sgemm(int m, int n, int k, const cpu::Target& target) {
  int lanes = target.vector_bits() / 32;
  // AVX-512: a 4 x 64 tile is 16 of the 32 zmm registers; narrower targets (16
  // registers): 4 x 2 vectors.
  int nr = lanes >= 16 ? 4 * lanes : 2 * lanes;
  return build_packed_gemm(m, n, k, ir::DataType::Float(32), ir::DataType::Float(32), ir::DataType::Float(32), "sgemm",
                           target, env_int("KILN_GEMM_MR", 4), env_int("KILN_GEMM_NR", nr), env_int("KILN_GEMM_KU", 4));
}

cpu::Module build_gemm_u8s8s32(int m, int n, int k, const cpu::Target& target) {
  if (target.has_feature("avx512vnni") && n % 16 == 0 && k % 4 == 0 && !std::getenv("KILN_GEMM_NO_VNNI")) {
    return build_vnni_gemm(m, n, k, target, env_int("KILN_GEMM_MR", 8), env_int("KILN_GEMM_NR", 32));
  }
  int lanes = target.vector_bits() / 32;
  return build_packed_gemm(m, n, k, ir::DataType::UInt(8), ir::DataType::Int(8), ir::DataType::Int(32), "gemm_u8s8s32",
                           target, env_int("KILN_GEMM_MR", 8), env_int("KILN_GEMM_NR", 2 * lanes),
                           env_int("KILN_GEMM_KU", 4));
}

}  // namespace kiln::bench
