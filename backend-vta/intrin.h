#pragma once
// The GEMM tensor intrinsic of a configuration: one micro-op computes
//   acc[b, o] += sum_i int32(inp[b, i]) * int32(wgt[o, i])     (BATCH x BLOCK_OUT)
// Its implementation is a call the VTA code generator turns into a micro-op:
//   vta.gemm(acc_elem, inp_elem, wgt_elem) / vta.gemm_reset(acc_elem)
// whose arguments are loads of the first scalar of each operand block; after storage
// flattening they name the scratchpad buffer and the flat offset of the block.
#include <memory>

#include "backend-vta/env.h"
#include "compiler/schedule/tensorize.h"

namespace kiln::vta {

inline constexpr const char* kGemmCall = "vta.gemm";
inline constexpr const char* kGemmResetCall = "vta.gemm_reset";

std::shared_ptr<const schedule::TensorIntrin> gemm_intrin(const Env& env);

}  // namespace kiln::vta
