// kiln.te: expressions, variables, tensors and the op library, as thin pybind11
// wrappers of compiler/ir and compiler/te. Python literals become Kiln literals of the
// other operand's type, as in C++ (compiler/ir/op.h).
#include <pybind11/functional.h>
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "compiler/ir/node.h"
#include "compiler/ir/op.h"
#include "compiler/ir/parse_type.h"
#include "compiler/ir/printer.h"
#include "compiler/support/error.h"
#include "compiler/te/ops.h"
#include "compiler/te/tensor.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace kiln::python {

using ir::DataType;
using ir::Expr;
using ir::IterVar;
using ir::Var;
using te::Tensor;

DataType to_dtype(const py::handle& h) {
  if (py::isinstance<DataType>(h)) return h.cast<DataType>();
  if (py::isinstance<py::str>(h)) return ir::parse_type(h.cast<std::string>());
  // numpy dtypes and types (np.float32) read by their names
  if (py::hasattr(h, "name") && py::isinstance<py::str>(h.attr("name")))
    return ir::parse_type(h.attr("name").cast<std::string>());
  if (py::hasattr(h, "__name__")) return ir::parse_type(h.attr("__name__").cast<std::string>());
  throw CompileError("not a data type: " + py::repr(h).cast<std::string>());
}

// An int, float, bool, Expr, Var or IterVar (its variable) as an expression.
Expr to_expr(const py::handle& h) {
  if (py::isinstance<Expr>(h)) return h.cast<Expr>();
  if (py::isinstance<IterVar>(h)) return h.cast<IterVar>()->var;
  if (py::isinstance<py::bool_>(h)) return ir::make_bool(h.cast<bool>());
  if (py::isinstance<py::int_>(h)) {
    int64_t v = h.cast<int64_t>();
    return v >= INT32_MIN && v <= INT32_MAX ? ir::make_int(v) : ir::make_int(v, DataType::Int(64));
  }
  if (py::isinstance<py::float_>(h)) return ir::make_float(h.cast<double>());
  throw CompileError("not an expression: " + py::repr(h).cast<std::string>());
}

std::vector<Expr> to_exprs(const py::handle& h) {
  std::vector<Expr> out;
  if (py::isinstance<py::tuple>(h) || py::isinstance<py::list>(h)) {
    for (py::handle e : h) out.push_back(to_expr(e));
  } else {
    out.push_back(to_expr(h));
  }
  return out;
}

namespace {

// A literal operand takes the other operand's type (compiler/ir/op.h does this for
// C++ literals; Python's arrive as int32/float32 constants and are retyped here).
Expr literal_like(const py::handle& h, const Expr& other) {
  if (py::isinstance<Expr>(h) || py::isinstance<IterVar>(h)) return to_expr(h);
  if (py::isinstance<py::bool_>(h)) return ir::make_bool(h.cast<bool>(), other.dtype().lanes());
  if (py::isinstance<py::int_>(h)) return ir::make_const(other.dtype(), static_cast<double>(h.cast<int64_t>()));
  if (py::isinstance<py::float_>(h)) {
    if (!other.dtype().is_float())
      throw CompileError("a float literal (" + py::repr(h).cast<std::string>() + ") with an " +
                         other.dtype().to_string() + " expression: cast one of them");
    return ir::make_const(other.dtype(), h.cast<double>());
  }
  throw CompileError("not an expression: " + py::repr(h).cast<std::string>());
}

template <typename F>
void binary(py::class_<Expr>& c, const char* name, const char* rname, F f) {
  c.def(name, [f](const Expr& a, const py::object& b) { return f(a, literal_like(b, a)); });
  if (rname) c.def(rname, [f](const Expr& a, const py::object& b) { return f(literal_like(b, a), a); });
}

std::vector<IterVar> to_itervars(const py::handle& h) {
  std::vector<IterVar> out;
  if (py::isinstance<IterVar>(h)) return {h.cast<IterVar>()};
  for (py::handle e : h) out.push_back(e.cast<IterVar>());
  return out;
}

IterVar make_reduce_axis(const py::object& dom, const std::string& name) {
  if (py::isinstance<py::tuple>(dom) || py::isinstance<py::list>(dom)) {
    py::sequence s = dom;
    if (s.size() != 2) throw CompileError("reduce_axis: a domain is (min, end), got " + py::repr(dom).cast<std::string>());
    Expr lo = to_expr(s[0]), hi = to_expr(s[1]);
    return te::reduce_axis(ir::Range(lo, hi - lo), name);
  }
  return te::reduce_axis(to_expr(dom), name);
}

// te.sum(expr, axis=k) and its kin; `where` restricts the reduction.
template <Expr (*F)(Expr, std::vector<IterVar>, Expr)>
py::object reducer(const py::object& source, const py::object& axis, const py::object& where) {
  return py::cast(F(to_expr(source), to_itervars(axis), where.is_none() ? Expr() : to_expr(where)));
}

}  // namespace

