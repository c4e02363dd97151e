#include "compiler/interp/interpreter.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <unordered_map>

#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/split_host_device.h"
#include "compiler/support/error.h"
#include "support/integer.h"

namespace kiln::interp {

namespace {

using ir::DataType;
using ir::Expr;
using ir::NodeKind;
using ir::Stmt;

union Scalar {
  int64_t i;
  uint64_t u;
  double f;
};

enum class Cat { Int, UInt, Float };

Cat category(DataType t) {
  if (t.is_float()) return Cat::Float;
  return t.is_uint() ? Cat::UInt : Cat::Int;
}

struct BufferSlot {
  uint8_t* data = nullptr;
  int64_t size = 0;
  DataType dtype;
  std::string name;
};

struct Frame {
  std::vector<Scalar> vars;
  std::vector<BufferSlot> bufs;
};

// ---------------------------------------------------------------- expressions

struct E {
  explicit E(DataType t) : type(t), lanes(t.lanes()), out(static_cast<size_t>(t.lanes())) {}
  virtual ~E() = default;
  virtual const Scalar* eval(Frame& f) = 0;
  DataType type;
  int lanes;
  std::vector<Scalar> out;
};
using EPtr = std::unique_ptr<E>;

Scalar normalize(double v, DataType t) {
  Scalar s;
  s.f = ir::round_to_type(v, t);
  return s;
}
Scalar wrap(int64_t v, DataType t) {
  Scalar s;
  s.i = ir::wrap_to_type(v, t);
  return s;
}

struct ConstE : E {
  ConstE(DataType t, Scalar v) : E(t) { std::fill(out.begin(), out.end(), v); }
  const Scalar* eval(Frame&) override { return out.data(); }
};

struct VarE : E {
  VarE(DataType t, size_t slot) : E(t), slot(slot) {}
  const Scalar* eval(Frame& f) override { return &f.vars[slot]; }
  size_t slot;
};

struct BinaryE : E {
  BinaryE(DataType t, NodeKind k, EPtr a_, EPtr b_, std::string text)
      : E(t), kind(k), cat(category(a_->type)), arg_type(a_->type.element_of()), a(std::move(a_)), b(std::move(b_)), text(std::move(text)) {}

  const Scalar* eval(Frame& f) override {
    const Scalar* x = a->eval(f);
    const Scalar* y = b->eval(f);
    for (int l = 0; l < lanes; ++l) out[l] = op(x[l], y[l]);
    return out.data();
  }

  Scalar op(Scalar x, Scalar y) {
    Scalar r;
    switch (cat) {
      case Cat::Int: {
        uint64_t ux = x.u, uy = y.u;
        switch (kind) {
          case NodeKind::Add: return wrap(static_cast<int64_t>(ux + uy), arg_type);
          case NodeKind::Sub: return wrap(static_cast<int64_t>(ux - uy), arg_type);
          case NodeKind::Mul: return wrap(static_cast<int64_t>(ux * uy), arg_type);
          case NodeKind::Div: check_zero(y.i); return wrap(floordiv(x.i, y.i), arg_type);
          case NodeKind::Mod: check_zero(y.i); return wrap(floormod(x.i, y.i), arg_type);
          case NodeKind::Min: r.i = std::min(x.i, y.i); return r;
          case NodeKind::Max: r.i = std::max(x.i, y.i); return r;
          case NodeKind::EQ: r.u = x.i == y.i; return r;
          case NodeKind::NE: r.u = x.i != y.i; return r;
          case NodeKind::LT: r.u = x.i < y.i; return r;
          case NodeKind::LE: r.u = x.i <= y.i; return r;
          case NodeKind::GT: r.u = x.i > y.i; return r;
          case NodeKind::GE: r.u = x.i >= y.i; return r;
          default: break;
        }
        break;
      }
      case Cat::UInt: {
        uint64_t ux = x.u, uy = y.u;
        switch (kind) {
          case NodeKind::Add: return wrap(static_cast<int64_t>(ux + uy), arg_type);
          case NodeKind::Sub: return wrap(static_cast<int64_t>(ux - uy), arg_type);
          case NodeKind::Mul: return wrap(static_cast<int64_t>(ux * uy), arg_type);
          case NodeKind::Div: check_zero(static_cast<int64_t>(uy)); r.u = ux / uy; return r;
          case NodeKind::Mod: check_zero(static_cast<int64_t>(uy)); r.u = ux % uy; return r;
          case NodeKind::Min: r.u = std::min(ux, uy); return r;
          case NodeKind::Max: r.u = std::max(ux, uy); return r;
          case NodeKind::EQ: r.u = ux == uy; return r;
          case NodeKind::NE: r.u = ux != uy; return r;
          case NodeKind::LT: r.u = ux < uy; return r;
          case NodeKind::LE: r.u = ux <= uy; return r;
          case NodeKind::GT: r.u = ux > uy; return r;
          case NodeKind::GE: r.u = ux >= uy; return r;
          case NodeKind::And: r.u = (ux && uy); return r;
          case NodeKind::Or: r.u = (ux || uy); return r;
          default: break;
        }
        break;
      }
      case Cat::Float: {
        double fx = x.f, fy = y.f;
        switch (kind) {
          case NodeKind::Add: return normalize(fx + fy, arg_type);
          case NodeKind::Sub: return normalize(fx - fy, arg_type);
          case NodeKind::Mul: return normalize(fx * fy, arg_type);
          case NodeKind::Div: return normalize(fx / fy, arg_type);
          case NodeKind::Mod: return normalize(fx - std::floor(fx / fy) * fy, arg_type);
          case NodeKind::Min: r.f = fy < fx ? fy : fx; return r;
          case NodeKind::Max: r.f = fy > fx ? fy : fx; return r;
          case NodeKind::EQ: r.u = fx == fy; return r;
          case NodeKind::NE: r.u = fx != fy; return r;
          case NodeKind::LT: r.u = fx < fy; return r;
          case NodeKind::LE: r.u = fx <= fy; return r;
          case NodeKind::GT: r.u = fx > fy; return r;
          case NodeKind::GE: r.u = fx >= fy; return r;
          default: break;
        }
        break;
      }
    }
    throw InterpError(std::string("unsupported ") + ir::kind_name(kind) + " on " + arg_type.to_string());
  }

