#pragma once
// The loop IR: small immutable reference-counted nodes. An `Expr` or a `Stmt` is a
// shared pointer to a const node; passes never modify a node, they build new ones and
// return the very same node when nothing changed.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/type.h"

namespace kiln::ir {

enum class NodeKind : uint8_t {
  // expressions
  IntImm, FloatImm, StringImm, Var,
  Add, Sub, Mul, Div, Mod, Min, Max,
  EQ, NE, LT, LE, GT, GE, And, Or, Not,
  Cast, Select, Load, BufferLoad, ProducerLoad, Ramp, Broadcast, Call, Let, Reduce,
  // statements
  LetStmt, For, Store, BufferStore, Allocate, Realize, IfThenElse, Seq, Attr, Evaluate,
};

const char* kind_name(NodeKind kind);

struct Node {
  explicit Node(NodeKind k) : kind(k) {}
  virtual ~Node() = default;
  const NodeKind kind;
};

struct ExprNode : Node {
  ExprNode(NodeKind k, DataType t) : Node(k), dtype(t) {}
  const DataType dtype;
};
struct StmtNode : Node {
  explicit StmtNode(NodeKind k) : Node(k) {}
};

template <typename Base>
class Ref {
 public:
  Ref() = default;
  explicit Ref(std::shared_ptr<const Base> p) : ptr_(std::move(p)) {}
  const Base* get() const { return ptr_.get(); }
  const Base* operator->() const { return ptr_.get(); }
  bool defined() const { return ptr_ != nullptr; }
  bool same_as(const Ref& o) const { return ptr_ == o.ptr_; }
  NodeKind kind() const { return ptr_->kind; }
  template <typename T>
  const T* as() const {
    return ptr_ && ptr_->kind == T::kKind ? static_cast<const T*>(ptr_.get()) : nullptr;
  }
  const std::shared_ptr<const Base>& ptr() const { return ptr_; }

 protected:
  std::shared_ptr<const Base> ptr_;
};

class Expr : public Ref<ExprNode> {
 public:
  using Ref::Ref;
  Expr() = default;
  // Literals, so `x + 1` reads naturally: int32, float32 and float64 constants. A
  // literal operand takes the type of the other operand (op.h).
  Expr(int value);     // NOLINT
  Expr(float value);   // NOLINT
  Expr(double value);  // NOLINT
  DataType dtype() const { return ptr_->dtype; }
};

class Stmt : public Ref<StmtNode> {
 public:
  using Ref::Ref;
};

// ---------------------------------------------------------------- variables, ranges

struct VarNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Var;
  VarNode(std::string n, DataType t) : ExprNode(kKind, t), name(std::move(n)) {}
  const std::string name;
};

// A variable; two variables are the same only if they are the same node.
class Var : public Expr {
 public:
  Var() = default;
  explicit Var(std::string name, DataType t = DataType::Int(32));
  explicit Var(std::shared_ptr<const VarNode> p) : Expr(std::move(p)) {}
  const VarNode* get() const { return static_cast<const VarNode*>(ptr_.get()); }
  const VarNode* operator->() const { return get(); }
  const std::string& name() const { return get()->name; }
};

struct Range {
  Range() = default;
  Range(Expr min_, Expr extent_) : min(std::move(min_)), extent(std::move(extent_)) {}
  static Range from_min_extent(Expr min, Expr extent) { return Range(std::move(min), std::move(extent)); }
  Expr min;
  Expr extent;
};

// What an iteration variable iterates over and how.
enum class IterKind : uint8_t { DataPar, Reduce, Thread };

struct IterVarNode {
  Var var;
  Range dom;
  IterKind kind = IterKind::DataPar;
  std::string thread_tag;
};

class IterVar {
 public:
  IterVar() = default;
  IterVar(Var var, Range dom, IterKind kind, std::string thread_tag = "");
  const IterVarNode* operator->() const { return ptr_.get(); }
  const IterVarNode* get() const { return ptr_.get(); }
  bool defined() const { return ptr_ != nullptr; }
  bool same_as(const IterVar& o) const { return ptr_ == o.ptr_; }
  bool operator==(const IterVar& o) const { return ptr_ == o.ptr_; }

