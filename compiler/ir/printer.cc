#include "compiler/ir/printer.h"

#include <cmath>
#include <sstream>

#include "compiler/ir/functor.h"

namespace kiln::ir {
namespace {

int precedence(NodeKind k) {
  switch (k) {
    case NodeKind::Or: return 1;
    case NodeKind::And: return 2;
    case NodeKind::EQ: case NodeKind::NE: case NodeKind::LT:
    case NodeKind::LE: case NodeKind::GT: case NodeKind::GE: return 3;
    case NodeKind::Add: case NodeKind::Sub: return 4;
    case NodeKind::Mul: case NodeKind::Div: case NodeKind::Mod: return 5;
    default: return 7;
  }
}

const char* op_symbol(NodeKind k) {
  switch (k) {
    case NodeKind::Add: return " + ";
    case NodeKind::Sub: return " - ";
    case NodeKind::Mul: return "*";
    case NodeKind::Div: return "/";
    case NodeKind::Mod: return " % ";
    case NodeKind::EQ: return " == ";
    case NodeKind::NE: return " != ";
    case NodeKind::LT: return " < ";
    case NodeKind::LE: return " <= ";
    case NodeKind::GT: return " > ";
    case NodeKind::GE: return " >= ";
    case NodeKind::And: return " && ";
    case NodeKind::Or: return " || ";
    default: return " ? ";
  }
}

class Printer : public IRVisitor {
 public:
  explicit Printer(std::ostream& os) : os_(os) {}
  using IRVisitor::visit;

  void print_expr(const Expr& e, int parent_prec, bool right_operand) {
    int p = e.defined() && is_binary(e.kind()) ? precedence(e.kind()) : 7;
    bool paren = p < parent_prec || (right_operand && p == parent_prec);
    if (paren) os_ << "(";
    visit(e);
    if (paren) os_ << ")";
  }

  void indent() {
    for (int i = 0; i < depth_; ++i) os_ << "  ";
  }

 protected:
  void visit_(const IntImmNode* op) override {
    if (op->dtype == DataType::Int(32)) {
      os_ << op->value;
    } else if (op->dtype.is_bool()) {
      os_ << (op->value ? "true" : "false");
    } else if (op->dtype.is_uint() && op->dtype.bits() == 64) {
      os_ << "uint64(" << static_cast<uint64_t>(op->value) << ")";
    } else {
      os_ << op->dtype.to_string() << "(" << op->value << ")";
    }
  }
  void visit_(const FloatImmNode* op) override {
    std::ostringstream s;
    s.precision(9);
    s << op->value;
    std::string text = s.str();
    if (std::isfinite(op->value) && text.find_first_of(".e") == std::string::npos) text += ".0";
    if (op->dtype == DataType::Float(32)) {
      os_ << text << "f";
    } else {
      os_ << op->dtype.to_string() << "(" << text << ")";
    }
  }
  void visit_(const StringImmNode* op) override { os_ << '"' << op->value << '"'; }
  void visit_(const VarNode* op) override { os_ << op->name; }
#define KILN_BIN(N)                                         \
  void visit_(const N##Node* op) override {                 \
    int p = precedence(NodeKind::N);                        \
    print_expr(op->a, p, false);                            \
    os_ << op_symbol(NodeKind::N);                          \
    print_expr(op->b, p, true);                             \
  }
  KILN_BIN(Add) KILN_BIN(Sub) KILN_BIN(Mul) KILN_BIN(Div) KILN_BIN(Mod)
  KILN_BIN(EQ) KILN_BIN(NE) KILN_BIN(LT) KILN_BIN(LE) KILN_BIN(GT) KILN_BIN(GE) KILN_BIN(And) KILN_BIN(Or)
#undef KILN_BIN
  void visit_(const MinNode* op) override { call("min", {op->a, op->b}); }
  void visit_(const MaxNode* op) override { call("max", {op->a, op->b}); }
  void visit_(const NotNode* op) override {
    os_ << "!";
    print_expr(op->a, 7, false);
  }
  void visit_(const CastNode* op) override { call(op->dtype.to_string(), {op->value}); }
  void visit_(const SelectNode* op) override { call("select", {op->cond, op->true_value, op->false_value}); }
  void visit_(const LoadNode* op) override {
    os_ << op->buffer_var->name << "[";
    visit(op->index);
    os_ << "]";
  }
  void visit_(const BufferLoadNode* op) override {
    os_ << op->buffer->name << "[";
    list(op->indices);
    os_ << "]";
  }
  void visit_(const ProducerLoadNode* op) override {
    os_ << op->producer->producer_name() << "(";
    list(op->indices);
    os_ << ")";
  }
  void visit_(const RampNode* op) override {
    os_ << "ramp(";
    visit(op->base);
    os_ << ", ";
    visit(op->stride);
    os_ << ", " << op->lanes << ")";
  }
  void visit_(const BroadcastNode* op) override {
    os_ << "broadcast(";
    visit(op->value);
    os_ << ", " << op->lanes << ")";
  }
  void visit_(const CallNode* op) override { call(op->name, op->args); }
  void visit_(const LetNode* op) override {
    os_ << "(let " << op->var->name << " = ";
    visit(op->value);
    os_ << " in ";
    visit(op->body);
    os_ << ")";
  }
  void visit_(const ReduceNode* op) override {
    os_ << combiner_name(op->combiner) << "(";
    visit(op->source);
    os_ << ", axis=[";
    for (size_t i = 0; i < op->axis.size(); ++i) {
      os_ << (i ? ", " : "") << op->axis[i]->var->name;
    }
    os_ << "]";
    if (!is_const_int(op->condition, 1)) {
      os_ << ", where ";
      visit(op->condition);
    }
    os_ << ")";
  }

