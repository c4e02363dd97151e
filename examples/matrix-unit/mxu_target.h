#pragma once
// The MXU as a target of Kiln's graph compiler: "mxu [-a_kb=32 -w_kb=64 -acc_kb=16
// -dram_mb=64]", registered from outside the compiler's core.
//
// The strategy places, in an integer graph (the canonical chains quantize_realize
// makes, compiler/graph/quant_pattern.h), every requantized int8 convolution and dense
// layer as one `mxu_matmul` node: a convolution becomes im2col on the host (pad,
// strided slices, concatenate, transpose, reshape: the core's own operators) feeding
// the matrix product, its weights are packed into the MXU's tile layout at compile
// time. The backend turns each placed node into an MXU command list ahead of time
// (mxu_codegen.h) and runs it on an MxuDevice, the unit's functional model.
namespace kiln::mxu {

// Registers the `mxu_matmul` operator, the "mxu" strategy and the "mxu" backend
// (idempotent).
void register_mxu_target();

}  // namespace kiln::mxu
