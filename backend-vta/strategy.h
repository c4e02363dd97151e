#pragma once
// Op strategies: int8 conv2d (and dense, a 1x1 convolution of a 1x1 image) in the
// packed layouts, requantized on the ALU, with schedules whose knobs tile the output
// and the input channels and interleave virtual threads.
//
// Layouts (b = BATCH, bi = BLOCK_IN, bo = BLOCK_OUT of the configuration):
//   data   [N/b, C/bi, H, W, b, bi]       int8
//   kernel [O/bo, C/bi, KH, KW, bo, bi]   int8
//   bias   [1, O/bo, 1, 1, b, bo]         int32 (the same value in every batch lane)
//   out    [N/b, O/bo, OH, OW, b, bo]     int8
// out = clip(((sum data*kernel) + bias) >> shift, relu ? 0 : -128, 127).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backend-vta/env.h"
#include "compiler/schedule/schedule.h"
#include "compiler/te/tensor.h"

namespace kiln::vta {

struct Conv2DWorkload {
  std::string name = "conv2d";
  int batch = 1;
  int height = 1, width = 1;
  int in_channels = 0, out_channels = 0;
  int kernel_h = 1, kernel_w = 1;
  int pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1;

  int out_height() const { return (height + 2 * pad_h - kernel_h) / stride_h + 1; }
  int out_width() const { return (width + 2 * pad_w - kernel_w) / stride_w + 1; }
  int64_t macs() const;
  std::string to_string() const;
};

// ResNet-18's convolutions C2..C12 (the TVM paper's table), batch `batch`.
std::vector<Conv2DWorkload> resnet18_conv_workloads(int batch = 1);

// dense(x[batch, in], w[out, in]) as the convolution it is.
Conv2DWorkload dense_workload(int batch, int in_features, int out_features, std::string name = "dense");

// Requantization fused on the ALU.
struct Requant {
  bool bias = true;
  int shift = 8;  // arithmetic shift right; 0 for none
  bool relu = true;
};

// Schedule knobs. Tiles count output rows and columns, batch / channel blocks.
struct Conv2DKnobs {
  int tile_b = 1;   // batch blocks per tile
  int tile_h = 1;   // output rows per tile
  int tile_w = 1;   // output columns per tile
  int tile_oc = 1;  // output-channel blocks per tile
  int tile_ic = 1;  // input-channel blocks loaded per step of the reduction
  int h_threads = 1;   // virtual threads over row tiles (latency hiding)
  int oc_threads = 1;  // virtual threads over output-channel tiles
  bool double_buffer = false;  // INP and WGT tiles in two halves, alternating per reduction step
  std::string to_string() const;
  bool operator==(const Conv2DKnobs&) const = default;
};

// The knobs in words, as the tuner's records name them: tile_h, tile_w (divisors of the
// output rows and columns), tile_oc, tile_ic (divisors of the channel blocks), threads
// (1, h2: two virtual threads over rows, oc2: over output channels), double_buffer
// (off, on). The tuner's "conv2d.vta" space is defined from these choices, in this
// order; tile_b stays 1 (the tuned batch is one block).
std::vector<std::pair<std::string, std::vector<std::string>>> conv2d_knob_choices(const Env& env, const Conv2DWorkload& wl);
// CompileError naming the knob that is missing or not one of its choices' form.
Conv2DKnobs conv2d_knobs_from_words(const std::map<std::string, std::string>& words);

struct Conv2DOp {
  Conv2DWorkload workload;
  Requant requant;
  te::Tensor data, kernel, bias, out;
  te::Tensor padded;            // the padded data (undefined without padding)
  te::Tensor conv;              // the int32 accumulation
  std::vector<te::Tensor> alu;  // bias add, shift, clips: one ALU stage each
  std::vector<te::Tensor> args() const;  // data, kernel, [bias], out
};

// The tensor expressions. CompileError when the shape does not suit the
// configuration (channels not a multiple of the blocks, batch of BATCH, ...).
Conv2DOp conv2d_packed(const Env& env, const Conv2DWorkload& wl, const Requant& rq = {});

// Scratchpad elements a tiling needs (all virtual threads together).
struct BufferUse {
  int64_t inp = 0, wgt = 0, acc = 0;
};
BufferUse conv2d_buffer_use(const Env& env, const Conv2DWorkload& wl, const Requant& rq, const Conv2DKnobs& k);

// CompileError naming the knob when the tiling does not divide the shape or does not
// fit the scratchpads.
void check_conv2d_knobs(const Env& env, const Conv2DWorkload& wl, const Requant& rq, const Conv2DKnobs& k);

// Every legal knob setting (tiles that divide the shape and fit the buffers).
std::vector<Conv2DKnobs> conv2d_knob_space(const Env& env, const Conv2DWorkload& wl, const Requant& rq);

// A model of the cycles a tiling takes with latency hiding (DRAM bytes at the given
// bandwidth against GEMM micro-ops, overlapped per reduction step), used to pick the
// default and reported by the benchmark.
struct Conv2DEstimate {
  int64_t gemm_uops = 0;   // ideal compute cycles
  int64_t dram_bytes = 0;  // loaded and stored
  double cycles = 0;
};
Conv2DEstimate estimate_conv2d(const Env& env, const Conv2DWorkload& wl, const Requant& rq, const Conv2DKnobs& k,
                               double dram_bytes_per_cycle = 8.0);

// The knobs with the smallest estimate; `latency_hiding` false keeps one thread.
Conv2DKnobs default_conv2d_knobs(const Env& env, const Conv2DWorkload& wl, const Requant& rq = {},
                                 bool latency_hiding = true);

schedule::Schedule schedule_conv2d(const Env& env, const Conv2DOp& op, const Conv2DKnobs& k);

}  // namespace kiln::vta

