#pragma once
// What a co-design search optimizes for: the accelerator's layers of a model, each an
// int8 convolution (dense is its 1x1 case) with the number of times the model runs it.
// A workload travels to worker processes and MPI ranks inside the tuner's workload key
// (tuner::Workload::args), so it has a text form that parses back exactly.
#include <cstdint>
#include <string>
#include <vector>

#include "backend-vta/strategy.h"

namespace kiln::explore {

struct Layer {
  vta::Conv2DWorkload conv;
  int count = 1;  // times the model runs this shape
};

struct ExploreWorkload {
  std::string name;  // "resnet18", the model file's stem, or "op"
  std::vector<Layer> layers;

  int64_t macs() const;  // every run of every layer
  // "conv2d:N=1,C=64,...*4;conv2d:..." (the tuner's conv2d keys, '*' the count).
  std::string text() const;
  // Throws hw::Error naming the part that does not parse.
  static ExploreWorkload from_text(const std::string& name, const std::string& text);
};

// ResNet-18's convolutions C2..C12 as the TVM paper's table lists them (once each, as
// bench/vta_conv2d runs them).
ExploreWorkload resnet18_table();
// One --op spec per layer, as `kiln tune --op` takes them ("conv2d:N=1,C=64,H=56,...").
ExploreWorkload workload_of_ops(const std::vector<std::string>& specs);
// The convolutions of an ONNX model that the accelerator takes whatever its GEMM
// shape in the space (group 1, channels multiples of `channel_multiple`: the largest
// BLOCK searched, HwSpace::max_block; the first layer of an image model, with 3
// channels, stays on the CPU as the compiler's placement leaves it), counted by shape.
// Error if there is none.
ExploreWorkload workload_of_model(const std::string& onnx_path, int channel_multiple);

}  // namespace kiln::explore
