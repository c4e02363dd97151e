// Fuzzes the ONNX importer (compiler/frontend/onnx): the input is a serialized
// ModelProto. Every refusal must be a CompileError naming the problem.
#include <string>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    kiln::graph::Graph g = kiln::frontend::import_onnx_bytes(bytes, {}, "fuzz.onnx");
    (void)g;
  } catch (const kiln::CompileError&) {
  }
  return 0;
}
