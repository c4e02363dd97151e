#pragma once
// The pieces of the `kiln._kiln` extension module (python/src/*.cc) and the
// conversions they share. The bindings hold no logic of their own: each call is the C++
// core's, and its errors reach Python with the C++ message.
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "backend-cpu/module.h"
#include "backend-cpu/runtime/tensor.h"
#include "compiler/ir/node.h"
#include "compiler/schedule/lower.h"

namespace kiln::python {

// A data type from "float32", a numpy dtype or type (np.float32), or a DataType.
ir::DataType to_dtype(const pybind11::handle& h);
// An int, float, bool, Expr, Var or IterVar as an expression (ints as int32 when they fit).
ir::Expr to_expr(const pybind11::handle& h);
// One expression or a tuple/list of them (shapes, indices).
std::vector<ir::Expr> to_exprs(const pybind11::handle& h);
// An NDArray sharing the storage of a kiln NDArray, a DLPack capsule or any object with
// __dlpack__ (NumPy, PyTorch).
cpu::NDArray to_ndarray(const pybind11::handle& h);
// A CPU module's code in one format: "ll" (LLVM IR), "asm", "h" (the C header of its
// functions) or "o" (the object file, as bytes); CompileError for another.
pybind11::object module_source(const cpu::Module& mod, const std::string& fmt);
// A lowered function as text: its signature, then the loop IR.
std::string lowered_text(const schedule::LoweredFunc& f);

void bind_te(pybind11::module_& m);
void bind_schedule(pybind11::module_& m);
void bind_runtime(pybind11::module_& m);
void bind_graph(pybind11::module_& m);
void bind_hw(pybind11::module_& m);    // kiln.hw (python/src/hw.cc)
void bind_tune(pybind11::module_& m);  // kiln.tune (python/src/tune.cc)

}  // namespace kiln::python
