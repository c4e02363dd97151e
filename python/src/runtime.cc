// kiln.nd and kiln.build: the CPU runtime's NDArray (shared with NumPy and PyTorch
// through DLPack, without copies) and the CPU backend's Module, as thin pybind11
// wrappers of backend-cpu.
#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>

#include "backend-cpu/module.h"
#include "backend-cpu/runtime/parallel.h"
#include "backend-cpu/runtime/tensor.h"
#include "compiler/support/error.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace kiln::python {

using cpu::NDArray;

namespace {

constexpr const char* kCapsule = "dltensor";
constexpr const char* kUsedCapsule = "used_dltensor";

// A DLPack capsule that nobody consumed frees its tensor (the DLPack protocol).
void delete_unused_capsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kCapsule)) {
    auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsule));
    if (t && t->deleter) t->deleter(t);
  }
}

py::capsule to_capsule(const NDArray& a) {
  DLManagedTensor* t = a.to_dlpack();
  return py::capsule(t, kCapsule, &delete_unused_capsule);
}

NDArray from_capsule(const py::capsule& cap) {
  if (!PyCapsule_IsValid(cap.ptr(), kCapsule))
    throw CompileError("from_dlpack: the capsule is not an unconsumed DLPack tensor ('dltensor')");
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), kCapsule));
  NDArray a = NDArray::from_dlpack(t);  // takes ownership: the capsule must not free it
  PyCapsule_SetName(cap.ptr(), kUsedCapsule);
  return a;
}

}  // namespace

// A kiln NDArray, a DLPack capsule, or anything with __dlpack__ (NumPy arrays, PyTorch
// tensors): the storage is shared, never copied.
NDArray to_ndarray(const py::handle& h) {
  if (py::isinstance<NDArray>(h)) return h.cast<NDArray>();
  if (py::isinstance<py::capsule>(h)) return from_capsule(h.cast<py::capsule>());
  if (py::hasattr(h, "__dlpack__")) {
    py::object cap;
    try {
      cap = h.attr("__dlpack__")();
    } catch (py::error_already_set& e) {
      // NumPy refuses to export a read-only array; say what to do.
      throw CompileError("this array cannot be shared through DLPack (" + std::string(e.what()) +
                         "); pass a writable, C-contiguous array or kiln.nd.array(x)");
    }
    return from_capsule(cap.cast<py::capsule>());
  }
  throw CompileError("expected an array (kiln.nd.NDArray, a NumPy array or anything with __dlpack__), got " +
                     py::repr(h).cast<std::string>());
}

py::object module_source(const cpu::Module& mod, const std::string& fmt) {
  if (fmt == "ll" || fmt == "llvm") return py::str(mod.llvm_ir());
  if (fmt == "asm" || fmt == "s") return py::str(mod.assembly());
  if (fmt == "h" || fmt == "header") return py::str(mod.header());
  if (fmt == "o" || fmt == "obj") return py::bytes(mod.object());
  throw CompileError("get_source: unknown format '" + fmt + "' (ll, asm, h, o)");
}

