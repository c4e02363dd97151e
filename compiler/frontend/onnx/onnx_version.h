#pragma once
// Bringing a model to an opset the converters read: a model before opset 11 is
// rewritten by ONNX's own version converter (libonnx), which adapts every operator
// whose semantics changed between the two opsets (Upsample to Resize, broadcasting
// flags, attributes that became inputs, ...).
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.h"

namespace kiln::frontend {

constexpr int kMinNativeOpset = 11;
// Opsets 18 to 22 are read by the converters themselves (Debian's libonnx 1.12 knows
// opsets up to 17): what changed in them for the operators Kiln imports is the reduce
// operators' axes as an input, Split's num_outputs, Pad's axes and wrap mode, Resize's
// axes, keep_aspect_ratio_policy, antialias and half_pixel_symmetric, LpPool's
// dilations and ceil_mode, DFT's axis as an input, GridSample's mode names, blocked
// and output_dtype quantization, GroupNormalization's per-channel scale, new operators
// (Mish, Gelu, GroupNormalization) and new element types (bfloat16 for more operators,
// float8 and int4, which are refused by name as element types).
constexpr int kMaxNativeOpset = 22;
// The opset that older models are converted to: the oldest one read natively, so that
// the converter needs no shapes it cannot know (its Softmax 12 -> 13 adapter needs the
// input's rank, which reshapes by computed shapes hide from ONNX's shape inference at
// these opsets: its data propagation does not reach through the Shape -> Gather ->
// Unsqueeze -> Concat chains of a PyTorch export at opset 9).
constexpr int kConvertTarget = kMinNativeOpset;

// The model's default-domain opset (0 when it imports none).
int default_opset(const onnx::ModelProto& model);

// Converts `model` in place when its opset is older than the native range; a newer one
// is a CompileError naming the newest Kiln reads. The converter
// needs shapes: the inputs' are set from `options.input_shapes` where given (symbolic
// dimensions elsewhere become `options.symbolic_dim`, as the importer makes them), then
// ONNX's shape inference fills in the rest, with its data propagation so that shapes
// computed in the graph (Shape -> Gather -> Concat -> Reshape) are known too. A model
// the converter cannot adapt is a CompileError naming `source`, the opset and the reason.
void upgrade_opset(onnx::ModelProto& model, const OnnxOptions& options, const std::string& source);

}  // namespace kiln::frontend
