#include "backend-vta/passes/insn_ir.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln::vta {

const char* insn_kind_name(Insn::Kind k) {
  switch (k) {
    case Insn::Kind::kLoad: return "load";
    case Insn::Kind::kStore: return "store";
    case Insn::Kind::kGemmReset: return "gemm_reset";
    case Insn::Kind::kGemm: return "gemm";
    case Insn::Kind::kAlu: return "alu";
  }
  return "?";
}

bool conflicts(const Insn& a, const Insn& b) {
  auto key = [](hw::MemType m) { return m == hw::MemType::kOut ? hw::MemType::kAcc : m; };
  for (const Access& x : a.accesses)
    for (const Access& y : b.accesses)
      if (key(x.mem) == key(y.mem) && (x.write || y.write) && x.lo < y.hi && y.lo < x.hi) return true;
  return false;
}

void InsnFunc::fail(const std::string& why) const { throw CompileError("vta codegen of '" + name + "': " + why); }

int64_t InsnFunc::element(const Env& env, int t, int64_t idx, const char* what) const {
  const SpadTensor& sp = tensors[static_cast<size_t>(t)];
  int64_t elem = env.elem_scalars(sp.mem);
  if (idx % elem != 0) fail(fmt::format("{} of '{}' at scalar {} is not at an element boundary", what, sp.name, idx));
  int64_t e = idx / elem;
  if (e < 0 || e >= sp.elems) fail(fmt::format("{} of '{}' at element {} is outside its {} elements", what, sp.name, e, sp.elems));
  return e;
}

std::string brief(const ir::Stmt& s) {
  if (!s.defined()) return "<none>";
  std::string text = ir::to_string(s);
  auto nl = text.find('\n');
  if (nl != std::string::npos) text = text.substr(0, nl) + " ...";
  return text;
}

std::string InsnFunc::summary() const {
  std::array<size_t, 5> count{};
  size_t uops = 0, placed = 0;
  for (const Insn& i : insns) {
    ++count[static_cast<size_t>(i.kind)];
    uops += i.uops.size() + i.leaves.size();
    placed += i.placed.size();
  }
  size_t on = 0;
  for (const SpadTensor& t : tensors) on += t.placed;
  std::string s = fmt::format("{} tensors ({} placed), {} instructions ({} load, {} store, {} gemm_reset, {} gemm, {} alu)",
                              tensors.size(), on, insns.size(), count[0], count[1], count[2], count[3], count[4]);
  if (uops) s += fmt::format(", {} micro-ops as elements", uops);
  if (placed) s += fmt::format(", {} placed micro-ops", placed);
  s += fmt::format(", {} kernels", program.kernels().size());
  if (ops_done) s += fmt::format(", {} program ops", program.ops().size());
  return s;
}

std::string InsnFunc::dump() const {
  std::string s;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SpadTensor& t = tensors[i];
    s += fmt::format("  tensor %{} '{}' {} x{}", i, t.name, hw::mem_type_name(t.mem), t.elems);
    if (t.placed) s += fmt::format(" at [{}, {})", t.base, t.base + t.elems);
    if (t.alias_of >= 0) s += fmt::format(" (in %{})", t.alias_of);
    s += "\n";
  }
  for (size_t i = 0; i < insns.size(); ++i) {
    const Insn& x = insns[i];
    s += fmt::format("  {:5} {:7} {:10} r{}", i, hw::module_name(x.stage), insn_kind_name(x.kind), x.region);
    if (x.tensor >= 0) s += fmt::format(" %{}", x.tensor);
    if (!x.elems.empty()) s += fmt::format(" elems={}", x.elems.size());
    if (x.dma_elems) s += fmt::format(" sram={} dram={}+{} {}x{} stride {}", x.op.sram, x.op.arg, x.op.dram_elem,
                                       x.op.y_size, x.op.x_size, x.op.x_stride);
    if (!x.uops.empty()) s += fmt::format(" uops={}", x.uops.size());
    if (!x.leaves.empty()) s += fmt::format(" stores={}", x.leaves.size());
    if (x.kind == Insn::Kind::kAlu && x.leaves.empty())
      s += fmt::format(" op={}{}", static_cast<int>(x.alu_op), x.use_imm ? fmt::format(" imm={}", x.imm) : "");
    if (!x.placed.empty()) s += fmt::format(" placed={}", x.placed.size());
    for (const Access& a : x.accesses)
      s += fmt::format(" {}{}[{},{})", a.write ? "w:" : "r:", hw::mem_type_name(a.mem), a.lo, a.hi);
    if ((x.kind != Insn::Kind::kLoad && x.kind != Insn::Kind::kStore) && x.placed.empty() && x.uops.empty() &&
        x.leaves.empty())
      s += fmt::format(" kernel={}", x.op.kernel);
    s += "\n";
  }
  return s;
}

}  // namespace kiln::vta
