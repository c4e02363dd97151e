// kiln.te's schedules: create_schedule, the stage primitives, tensor intrinsics and
// lower(), as thin pybind11 wrappers of compiler/schedule. Illegal requests raise
// kiln.CompileError with the C++ message (it names the stage and the axis).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "compiler/ir/printer.h"
#include "compiler/schedule/lower.h"
#include "compiler/schedule/schedule.h"
#include "compiler/schedule/tensorize.h"
#include "compiler/support/error.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace kiln::python {

using ir::IterVar;
using schedule::BufferRegion;
using schedule::Schedule;
using schedule::Stage;
using te::Tensor;

namespace {

std::vector<Tensor> to_tensors(const py::handle& h) {
  if (py::isinstance<Tensor>(h)) return {h.cast<Tensor>()};
  std::vector<Tensor> out;
  for (py::handle e : h) out.push_back(e.cast<Tensor>());
  return out;
}

std::vector<IterVar> axes_of(const py::args& args) {
  // reorder(a, b, c) and reorder([a, b, c]) both
  if (args.size() == 1 && !py::isinstance<IterVar>(args[0])) return args[0].cast<std::vector<IterVar>>();
  std::vector<IterVar> out;
  for (py::handle a : args) out.push_back(a.cast<IterVar>());
  return out;
}

int as_factor(const py::object& v, const char* what) {
  if (!py::isinstance<py::int_>(v))
    throw CompileError(std::string(what) + " must be a constant integer here, got " + py::repr(v).cast<std::string>());
  return v.cast<int>();
}

// A tensor intrinsic as Python holds it (pybind11 holds no shared_ptr to a const type).
struct PyTensorIntrin {
  std::shared_ptr<const schedule::TensorIntrin> intrin;
};

// An intrinsic's implementation written in Python, as TVM's intrin_func(ins, outs): it gets
// the regions of the inputs and of the output, and returns a kiln.tir.Stmt, or (body,
// reduce_init, reduce_update) for a reduction split around the tensorized loops. Lowering
// calls it without the GIL where kiln.build released it, so the call and the function's
// release take the GIL.
auto python_impl(const py::function& f) {
  std::shared_ptr<py::object> fn(new py::object(f), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
  return [fn](const std::vector<BufferRegion>& ins, const BufferRegion& out) {
    py::gil_scoped_acquire gil;
    py::object r = (*fn)(py::cast(ins), py::cast(std::vector<BufferRegion>{out}));
    auto stmt = [](const py::handle& h) { return h.is_none() ? ir::Stmt() : h.cast<ir::Stmt>(); };
    if (py::isinstance<ir::Stmt>(r)) return schedule::IntrinImpl{r.cast<ir::Stmt>(), {}, {}};
    if ((py::isinstance<py::tuple>(r) || py::isinstance<py::list>(r)) && py::len(r) == 3) {
      py::sequence t = r;
      return schedule::IntrinImpl{stmt(t[0]), stmt(t[1]), stmt(t[2])};
    }
    throw CompileError("a tensor intrinsic's implementation returns a kiln.tir.Stmt or (body, reduce_init, reduce_update), got " +
                       py::repr(r).cast<std::string>());
  };
}

// A Python literal stored into a region takes the region's element type.
ir::Expr value_for(const BufferRegion& r, const py::handle& v) {
  if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)) return ir::make_const(r.buffer->dtype, v.cast<double>());
  return to_expr(v);
}

}  // namespace

