#pragma once
// Loop IR to a VTA program. Shapes are static, so the code generator runs the host
// part of the lowered function itself and emits the instructions of every
// accelerator region it meets (pragma_dma_copy: 2D loads and stores; pragma_alu: ALU
// instructions in place; pragma_vta_uop_scope or a lone vta.gemm: one reset and one
// accumulating GEMM), with scratchpad ranges, micro-op kernels folded into the
// instructions' loops, and dependency tokens exactly where the modules' accesses
// conflict. It is a list of passes over an instruction IR: backend-vta/passes/passes.h
// lists them in order. CompileError, starting "vta codegen of 'NAME'", names the
// tensor or statement and the reason when a region cannot be mapped.
#include "backend-vta/env.h"
#include "backend-vta/program.h"
#include "compiler/schedule/lower.h"

namespace kiln::vta {

Program codegen(const Env& env, const schedule::LoweredFunc& f);

}  // namespace kiln::vta