  void check_zero(int64_t v) {
    if (v == 0) throw InterpError("division by zero in " + text);
  }

  NodeKind kind;
  Cat cat;
  DataType arg_type;
  EPtr a, b;
  std::string text;
};

// An operand read without a virtual call when it is a constant or a variable.
struct Operand {
  explicit Operand(EPtr e) : expr(std::move(e)) {
    if (auto* c = dynamic_cast<ConstE*>(expr.get())) fixed = c->out.data();
    if (auto* v = dynamic_cast<VarE*>(expr.get())) slot = static_cast<std::ptrdiff_t>(v->slot);
  }
  const Scalar* get(Frame& f) const {
    if (fixed) return fixed;
    if (slot >= 0) return &f.vars[static_cast<size_t>(slot)];
    return expr->eval(f);
  }
  E* operator->() const { return expr.get(); }
  EPtr expr;
  const Scalar* fixed = nullptr;
  std::ptrdiff_t slot = -1;
};

// Fast paths for the common types: the operation inlined, no width dispatch.
template <typename Op>
struct FastBinaryE : E {
  FastBinaryE(DataType t, EPtr a_, EPtr b_) : E(t), a(std::move(a_)), b(std::move(b_)) {}
  const Scalar* eval(Frame& f) override {
    const Scalar* x = a.get(f);
    const Scalar* y = b.get(f);
    if (lanes == 1) {
      out[0] = Op::apply(x[0], y[0]);
    } else {
      for (int l = 0; l < lanes; ++l) out[l] = Op::apply(x[l], y[l]);
    }
    return out.data();
  }
  Operand a, b;
};

#define KILN_FAST_OP(NAME, EXPR)                 \
  struct NAME {                                  \
    static Scalar apply(Scalar x, Scalar y) {    \
      Scalar r;                                  \
      EXPR;                                      \
      return r;                                  \
    }                                            \
  };
KILN_FAST_OP(AddI32, r.i = static_cast<int32_t>(static_cast<uint32_t>(x.u + y.u)))
KILN_FAST_OP(SubI32, r.i = static_cast<int32_t>(static_cast<uint32_t>(x.u - y.u)))
KILN_FAST_OP(MulI32, r.i = static_cast<int32_t>(static_cast<uint32_t>(x.u * y.u)))
KILN_FAST_OP(AddI64, r.u = x.u + y.u)
KILN_FAST_OP(SubI64, r.u = x.u - y.u)
KILN_FAST_OP(MulI64, r.u = x.u * y.u)
KILN_FAST_OP(MinI, r.i = std::min(x.i, y.i))
KILN_FAST_OP(MaxI, r.i = std::max(x.i, y.i))
KILN_FAST_OP(LtI, r.u = x.i < y.i)
KILN_FAST_OP(LeI, r.u = x.i <= y.i)
KILN_FAST_OP(GtI, r.u = x.i > y.i)
KILN_FAST_OP(GeI, r.u = x.i >= y.i)
KILN_FAST_OP(EqI, r.u = x.i == y.i)
KILN_FAST_OP(NeI, r.u = x.i != y.i)
KILN_FAST_OP(AddF32, r.f = static_cast<float>(x.f + y.f))
KILN_FAST_OP(SubF32, r.f = static_cast<float>(x.f - y.f))
KILN_FAST_OP(MulF32, r.f = static_cast<float>(x.f * y.f))
KILN_FAST_OP(DivF32, r.f = static_cast<float>(x.f / y.f))
KILN_FAST_OP(AddF64, r.f = x.f + y.f)
KILN_FAST_OP(SubF64, r.f = x.f - y.f)
KILN_FAST_OP(MulF64, r.f = x.f * y.f)
KILN_FAST_OP(DivF64, r.f = x.f / y.f)
#undef KILN_FAST_OP

// The fast evaluator for a binary node, or null when only the generic one applies.
EPtr fast_binary(DataType t, NodeKind k, EPtr& a, EPtr& b) {
  DataType in = a->type.element_of();
  auto make = [&](auto op) -> EPtr {
    using Op = decltype(op);
    return std::make_unique<FastBinaryE<Op>>(t, std::move(a), std::move(b));
  };
  bool i32 = in == DataType::Int(32), i64 = in == DataType::Int(64);
  bool f32 = in == DataType::Float(32), f64 = in == DataType::Float(64);
  if (i32 || i64) {
    switch (k) {
      case NodeKind::Add: return i32 ? make(AddI32{}) : make(AddI64{});
      case NodeKind::Sub: return i32 ? make(SubI32{}) : make(SubI64{});
      case NodeKind::Mul: return i32 ? make(MulI32{}) : make(MulI64{});
      case NodeKind::Min: return make(MinI{});
      case NodeKind::Max: return make(MaxI{});
      case NodeKind::LT: return make(LtI{});
      case NodeKind::LE: return make(LeI{});
      case NodeKind::GT: return make(GtI{});
      case NodeKind::GE: return make(GeI{});
      case NodeKind::EQ: return make(EqI{});
      case NodeKind::NE: return make(NeI{});
      default: return nullptr;
    }
  }
  if (f32 || f64) {
    switch (k) {
      case NodeKind::Add: return f32 ? make(AddF32{}) : make(AddF64{});
      case NodeKind::Sub: return f32 ? make(SubF32{}) : make(SubF64{});
      case NodeKind::Mul: return f32 ? make(MulF32{}) : make(MulF64{});
      case NodeKind::Div: return f32 ? make(DivF32{}) : make(DivF64{});
      default: return nullptr;
    }
  }
  return nullptr;
}

struct NotE : E {
  NotE(DataType t, EPtr a_) : E(t), a(std::move(a_)) {}
  const Scalar* eval(Frame& f) override {
    const Scalar* x = a->eval(f);
    for (int l = 0; l < lanes; ++l) out[l].u = x[l].u == 0;
    return out.data();
  }
  EPtr a;
};

Scalar convert(Scalar v, DataType from, DataType to) {
  Cat cf = category(from), ct = category(to);
  Scalar r;
  if (ct == Cat::Float) {
    double d = cf == Cat::Float ? v.f : (cf == Cat::UInt ? static_cast<double>(v.u) : static_cast<double>(v.i));
    return normalize(d, to);
  }
  if (to.is_bool()) {
    r.u = cf == Cat::Float ? (v.f != 0.0) : (v.u != 0);
    return r;
  }
  if (cf == Cat::Float) {
    double d = std::trunc(v.f);
    int64_t x;
    if (std::isnan(d)) x = 0;
    else if (d >= 9.2233720368547758e18) x = to.is_uint() ? static_cast<int64_t>(static_cast<uint64_t>(std::min(d, 1.8446744073709550e19))) : INT64_MAX;
    else if (d <= -9.2233720368547758e18) x = INT64_MIN;
    else x = static_cast<int64_t>(d);
    return wrap(x, to);
  }
  return wrap(v.i, to);
}

struct CastE : E {
  CastE(DataType t, EPtr a_) : E(t), from(a_->type.element_of()), to(t.element_of()), a(std::move(a_)) {}
  const Scalar* eval(Frame& f) override {
    const Scalar* x = a->eval(f);
    for (int l = 0; l < lanes; ++l) out[l] = convert(x[l], from, to);
    return out.data();
  }
  DataType from, to;
  EPtr a;
};

struct SelectE : E {
  SelectE(DataType t, EPtr c_, EPtr a_, EPtr b_) : E(t), c(std::move(c_)), a(std::move(a_)), b(std::move(b_)) {}
  const Scalar* eval(Frame& f) override {
    const Scalar* cv = c->eval(f);
    const Scalar* x = a->eval(f);
    const Scalar* y = b->eval(f);
    bool scalar_cond = c->lanes == 1;
    for (int l = 0; l < lanes; ++l) out[l] = (scalar_cond ? cv[0].u : cv[l].u) ? x[l] : y[l];
    return out.data();
  }
  EPtr c, a, b;
};

// Buffers of these element types are read and written directly (aligned, since
// every allocation is a std::vector<uint8_t> and host buffers likewise).
enum class Fast { None, F32, I32 };
Fast fast_kind(DataType t) {
  if (t == DataType::Float(32)) return Fast::F32;
  if (t == DataType::Int(32)) return Fast::I32;
  return Fast::None;
}

struct LoadE : E {
  LoadE(DataType t, size_t buf, EPtr idx)
      : E(t), elem(t.element_of()), buf(buf), index(std::move(idx)), cat(category(t)), fast(fast_kind(elem)) {}
  const Scalar* eval(Frame& f) override {
    const Scalar* ix = index.get(f);
    const BufferSlot& b = f.bufs[buf];
    if (!b.data) throw InterpError("load from buffer '" + b.name + "' outside its allocation");
    for (int l = 0; l < lanes; ++l) {
      int64_t i = ix[l].i;
      if (i < 0 || i >= b.size) {
        throw InterpError("out-of-bounds load of '" + b.name + "' at index " + std::to_string(i) + " (size " + std::to_string(b.size) + ")");
      }
      switch (fast) {
        case Fast::F32: out[l].f = reinterpret_cast<const float*>(b.data)[i]; break;
        case Fast::I32: out[l].i = reinterpret_cast<const int32_t*>(b.data)[i]; break;
        case Fast::None:
          if (cat == Cat::Float) {
            out[l].f = load_float(b.data, i, elem);
          } else {
            out[l].i = load_int(b.data, i, elem);
          }
      }
    }
    return out.data();
  }
  DataType elem;
  size_t buf;
  Operand index;
  Cat cat;
  Fast fast;
};

struct RampE : E {
  RampE(DataType t, EPtr b, EPtr s) : E(t), base(std::move(b)), stride(std::move(s)), elem(t.element_of()) {}
  const Scalar* eval(Frame& f) override {
    int64_t b = base.get(f)[0].i, s = stride.get(f)[0].i;
    if (elem == DataType::Int(32)) {
      for (int l = 0; l < lanes; ++l) out[l].i = static_cast<int32_t>(static_cast<uint32_t>(b + s * l));
    } else {
      for (int l = 0; l < lanes; ++l) out[l] = wrap(b + s * l, elem);
    }
    return out.data();
  }
  Operand base, stride;
  DataType elem;
};

struct BroadcastE : E {
  BroadcastE(DataType t, EPtr v) : E(t), value(std::move(v)) {}
  const Scalar* eval(Frame& f) override {
    Scalar v = value->eval(f)[0];
    std::fill(out.begin(), out.end(), v);
    return out.data();
  }
  EPtr value;
};

struct LetE : E {
  LetE(DataType t, size_t slot, EPtr v, EPtr b) : E(t), slot(slot), value(std::move(v)), body(std::move(b)) {}
  const Scalar* eval(Frame& f) override {
    const Scalar* v = value->eval(f);
    std::copy(v, v + value->lanes, f.vars.begin() + static_cast<std::ptrdiff_t>(slot));
    return body->eval(f);
  }
  size_t slot;
  EPtr value, body;
};

// Four packed bytes of `a` (unsigned) times four of `b` (signed), summed.
int64_t dot_u8s8x4(uint64_t a, uint64_t b) {
  int64_t s = 0;
  for (int j = 0; j < 4; ++j)
    s += static_cast<int64_t>((a >> (8 * j)) & 0xff) * static_cast<int8_t>(static_cast<uint8_t>(b >> (8 * j)));
  return s;
}

struct CallE : E {
  CallE(DataType t, std::string n, std::vector<EPtr> a) : E(t), name(std::move(n)), args(std::move(a)), elem(t.element_of()) {
    static const char* known[] = {"likely", "abs", "sqrt", "sigmoid", "floor", "ceil", "round", "pow",
                                  "shift_left", "shift_right", "bitwise_and", "bitwise_or", "bitwise_xor",
                                  "dot_u8s8x4"};
    bool ok = libm_of(name) != nullptr;
    for (const char* k : known) ok = ok || name == k;
    if (!ok) throw InterpError("the interpreter does not know intrinsic '" + name + "'");
    libm = libm_of(name);
  }
  // The <cmath> function an intrinsic of one float argument is, or null.
  static double (*libm_of(const std::string& n))(double) {
    static const std::unordered_map<std::string, double (*)(double)> fns = {
        {"exp", [](double v) { return std::exp(v); }},     {"log", [](double v) { return std::log(v); }},
        {"tanh", [](double v) { return std::tanh(v); }},   {"sin", [](double v) { return std::sin(v); }},
        {"cos", [](double v) { return std::cos(v); }},     {"tan", [](double v) { return std::tan(v); }},
        {"asin", [](double v) { return std::asin(v); }},   {"acos", [](double v) { return std::acos(v); }},
        {"atan", [](double v) { return std::atan(v); }},   {"sinh", [](double v) { return std::sinh(v); }},
        {"cosh", [](double v) { return std::cosh(v); }},   {"asinh", [](double v) { return std::asinh(v); }},
        {"acosh", [](double v) { return std::acosh(v); }}, {"atanh", [](double v) { return std::atanh(v); }}};
    auto it = fns.find(n);
    return it == fns.end() ? nullptr : it->second;
  }
  const Scalar* eval(Frame& f) override {
    const Scalar* x = args[0]->eval(f);
    const Scalar* y = args.size() > 1 ? args[1]->eval(f) : nullptr;
    bool fl = elem.is_float();
    for (int l = 0; l < lanes; ++l) {
      Scalar a = x[l];
      if (name == "likely") {
        out[l] = a;
      } else if (name == "abs") {
        if (fl) out[l].f = std::fabs(a.f);
        else out[l] = elem.is_uint() ? a : wrap(a.i < 0 ? static_cast<int64_t>(0 - a.u) : a.i, elem);
      } else if (fl) {
        double v = a.f, r = 0;
        if (libm) r = libm(v);
        else if (name == "sqrt") r = std::sqrt(v);
        else if (name == "sigmoid") r = 1.0 / (1.0 + std::exp(-v));
        else if (name == "floor") r = std::floor(v);
        else if (name == "ceil") r = std::ceil(v);
        else if (name == "round") r = std::nearbyint(v);
        else if (name == "pow") r = std::pow(v, y[l].f);
        else throw InterpError("intrinsic '" + name + "' is not defined on " + elem.to_string());
        out[l] = normalize(r, elem);
      } else {
        uint64_t b = y ? y[l].u : 0;
        if (name == "shift_left") out[l] = wrap(b >= 64 ? 0 : static_cast<int64_t>(a.u << b), elem);
        else if (name == "shift_right") out[l] = wrap(elem.is_uint() ? static_cast<int64_t>(b >= 64 ? 0 : a.u >> b) : (a.i >> std::min<uint64_t>(b, 63)), elem);
        else if (name == "bitwise_and") out[l] = wrap(static_cast<int64_t>(a.u & b), elem);
        else if (name == "bitwise_or") out[l] = wrap(static_cast<int64_t>(a.u | b), elem);
        else if (name == "bitwise_xor") out[l] = wrap(static_cast<int64_t>(a.u ^ b), elem);
        else if (name == "dot_u8s8x4") out[l] = wrap(dot_u8s8x4(a.u, b), elem);
        else if (name == "floor" || name == "ceil" || name == "round") out[l] = a;
        else throw InterpError("intrinsic '" + name + "' is not defined on " + elem.to_string());
      }
    }
    return out.data();
  }
  std::string name;
  std::vector<EPtr> args;
  DataType elem;
  double (*libm)(double) = nullptr;
};

// vector_reduce_add / _max / _min: the lanes combined as a tree (ir::lane_reduction_kind),
// each step as the binary operation on the element type.
struct ReduceLanesE : E {
  ReduceLanesE(DataType t, NodeKind kind, EPtr a, const std::string& text)
      : E(t), arg(std::move(a)), work(static_cast<size_t>(arg->lanes)),
        combine(t, kind, std::make_unique<ConstE>(t, Scalar{}), std::make_unique<ConstE>(t, Scalar{}), text) {
    if (t.lanes() != 1 || arg->lanes < 2 || (arg->lanes & (arg->lanes - 1)))
      throw InterpError("a lane reduction takes a vector of 2^n lanes to a scalar: " + text);
  }
  const Scalar* eval(Frame& f) override {
    const Scalar* x = arg->eval(f);
    std::copy(x, x + arg->lanes, work.begin());
    for (int n = arg->lanes / 2; n >= 1; n /= 2)
      for (int l = 0; l < n; ++l) work[static_cast<size_t>(l)] = combine.op(work[static_cast<size_t>(l)], work[static_cast<size_t>(l + n)]);
    out[0] = work[0];
    return out.data();
  }
  EPtr arg;
  std::vector<Scalar> work;
  BinaryE combine;
};

// ---------------------------------------------------------------- statements

struct S {
  virtual ~S() = default;
  virtual void exec(Frame& f) = 0;
  bool barrier = false;  // contains a GPU barrier (run_threads splits its threads there)
};
using SPtr = std::unique_ptr<S>;

struct ForS : S {
  ForS(size_t slot, EPtr mn, EPtr ext, SPtr b) : slot(slot), min(std::move(mn)), extent(std::move(ext)), body(std::move(b)) {}
  void exec(Frame& f) override {
    int64_t lo = min->eval(f)[0].i, n = extent->eval(f)[0].i;
    for (int64_t i = 0; i < n; ++i) {
      f.vars[slot].i = lo + i;
      body->exec(f);
    }
  }
  size_t slot;
  EPtr min, extent;
  SPtr body;
};

struct StoreS : S {
  StoreS(size_t buf, EPtr v, EPtr idx)
      : buf(buf), value(std::move(v)), index(std::move(idx)), elem(value->type.element_of()), fast(fast_kind(elem)) {}
  void exec(Frame& f) override {
    const Scalar* v = value.get(f);
    const Scalar* ix = index.get(f);
    BufferSlot& b = f.bufs[buf];
    if (!b.data) throw InterpError("store to buffer '" + b.name + "' outside its allocation");
    bool fl = elem.is_float();
    for (int l = 0; l < index->lanes; ++l) {
      int64_t i = ix[l].i;
      if (i < 0 || i >= b.size) {
        throw InterpError("out-of-bounds store to '" + b.name + "' at index " + std::to_string(i) + " (size " + std::to_string(b.size) + ")");
      }
      Scalar x = value->lanes == 1 ? v[0] : v[l];
      if (fast == Fast::F32) reinterpret_cast<float*>(b.data)[i] = static_cast<float>(x.f);
      else if (fast == Fast::I32) reinterpret_cast<int32_t*>(b.data)[i] = static_cast<int32_t>(x.i);
      else if (fl) store_float(b.data, i, elem, x.f);
      else store_int(b.data, i, elem, x.i);
    }
  }
  size_t buf;
  Operand value, index;
  DataType elem;
  Fast fast;
};

struct AllocateS : S {
  AllocateS(size_t buf, DataType t, EPtr ext, SPtr b, std::string name)
      : buf(buf), dtype(t), extent(std::move(ext)), body(std::move(b)), name(std::move(name)) {}
  void exec(Frame& f) override {
    int64_t n = extent->eval(f)[0].i;
    if (n < 0) throw InterpError("negative allocation size for '" + name + "'");
    // Fresh memory holds a pattern, not zeros, so reading it before writing shows.
    std::vector<uint8_t> mem(static_cast<size_t>(n * dtype.storage_bytes()), 0xA5);
    BufferSlot saved = f.bufs[buf];
    f.bufs[buf] = {mem.data(), n, dtype, name};
    body->exec(f);
    f.bufs[buf] = saved;
  }
  size_t buf;
  DataType dtype;
  EPtr extent;
  SPtr body;
  std::string name;
};

struct IfS : S {
  IfS(EPtr c, SPtr t, SPtr e) : cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  void exec(Frame& f) override {
    if (cond->eval(f)[0].u) {
      then_case->exec(f);
    } else if (else_case) {
      else_case->exec(f);
    }
  }
  EPtr cond;
  SPtr then_case, else_case;
};

struct SeqS : S {
  std::vector<SPtr> seq;
  void exec(Frame& f) override {
    for (auto& s : seq) s->exec(f);
  }
};

struct LetS : S {
  LetS(size_t slot, EPtr v, SPtr b) : slot(slot), value(std::move(v)), body(std::move(b)) {}
  void exec(Frame& f) override {
    const Scalar* v = value->eval(f);
    std::copy(v, v + value->lanes, f.vars.begin() + static_cast<std::ptrdiff_t>(slot));
    body->exec(f);
  }
  size_t slot;
  EPtr value;
  SPtr body;
};

// A GPU barrier: nothing to do for one thread; run_threads() runs every thread of the
// block up to it before any goes on.
struct BarrierS : S {
  BarrierS() { barrier = true; }
  void exec(Frame&) override {}
};

struct EvalS : S {
  explicit EvalS(EPtr v) : value(std::move(v)) {}
  void exec(Frame& f) override { value->eval(f); }
  EPtr value;
};

// ---------------------------------------------------------------- compiler

class Compiler {
 public:
  size_t var_slot(const ir::VarNode* v) {
    auto it = vars_.find(v);
    if (it != vars_.end()) return it->second;
    size_t slot = num_slots_;
    num_slots_ += static_cast<size_t>(v->dtype.lanes());
    vars_[v] = slot;
    return slot;
  }
  size_t buf_slot(const ir::VarNode* v) {
    auto it = bufs_.find(v);
    if (it != bufs_.end()) return it->second;
    size_t slot = buf_names_.size();
    buf_names_.push_back(v->name);
    bufs_[v] = slot;
    return slot;
  }
  size_t num_slots() const { return num_slots_; }
  size_t num_bufs() const { return buf_names_.size(); }
  const std::string& buf_name(size_t i) const { return buf_names_[i]; }