namespace kiln::vta {

// The elementwise add of two int8 tensors (residual connections):
//   out = clip((a + b) >> shift, relu ? 0 : -128, 127),   a, b, out [N/b, C/bo, H, W, b, bo]
// The ISA loads ACC only from accumulator-width data, so each int8 operand reaches the
// accumulators through the GEMM core times an identity block (`identity`, an argument
// of BLOCK_OUT x BLOCK_IN int8 the caller fills with identity_block()); the add, the
// shift and the clip run on the ALU. Needs BLOCK_IN == BLOCK_OUT.
struct AddWorkload {
  std::string name = "add";
  int batch = 1, channels = 0, height = 1, width = 1;
  std::string to_string() const;
};

struct AddKnobs {
  int tile_h = 1, tile_w = 1, tile_c = 1;  // rows, columns, channel blocks per tile
  int h_threads = 1;
  std::string to_string() const;
};

struct AddOp {
  AddWorkload workload;
  Requant requant;  // bias is not used
  te::Tensor a, b, identity, out;
  te::Tensor a_acc, b_acc;
  std::vector<te::Tensor> alu;
  std::vector<te::Tensor> args() const { return {a, b, identity, out}; }
};

// Operands at different scales (the graph's residual adds, graph_target.h): each is
// shifted before the sum (a negative amount shifts left) and `round` added after it:
//   out = clip(((a >> shift_a) + (b >> shift_b) + round) >> shift, ...).
struct AddScales {
  int shift_a = 0, shift_b = 0;
  int round = 0;  // an ALU immediate: int16
};

AddOp add_packed(const Env& env, const AddWorkload& wl, const Requant& rq = {false, 0, false}, const AddScales& sc = {});
AddKnobs default_add_knobs(const Env& env, const AddWorkload& wl);
schedule::Schedule schedule_add(const Env& env, const AddOp& op, const AddKnobs& k);
// The identity block, row-major [BLOCK_OUT][BLOCK_IN].
std::vector<int8_t> identity_block(const Env& env);

}  // namespace kiln::vta
