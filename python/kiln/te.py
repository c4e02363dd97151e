"""Tensor expressions and schedules (compiler/te, compiler/schedule), as TVM's te."""
from ._kiln import (Expr, Var, IterVar, Range, Tensor, DataType, Schedule, Stage, placeholder, compute,
                    reduce_axis, sum, max, min, max_reduce, min_reduce, prod, const, var, select, cast,
                    all, any, exp, log, sqrt, tanh, sigmoid, abs, floor, ceil, round, create_schedule)
from ._kiln import thread_axis, decl_tensor_intrin, TensorIntrin, BufferRegion

__all__ = ["Expr", "Var", "IterVar", "Range", "Tensor", "DataType", "Schedule", "Stage", "placeholder",
           "compute", "reduce_axis", "sum", "max", "min", "max_reduce", "min_reduce", "prod", "const", "var",
           "select", "cast", "all", "any", "exp", "log", "sqrt", "tanh", "sigmoid", "abs", "floor", "ceil",
           "round", "create_schedule", "thread_axis", "decl_tensor_intrin", "TensorIntrin", "BufferRegion"]
