#pragma once
// What the ONNX frontend's tests ask of an imported model: the error a model gives, and
// how many nodes of an op the graph holds.
#include <string>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/graph.h"
#include "compiler/support/error.h"

namespace kiln::test {

// The CompileError's message of importing `bytes` (named "model.onnx"), "" when it imports.
inline std::string import_error(const std::string& bytes, const frontend::OnnxOptions& opt = {}) {
  try {
    frontend::import_onnx_bytes(bytes, opt, "model.onnx");
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

inline int count_op(const graph::Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& x : g.nodes()) n += x.op == op;
  return n;
}

}  // namespace kiln::test
