// match_alu: each ALU region's stores must all be one ALU operation of the ISA (add,
// mul, min, max, shift right, and the forms that reduce to them: subtracting a
// constant, shifting left by one, a copy), with an ACC tensor as the first operand and
// an ACC tensor or an immediate as the second, one whole element at a time. The
// operands become elements; which one the result overwrites is decided once the
// tensors are placed (plan_scratchpad).
#include <fmt/format.h>

#include "backend-vta/passes/passes.h"
#include "compiler/ir/printer.h"

namespace kiln::vta::passes {

namespace {

struct AluForm {
  hw::AluOp op;
  ir::Expr a, b;  // operands: a is a load; b a load or an immediate
  bool commutative = false;
  bool negate_imm = false;
};

AluForm alu_form(const InsnFunc& fn, const ir::Expr& v) {
  using K = ir::NodeKind;
  auto bin = [&](hw::AluOp op, const ir::Expr& a, const ir::Expr& b, bool comm) { return AluForm{op, a, b, comm, false}; };
  switch (v.kind()) {
    case K::Add: return bin(hw::AluOp::kAdd, v.as<ir::AddNode>()->a, v.as<ir::AddNode>()->b, true);
    case K::Mul: return bin(hw::AluOp::kMul, v.as<ir::MulNode>()->a, v.as<ir::MulNode>()->b, true);
    case K::Min: return bin(hw::AluOp::kMin, v.as<ir::MinNode>()->a, v.as<ir::MinNode>()->b, true);
    case K::Max: return bin(hw::AluOp::kMax, v.as<ir::MaxNode>()->a, v.as<ir::MaxNode>()->b, true);
    case K::Sub: {
      const auto* s = v.as<ir::SubNode>();
      if (ir::as_const_int(s->b)) return AluForm{hw::AluOp::kAdd, s->a, s->b, false, true};
      break;
    }
    case K::Call: {
      const auto* c = v.as<ir::CallNode>();
      if (c->args.size() == 2 && c->name == "shift_right") return bin(hw::AluOp::kShr, c->args[0], c->args[1], false);
      if (c->args.size() == 2 && c->name == "shift_left" && ir::as_const_int(c->args[1]))
        return AluForm{hw::AluOp::kShr, c->args[0], c->args[1], false, true};
      break;
    }
    case K::Load: return AluForm{hw::AluOp::kShr, v, ir::make_int(0, v.dtype()), false, false};  // a copy
    default: break;
  }
  fn.fail("'" + ir::to_string(v) + "' is not an ALU operation (add, mul, min, max, shifts, subtracting a constant)");
}

void match(const Env& env, InsnFunc& fn, Insn& x) {
  const int64_t elem = env.elem_scalars(hw::MemType::kAcc);
  const std::string& dst_name = fn.tensors[static_cast<size_t>(x.tensor)].name;
  bool first = true, negated = false;
  for (const AluLeaf& leaf : x.leaves) {
    AluForm fm = alu_form(fn, leaf.store->value);
    if (first) {
      x.alu_op = fm.op;
      x.commutative = fm.commutative;
      if (const int64_t* c = ir::as_const_int(fm.b)) {
        x.use_imm = true;
        x.imm = fm.negate_imm ? -*c : *c;
        negated = fm.negate_imm;
      } else if (fm.negate_imm) {
        fn.fail("'" + ir::to_string(leaf.store->value) + "' is not an ALU operation");
      }
      first = false;
    }
    auto operand = [&](const ir::Expr& e, const char* which) {
      const auto* ld = e.as<ir::LoadNode>();
      const AluLeaf::Operand* o = nullptr;
      for (const AluLeaf::Operand& c : leaf.operands)
        if (c.load == ld) o = &c;
      if (!ld || !o || o->tensor < 0 || fn.tensors[static_cast<size_t>(o->tensor)].mem != hw::MemType::kAcc)
        fn.fail(fmt::format("the {} operand of '{}' (the ALU stage writing '{}') is not an ACC tensor", which,
                            ir::to_string(leaf.store->value), dst_name));
      const std::string& name = fn.tensors[static_cast<size_t>(o->tensor)].name;
      if (!o->written) fn.fail(fmt::format("'{}' is read by the ALU before anything wrote it", name));
      if (o->last - o->first != elem - 1) fn.fail(fmt::format("the ALU reads '{}' not one whole element at a time", name));
      return SpadRef{o->tensor, fn.element(env, o->tensor, o->first, "the ALU")};
    };
    if (leaf.last - leaf.first != elem - 1)
      fn.fail(fmt::format("the ALU writes '{}' not one whole element at a time", dst_name));
    UopRef u;
    u.inp = operand(fm.a, "first");
    if (!x.use_imm) u.wgt = operand(fm.b, "second");
    u.acc = SpadRef{x.tensor, fn.element(env, x.tensor, leaf.first, "the ALU")};
    x.uops.push_back(u);
  }
  x.leaves.clear();
  x.leaves.shrink_to_fit();
  const hw::InsnLayout layout(env.config());
  int64_t max_imm = layout.field_max(hw::Opcode::kAlu, hw::Field::kImm);
  if (x.use_imm && (x.imm > max_imm || x.imm < -max_imm - 1))
    fn.fail(fmt::format("the immediate {} of the ALU stage writing '{}' does not fit the imm field", x.imm, dst_name));
  // SHR reads its amount from the low LOG_ACC_WIDTH bits, signed (shared/ISA.md).
  int64_t half = env.config().acc_width() / 2;
  if (x.use_imm && x.alu_op == hw::AluOp::kShr && (x.imm < -half || x.imm >= half))
    fn.fail(fmt::format("the ALU stage writing '{}' shifts by {}; the ALU shifts by -{} to {}", dst_name,
                        negated ? -x.imm : x.imm, half, half - 1));
  // A result without storage of its own takes over the first operand's.
  if (x.alias_event >= 0) {
    const UopRef& u0 = x.uops.front();
    fn.events[static_cast<size_t>(x.alias_event)].target = SpadRef{u0.inp.tensor, u0.inp.elem - u0.acc.elem};
  }
}

}  // namespace

void match_alu(const Env& env, InsnFunc& fn) {
  for (Insn& x : fn.insns)
    if (x.kind == Insn::Kind::kAlu) match(env, fn, x);
}

}  // namespace kiln::vta::passes
