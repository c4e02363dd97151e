#pragma once
// The ONNX frontend: reads a model into the graph IR. Opsets 11 to 22 of the default
// domain are read as they are (18 to 22 by the converters alone: libonnx 1.12 knows up
// to 17); older ones are first brought to opset 11 by ONNX's version converter
// (onnx_version.h). Initializers become constants; computations on constants (shape
// arithmetic that PyTorch exports: Shape, Gather, Concat, ...) are folded while
// importing. Every unsupported operator of a model is listed in one error; a
// malformed file, a missing value or a shape mismatch is a CompileError naming the
// file, the node, its op type and the opset. The supported operators are listed in
// onnx_importer.cc and docs/models.md.
//
// Sequences, optionals and control flow are resolved while importing: a sequence is a
// list of tensors of known length, an optional is empty or holds a value, If takes the
// branch its (known) condition picks, Loop and Scan are unrolled for their known trip
// counts. A graph output that is a sequence "y" becomes the outputs "y[0]", "y[1]", ...;
// an optional output is its value's outputs, or none when it is empty.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"

namespace kiln::frontend {

struct OnnxOptions {
  // Shapes for inputs (replacing the model's, e.g. to fix symbolic dimensions).
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // The size given to symbolic dimensions ("batch_size") not fixed above.
  int64_t symbolic_dim = 1;
  // Values of inputs known when compiling. An input that a shape is computed from
  // (Reshape's shape, Expand's shape, Slice's starts, ...) takes its value from here;
  // everywhere else it stays an input of the compiled graph.
  std::map<std::string, graph::ConstData> input_values;
  // Sequence inputs (ONNX's seq(tensor)): Kiln's graphs hold tensors only, so element k
  // of sequence input "x" is the graph input "x[k]" and the sequence's length is fixed
  // when compiling. Here: the shapes of "x"'s elements, one entry per element (values,
  // when known, go into input_values as "x[k]"); every sequence input must be listed.
  std::map<std::string, std::vector<std::vector<int64_t>>> sequence_shapes;
  // Optional inputs (ONNX's optional(...)) that are empty; any other holds its value,
  // taken as a tensor or a sequence input as above.
  std::set<std::string> empty_inputs;
};

// A model file; tensors stored as external data (external_data.h) are read from the
// files beside it.
graph::Graph import_onnx_file(const std::string& path, const OnnxOptions& options = {});
// `bytes`: a serialized ModelProto; `source` names it in messages. A model whose tensors
// are external data is an error here: there is no folder to read them from.
graph::Graph import_onnx_bytes(const std::string& bytes, const OnnxOptions& options = {},
                               const std::string& source = "<memory>");
// The folder a model file's external data is read from: its path's parent, "." for a
// bare file name.
std::string model_folder(const std::string& path);

// A serialized onnx::TensorProto (a conformance test's input_0.pb) as a host buffer;
// `source` names it in messages.
graph::ConstData read_onnx_tensor(const std::string& bytes, const std::string& source);

// The ONNX operator types the importer converts.
std::vector<std::string> supported_onnx_ops();

}  // namespace kiln::frontend
