#include "compiler/ir/node.h"

#include <cmath>
#include <limits>

#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln::ir {

const char* kind_name(NodeKind kind) {
  static const char* names[] = {
      "IntImm", "FloatImm", "StringImm", "Var", "Add", "Sub", "Mul", "Div", "Mod", "Min", "Max",
      "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not", "Cast", "Select", "Load",
      "BufferLoad", "ProducerLoad", "Ramp", "Broadcast", "Call", "Let", "Reduce", "LetStmt",
      "For", "Store", "BufferStore", "Allocate", "Realize", "IfThenElse", "Seq", "Attr", "Evaluate"};
  return names[static_cast<int>(kind)];
}

const char* combiner_name(Combiner c) {
  switch (c) {
    case Combiner::Sum: return "sum";
    case Combiner::Max: return "max";
    case Combiner::Min: return "min";
    case Combiner::Prod: return "prod";
  }
  return "?";
}

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::Serial: return "serial";
    case ForKind::Parallel: return "parallel";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unrolled";
    case ForKind::ThreadBinding: return "thread_binding";
  }
  return "?";
}

Expr::Expr(int value) : Ref(std::make_shared<const IntImmNode>(DataType::Int(32), value)) {}
Expr::Expr(float value) : Ref(std::make_shared<const FloatImmNode>(DataType::Float(32), value)) {}
Expr::Expr(double value) : Ref(std::make_shared<const FloatImmNode>(DataType::Float(64), value)) {}

Var::Var(std::string name, DataType t) : Expr(std::make_shared<const VarNode>(std::move(name), t)) {}

IterVar::IterVar(Var var, Range dom, IterKind kind, std::string thread_tag)
    : ptr_(std::make_shared<const IterVarNode>(IterVarNode{std::move(var), std::move(dom), kind, std::move(thread_tag)})) {}

Buffer::Buffer(std::string name, DataType dtype, std::vector<Expr> shape, std::string scope)
    : ptr_(std::make_shared<const BufferNode>(
          BufferNode{Var(name, DataType::Handle()), dtype, std::move(shape), name, std::move(scope)})) {}

namespace {

// The message is built only when the check fails.
#define check(ok, what)                                                 \
  do {                                                                  \
    if (!(ok)) throw CompileError(std::string("ill-typed IR: ") + (what)); \
  } while (0)

}  // namespace

Expr make_int(int64_t value, DataType t) {
  check(t.is_integer(), "integer constant of type " + t.to_string());
  if (t.is_vector()) return make_broadcast(make_int(value, t.element_of()), t.lanes());
  return Expr(std::make_shared<const IntImmNode>(t, wrap_to_type(value, t)));
}

Expr make_float(double value, DataType t) {
  check(t.is_float(), "float constant of type " + t.to_string());
  if (t.is_vector()) return make_broadcast(make_float(value, t.element_of()), t.lanes());
  return Expr(std::make_shared<const FloatImmNode>(t, round_to_type(value, t)));
}

Expr make_bool(bool value, int lanes) { return make_int(value ? 1 : 0, DataType::Bool(lanes)); }

Expr make_const(DataType t, double value) {
  if (t.is_float()) return make_float(value, t);
  if (t.is_uint() && value >= 9.2e18) return make_int(static_cast<int64_t>(static_cast<uint64_t>(value)), t);
  if (value >= 9.2e18) return make_int(std::numeric_limits<int64_t>::max(), t);
  if (value <= -9.2e18) return make_int(std::numeric_limits<int64_t>::min(), t);
  return make_int(static_cast<int64_t>(value), t);
}

Expr make_string(std::string value) { return Expr(std::make_shared<const StringImmNode>(std::move(value))); }

