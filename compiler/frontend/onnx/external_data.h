#pragma once
// ONNX's external data: a model over protobuf's 2 GiB limit (and any model saved with
// onnx.save_model(..., save_as_external_data=True), as PyTorch's exporter does for
// large models) keeps its tensors' bytes in other files. Such a TensorProto has
// data_location EXTERNAL and key-value pairs: "location", a path relative to the
// model's folder, and optionally "offset" and "length" in bytes (the rest of the file
// from the offset when absent); "checksum" and other keys are not checked, as ONNX
// Runtime does not.
#include <onnx/onnx_pb.h>

#include <string>

namespace kiln::frontend {

// Reads every external tensor of `model` (initializers, sparse initializers, Constant
// nodes' and other attributes' tensors, in subgraphs and model functions too) into its
// raw_data, from files under `dir`, and marks it stored inline. A location that is
// absolute or climbs out of the folder (".."), a missing file, an offset or length
// past the file's end, or any external tensor where `dir` is empty (a model given as
// bytes, whose folder is unknown) is a CompileError naming `source` and the tensor.
void load_external_data(onnx::ModelProto& model, const std::string& dir, const std::string& source);

}  // namespace kiln::frontend
