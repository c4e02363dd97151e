"""The op library as tensor expressions (compiler/te/ops.h), as TVM's topi."""
from ._kiln.topi import *  # noqa: F401,F403