void bind_schedule(py::module_& m) {
  // The block of a buffer that a tensor intrinsic's implementation works on (TVM's
  // Buffer as intrin_func receives it): indices are relative to the block.
  py::class_<BufferRegion>(m, "BufferRegion")
      .def_property_readonly("name", [](const BufferRegion& r) { return r.buffer->name; })
      .def_property_readonly("dtype", [](const BufferRegion& r) { return r.buffer->dtype.to_string(); })
      .def_property_readonly("scope", [](const BufferRegion& r) { return r.buffer->scope; })
      .def_readonly("base", &BufferRegion::base)
      .def_readonly("shape", &BufferRegion::extents)
      .def("vload", [](const BufferRegion& r, const py::object& idx) { return r.load(to_exprs(idx)); }, py::arg("begin"))
      .def("__getitem__", [](const BufferRegion& r, const py::object& idx) { return r.load(to_exprs(idx)); })
      .def("vstore", [](const BufferRegion& r, const py::object& idx, const py::object& value) {
        return r.store(value_for(r, value), to_exprs(idx));
      }, py::arg("begin"), py::arg("value"))
      .def("__repr__", [](const BufferRegion& r) { return "BufferRegion(" + r.buffer->name + ")"; });

  py::class_<PyTensorIntrin>(m, "TensorIntrin")
      .def_property_readonly("name", [](const PyTensorIntrin& t) { return t.intrin->name; })
      .def_property_readonly("op", [](const PyTensorIntrin& t) { return t.intrin->compute; })
      .def("__repr__", [](const PyTensorIntrin& t) { return "TensorIntrin(" + t.intrin->name + ")"; });
  // TVM's te.decl_tensor_intrin(op, intrin_func): `op` the pattern (a compute over
  // placeholders), `fcompute(ins, outs)` its implementation (python_impl). Kiln's
  // intrinsics read the stage's own buffers, so there are no `binds`.
  m.def("decl_tensor_intrin", [](const Tensor& op, const py::function& fcompute, const std::string& name) {
        return PyTensorIntrin{schedule::decl_tensor_intrin(name.empty() ? op->name : name, op, python_impl(fcompute))};
      }, py::arg("op"), py::arg("fcompute"), py::arg("name") = "");

  py::class_<Stage>(m, "Stage")
      .def_property_readonly("op", [](const Stage& s) { return s->op; })
      .def_property_readonly("origin_op", [](const Stage& s) { return s->origin_op; })
      .def_property_readonly("leaf_iter_vars", [](const Stage& s) { return s->leaf_iter_vars; })
      .def_property_readonly("all_iter_vars", [](const Stage& s) { return s->all_iter_vars; })
      .def("split", [](Stage& s, const IterVar& parent, const py::object& factor, const py::object& nparts) {
        if (factor.is_none() == nparts.is_none())
          throw CompileError("split of " + schedule::describe(parent, s.get()) + ": give factor or nparts, one of them");
        return factor.is_none() ? s.split_nparts(parent, as_factor(nparts, "nparts"))
                                : s.split(parent, as_factor(factor, "factor"));
      }, py::arg("parent"), py::arg("factor") = py::none(), py::arg("nparts") = py::none())
      .def("tile", [](Stage& s, const IterVar& x, const IterVar& y, const py::object& xf, const py::object& yf) {
        std::vector<IterVar> t = s.tile(x, y, as_factor(xf, "x_factor"), as_factor(yf, "y_factor"));
        return py::make_tuple(t[0], t[1], t[2], t[3]);
      }, py::arg("x_parent"), py::arg("y_parent"), py::arg("x_factor"), py::arg("y_factor"))
      .def("fuse", [](Stage& s, const py::args& args) {
        std::vector<IterVar> axes = axes_of(args);
        if (axes.empty()) throw CompileError("fuse of stage '" + s->name() + "': no axes given");
        IterVar f = axes[0];
        for (size_t i = 1; i < axes.size(); ++i) f = s.fuse(f, axes[i]);
        return f;
      })
      .def("reorder", [](Stage& s, const py::args& args) { s.reorder(axes_of(args)); })
      .def("vectorize", &Stage::vectorize)
      .def("unroll", &Stage::unroll)
      .def("parallel", &Stage::parallel)
      .def("bind", [](Stage& s, const IterVar& iv, const py::object& thread) {
        s.bind(iv, py::isinstance<py::str>(thread) ? thread.cast<std::string>() : thread.cast<IterVar>()->thread_tag);
      })
      .def("pragma", [](Stage& s, const IterVar& iv, const std::string& key, const py::object& value) {
        s.pragma(iv, key, value.is_none() ? ir::Expr(1) : to_expr(value));
      }, py::arg("var"), py::arg("pragma_type"), py::arg("pragma_value") = py::none())
      .def("compute_at", &Stage::compute_at)
      .def("compute_inline", &Stage::compute_inline)
      .def("compute_root", &Stage::compute_root)
      .def("set_scope", &Stage::set_scope)
      .def("double_buffer", &Stage::double_buffer)
      .def("tensorize", [](Stage& s, const IterVar& iv, const PyTensorIntrin& intrin) { s.tensorize(iv, intrin.intrin); },
           py::arg("var"), py::arg("tensor_intrin"))
      .def("__repr__", [](const Stage& s) { return "Stage(" + s->name() + ")"; });

  py::class_<Schedule>(m, "Schedule")
      .def("__getitem__", [](const Schedule& s, const Tensor& t) { return s[t]; })
      .def_property_readonly("stages", [](const Schedule& s) { return s->stages; })
      .def_property_readonly("outputs", [](const Schedule& s) { return s->outputs; })
      .def("cache_read", [](Schedule& s, const Tensor& t, const std::string& scope, const py::object& readers) {
        return s.cache_read(t, scope, to_tensors(readers));
      })
      .def("cache_write", &Schedule::cache_write);

  m.def("create_schedule", [](const py::object& ops) { return schedule::create_schedule(to_tensors(ops)); });

  py::class_<schedule::LoweredFunc>(m, "LoweredFunc")
      .def_readonly("name", &schedule::LoweredFunc::name)
      .def_property_readonly("body", [](const schedule::LoweredFunc& f) { return ir::to_string(f.body); })
      .def_property_readonly("params", [](const schedule::LoweredFunc& f) {
        std::vector<std::string> names;
        for (const ir::Buffer& b : f.args) names.push_back(b->name);
        return names;
      })
      .def("__str__", [](const schedule::LoweredFunc& f) { return lowered_text(f); })
      .def("__repr__", [](const schedule::LoweredFunc& f) { return lowered_text(f); });

  m.def("lower", [](const Schedule& s, const py::object& args, const std::string& name, bool) {
        return schedule::lower(s, to_tensors(args), name);
      }, py::arg("sch"), py::arg("args"), py::arg("name") = "main", py::arg("simple_mode") = true);
}

std::string lowered_text(const schedule::LoweredFunc& f) {
  std::string sig = f.name + "(";
  for (size_t i = 0; i < f.args.size(); ++i) {
    const ir::Buffer& b = f.args[i];
    sig += (i ? ", " : "") + b->name + ": " + b->dtype.to_string() + "[";
    for (size_t d = 0; d < b->shape.size(); ++d) sig += (d ? ", " : "") + ir::to_string(b->shape[d]);
    sig += "]";
  }
  return sig + ") {\n" + ir::to_string(f.body) + "}\n";
}

}  // namespace kiln::python