  EPtr expr(const Expr& e) {
    DataType t = e.dtype();
    switch (e.kind()) {
      case NodeKind::IntImm: {
        Scalar s;
        s.i = e.as<ir::IntImmNode>()->value;
        return std::make_unique<ConstE>(t, s);
      }
      case NodeKind::FloatImm: {
        Scalar s;
        s.f = e.as<ir::FloatImmNode>()->value;
        return std::make_unique<ConstE>(t, s);
      }
      case NodeKind::Var: {
        auto it = vars_.find(e.as<ir::VarNode>());
        if (it == vars_.end()) throw InterpError("variable '" + e.as<ir::VarNode>()->name + "' is used where it is not defined");
        if (t.is_vector()) return std::make_unique<VecVarE>(t, it->second);
        return std::make_unique<VarE>(t, it->second);
      }
#define KILN_BIN(N)                                                                                          \
  case NodeKind::N: {                                                                                        \
    auto* p = e.as<ir::N##Node>();                                                                           \
    EPtr a = expr(p->a), b = expr(p->b);                                                                     \
    if (EPtr fast = fast_binary(t, NodeKind::N, a, b)) return fast;                                          \
    return std::make_unique<BinaryE>(t, NodeKind::N, std::move(a), std::move(b), ir::to_string(e));         \
  }
      KILN_BIN(Add) KILN_BIN(Sub) KILN_BIN(Mul) KILN_BIN(Div) KILN_BIN(Mod) KILN_BIN(Min) KILN_BIN(Max)
      KILN_BIN(EQ) KILN_BIN(NE) KILN_BIN(LT) KILN_BIN(LE) KILN_BIN(GT) KILN_BIN(GE) KILN_BIN(And) KILN_BIN(Or)
#undef KILN_BIN
      case NodeKind::Not: return std::make_unique<NotE>(t, expr(e.as<ir::NotNode>()->a));
      case NodeKind::Cast: return std::make_unique<CastE>(t, expr(e.as<ir::CastNode>()->value));
      case NodeKind::Select: {
        auto* p = e.as<ir::SelectNode>();
        return std::make_unique<SelectE>(t, expr(p->cond), expr(p->true_value), expr(p->false_value));
      }
      case NodeKind::Load: {
        auto* p = e.as<ir::LoadNode>();
        return std::make_unique<LoadE>(t, buf_slot(p->buffer_var.get()), expr(p->index));
      }
      case NodeKind::Ramp: {
        auto* p = e.as<ir::RampNode>();
        return std::make_unique<RampE>(t, expr(p->base), expr(p->stride));
      }
      case NodeKind::Broadcast: return std::make_unique<BroadcastE>(t, expr(e.as<ir::BroadcastNode>()->value));
      case NodeKind::Call: {
        auto* p = e.as<ir::CallNode>();
        std::vector<EPtr> args;
        for (const Expr& a : p->args) args.push_back(expr(a));
        if (args.empty()) throw InterpError("intrinsic '" + p->name + "' without arguments");
        if (std::optional<NodeKind> k = ir::lane_reduction_kind(p->name)) {
          if (args.size() != 1) throw InterpError("intrinsic '" + p->name + "' takes 1 argument");
          return std::make_unique<ReduceLanesE>(t, *k, std::move(args[0]), ir::to_string(e));
        }
        return std::make_unique<CallE>(t, p->name, std::move(args));
      }
      case NodeKind::Let: {
        auto* p = e.as<ir::LetNode>();
        EPtr v = expr(p->value);
        size_t slot = var_slot(p->var.get());
        return std::make_unique<LetE>(t, slot, std::move(v), expr(p->body));
      }
      default:
        throw InterpError(std::string("the interpreter runs lowered IR; found a ") + ir::kind_name(e.kind()) + " node: " + ir::to_string(e));
    }
  }