  void visit_(const LetStmtNode* op) override {
    indent();
    os_ << "let " << op->var->name << " = ";
    visit(op->value);
    os_ << "\n";
    visit(op->body);
  }
  void visit_(const ForNode* op) override {
    indent();
    if (op->for_kind != ForKind::Serial && op->for_kind != ForKind::ThreadBinding) {
      os_ << for_kind_name(op->for_kind) << " ";
    }
    os_ << "for (" << op->var->name << ", ";
    visit(op->min);
    os_ << ", ";
    visit(op->extent);
    os_ << ")";
    if (op->for_kind == ForKind::ThreadBinding) os_ << " bind " << op->thread_tag;
    block(op->body);
  }
  void visit_(const StoreNode* op) override {
    indent();
    os_ << op->buffer_var->name << "[";
    visit(op->index);
    os_ << "] = ";
    visit(op->value);
    os_ << "\n";
  }
  void visit_(const BufferStoreNode* op) override {
    indent();
    os_ << op->buffer->name << "[";
    list(op->indices);
    os_ << "] = ";
    visit(op->value);
    os_ << "\n";
  }
  void visit_(const AllocateNode* op) override {
    indent();
    os_ << "allocate " << op->buffer_var->name << ": " << op->dtype.to_string() << "[";
    visit(op->extent);
    os_ << "] in " << op->scope << "\n";
    visit(op->body);
  }
  void visit_(const RealizeNode* op) override {
    indent();
    os_ << "realize " << op->buffer->name << "(";
    for (size_t i = 0; i < op->bounds.size(); ++i) {
      os_ << (i ? ", " : "") << "[";
      visit(op->bounds[i].min);
      os_ << ", ";
      visit(op->bounds[i].extent);
      os_ << "]";
    }
    os_ << ") in " << op->buffer->scope;
    block(op->body);
  }
  void visit_(const IfThenElseNode* op) override {
    indent();
    os_ << "if (";
    visit(op->cond);
    os_ << ")";
    block(op->then_case, op->else_case.defined());
    if (op->else_case.defined()) {
      os_ << " else";
      block(op->else_case);
    }
  }
  void visit_(const SeqNode* op) override {
    for (const Stmt& s : op->seq) visit(s);
  }
  void visit_(const AttrNode* op) override {
    indent();
    os_ << "// attr ";
    if (op->node.defined()) {
      os_ << "[";
      visit(op->node);
      os_ << "] ";
    }
    os_ << op->key << " = ";
    visit(op->value);
    os_ << "\n";
    visit(op->body);
  }
  void visit_(const EvaluateNode* op) override {
    indent();
    visit(op->value);
    os_ << "\n";
  }

 private:
  void call(const std::string& name, const std::vector<Expr>& args) {
    os_ << name << "(";
    list(args);
    os_ << ")";
  }
  void list(const std::vector<Expr>& args) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (i) os_ << ", ";
      visit(args[i]);
    }
  }
  void block(const Stmt& body, bool more = false) {
    os_ << " {\n";
    ++depth_;
    visit(body);
    --depth_;
    indent();
    os_ << "}";
    if (!more) os_ << "\n";
  }

  std::ostream& os_;
  int depth_ = 0;
};

}  // namespace

std::string to_string(const Expr& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

std::string to_string(const Stmt& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Expr& e) {
  if (!e.defined()) return os << "(undefined)";
  Printer(os).visit(e);
  return os;
}

std::ostream& operator<<(std::ostream& os, const Stmt& s) {
  if (!s.defined()) return os << "(undefined)\n";
  Printer(os).visit(s);
  return os;
}

}  // namespace kiln::ir
