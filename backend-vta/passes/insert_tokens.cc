// insert_tokens: instruction X of module S must wait for the latest earlier
// instruction P of module T whose access conflicts with X's (overlapping ranges, one
// of them a write). P pushes a token to S right after it runs, X pops it. Waits
// already implied by an earlier pop of S are skipped, so the pushes of each pair of
// modules come in program order, as the token queues need. The instructions, with
// their tokens, become the program's ops.
#include <array>
#include <map>

#include "backend-vta/passes/passes.h"

namespace kiln::vta::passes {

void insert_tokens(const Env&, InsnFunc& fn) {
  using hw::Module;
  const std::vector<Insn>& insns = fn.insns;
  size_t n = insns.size();
  std::vector<std::array<bool, hw::kNumModules>> push_after(n), pop_before(n);
  std::array<std::array<int64_t, hw::kNumModules>, hw::kNumModules> covered;
  for (auto& row : covered) row.fill(-1);
  struct Seen {
    int64_t idx;
    Module stage;
    int64_t lo, hi;
    bool write;
  };
  std::map<int, std::vector<Seen>> history;
  auto key_of = [](hw::MemType m) { return static_cast<int>(m == hw::MemType::kOut ? hw::MemType::kAcc : m); };
  for (size_t i = 0; i < n; ++i) {
    const Insn& x = insns[i];
    int s = static_cast<int>(x.stage);
    std::array<int64_t, hw::kNumModules> best{-1, -1, -1};
    for (const Access& a : x.accesses) {
      for (const Seen& p : history[key_of(a.mem)]) {
        int t = static_cast<int>(p.stage);
        if (t == s || !(p.write || a.write) || p.hi <= a.lo || a.hi <= p.lo || p.idx <= covered[t][s]) continue;
        best[t] = std::max(best[t], p.idx);
      }
    }
    for (int t = 0; t < hw::kNumModules; ++t) {
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
    const Insn& x = insns[i];
    for (int t = 0; t < hw::kNumModules; ++t) {
      if (!pop_before[i][t]) continue;
      ProgramOp p;
      p.kind = ProgramOp::Kind::kDepPop;
      p.from = static_cast<Module>(t);
      p.to = x.stage;
      fn.program.add_op(p);
    }
    fn.program.add_op(x.op);
    for (int t = 0; t < hw::kNumModules; ++t) {
      if (!push_after[i][t]) continue;
      ProgramOp p;
      p.kind = ProgramOp::Kind::kDepPush;
      p.from = x.stage;
      p.to = static_cast<Module>(t);
      fn.program.add_op(p);
    }
  }
  fn.ops_done = true;
}

}  // namespace kiln::vta::passes