  SPtr stmt(const Stmt& s) {
    switch (s.kind()) {
      case NodeKind::For: {
        auto* p = s.as<ir::ForNode>();
        EPtr mn = expr(p->min), ext = expr(p->extent);
        size_t slot = var_slot(p->var.get());
        auto r = std::make_unique<ForS>(slot, std::move(mn), std::move(ext), stmt(p->body));
        r->barrier = r->body->barrier;
        return r;
      }
      case NodeKind::Store: {
        auto* p = s.as<ir::StoreNode>();
        return std::make_unique<StoreS>(buf_slot(p->buffer_var.get()), expr(p->value), expr(p->index));
      }
      case NodeKind::Allocate: {
        auto* p = s.as<ir::AllocateNode>();
        size_t b = buf_slot(p->buffer_var.get());
        auto r = std::make_unique<AllocateS>(b, p->dtype, expr(p->extent), stmt(p->body), p->buffer_var.name());
        r->barrier = r->body->barrier;
        return r;
      }
      case NodeKind::IfThenElse: {
        auto* p = s.as<ir::IfThenElseNode>();
        auto r = std::make_unique<IfS>(expr(p->cond), stmt(p->then_case), p->else_case.defined() ? stmt(p->else_case) : nullptr);
        r->barrier = r->then_case->barrier || (r->else_case && r->else_case->barrier);
        return r;
      }
      case NodeKind::Seq: {
        auto seq = std::make_unique<SeqS>();
        for (const Stmt& c : s.as<ir::SeqNode>()->seq) {
          seq->seq.push_back(stmt(c));
          seq->barrier = seq->barrier || seq->seq.back()->barrier;
        }
        return seq;
      }
      case NodeKind::LetStmt: {
        auto* p = s.as<ir::LetStmtNode>();
        EPtr v = expr(p->value);
        size_t slot = var_slot(p->var.get());
        auto r = std::make_unique<LetS>(slot, std::move(v), stmt(p->body));
        r->barrier = r->body->barrier;
        return r;
      }
      case NodeKind::Attr: return stmt(s.as<ir::AttrNode>()->body);
      case NodeKind::Evaluate: {
        if (passes::is_barrier(s)) return std::make_unique<BarrierS>();
        // A prefetch is a hint to the cache: nothing to do here.
        const auto* c = s.as<ir::EvaluateNode>()->value.as<ir::CallNode>();
        if (c && c->name == "prefetch") return std::make_unique<EvalS>(expr(ir::make_int(0, DataType::Int(32))));
        return std::make_unique<EvalS>(expr(s.as<ir::EvaluateNode>()->value));
      }
      default:
        throw InterpError(std::string("the interpreter runs lowered IR; found a ") + ir::kind_name(s.kind()) + " statement");
    }
  }

