// order_queues: each module runs its queue in order, so the order of the instructions
// of one module decides how much the modules overlap. Runs are reordered only where
// their instructions touch disjoint ranges (or the same range, for ALU runs), so the
// result is unchanged.
#include <algorithm>

#include "backend-vta/passes/passes.h"

namespace kiln::vta::passes {

namespace {

using hw::Module;

// A run of loads is best issued in the order compute needs them: virtual threads give
// [inp t0, inp t1, wgt t0, wgt t1, gemm t0, gemm t1], and issuing wgt t0 before inp
// t1 lets gemm t0 start while thread 1's data is still coming.
void order_loads(std::vector<Insn>& insns) {
  const size_t kLookahead = 256;
  size_t n = insns.size();
  for (size_t b = 0; b < n;) {
    size_t e = b;
    while (e < n && insns[e].stage == Module::kLoad) ++e;
    if (e - b > 1) {
      bool disjoint = true;
      for (size_t i = b; i < e && disjoint; ++i)
        for (size_t j = i + 1; j < e && disjoint; ++j) disjoint = !conflicts(insns[i], insns[j]);
      if (disjoint) {
        std::vector<std::pair<size_t, size_t>> key;  // first consumer, position
        for (size_t i = b; i < e; ++i) {
          size_t first = SIZE_MAX;
          for (size_t j = e; j < n && j < e + kLookahead; ++j)
            if (insns[j].stage != Module::kLoad && conflicts(insns[i], insns[j])) {
              first = j;
              break;
            }
          key.emplace_back(first, i);
        }
        std::stable_sort(key.begin(), key.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        std::vector<Insn> run;
        for (const auto& [first, i] : key) run.push_back(std::move(insns[i]));
        std::move(run.begin(), run.end(), insns.begin() + static_cast<std::ptrdiff_t>(b));
      }
    }
    b = std::max(e, b + 1);
  }
}

// Virtual threads give the epilogue as [shr t0, shr t1, clip t0, clip t1, ...]; the
// store of thread 0 can start only after its last ALU instruction, and the next tile's
// reset of thread 0 waits for that store. Thread-major order [shr t0, clip t0, ...,
// shr t1, clip t1, ...] lets the store of thread 0 overlap thread 1's epilogue. A run
// of ALU instructions is stably sorted by the accumulator range it writes.
void order_alu_runs(std::vector<Insn>& insns) {
  size_t n = insns.size();
  auto key = [&](const Insn& p) {
    for (const Access& a : p.accesses)
      if (a.write) return a.lo;
    return int64_t{-1};
  };
  for (size_t b = 0; b < n;) {
    size_t e = b;
    while (e < n && insns[e].kind == Insn::Kind::kAlu) ++e;
    if (e - b > 2) {
      bool ok = true;
      for (size_t i = b; i < e && ok; ++i)
        for (size_t j = i + 1; j < e && ok; ++j)
          if (key(insns[i]) != key(insns[j]) && conflicts(insns[i], insns[j])) ok = false;
      if (ok)
        std::stable_sort(insns.begin() + static_cast<std::ptrdiff_t>(b), insns.begin() + static_cast<std::ptrdiff_t>(e),
                         [&](const Insn& x, const Insn& y) { return key(x) < key(y); });
    }
    b = std::max(e, b + 1);
  }
}

}  // namespace

void order_queues(const Env&, InsnFunc& fn) {
  order_loads(fn.insns);
  order_alu_runs(fn.insns);
}

}  // namespace kiln::vta::passes