 private:
  std::shared_ptr<const IterVarNode> ptr_;
};

// ---------------------------------------------------------------- buffers, producers

struct BufferNode {
  Var data;  // handle-typed variable naming the storage
  DataType dtype;
  std::vector<Expr> shape;
  std::string name;
  std::string scope;  // "global", "local", "shared", or an accelerator buffer name
};

class Buffer {
 public:
  Buffer() = default;
  Buffer(std::string name, DataType dtype, std::vector<Expr> shape, std::string scope = "global");
  const BufferNode* operator->() const { return ptr_.get(); }
  const BufferNode* get() const { return ptr_.get(); }
  bool defined() const { return ptr_ != nullptr; }
  bool same_as(const Buffer& o) const { return ptr_ == o.ptr_; }

 private:
  std::shared_ptr<const BufferNode> ptr_;
};

// Something that produces a multi-dimensional value: a te tensor. The IR refers to it
// without knowing about te.
struct DataProducer {
  virtual ~DataProducer() = default;
  virtual const std::string& producer_name() const = 0;
  virtual DataType producer_dtype() const = 0;
  virtual const std::vector<Expr>& producer_shape() const = 0;
};

// ---------------------------------------------------------------- expressions

struct IntImmNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::IntImm;
  IntImmNode(DataType t, int64_t v) : ExprNode(kKind, t), value(v) {}
  const int64_t value;  // uint64 values are stored by their bits
};
struct FloatImmNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::FloatImm;
  FloatImmNode(DataType t, double v) : ExprNode(kKind, t), value(v) {}
  const double value;
};
struct StringImmNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::StringImm;
  explicit StringImmNode(std::string v) : ExprNode(kKind, DataType::Handle()), value(std::move(v)) {}
  const std::string value;
};

template <NodeKind K>
struct BinaryNode : ExprNode {
  static constexpr NodeKind kKind = K;
  BinaryNode(DataType t, Expr a_, Expr b_) : ExprNode(K, t), a(std::move(a_)), b(std::move(b_)) {}
  const Expr a;
  const Expr b;
};
// Integer Div and Mod round towards minus infinity (floor division); on floats Div is
// true division and Mod is a - floor(a / b) * b.
using AddNode = BinaryNode<NodeKind::Add>;
using SubNode = BinaryNode<NodeKind::Sub>;
using MulNode = BinaryNode<NodeKind::Mul>;
using DivNode = BinaryNode<NodeKind::Div>;
using ModNode = BinaryNode<NodeKind::Mod>;
using MinNode = BinaryNode<NodeKind::Min>;
using MaxNode = BinaryNode<NodeKind::Max>;
using EQNode = BinaryNode<NodeKind::EQ>;
using NENode = BinaryNode<NodeKind::NE>;
using LTNode = BinaryNode<NodeKind::LT>;
using LENode = BinaryNode<NodeKind::LE>;
using GTNode = BinaryNode<NodeKind::GT>;
using GENode = BinaryNode<NodeKind::GE>;
using AndNode = BinaryNode<NodeKind::And>;
using OrNode = BinaryNode<NodeKind::Or>;

inline bool is_binary(NodeKind k) { return k >= NodeKind::Add && k <= NodeKind::Or; }
inline bool is_comparison(NodeKind k) { return k >= NodeKind::EQ && k <= NodeKind::GE; }