void bind_runtime(py::module_& m) {
  py::module_ nd = m.def_submodule("nd", "arrays of the CPU runtime (backend-cpu/runtime/tensor.h)");
  py::class_<NDArray>(nd, "NDArray")
      .def_property_readonly("shape", [](const NDArray& a) { return py::tuple(py::cast(a.shape())); })
      .def_property_readonly("dtype", [](const NDArray& a) { return a.dtype().to_string(); })
      .def_property_readonly("ndim", &NDArray::ndim)
      .def_property_readonly("size", &NDArray::size)
      .def("__dlpack__", [](const NDArray& a, const py::object&) { return to_capsule(a); },
           py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const NDArray&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); })
      .def("to_dlpack", [](const NDArray& a) { return to_capsule(a); })
      // A writable NumPy view of the same storage that keeps it alive (NumPy 1.24's
      // from_dlpack makes read-only arrays).
      .def("numpy", [](const py::object& self) -> py::object {
        const NDArray& a = self.cast<const NDArray&>();
        py::dtype dt = py::dtype(a.dtype().to_string());
        std::vector<py::ssize_t> shape(a.shape().begin(), a.shape().end()), strides;
        for (int64_t st : a.strides()) strides.push_back(st * a.element_bytes());
        return py::array(dt, shape, strides, a.data(), self);
      })
      .def("copy", &NDArray::copy)
      .def("save", &NDArray::save_npy)
      .def("__repr__", [](const NDArray& a) {
        std::string s = "kiln.nd.NDArray(shape=(";
        for (size_t i = 0; i < a.shape().size(); ++i) s += (i ? ", " : "") + std::to_string(a.shape()[i]);
        return s + "), dtype=" + a.dtype().to_string() + ")";
      });
  nd.def("from_dlpack", &to_ndarray, "shares the storage of a DLPack capsule or of an object with __dlpack__");
  nd.def("empty", [](std::vector<int64_t> shape, const py::object& dtype) { return NDArray::empty(shape, to_dtype(dtype)); },
         py::arg("shape"), py::arg("dtype") = "float32");
  nd.def("zeros", [](std::vector<int64_t> shape, const py::object& dtype) { return NDArray::zeros(shape, to_dtype(dtype)); },
         py::arg("shape"), py::arg("dtype") = "float32");
  nd.def("load", &NDArray::load_npy);
  // A copy in Kiln's own 64-byte-aligned storage (as tvm.nd.array copies).
  // The device argument is TVM's (tvm.nd.array(x, dev)); the CPU runtime has one device.
  nd.def("array", [](const py::object& src, const py::object&) {
        py::object arr = py::module_::import("numpy").attr("ascontiguousarray")(src);
        if (!arr.attr("flags").attr("writeable").cast<bool>()) arr = arr.attr("copy")();
        return to_ndarray(arr).copy();
      }, py::arg("source"), py::arg("device") = py::none());

  m.def("set_num_threads", &kiln_set_num_threads);
  m.def("get_num_threads", &kiln_get_num_threads);

  py::class_<cpu::Module>(m, "Module")
      .def_property_readonly("entry_name", [](const cpu::Module& mod) { return mod.function_names().front(); })
      .def_property_readonly("function_names", &cpu::Module::function_names)
      .def_property_readonly("target", [](const cpu::Module& mod) { return mod.target().to_string(); })
      .def("__call__", [](const cpu::Module& mod, const py::args& args) {
        std::vector<NDArray> arrays;
        for (py::handle a : args) arrays.push_back(to_ndarray(a));
        py::gil_scoped_release release;
        mod(arrays);
      })
      .def("call", [](const cpu::Module& mod, const std::string& name, const py::args& args) {
        std::vector<NDArray> arrays;
        for (py::handle a : args) arrays.push_back(to_ndarray(a));
        py::gil_scoped_release release;
        mod.call(name, arrays);
      })
      .def("get_source", &module_source, py::arg("fmt") = "ll")
      .def("export_object", &cpu::Module::export_object)
      .def("export_library", &cpu::Module::export_library)
      // TVM's time_evaluator: `f.time_evaluator(f.entry_name, dev, number=10)(a, b, c).mean`.
      .def("time_evaluator", [](const cpu::Module& mod, const std::string& name, const py::object&, int number,
                                int repeat, int min_repeat_ms) {
        return py::cpp_function([mod, name, number, repeat, min_repeat_ms](const py::args& args) {
          std::vector<NDArray> arrays;
          for (py::handle a : args) arrays.push_back(to_ndarray(a));
          std::vector<double> results;
          {
            py::gil_scoped_release release;
            mod.call(name, arrays);  // warm-up, not timed
            int n = std::max(number, 1);
            for (int r = 0; r < std::max(repeat, 1); ++r) {
              double secs = 0;
              for (;;) {
                auto t0 = std::chrono::steady_clock::now();
                for (int i = 0; i < n; ++i) mod.call(name, arrays);
                secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                if (secs * 1000 >= min_repeat_ms || n >= (1 << 24)) break;
                n *= 2;
              }
              results.push_back(secs / n);
            }
          }
          py::module_ types = py::module_::import("types");
          double mean = 0;
          for (double r : results) mean += r;
          mean /= static_cast<double>(results.size());
          return types.attr("SimpleNamespace")(py::arg("mean") = mean, py::arg("results") = results,
                                               py::arg("number") = number);
        });
      }, py::arg("func_name"), py::arg("dev") = py::none(), py::arg("number") = 10, py::arg("repeat") = 1,
         py::arg("min_repeat_ms") = 0);

  m.def("build", [](const schedule::Schedule& s, const py::object& args, const std::string& target,
                    const std::string& name) {
        std::vector<te::Tensor> tensors;
        for (py::handle t : args) tensors.push_back(t.cast<te::Tensor>());
        py::gil_scoped_release release;
        return cpu::build(s, tensors, target, name);
      }, py::arg("sch"), py::arg("args"), py::arg("target") = "llvm", py::arg("name") = "default_function");
  m.def("build_lowered", [](const std::vector<schedule::LoweredFunc>& funcs, const std::string& target) {
        py::gil_scoped_release release;
        return cpu::build(funcs, target);
      }, py::arg("funcs"), py::arg("target") = "llvm");
}

}  // namespace kiln::python
