// plan_scratchpad: replays the tensors' lifetimes in program order and gives each its
// range in its buffer, then makes every instruction absolute.
//
// Placement is first fit, except that an ACC tensor is first tried centred on the
// middle of ACC, the boundary of the RTL's two ACC banks (docs/hardware.md): virtual
// threads make a tensor one copy per thread, back to back, so two threads' copies
// then sit in different banks, and the store module reading one thread's results does
// not wait for compute working on the other's. Centring can leave too little
// contiguous room for a later tensor; then the whole plan is made again with first
// fit. An ALU stage whose result has no range yet takes over the range of the
// operand it overwrites: the ALU works in place.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>

#include "backend-vta/passes/passes.h"

namespace kiln::vta::passes {

namespace {

struct LayoutFull {};

// True when [at, at + n) overlaps no range in use.
bool free_range(const std::map<int64_t, int64_t>& used, int64_t at, int64_t n) {
  if (at < 0) return false;
  for (const auto& [start, len] : used)
    if (start < at + n && at < start + len) return false;
  return true;
}

class Planner {
 public:
  Planner(const Env& env, InsnFunc& fn, bool centre_acc) : env_(env), fn_(fn), centre_acc_(centre_acc) {}

  void run() {
    for (SpadTensor& t : fn_.tensors) {
      t.placed = false;
      t.base = 0;
      t.alias_of = -1;
    }
    for (const SpadEvent& e : fn_.events) {
      SpadTensor& t = fn_.tensors[static_cast<size_t>(e.tensor)];
      switch (e.kind) {
        case SpadEvent::Kind::kPlace: place(t); break;
        case SpadEvent::Kind::kAlias: {
          const SpadTensor& in = fn_.tensors[static_cast<size_t>(e.target.tensor)];
          t.base = in.base + e.target.elem;
          t.placed = true;
          t.alias_of = e.target.tensor;
          break;
        }
        case SpadEvent::Kind::kFree:
          if (t.placed && t.alias_of < 0) used_[static_cast<int>(t.mem)].erase(t.base);
          break;
      }
    }
  }

 private:
  void place(SpadTensor& sp) {
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
      if (centre) throw LayoutFull{};
      std::string live;
      for (const auto& [start, len] : used) live += fmt::format(" [{}, {})", start, start + len);
      fn_.fail(fmt::format("'{}' needs {} {} elements but only {} of {} are free (in use:{}); choose smaller tiles",
                           sp.name, sp.elems, hw::mem_type_name(sp.mem), depth - at, depth, live));
    }
    used[at] = sp.elems;
    sp.base = at;
    sp.placed = true;
  }

  const Env& env_;
  InsnFunc& fn_;
  bool centre_acc_;
  std::array<std::map<int64_t, int64_t>, 5> used_;  // per memory type: start -> length
};

// [lo, hi) of one operand over the micro-ops.
std::pair<int64_t, int64_t> range(const std::vector<Tup>& t, int64_t Tup::*m) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const Tup& x : t) {
    lo = std::min(lo, x.*m);
    hi = std::max(hi, x.*m);
  }
  return {lo, hi + 1};
}

// The ALU works in place: the destination is the first operand, or the second of a
// commutative operation. Each micro-op becomes (destination, the other operand).
void resolve_alu(InsnFunc& fn, Insn& x) {
  const UopRef& r0 = x.uops.front();
  const std::string& dst = fn.tensors[static_cast<size_t>(x.tensor)].name;
  bool swap = x.alias_event < 0 && !x.use_imm && x.commutative && fn.abs(r0.wgt) == fn.abs(r0.acc) &&
              fn.abs(r0.inp) != fn.abs(r0.acc);
  x.placed.reserve(x.uops.size());
  for (const UopRef& r : x.uops) {
    int64_t d = fn.abs(r.acc);
    const SpadRef& in = swap ? r.wgt : r.inp;
    if (fn.abs(in) != d)
      fn.fail(fmt::format("the ALU stage writing '{}' reads '{}' at another element; the ALU works in place", dst,
                          fn.tensors[static_cast<size_t>(in.tensor)].name));
    Tup t{d, 0, 0};
    if (!x.use_imm) t.s = fn.abs(swap ? r.inp : r.wgt);
    x.placed.push_back(t);
  }
  auto [dl, dh] = range(x.placed, &Tup::d);
  x.accesses.push_back(Access{hw::MemType::kAcc, dl, dh, true});
  if (!x.use_imm) {
    auto [sl, sh] = range(x.placed, &Tup::s);
    x.accesses.push_back(Access{hw::MemType::kAcc, sl, sh, false});
  }
}

void resolve_gemm(InsnFunc& fn, Insn& x) {
  const bool reset = x.kind == Insn::Kind::kGemmReset;
  x.placed.reserve(x.uops.size());
  for (const UopRef& r : x.uops)
    x.placed.push_back(reset ? Tup{fn.abs(r.acc), 0, 0} : Tup{fn.abs(r.acc), fn.abs(r.inp), fn.abs(r.wgt)});
  auto [dl, dh] = range(x.placed, &Tup::d);
  x.accesses.push_back(Access{hw::MemType::kAcc, dl, dh, true});
  if (!reset) {
    auto [sl, sh] = range(x.placed, &Tup::s);
    auto [wl, wh] = range(x.placed, &Tup::w);
    x.accesses.push_back(Access{hw::MemType::kInp, sl, sh, false});
    x.accesses.push_back(Access{hw::MemType::kWgt, wl, wh, false});
  }
}

void resolve(InsnFunc& fn, Insn& x) {
  x.accesses.clear();
  x.placed.clear();
  switch (x.kind) {
    case Insn::Kind::kLoad:
    case Insn::Kind::kStore: {
      int64_t at = fn.tensors[static_cast<size_t>(x.tensor)].base + x.op.sram;
      x.op.sram = static_cast<uint32_t>(at);
      if (x.kind == Insn::Kind::kLoad) x.accesses.push_back(Access{x.mem, at, at + x.dma_elems, true});
      else x.accesses.push_back(Access{hw::MemType::kOut, at, at + x.dma_elems, false});
      return;
    }
    case Insn::Kind::kGemmReset:
    case Insn::Kind::kGemm: resolve_gemm(fn, x); break;
    case Insn::Kind::kAlu: resolve_alu(fn, x); break;
  }
  x.uops.clear();
  x.uops.shrink_to_fit();
}

}  // namespace

void plan_scratchpad(const Env& env, InsnFunc& fn) {
  try {
    Planner(env, fn, /*centre_acc=*/true).run();
  } catch (const LayoutFull&) {
    Planner(env, fn, /*centre_acc=*/false).run();
  }
  for (Insn& x : fn.insns) resolve(fn, x);
}

}  // namespace kiln::vta::passes