 private:
  struct VecVarE : E {
    VecVarE(DataType t, size_t slot) : E(t), slot(slot) {}
    const Scalar* eval(Frame& f) override { return &f.vars[slot]; }
    size_t slot;
  };

  std::unordered_map<const ir::VarNode*, size_t> vars_;
  std::unordered_map<const ir::VarNode*, size_t> bufs_;
  std::vector<std::string> buf_names_;
  size_t num_slots_ = 0;
};

}  // namespace

struct Program::Impl {
  schedule::LoweredFunc func;
  Compiler compiler;
  SPtr body;
  std::vector<size_t> arg_slots;
};

Program::Program(const schedule::LoweredFunc& f) : impl_(std::make_unique<Impl>()) {
  impl_->func = f;
  for (const ir::Buffer& b : f.args) impl_->arg_slots.push_back(impl_->compiler.buf_slot(b->data.get()));
  impl_->body = impl_->compiler.stmt(f.body);
}

Program::~Program() = default;

namespace {

// Checks a host buffer against a function argument.
void check_arg(const ir::Buffer& b, const HostBuffer* h) {
  if (h->dtype() != b->dtype) {
    throw InterpError("argument '" + b->name + "' must be " + b->dtype.to_string() + ", not " + h->dtype().to_string());
  }
  if (h->shape().size() != b->shape.size()) throw InterpError("argument '" + b->name + "' has the wrong rank");
  for (size_t d = 0; d < b->shape.size(); ++d) {
    const int64_t* n = ir::as_const_int(b->shape[d]);
    if (!n || *n != h->shape()[d]) throw InterpError("argument '" + b->name + "' has the wrong shape in dimension " + std::to_string(d));
  }
}

void check_arg_count(const std::string& name, size_t want, size_t got) {
  if (want != got) throw InterpError("'" + name + "' takes " + std::to_string(want) + " arguments, got " + std::to_string(got));
}

}  // namespace

void Program::run(const std::vector<HostBuffer*>& args) {
  const auto& fargs = impl_->func.args;
  check_arg_count(impl_->func.name, fargs.size(), args.size());
  Frame frame;
  frame.vars.resize(impl_->compiler.num_slots());
  frame.bufs.resize(impl_->compiler.num_bufs());
  for (size_t i = 0; i < frame.bufs.size(); ++i) frame.bufs[i].name = impl_->compiler.buf_name(i);
  for (size_t i = 0; i < args.size(); ++i) {
    check_arg(fargs[i], args[i]);
    frame.bufs[impl_->arg_slots[i]] = {args[i]->data(), args[i]->size(), args[i]->dtype(), fargs[i]->name};
  }
  impl_->body->exec(frame);
}

void run(const schedule::LoweredFunc& f, const std::vector<HostBuffer*>& args) { Program(f).run(args); }

}  // namespace kiln::interp

