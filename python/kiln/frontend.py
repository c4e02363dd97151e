"""Model importers (compiler/frontend): from_onnx(path | bytes | onnx.ModelProto, shape=None)."""
from ._kiln.frontend import from_onnx

__all__ = ["from_onnx"]
