#pragma once
// Tensor intrinsics: a declared compute pattern (what a hardware instruction or a
// hand-written kernel computes) plus the code that implements it. tensorize(axis,
// intrin) replaces the loops from `axis` inward by that code, after checking that
// they compute exactly the pattern (structurally, after simplification).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/node.h"
#include "compiler/schedule/message_passing.h"
#include "compiler/te/tensor.h"

namespace kiln::schedule {

// The block of a buffer an intrinsic works on: `base` gives the first element (one
// index per buffer dimension); the intrinsic addresses its last `extents.size()`
// dimensions relative to it.
struct BufferRegion {
  ir::Buffer buffer;
  std::vector<Expr> base;
  std::vector<Expr> extents;

  std::vector<Expr> index(const std::vector<Expr>& local) const;
  Expr load(const std::vector<Expr>& local) const;
  ir::Stmt store(Expr value, const std::vector<Expr>& local) const;
};

struct IntrinImpl {
  ir::Stmt body;           // computes the whole pattern (a reduction included)
  ir::Stmt reduce_init;    // reductions split across the tensorized loops:
  ir::Stmt reduce_update;  // initialize once, then accumulate
};

struct TensorIntrin {
  std::string name;
  te::Tensor compute;  // the pattern; its inputs are placeholders
  std::function<IntrinImpl(const std::vector<BufferRegion>& inputs, const BufferRegion& output)> impl;
};

std::shared_ptr<const TensorIntrin> decl_tensor_intrin(
    std::string name, te::Tensor compute,
    std::function<IntrinImpl(const std::vector<BufferRegion>& inputs, const BufferRegion& output)> impl);

// Builds the statement replacing the loops of `stage` from leaf position `pos` inward.
// `buffer_of` maps a producer to its buffer.
ir::Stmt make_tensorized_body(const StageNode* stage, size_t pos, const DomMap& dom, ir::Analyzer* an,
                              const std::function<ir::Buffer(const ir::DataProducer*)>& buffer_of,
                              const ir::Buffer& output);

}  // namespace kiln::schedule
