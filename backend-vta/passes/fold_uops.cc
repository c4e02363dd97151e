// fold_uops: a GEMM or ALU instruction runs its micro-ops under two loops (iter_out,
// iter_in), each adding a factor to every operand's index (shared/ISA.md). The fold
// finds the fewest micro-ops that, with such loops, reproduce the instruction's list
// exactly, with factors the instruction's fields hold; the kernel is stored in the
// program (equal kernels once).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "backend-vta/passes/passes.h"
#include "support/integer.h"

namespace kiln::vta::passes {

namespace {

// Kernels already made, by what decides them: kind, operation and micro-ops.
using FoldKey = std::vector<int64_t>;

FoldKey fold_key(const Insn& x) {
  FoldKey k;
  k.reserve(5 + 3 * x.placed.size());
  k.push_back(static_cast<int64_t>(x.kind));
  k.push_back(static_cast<int64_t>(x.alu_op));
  k.push_back(x.use_imm);
  k.push_back(x.imm);
  for (const Tup& t : x.placed) {
    k.push_back(t.d);
    k.push_back(t.s);
    k.push_back(t.w);
  }
  return k;
}

const char* what(const Insn& x) {
  return x.kind == Insn::Kind::kGemmReset ? "gemm_reset" : x.kind == Insn::Kind::kGemm ? "gemm" : "alu";
}

int make_kernel(const Env& env, InsnFunc& fn, const Insn& x) {
  const hw::InsnLayout layout(env.config());
  const bool gemm = x.kind != Insn::Kind::kAlu;
  hw::Opcode opc = gemm ? hw::Opcode::kGemm : hw::Opcode::kAlu;
  std::array<int64_t, 3> max_factor{layout.field_max(opc, hw::Field::kDstFactorOut),
                                    layout.field_max(opc, hw::Field::kSrcFactorOut),
                                    gemm ? layout.field_max(opc, hw::Field::kWgtFactorOut) : 0};
  int64_t max_iter = std::min(layout.field_max(opc, hw::Field::kIterOut), layout.field_max(opc, hw::Field::kIterIn));
  UopFit fit = fit_uops(x.placed, max_factor, max_iter);
  if (static_cast<int64_t>(fit.uops.size()) > env.depth(hw::MemType::kUop)) {
    fn.fail(fmt::format("the {} writing '{}' needs {} micro-ops, more than the uop buffer's {}; choose smaller tiles",
                        what(x), fn.tensors[static_cast<size_t>(x.tensor)].name, fit.uops.size(),
                        env.depth(hw::MemType::kUop)));
  }
  std::string name = fn.name + "." + what(x);
  runtime::UopKernelBuilder b = gemm ? runtime::UopKernelBuilder::gemm(name, x.kind == Insn::Kind::kGemmReset)
                                : x.use_imm ? runtime::UopKernelBuilder::alu_imm(name, x.alu_op, static_cast<int32_t>(x.imm))
                                            : runtime::UopKernelBuilder::alu(name, x.alu_op);
  bool loops = fit.e_out > 1 || fit.e_in > 1;
  if (loops) {
    b.loop_begin(static_cast<uint32_t>(fit.e_out), static_cast<uint32_t>(fit.f_out.d), static_cast<uint32_t>(fit.f_out.s),
                 static_cast<uint32_t>(fit.f_out.w));
    b.loop_begin(static_cast<uint32_t>(fit.e_in), static_cast<uint32_t>(fit.f_in.d), static_cast<uint32_t>(fit.f_in.s),
                 static_cast<uint32_t>(fit.f_in.w));
  }
  for (const Tup& u : fit.uops) b.push(static_cast<uint32_t>(u.d), static_cast<uint32_t>(u.s), static_cast<uint32_t>(u.w));
  if (loops) b.loop_end().loop_end();
  return fn.program.add_kernel(b.finish());
}

}  // namespace

UopFit fit_uops(const std::vector<Tup>& t, const std::array<int64_t, 3>& max_factor, int64_t max_iter) {
  int64_t n = static_cast<int64_t>(t.size());
  UopFit best;
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

void fold_uops(const Env& env, InsnFunc& fn) {
  // GEMM regions repeat with the same micro-ops (every tile, every reduction step):
  // each list is folded once.
  std::map<FoldKey, int> made;
  for (Insn& x : fn.insns) {
    if (x.kind == Insn::Kind::kLoad || x.kind == Insn::Kind::kStore) continue;
    FoldKey key = fold_key(x);
    auto it = made.find(key);
    int kernel = it != made.end() ? it->second : made.emplace(std::move(key), make_kernel(env, fn, x)).first->second;
    x.op = ProgramOp{};
    x.op.kind = x.kind == Insn::Kind::kAlu ? ProgramOp::Kind::kAlu : ProgramOp::Kind::kGemm;
    x.op.kernel = kernel;
    x.placed.clear();
    x.placed.shrink_to_fit();
  }
}

}  // namespace kiln::vta::passes
