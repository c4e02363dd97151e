// The `kiln._kiln` extension module: te and schedules (compiler/), the CPU backend and
// its arrays (backend-cpu/). Kiln's C++ errors become Python exceptions that carry the
// C++ message: kiln.CompileError (a bad model, expression or schedule),
// kiln.RuntimeError (a fault of a running program, bad arguments), kiln.DeviceError
// (the accelerator and its devices); all are kiln.KilnError, a ValueError as the C++
// kiln::Error is a std::invalid_argument.
#include <pybind11/pybind11.h>

#include "backend-cpu/graph_backend.h"
#include "backend-cpu/module.h"
#include "compiler/support/error.h"
#include "hw/spec/error.h"
#include "python/src/bindings.h"
#ifdef KILN_PYTHON_VTA
#include "backend-vta/graph_target.h"
#endif

namespace py = pybind11;

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "Kiln's C++ core (python/src): use the kiln package, not this module";
  static py::exception<kiln::Error> base(m, "KilnError", PyExc_ValueError);
  static py::exception<kiln::CompileError> compile(m, "CompileError", base.ptr());
  static py::exception<kiln::cpu::RuntimeError> runtime(m, "RuntimeError", base.ptr());
  static py::exception<kiln::hw::Error> device(m, "DeviceError", base.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const kiln::CompileError& e) {
      compile(e.what());
    } catch (const kiln::cpu::RuntimeError& e) {
      runtime(e.what());
    } catch (const kiln::hw::Error& e) {
      device(e.what());
    } catch (const kiln::Error& e) {
      base(e.what());
    }
  });
  kiln::python::bind_te(m);
  kiln::python::bind_schedule(m);
  kiln::python::bind_runtime(m);
  kiln::python::bind_graph(m);
  kiln::python::bind_hw(m);
  kiln::python::bind_tune(m);
  // The backends register with compiler/target's registry, as the `kiln` command does.
  kiln::cpu::register_graph_backend();
#ifdef KILN_PYTHON_VTA
  kiln::vta::register_graph_target();
#endif
}
