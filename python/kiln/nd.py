"""Arrays of the CPU runtime (backend-cpu/runtime/tensor.h). They share storage with NumPy
and PyTorch through DLPack: kiln.nd.from_dlpack(x) and numpy.from_dlpack(a) copy nothing."""
from ._kiln.nd import NDArray, from_dlpack, empty, zeros, load, array

__all__ = ["NDArray", "from_dlpack", "empty", "zeros", "load", "array"]