void bind_te(py::module_& m) {
  py::class_<DataType>(m, "DataType")
      .def(py::init([](const std::string& s) { return ir::parse_type(s); }))
      .def_property_readonly("bits", &DataType::bits)
      .def_property_readonly("lanes", &DataType::lanes)
      .def("__str__", &DataType::to_string)
      .def("__repr__", [](const DataType& t) { return "DataType('" + t.to_string() + "')"; })
      .def("__eq__", [](const DataType& a, const py::object& b) {
        try {
          return a == to_dtype(b);
        } catch (const CompileError&) {
          return false;
        }
      });

  py::class_<Expr> expr(m, "Expr");
  expr.def_property_readonly("dtype", [](const Expr& e) { return e.dtype().to_string(); })
      .def("__str__", [](const Expr& e) { return ir::to_string(e); })
      .def("__repr__", [](const Expr& e) { return ir::to_string(e); })
      .def("astype", [](const Expr& e, const py::object& t) { return ir::cast(to_dtype(t), e); })
      .def("__neg__", [](const Expr& a) { return -a; })
      .def("__bool__", [](const Expr& e) -> bool {
        throw CompileError("an expression (" + ir::to_string(e) +
                           ") has no truth value: use kiln.te.all/any or select for conditions");
      })
      .def("__hash__", [](const Expr& e) { return std::hash<const void*>()(e.get()); });
  binary(expr, "__add__", "__radd__", [](Expr a, Expr b) { return a + b; });
  binary(expr, "__sub__", "__rsub__", [](Expr a, Expr b) { return a - b; });
  binary(expr, "__mul__", "__rmul__", [](Expr a, Expr b) { return a * b; });
  binary(expr, "__truediv__", "__rtruediv__", [](Expr a, Expr b) { return a / b; });
  binary(expr, "__floordiv__", "__rfloordiv__", [](Expr a, Expr b) { return a / b; });
  binary(expr, "__mod__", "__rmod__", [](Expr a, Expr b) { return a % b; });
  binary(expr, "__lt__", nullptr, [](Expr a, Expr b) { return a < b; });
  binary(expr, "__le__", nullptr, [](Expr a, Expr b) { return a <= b; });
  binary(expr, "__gt__", nullptr, [](Expr a, Expr b) { return a > b; });
  binary(expr, "__ge__", nullptr, [](Expr a, Expr b) { return a >= b; });
  binary(expr, "__lshift__", "__rlshift__", [](Expr a, Expr b) { return ir::shift_left(a, b); });
  binary(expr, "__rshift__", "__rrshift__", [](Expr a, Expr b) { return ir::shift_right(a, b); });
  binary(expr, "__and__", "__rand__", [](Expr a, Expr b) { return ir::bitwise_and(a, b); });
  binary(expr, "__or__", "__ror__", [](Expr a, Expr b) { return ir::bitwise_or(a, b); });
  binary(expr, "__xor__", "__rxor__", [](Expr a, Expr b) { return ir::bitwise_xor(a, b); });
  binary(expr, "equal", nullptr, [](Expr a, Expr b) { return ir::eq(a, b); });
  binary(expr, "not_equal", nullptr, [](Expr a, Expr b) { return ir::ne(a, b); });

  py::class_<Var, Expr>(m, "Var")
      .def(py::init([](const std::string& name, const py::object& dtype) { return Var(name, to_dtype(dtype)); }),
           py::arg("name") = "v", py::arg("dtype") = "int32")
      .def_property_readonly("name", &Var::name);

  py::class_<ir::Range>(m, "Range")
      .def_property_readonly("min", [](const ir::Range& r) { return r.min; })
      .def_property_readonly("extent", [](const ir::Range& r) { return r.extent; });

  py::class_<IterVar>(m, "IterVar")
      .def_property_readonly("var", [](const IterVar& v) { return v->var; })
      .def_property_readonly("dom", [](const IterVar& v) { return v->dom; })
      .def("__str__", [](const IterVar& v) { return v->var.name(); })
      .def("__repr__", [](const IterVar& v) { return "IterVar(" + v->var.name() + ")"; })
      .def("__eq__", [](const IterVar& a, const IterVar& b) { return a == b; })
      .def("__hash__", [](const IterVar& v) { return std::hash<const void*>()(v.get()); })
      // used inside expressions as its variable
      .def("__add__", [](const IterVar& a, const py::object& b) { return a->var + literal_like(b, a->var); })
      .def("__radd__", [](const IterVar& a, const py::object& b) { return literal_like(b, a->var) + a->var; })
      .def("__sub__", [](const IterVar& a, const py::object& b) { return a->var - literal_like(b, a->var); })
      .def("__rsub__", [](const IterVar& a, const py::object& b) { return literal_like(b, a->var) - a->var; })
      .def("__mul__", [](const IterVar& a, const py::object& b) { return a->var * literal_like(b, a->var); })
      .def("__rmul__", [](const IterVar& a, const py::object& b) { return literal_like(b, a->var) * a->var; })
      .def("__floordiv__", [](const IterVar& a, const py::object& b) { return a->var / literal_like(b, a->var); })
      .def("__mod__", [](const IterVar& a, const py::object& b) { return a->var % literal_like(b, a->var); });

  py::class_<Tensor>(m, "Tensor")
      .def_property_readonly("name", [](const Tensor& t) { return t->name; })
      .def_property_readonly("tag", [](const Tensor& t) { return t->tag; })
      .def_property_readonly("dtype", [](const Tensor& t) { return t->dtype.to_string(); })
      .def_property_readonly("shape", [](const Tensor& t) { return t->shape; })
      .def_property_readonly("ndim", &Tensor::ndim)
      // A Kiln tensor is its operation: `C.op` is C, so TVM's `C.op.axis` reads the same.
      .def_property_readonly("op", [](const Tensor& t) { return t; })
      .def_property_readonly("axis", [](const Tensor& t) { return t->axis; })
      .def_property_readonly("reduce_axis", [](const Tensor& t) { return t->reduce_axis; })
      .def_property_readonly("input_tensors", [](const Tensor& t) { return t->input_tensors(); })
      .def("output", [](const Tensor& t, int i) {
        if (i != 0) throw CompileError("operation '" + t->name + "' has one output, asked for output " + std::to_string(i));
        return t;
      })
      .def("__call__", [](const Tensor& t, const py::args& idx) { return t(to_exprs(idx)); })
      .def("__getitem__", [](const Tensor& t, const py::object& idx) { return t(to_exprs(idx)); })
      .def("__eq__", [](const Tensor& a, const Tensor& b) { return a.same_as(b); })
      .def("__hash__", [](const Tensor& t) { return std::hash<const void*>()(t.get()); })
      .def("__repr__", [](const Tensor& t) -> std::string {
        if (!t.defined()) return "Tensor(None)";
        return "Tensor(" + t->name + ", " + t->dtype.to_string() + ")";
      });

  m.def("placeholder", [](const py::object& shape, const py::object& dtype, const std::string& name) {
        return te::placeholder(to_exprs(shape), to_dtype(dtype), name);
      }, py::arg("shape"), py::arg("dtype") = "float32", py::arg("name") = "placeholder");
  m.def("compute", [](const py::object& shape, const py::function& fcompute, const std::string& name,
                      const std::string& tag) {
        std::vector<Expr> dims = to_exprs(shape);
        return te::compute(dims, [&](const std::vector<Var>& axes) {
          py::tuple args(axes.size());
          for (size_t i = 0; i < axes.size(); ++i) args[i] = py::cast(axes[i]);
          return to_expr(fcompute(*args));
        }, name, tag);
      }, py::arg("shape"), py::arg("fcompute"), py::arg("name") = "compute", py::arg("tag") = "");
  m.def("reduce_axis", &make_reduce_axis, py::arg("dom"), py::arg("name") = "k");
  m.def("sum", &reducer<te::sum>, py::arg("expr"), py::arg("axis"), py::arg("where") = py::none());
  m.def("max_reduce", &reducer<te::max_reduce>, py::arg("expr"), py::arg("axis"), py::arg("where") = py::none());
  m.def("min_reduce", &reducer<te::min_reduce>, py::arg("expr"), py::arg("axis"), py::arg("where") = py::none());
  m.def("prod", &reducer<te::prod>, py::arg("expr"), py::arg("axis"), py::arg("where") = py::none());
  m.def("const", [](const py::object& v, const py::object& dtype) {
        return ir::make_const(to_dtype(dtype), v.cast<double>());
      }, py::arg("value"), py::arg("dtype") = "int32");
  m.def("var", [](const std::string& name, const py::object& dtype) { return Var(name, to_dtype(dtype)); },
        py::arg("name") = "v", py::arg("dtype") = "int32");
  m.def("select", [](const py::object& c, const py::object& t, const py::object& f) {
    Expr te_ = to_expr(t);
    return ir::select(to_expr(c), te_, literal_like(f, te_));
  });
  m.def("cast", [](const py::object& dtype, const py::object& v) { return ir::cast(to_dtype(dtype), to_expr(v)); });
  m.def("all", [](const py::args& conds) {
    Expr r = to_expr(conds[0]);
    for (size_t i = 1; i < conds.size(); ++i) r = r && to_expr(conds[i]);
    return r;
  });
  m.def("any", [](const py::args& conds) {
    Expr r = to_expr(conds[0]);
    for (size_t i = 1; i < conds.size(); ++i) r = r || to_expr(conds[i]);
    return r;
  });
  // Binary min/max on expressions (te.max(a, b)); te.max(expr, axis=k) reduces.
  m.def("max", [](const py::object& a, const py::object& b, const py::object& axis) -> py::object {
    if (!axis.is_none()) return reducer<te::max_reduce>(a, axis, py::none());
    Expr x = to_expr(a);
    return py::cast(ir::max(x, literal_like(b, x)));
  }, py::arg("a"), py::arg("b") = py::none(), py::arg("axis") = py::none());
  m.def("min", [](const py::object& a, const py::object& b, const py::object& axis) -> py::object {
    if (!axis.is_none()) return reducer<te::min_reduce>(a, axis, py::none());
    Expr x = to_expr(a);
    return py::cast(ir::min(x, literal_like(b, x)));
  }, py::arg("a"), py::arg("b") = py::none(), py::arg("axis") = py::none());
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, Expr (*)(Expr)>>{
           {"exp", ir::exp}, {"log", ir::log}, {"sqrt", ir::sqrt}, {"tanh", ir::tanh}, {"sigmoid", ir::sigmoid},
           {"abs", ir::abs}, {"floor", ir::floor}, {"ceil", ir::ceil}, {"round", ir::round}}) {
    m.def(name, [fn](const py::object& x) { return fn(to_expr(x)); });
  }

  // te.thread_axis("vthread") (or (dom, tag)): an axis that Stage.bind binds a loop to; the
  // tag is the binding, the loop's own range its extent.
  m.def("thread_axis", [](const py::object& dom, const std::string& tag, const std::string& name) {
        if (py::isinstance<py::str>(dom)) return IterVar(Var(name.empty() ? dom.cast<std::string>() : name), ir::Range(),
                                                         ir::IterKind::Thread, dom.cast<std::string>());
        ir::Range range;
        if (!dom.is_none()) range = make_reduce_axis(dom, "dom")->dom;  // (min, end) or an extent, as reduce_axis reads it
        if (tag.empty()) throw CompileError("thread_axis: give its tag (\"vthread\", \"threadIdx.x\", \"blockIdx.x\", ...)");
        return IterVar(Var(name.empty() ? tag : name), range, ir::IterKind::Thread, tag);
      }, py::arg("dom") = py::none(), py::arg("tag") = "", py::arg("name") = "");

  // Loop-IR statements (compiler/ir/node.h), TVM's tir: what a tensor intrinsic's
  // implementation returns (kiln.te.decl_tensor_intrin), built over its BufferRegions.
  py::module_ tir = m.def_submodule("tir", "loop-IR statements (compiler/ir/node.h)");
  py::class_<ir::Stmt>(tir, "Stmt")
      .def("__str__", [](const ir::Stmt& st) { return ir::to_string(st); })
      .def("__repr__", [](const ir::Stmt& st) { return ir::to_string(st); });
  tir.def("For", [](const Var& v, const py::object& min, const py::object& extent, const std::string& kind,
                    const ir::Stmt& body) {
        for (ir::ForKind k : {ir::ForKind::Serial, ir::ForKind::Parallel, ir::ForKind::Vectorized, ir::ForKind::Unrolled})
          if (kind == ir::for_kind_name(k)) return ir::make_for(v, to_expr(min), to_expr(extent), k, body);
        throw CompileError("For: loop kind '" + kind + "' (serial, parallel, vectorized, unrolled)");
      }, py::arg("loop_var"), py::arg("min"), py::arg("extent"), py::arg("kind"), py::arg("body"));
  tir.def("SeqStmt", &ir::make_seq, py::arg("seq"));
  tir.def("IfThenElse", [](const py::object& cond, const ir::Stmt& then_case, const py::object& else_case) {
        return ir::make_if(to_expr(cond), then_case, else_case.is_none() ? ir::Stmt() : else_case.cast<ir::Stmt>());
      }, py::arg("condition"), py::arg("then_case"), py::arg("else_case") = py::none());
  // AttrStmt(None, "pragma_...", 1, body): a mark on a statement, as the C++ intrinsics use.
  tir.def("AttrStmt", [](const py::object& node, const std::string& key, const py::object& value, const ir::Stmt& body) {
        return ir::make_attr(key, node.is_none() ? Expr() : to_expr(node), to_expr(value), body);
      }, py::arg("node"), py::arg("attr_key"), py::arg("value"), py::arg("body"));
  tir.def("LetStmt", [](const Var& v, const py::object& value, const ir::Stmt& body) {
        return ir::make_let_stmt(v, to_expr(value), body);
      }, py::arg("var"), py::arg("value"), py::arg("body"));
  tir.def("Evaluate", [](const py::object& value) { return ir::make_evaluate(to_expr(value)); }, py::arg("value"));
  tir.def("NoOp", &ir::make_no_op);

  // The op library (compiler/te/ops.h), TVM's topi.
  py::module_ topi = m.def_submodule("topi", "operators as tensor expressions (compiler/te/ops.h)");
  topi.def("add", &te::add);
  topi.def("subtract", &te::subtract);
  topi.def("multiply", &te::multiply);
  topi.def("divide", &te::divide);
  topi.def("maximum", &te::maximum);
  topi.def("minimum", &te::minimum);
  topi.def("relu", &te::relu);
  topi.def("negative", &te::negative);
  topi.def("exp", &te::exp);
  topi.def("sigmoid", &te::sigmoid);
  topi.def("tanh", &te::tanh);
  topi.def("cast", [](const Tensor& x, const py::object& t) { return te::cast(x, to_dtype(t)); });
  topi.def("matmul", &te::matmul, py::arg("a"), py::arg("b"), py::arg("name") = "matmul");
  topi.def("dense", [](const Tensor& x, const Tensor& w, const py::object& bias, const std::string& name) {
        return te::dense(x, w, bias.is_none() ? Tensor() : bias.cast<Tensor>(), name);
      }, py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(),
           py::arg("name") = "dense");
  topi.def("conv2d_nchw", [](const Tensor& data, const Tensor& kernel, std::array<int, 2> stride,
                             std::array<int, 2> padding, std::array<int, 2> dilation, int groups,
                             const std::string& name) {
        return te::conv2d_nchw(data, kernel, te::Conv2DParams{stride, padding, dilation, groups}, name);
      }, py::arg("data"), py::arg("kernel"), py::arg("stride") = std::array<int, 2>{1, 1},
      py::arg("padding") = std::array<int, 2>{0, 0}, py::arg("dilation") = std::array<int, 2>{1, 1},
      py::arg("groups") = 1, py::arg("name") = "conv2d");
  topi.def("max_pool2d", [](const Tensor& data, std::array<int, 2> kernel, std::array<int, 2> stride,
                            std::array<int, 2> padding) {
        return te::pool2d(data, te::PoolKind::Max, te::Pool2DParams{kernel, stride, padding});
      }, py::arg("data"), py::arg("kernel"), py::arg("stride"), py::arg("padding") = std::array<int, 2>{0, 0});
  topi.def("avg_pool2d", [](const Tensor& data, std::array<int, 2> kernel, std::array<int, 2> stride,
                            std::array<int, 2> padding) {
        return te::pool2d(data, te::PoolKind::Avg, te::Pool2DParams{kernel, stride, padding});
      }, py::arg("data"), py::arg("kernel"), py::arg("stride"), py::arg("padding") = std::array<int, 2>{0, 0});
  topi.def("reshape", [](const Tensor& x, const py::object& shape) { return te::reshape(x, to_exprs(shape)); });
  topi.def("transpose", [](const Tensor& x, std::vector<int> axes) { return te::transpose(x, std::move(axes)); });
}

}  // namespace kiln::python