// ---------------------------------------------------------------- GPU kernels

namespace kiln::interp {

namespace {

// A statement run by every thread of a block: each thread alone where it has no
// barrier, all of them up to each barrier where it has.
void run_threads(S* s, std::vector<Frame>& frames, const std::vector<size_t>& order) {
  if (!s->barrier) {
    for (size_t t : order) s->exec(frames[t]);
    return;
  }
  auto uniform = [&](E* e, const char* what) {
    int64_t v = e->eval(frames[order[0]])[0].i;
    for (size_t t : order)
      if (e->eval(frames[t])[0].i != v) {
        throw InterpError(std::string("the ") + what + " around a barrier differs between the threads of a block");
      }
    return v;
  };
  if (dynamic_cast<BarrierS*>(s)) return;
  if (auto* q = dynamic_cast<SeqS*>(s)) {
    for (auto& c : q->seq) run_threads(c.get(), frames, order);
  } else if (auto* f = dynamic_cast<ForS*>(s)) {
    int64_t lo = uniform(f->min.get(), "loop start"), n = uniform(f->extent.get(), "loop extent");
    for (int64_t i = 0; i < n; ++i) {
      for (Frame& fr : frames) fr.vars[f->slot].i = lo + i;
      run_threads(f->body.get(), frames, order);
    }
  } else if (auto* c = dynamic_cast<IfS*>(s)) {
    if (uniform(c->cond.get(), "condition")) run_threads(c->then_case.get(), frames, order);
    else if (c->else_case) run_threads(c->else_case.get(), frames, order);
  } else if (auto* l = dynamic_cast<LetS*>(s)) {
    for (Frame& fr : frames) {
      const Scalar* v = l->value->eval(fr);
      std::copy(v, v + l->value->lanes, fr.vars.begin() + static_cast<std::ptrdiff_t>(l->slot));
    }
    run_threads(l->body.get(), frames, order);
  } else if (auto* a = dynamic_cast<AllocateS*>(s)) {
    // A thread's own buffer ("local"), one per thread.
    std::vector<std::vector<uint8_t>> mem(frames.size());
    std::vector<BufferSlot> saved(frames.size());
    for (size_t t = 0; t < frames.size(); ++t) {
      int64_t n = a->extent->eval(frames[t])[0].i;
      mem[t].assign(static_cast<size_t>(n * a->dtype.storage_bytes()), 0xA5);
      saved[t] = frames[t].bufs[a->buf];
      frames[t].bufs[a->buf] = {mem[t].data(), n, a->dtype, a->name};
    }
    run_threads(a->body.get(), frames, order);
    for (size_t t = 0; t < frames.size(); ++t) frames[t].bufs[a->buf] = saved[t];
  } else {
    throw InterpError("a barrier inside a statement the interpreter cannot split between threads");
  }
}

std::vector<size_t> ordering(size_t n, ThreadOrder order, std::mt19937_64& rng) {
  std::vector<size_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  if (order == ThreadOrder::Reverse) std::reverse(v.begin(), v.end());
  if (order == ThreadOrder::Shuffled) std::shuffle(v.begin(), v.end(), rng);
  return v;
}

struct KernelCode {
  const passes::DeviceKernel* kernel = nullptr;
  Compiler compiler;
  SPtr body;
  std::vector<std::pair<std::string, size_t>> axis_slots;  // tag, variable slot
  std::vector<std::pair<int, size_t>> param_slots;         // device buffer, buffer slot
  std::vector<size_t> shared_slots;
};

}  // namespace

struct DeviceProgram::Impl {
  passes::DeviceFunc func;
  std::vector<std::unique_ptr<KernelCode>> kernels;
};

DeviceProgram::DeviceProgram(const passes::DeviceFunc& f) : impl_(std::make_unique<Impl>()) {
  impl_->func = f;
  for (const passes::DeviceKernel& k : impl_->func.kernels) {
    auto code = std::make_unique<KernelCode>();
    code->kernel = &k;
    for (const passes::ThreadAxis& a : k.axes) code->axis_slots.emplace_back(a.tag, code->compiler.var_slot(a.var.get()));
    for (int p : k.params) code->param_slots.emplace_back(p, code->compiler.buf_slot(impl_->func.buffers[p].data.get()));
    for (const passes::SharedBuffer& b : k.shared) code->shared_slots.push_back(code->compiler.buf_slot(b.data.get()));
    code->body = code->compiler.stmt(k.body);
    impl_->kernels.push_back(std::move(code));
  }
}

DeviceProgram::~DeviceProgram() = default;

void DeviceProgram::run(const std::vector<HostBuffer*>& args, ThreadOrder order, uint64_t seed) {
  const passes::DeviceFunc& f = impl_->func;
  check_arg_count(f.name, f.args.size(), args.size());
  for (size_t i = 0; i < args.size(); ++i) check_arg(f.args[i], args[i]);
  // Device memory: the arguments themselves, fresh temporaries.
  std::vector<std::vector<uint8_t>> temps(f.buffers.size());
  std::vector<BufferSlot> memory(f.buffers.size());
  for (size_t b = 0; b < f.buffers.size(); ++b) {
    const passes::DeviceBuffer& d = f.buffers[b];
    if (d.is_arg) {
      memory[b] = {args[d.arg_index]->data(), d.elements, d.dtype, d.data.name()};
    } else {
      temps[b].assign(static_cast<size_t>(d.elements * d.dtype.storage_bytes()), 0xA5);
      memory[b] = {temps[b].data(), d.elements, d.dtype, d.data.name()};
    }
  }
  std::mt19937_64 rng(seed);
  for (const auto& code : impl_->kernels) {
    const passes::DeviceKernel& k = *code->kernel;
    Frame base;
    base.vars.resize(code->compiler.num_slots());
    base.bufs.resize(code->compiler.num_bufs());
    for (size_t i = 0; i < base.bufs.size(); ++i) base.bufs[i].name = code->compiler.buf_name(i);
    for (const auto& [b, slot] : code->param_slots) base.bufs[slot] = memory[static_cast<size_t>(b)];
    const std::array<std::string, 3> dims = {"x", "y", "z"};
    std::array<int64_t, 3> grid{}, block{};
    for (int d = 0; d < 3; ++d) {
      grid[d] = k.extent("blockIdx." + dims[d]);
      block[d] = k.extent("threadIdx." + dims[d]);
    }
    auto slot_of = [&](const std::string& tag) -> std::optional<size_t> {
      for (const auto& [t, s] : code->axis_slots)
        if (t == tag) return s;
      return std::nullopt;
    };
    auto set_index = [&](Frame& fr, const char* kind, const std::array<int64_t, 3>& size, int64_t linear) {
      for (int d = 0; d < 3; ++d) {
        if (auto s = slot_of(std::string(kind) + "." + dims[d])) fr.vars[*s].i = linear % size[d];
        linear /= size[d];
      }
    };
    size_t nblocks = static_cast<size_t>(grid[0] * grid[1] * grid[2]);
    size_t nthreads = static_cast<size_t>(block[0] * block[1] * block[2]);
    std::vector<std::vector<uint8_t>> shared(k.shared.size());
    for (size_t b : ordering(nblocks, order, rng)) {
      for (size_t i = 0; i < k.shared.size(); ++i) {
        const passes::SharedBuffer& sb = k.shared[i];
        shared[i].assign(static_cast<size_t>(sb.elements * sb.dtype.storage_bytes()), 0xA5);
        base.bufs[code->shared_slots[i]] = {shared[i].data(), sb.elements, sb.dtype, sb.data.name()};
      }
      set_index(base, "blockIdx", grid, static_cast<int64_t>(b));
      std::vector<Frame> frames(nthreads, base);
      for (size_t t = 0; t < nthreads; ++t) set_index(frames[t], "threadIdx", block, static_cast<int64_t>(t));
      run_threads(code->body.get(), frames, ordering(nthreads, order, rng));
    }
  }
}

}  // namespace kiln::interp