struct NotNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Not;
  explicit NotNode(Expr a_) : ExprNode(kKind, a_.dtype()), a(std::move(a_)) {}
  const Expr a;
};
struct CastNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Cast;
  CastNode(DataType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
  const Expr value;
};
struct SelectNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Select;
  SelectNode(Expr c, Expr t, Expr f)
      : ExprNode(kKind, t.dtype()), cond(std::move(c)), true_value(std::move(t)), false_value(std::move(f)) {}
  const Expr cond, true_value, false_value;
};
// A load from a flat buffer (after storage flattening); vector when index is.
struct LoadNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Load;
  LoadNode(DataType t, Var buf, Expr idx) : ExprNode(kKind, t), buffer_var(std::move(buf)), index(std::move(idx)) {}
  const Var buffer_var;
  const Expr index;
};
// A load from a multi-dimensional buffer (before storage flattening).
struct BufferLoadNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::BufferLoad;
  BufferLoadNode(Buffer b, std::vector<Expr> idx)
      : ExprNode(kKind, b->dtype), buffer(std::move(b)), indices(std::move(idx)) {}
  const Buffer buffer;
  const std::vector<Expr> indices;
};
// An element of a tensor expression (a te tensor) inside another tensor's body.
struct ProducerLoadNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::ProducerLoad;
  ProducerLoadNode(std::shared_ptr<const DataProducer> p, std::vector<Expr> idx)
      : ExprNode(kKind, p->producer_dtype()), producer(std::move(p)), indices(std::move(idx)) {}
  const std::shared_ptr<const DataProducer> producer;
  const std::vector<Expr> indices;
};
struct RampNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Ramp;
  RampNode(Expr b, Expr s, int n)
      : ExprNode(kKind, b.dtype().with_lanes(n)), base(std::move(b)), stride(std::move(s)), lanes(n) {}
  const Expr base, stride;
  const int lanes;
};
struct BroadcastNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Broadcast;
  BroadcastNode(Expr v, int n) : ExprNode(kKind, v.dtype().with_lanes(n)), value(std::move(v)), lanes(n) {}
  const Expr value;
  const int lanes;
};
// A call of a named intrinsic ("exp", "likely", "shift_left", ...).
struct CallNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Call;
  CallNode(DataType t, std::string n, std::vector<Expr> a)
      : ExprNode(kKind, t), name(std::move(n)), args(std::move(a)) {}
  const std::string name;
  const std::vector<Expr> args;
};
struct LetNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Let;
  LetNode(Var v, Expr val, Expr b) : ExprNode(kKind, b.dtype()), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  const Var var;
  const Expr value, body;
};

enum class Combiner : uint8_t { Sum, Max, Min, Prod };
const char* combiner_name(Combiner c);

// A commutative reduction of `source` over `axis`, only where `condition` holds.
struct ReduceNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Reduce;
  ReduceNode(Combiner c, Expr s, std::vector<IterVar> ax, Expr cond)
      : ExprNode(kKind, s.dtype()), combiner(c), source(std::move(s)), axis(std::move(ax)), condition(std::move(cond)) {}
  const Combiner combiner;
  const Expr source;
  const std::vector<IterVar> axis;
  const Expr condition;
};

// ---------------------------------------------------------------- statements

enum class ForKind : uint8_t { Serial, Parallel, Vectorized, Unrolled, ThreadBinding };
const char* for_kind_name(ForKind k);

