#pragma once
// Bringing a model to an opset the converters read: a model outside opsets 11 to 17
// is rewritten by ONNX's own version converter (libonnx), which adapts every operator
// whose semantics changed between the two opsets (Upsample to Resize, broadcasting
// flags, attributes that became inputs, ...).
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::frontend {

constexpr int kMinNativeOpset = 11;
constexpr int kMaxNativeOpset = 17;
// The opset that older models are converted to.
constexpr int kConvertTarget = 13;

// The model's default-domain opset (0 when it imports none).
int default_opset(const onnx::ModelProto& model);

// Converts `model` in place when its opset is outside the native range. The converter
// needs shapes: the inputs' are set from `input_shapes` where given, then ONNX's shape
// inference fills in the rest. A model the converter cannot adapt is a CompileError
// naming `source`, the opset and the reason.
void upgrade_opset(onnx::ModelProto& model, const std::map<std::string, std::vector<int64_t>>& input_shapes,
                   const std::string& source);

}  // namespace kiln::frontend
