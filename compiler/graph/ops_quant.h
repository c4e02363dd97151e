#pragma once
// The quantization operators of the graph (ops_quant.cc): quantize_linear,
// dequantize_linear (ONNX semantics, per tensor or per axis), the arithmetic shifts
// right_shift and left_shift, and round (half to even). ops.cc registers them with
// the rest of the operator library.
#include <functional>

#include "compiler/graph/op.h"

namespace kiln::graph {

void register_quant_ops(const std::function<void(OpDef)>& reg);

// The integer accumulation type a conv2d/dense/matmul asks for with `out_dtype`
// ("int32"), or an undefined type (no attribute: the inputs' type, as before).
bool has_out_dtype(const Attrs& a);
DataType out_dtype(const Attrs& a);
// The inputs' element type as an int8/uint8 conv2d/dense/matmul with `out_dtype`
// needs them (CompileError otherwise); returns the type of the result.
DataType accumulation_type(const TensorType& a, const TensorType& b, const Attrs& attrs);

}  // namespace kiln::graph
