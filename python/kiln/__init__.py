"""Kiln's Python API: thin bindings over the C++ core (python/src).

    import kiln
    from kiln import te
    A = te.placeholder((n, n), name="A")
    ...
    s = te.create_schedule(C.op)
    print(kiln.lower(s, [A, B, C], simple_mode=True))
    f = kiln.build(s, [A, B, C], target="llvm")
    f(a, b, c)            # NumPy arrays or kiln.nd arrays, shared without copies

Errors from C++ arrive as kiln.KilnError (kiln.CompileError, kiln.RuntimeError,
kiln.DeviceError) with the C++ message.
"""
from . import _kiln
from ._kiln import (KilnError, CompileError, RuntimeError, DeviceError, Module, LoweredFunc,
                    build_lowered, set_num_threads, get_num_threads)
from ._kiln import lower, build, build_model, load_module, Graph, GraphModule
from . import te, nd, topi, frontend, hw, tune
autotvm = tune  # TVM's name for it: kiln.autotvm.template, kiln.autotvm.tuner.XGBTuner, ...

__all__ = ["te", "nd", "topi", "frontend", "hw", "tune", "autotvm", "lower", "build", "build_model", "load_module", "Graph", "GraphModule", "build_lowered", "cpu", "device", "Module",
           "LoweredFunc", "KilnError", "CompileError", "RuntimeError", "DeviceError",
           "set_num_threads", "get_num_threads"]


class Device:
    """Where a CPU module runs (TVM's tvm.cpu(0)); the CPU runtime has one."""

    def __init__(self, kind="cpu", index=0):
        if kind not in ("cpu", "llvm"):
            raise KilnError(f"device '{kind}': this build runs modules on the CPU only")
        self.kind, self.index = "cpu", index

    def __repr__(self):
        return f"kiln.device('{self.kind}', {self.index})"


def cpu(index=0):
    return Device("cpu", index)


def device(kind, index=0):
    return Device(kind, index)
