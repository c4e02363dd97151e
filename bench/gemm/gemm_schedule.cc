#include "bench/gemm/gemm_schedule.h"

#include <cstdlib>
#include <iostream>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/schedule/lower.h"
#include "compiler/schedule/schedule.h"
#include "compiler/support/debug.h"
#include "compiler/te/tensor.h"

namespace kiln::bench {

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

// The largest divisor of n that is <= want.
int fit(int n, int want) {
  for (int f = std::min(n, want); f > 1; --f) {
    if (n % f == 0) return f;
  }
  return 1;
}

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
  ir::IterVar kr = te::reduce_axis(k, "k");
  te::Tensor c = te::compute(
      {m, n},
      [&](Var i, Var j) {
        return te::sum(ir::cast(acc, a(i, kr->var)) * ir::cast(acc, packed(j / nr, kr->var, j % nr)), {kr});
      },
      "C");
  schedule::Schedule s = schedule::create_schedule({c});
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

}  // namespace

cpu::Module build_sgemm(int m, int n, int k, const cpu::Target& target) {
  int lanes = target.vector_bits() / 32;
  return build_packed_gemm(m, n, k, ir::DataType::Float(32), ir::DataType::Float(32), ir::DataType::Float(32), "sgemm",
                           target, env_int("KILN_GEMM_MR", 8), env_int("KILN_GEMM_NR", 2 * lanes),
                           env_int("KILN_GEMM_KU", 4));
}

cpu::Module build_gemm_u8s8s32(int m, int n, int k, const cpu::Target& target) {
  int lanes = target.vector_bits() / 32;
  return build_packed_gemm(m, n, k, ir::DataType::UInt(8), ir::DataType::Int(8), ir::DataType::Int(32), "gemm_u8s8s32",
                           target, env_int("KILN_GEMM_MR", 8), env_int("KILN_GEMM_NR", 2 * lanes),
                           env_int("KILN_GEMM_KU", 4));
}

}  // namespace kiln::bench
