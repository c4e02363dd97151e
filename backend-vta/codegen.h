#pragma once
// Loop IR to a VTA program. Shapes are static, so the code generator runs the host
// part of the lowered function itself: it walks the loops outside every instruction
// region with concrete values and emits one runtime call per region it meets:
//   - `pragma_dma_copy`: a copy between a global tensor and a scratchpad becomes 2D
//     loads (with zero padding where the copy selects zeros) or stores, split over the
//     outer loops where one 2D transfer cannot express it;
//   - `pragma_alu`: an elementwise update of an ACC tensor becomes ALU instructions
//     (in place; a stage that reads one ACC tensor and writes another takes over its
//     storage);
//   - `pragma_vta_uop_scope` (or a lone vta.gemm call): the GEMM micro-ops of the
//     region become one reset and one accumulate instruction.
// Each region's micro-ops are enumerated and folded into the instruction's two loops
// (iter_out, iter_in) and verified against the enumeration. Scratchpad allocations get
// element ranges in their buffers. Dependency tokens are inserted between the load,
// compute and store modules exactly where one module's access range overlaps an
// earlier conflicting access of another, so buffers that alternate (virtual threads,
// double buffering) let the modules overlap. CompileError names the statement and the
// reason when a region cannot be mapped.
#include "backend-vta/env.h"
#include "backend-vta/program.h"
#include "compiler/schedule/lower.h"

namespace kiln::vta {

Program codegen(const Env& env, const schedule::LoweredFunc& f);

}  // namespace kiln::vta
