"""Loop-IR statements (compiler/ir/node.h), as TVM's tir: what a tensor intrinsic's
implementation (kiln.te.decl_tensor_intrin) returns, built over its BufferRegions."""
from ._kiln.tir import Stmt, For, SeqStmt, IfThenElse, AttrStmt, LetStmt, Evaluate, NoOp

__all__ = ["Stmt", "For", "SeqStmt", "IfThenElse", "AttrStmt", "LetStmt", "Evaluate", "NoOp"]