Expr make_binary(NodeKind kind, Expr a, Expr b) {
  check(a.defined() && b.defined(), std::string("undefined operand of ") + kind_name(kind));
  check(a.dtype() == b.dtype(), std::string(kind_name(kind)) + " of " + a.dtype().to_string() + " (" +
                                    to_string(a) + ") and " + b.dtype().to_string() + " (" + to_string(b) + ")");
  DataType t = a.dtype();
  if (kind == NodeKind::And || kind == NodeKind::Or) check(t.is_bool(), "logic on " + t.to_string());
  if (is_comparison(kind)) t = DataType::Bool(t.lanes());
  switch (kind) {
#define KILN_BIN(K) \
  case NodeKind::K: return Expr(std::make_shared<const K##Node>(t, std::move(a), std::move(b)));
    KILN_BIN(Add) KILN_BIN(Sub) KILN_BIN(Mul) KILN_BIN(Div) KILN_BIN(Mod) KILN_BIN(Min) KILN_BIN(Max)
    KILN_BIN(EQ) KILN_BIN(NE) KILN_BIN(LT) KILN_BIN(LE) KILN_BIN(GT) KILN_BIN(GE) KILN_BIN(And) KILN_BIN(Or)
#undef KILN_BIN
    default: break;
  }
  throw CompileError(std::string("make_binary: not a binary node kind: ") + kind_name(kind));
}

Expr make_not(Expr a) {
  check(a.dtype().is_bool(), "logical not of " + a.dtype().to_string());
  return Expr(std::make_shared<const NotNode>(std::move(a)));
}

Expr make_cast(DataType t, Expr v) {
  check(t.lanes() == v.dtype().lanes(), "cast of " + v.dtype().to_string() + " to " + t.to_string());
  if (v.dtype() == t) return v;
  return Expr(std::make_shared<const CastNode>(t, std::move(v)));
}

Expr make_select(Expr c, Expr t, Expr f) {
  check(c.dtype().is_bool(), "select condition of type " + c.dtype().to_string());
  check(t.dtype() == f.dtype(), "select of " + t.dtype().to_string() + " and " + f.dtype().to_string());
  check(c.dtype().lanes() == 1 || c.dtype().lanes() == t.dtype().lanes(), "select lanes");
  return Expr(std::make_shared<const SelectNode>(std::move(c), std::move(t), std::move(f)));
}

Expr make_load(DataType t, Var buffer_var, Expr index) {
  check(t.lanes() == index.dtype().lanes(), "load lanes " + t.to_string() + " index " + index.dtype().to_string());
  return Expr(std::make_shared<const LoadNode>(t, std::move(buffer_var), std::move(index)));
}

Expr make_buffer_load(Buffer b, std::vector<Expr> indices) {
  check(indices.size() == b->shape.size(), "load of " + b->name + " with " + std::to_string(indices.size()) +
                                               " indices, rank " + std::to_string(b->shape.size()));
  return Expr(std::make_shared<const BufferLoadNode>(std::move(b), std::move(indices)));
}

Expr make_producer_load(std::shared_ptr<const DataProducer> p, std::vector<Expr> indices) {
  if (indices.size() != p->producer_shape().size()) {
    throw CompileError("tensor " + p->producer_name() + " has rank " + std::to_string(p->producer_shape().size()) +
                       " but is indexed with " + std::to_string(indices.size()) + " indices");
  }
  for (const Expr& i : indices) check(i.dtype().is_integer() && i.dtype().is_scalar(), "tensor index of type " + i.dtype().to_string());
  return Expr(std::make_shared<const ProducerLoadNode>(std::move(p), std::move(indices)));
}

Expr make_ramp(Expr base, Expr stride, int lanes) {
  check(base.dtype().is_scalar() && base.dtype() == stride.dtype() && lanes > 1, "ramp");
  return Expr(std::make_shared<const RampNode>(std::move(base), std::move(stride), lanes));
}

Expr make_broadcast(Expr value, int lanes) {
  check(value.dtype().is_scalar() && lanes >= 1, "broadcast of " + value.dtype().to_string());
  if (lanes == 1) return value;
  return Expr(std::make_shared<const BroadcastNode>(std::move(value), lanes));
}

Expr make_call(DataType t, std::string name, std::vector<Expr> args) {
  return Expr(std::make_shared<const CallNode>(t, std::move(name), std::move(args)));
}

Expr make_let(Var v, Expr value, Expr body) {
  check(v.dtype() == value.dtype(), "let " + v.name() + " of type " + v.dtype().to_string() + " = " + value.dtype().to_string());
  return Expr(std::make_shared<const LetNode>(std::move(v), std::move(value), std::move(body)));
}

Expr make_reduce(Combiner c, Expr source, std::vector<IterVar> axis, Expr condition) {
  if (!condition.defined()) condition = make_bool(true);
  return Expr(std::make_shared<const ReduceNode>(c, std::move(source), std::move(axis), std::move(condition)));
}

Stmt make_let_stmt(Var v, Expr value, Stmt body) {
  check(v.dtype() == value.dtype(), "let " + v.name() + " of type " + v.dtype().to_string() + " = " + value.dtype().to_string());
  return Stmt(std::make_shared<const LetStmtNode>(std::move(v), std::move(value), std::move(body)));
}

Stmt make_for(Var v, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag) {
  check(min.dtype() == v.dtype() && extent.dtype() == v.dtype(), "loop " + v.name() + " bounds of type " +
                                                                    min.dtype().to_string() + "/" + extent.dtype().to_string());
  return Stmt(std::make_shared<const ForNode>(std::move(v), std::move(min), std::move(extent), kind,
                                              std::move(thread_tag), std::move(body)));
}

Stmt make_store(Var buffer_var, Expr value, Expr index) {
  check(value.dtype().lanes() == index.dtype().lanes(), "store lanes");
  return Stmt(std::make_shared<const StoreNode>(std::move(buffer_var), std::move(value), std::move(index)));
}

Stmt make_buffer_store(Buffer b, Expr value, std::vector<Expr> indices) {
  check(indices.size() == b->shape.size(), "store to " + b->name + " with wrong rank");
  check(value.dtype() == b->dtype, "store of " + value.dtype().to_string() + " into " + b->name + " of " + b->dtype.to_string());
  return Stmt(std::make_shared<const BufferStoreNode>(std::move(b), std::move(value), std::move(indices)));
}

Stmt make_allocate(Var buffer_var, DataType t, Expr extent, std::string scope, Stmt body) {
  return Stmt(std::make_shared<const AllocateNode>(std::move(buffer_var), t, std::move(extent), std::move(scope), std::move(body)));
}

Stmt make_realize(Buffer b, std::vector<Range> bounds, Stmt body) {
  check(bounds.size() == b->shape.size(), "realize of " + b->name + " with wrong rank");
  return Stmt(std::make_shared<const RealizeNode>(std::move(b), std::move(bounds), std::move(body)));
}

Stmt make_if(Expr cond, Stmt then_case, Stmt else_case) {
  check(cond.dtype() == DataType::Bool(), "if condition of type " + cond.dtype().to_string());
  return Stmt(std::make_shared<const IfThenElseNode>(std::move(cond), std::move(then_case), std::move(else_case)));
}

Stmt make_seq(std::vector<Stmt> seq) {
  std::vector<Stmt> flat;
  for (Stmt& s : seq) {
    if (!s.defined()) continue;
    if (const auto* inner = s.as<SeqNode>()) {
      flat.insert(flat.end(), inner->seq.begin(), inner->seq.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<const SeqNode>(std::move(flat)));
}

Stmt make_attr(std::string key, Expr node, Expr value, Stmt body) {
  return Stmt(std::make_shared<const AttrNode>(std::move(key), std::move(node), std::move(value), std::move(body)));
}

Stmt make_evaluate(Expr v) { return Stmt(std::make_shared<const EvaluateNode>(std::move(v))); }

Stmt make_no_op() { return make_evaluate(make_int(0)); }

Expr reduce_identity(Combiner c, DataType t) {
  switch (c) {
    case Combiner::Sum: return make_const(t, 0);
    case Combiner::Prod: return make_const(t, 1);
    case Combiner::Max:
      return t.is_float() ? make_float(-INFINITY, t) : make_int(t.min_int(), t);
    case Combiner::Min:
      if (t.is_float()) return make_float(INFINITY, t);
      if (t.is_uint() && t.bits() == 64) return make_int(-1, t);
      return make_int(t.max_int(), t);
  }
  return Expr();
}

const int64_t* as_const_int(const Expr& e) {
  const auto* n = e.as<IntImmNode>();
  return n ? &n->value : nullptr;
}

bool is_const_int(const Expr& e, int64_t value) {
  const int64_t* v = as_const_int(e);
  return v != nullptr && *v == value;
}

bool is_no_op(const Stmt& s) {
  if (!s.defined()) return true;
  if (const auto* e = s.as<EvaluateNode>()) return e->value.as<IntImmNode>() != nullptr;
  if (const auto* q = s.as<SeqNode>()) return q->seq.empty();
  return false;
}

}  // namespace kiln::ir
