#pragma once
// The integer chains that quantize_realize makes of a quantized model, matched: what an
// accelerator's strategy (strategy.h) looks for to place a layer. Every target that
// runs int8 layers with power-of-two requantization reads the same two forms:
//
//   conv:  cast<int8>(clip(right_shift(add(conv2d<int32>(x:int8, w:int8), bias:int32), k)))
//          (or dense in conv2d's place; the right_shift is optional)
//   add:   cast<int8>(clip(right_shift(add(add(a', b'), round), k)))
//          with a', b' = [shift(] cast<int32>(x:int8) [, s)] (the round term optional)
//
// clip's bounds are those of int8 (-128..127) or of a ReLU (0..127). Every node of a
// chain but its last has exactly one use, so replacing the chain loses nothing.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"

namespace kiln::graph {

// A convolution, or a dense layer, with its requantization.
struct ConvChain {
  NodeId conv = -1, x = -1, weight = -1, bias = -1;  // weight and bias are constants
  bool dense = false;
  int64_t shift = 0;
  bool relu = false;
  std::vector<NodeId> interior;  // the chain's nodes other than its last (the cast)
};

// A residual add of two int8 tensors of the same rank-4 type.
struct AddChain {
  NodeId a = -1, b = -1;
  int64_t shift_a = 0, shift_b = 0, round = 0, shift = 0;  // a negative operand shift shifts left
  bool relu = false;
  std::vector<NodeId> interior;
};

// A number attribute stored as an integer or a float (clip's bounds), or nothing.
std::optional<double> number(const Attrs& a, const std::string& key);
bool is_int8(const TensorType& t);

// `cast`: the candidate chain's last node; `uses`: g.use_counts().
std::optional<ConvChain> match_conv_chain(const Graph& g, const std::vector<int>& uses, NodeId cast);
std::optional<AddChain> match_add_chain(const Graph& g, const std::vector<int>& uses, NodeId cast);

}  // namespace kiln::graph