struct LetStmtNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::LetStmt;
  LetStmtNode(Var v, Expr val, Stmt b) : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  const Var var;
  const Expr value;
  const Stmt body;
};
struct ForNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::For;
  ForNode(Var v, Expr mn, Expr ext, ForKind k, std::string tag, Stmt b)
      : StmtNode(kKind), var(std::move(v)), min(std::move(mn)), extent(std::move(ext)), for_kind(k),
        thread_tag(std::move(tag)), body(std::move(b)) {}
  const Var var;
  const Expr min, extent;
  const ForKind for_kind;
  const std::string thread_tag;  // "threadIdx.x", "blockIdx.y", "vthread" for ThreadBinding
  const Stmt body;
};
struct StoreNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Store;
  StoreNode(Var buf, Expr v, Expr idx) : StmtNode(kKind), buffer_var(std::move(buf)), value(std::move(v)), index(std::move(idx)) {}
  const Var buffer_var;
  const Expr value, index;
};
struct BufferStoreNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::BufferStore;
  BufferStoreNode(Buffer b, Expr v, std::vector<Expr> idx)
      : StmtNode(kKind), buffer(std::move(b)), value(std::move(v)), indices(std::move(idx)) {}
  const Buffer buffer;
  const Expr value;
  const std::vector<Expr> indices;
};
struct AllocateNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Allocate;
  AllocateNode(Var buf, DataType t, Expr ext, std::string sc, Stmt b)
      : StmtNode(kKind), buffer_var(std::move(buf)), dtype(t), extent(std::move(ext)), scope(std::move(sc)), body(std::move(b)) {}
  const Var buffer_var;
  const DataType dtype;
  const Expr extent;  // number of elements
  const std::string scope;
  const Stmt body;
};
// The region `bounds` of `buffer` exists inside `body` (before storage flattening).
struct RealizeNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Realize;
  RealizeNode(Buffer b, std::vector<Range> r, Stmt bd) : StmtNode(kKind), buffer(std::move(b)), bounds(std::move(r)), body(std::move(bd)) {}
  const Buffer buffer;
  const std::vector<Range> bounds;
  const Stmt body;
};
struct IfThenElseNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::IfThenElse;
  IfThenElseNode(Expr c, Stmt t, Stmt e) : StmtNode(kKind), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  const Expr cond;
  const Stmt then_case, else_case;  // else_case may be undefined
};
struct SeqNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Seq;
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(kKind), seq(std::move(s)) {}
  const std::vector<Stmt> seq;
};
// An annotation: pragmas ("pragma_<name>"), "double_buffer_scope", "storage_scope".
struct AttrNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Attr;
  AttrNode(std::string k, Expr n, Expr v, Stmt b) : StmtNode(kKind), key(std::move(k)), node(std::move(n)), value(std::move(v)), body(std::move(b)) {}
  const std::string key;
  const Expr node;  // the thing annotated (a loop or buffer variable), may be undefined
  const Expr value;
  const Stmt body;
};
struct EvaluateNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Evaluate;
  explicit EvaluateNode(Expr v) : StmtNode(kKind), value(std::move(v)) {}
  const Expr value;
};

// ---------------------------------------------------------------- factories
// Factories check types (operands must agree; see op.h for the promoting operators).

Expr make_int(int64_t value, DataType t = DataType::Int(32));
Expr make_float(double value, DataType t = DataType::Float(32));
Expr make_bool(bool value, int lanes = 1);
Expr make_const(DataType t, double value);  // any scalar or broadcast vector type
Expr make_string(std::string value);
Expr make_binary(NodeKind kind, Expr a, Expr b);
Expr make_not(Expr a);
Expr make_cast(DataType t, Expr v);
Expr make_select(Expr c, Expr t, Expr f);
Expr make_load(DataType t, Var buffer_var, Expr index);
Expr make_buffer_load(Buffer b, std::vector<Expr> indices);
Expr make_producer_load(std::shared_ptr<const DataProducer> p, std::vector<Expr> indices);
Expr make_ramp(Expr base, Expr stride, int lanes);
Expr make_broadcast(Expr value, int lanes);
Expr make_call(DataType t, std::string name, std::vector<Expr> args);
Expr make_let(Var v, Expr value, Expr body);
Expr make_reduce(Combiner c, Expr source, std::vector<IterVar> axis, Expr condition = Expr());

Stmt make_let_stmt(Var v, Expr value, Stmt body);
Stmt make_for(Var v, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag = "");
Stmt make_store(Var buffer_var, Expr value, Expr index);
Stmt make_buffer_store(Buffer b, Expr value, std::vector<Expr> indices);
Stmt make_allocate(Var buffer_var, DataType t, Expr extent, std::string scope, Stmt body);
Stmt make_realize(Buffer b, std::vector<Range> bounds, Stmt body);
Stmt make_if(Expr cond, Stmt then_case, Stmt else_case = Stmt());
Stmt make_seq(std::vector<Stmt> seq);  // flattens nested sequences, drops undefined
Stmt make_attr(std::string key, Expr node, Expr value, Stmt body);
Stmt make_evaluate(Expr v);
Stmt make_no_op();

// Identity element of a combiner for a type (0, lowest, highest).
Expr reduce_identity(Combiner c, DataType t);

// Constant queries.
const int64_t* as_const_int(const Expr& e);  // null unless an integer constant
bool is_const_int(const Expr& e, int64_t value);
bool is_no_op(const Stmt& s);

}  // namespace kiln::ir
