#pragma once
// The GPU's default schedules of a fused group (lower_group() for a target whose
// MachineTraits::is_gpu): the schedules a model gets on a GPU without tuning, as TVM's
// fallback CUDA schedules.
#include <functional>
#include <vector>

#include "compiler/schedule/schedule.h"
#include "compiler/target/backend.h"

namespace kiln::graph {

// One thread per output element of a root stage: its axes fused, split by the
// machine's threads per block, bound to blockIdx.x and threadIdx.x (the reduction, if
// any, runs inside the thread).
void schedule_gpu_root(schedule::Schedule& s, const te::Tensor& t, const target::MachineTraits& machine);

// The tiles of a 2-d matrix product out[i, j] = sum_k a[i, k] * b(k, j) on a GPU: a
// block computes a `block_rows` x `block_cols` tile with `threads_rows` x
// `threads_cols` threads (each a (block_rows / threads_rows) x (block_cols /
// threads_cols) tile in registers, "local"); the block's slices of both operands,
// `k_tile` deep, are copied into shared memory by all its threads together before
// each step of k. `out`: the stage that writes memory, `mm` itself or an elementwise
// epilogue of its shape. False (nothing scheduled) where the tiles do not divide the
// product.
struct GpuMatmulTile {
  int64_t block_rows = 32, block_cols = 32;
  int64_t threads_rows = 8, threads_cols = 8;
  int64_t k_tile = 8;
};
bool schedule_gpu_matmul(schedule::Schedule& s, const te::Tensor& mm, const te::Tensor& out, const GpuMatmulTile& tile);

// The direct convolution of a "conv2d" stage [N, O, OH, OW] (regular, grouped or
// depthwise; reductions rc, ry, rx): each thread accumulates `oc` output channels
// times `ow` neighbouring output pixels in registers ("local"), so an input value
// serves `oc` products and a weight `ow`; the threads' tiles (n, channel tiles, rows,
// pixel tiles) fused and split `threads` per block. `out`: the stage that writes
// memory, `conv` itself or an elementwise epilogue of its shape. Factors that do not
// divide their extent are replaced by the largest divisor below them.
struct GpuConvTile {
  int64_t oc = 4, ow = 4;
  int64_t threads = 128;
};
void schedule_gpu_conv2d(schedule::Schedule& s, const te::Tensor& conv, const te::Tensor& out, const GpuConvTile& tile);

// The whole group: elementwise stages inlined; a reduction whose one consumer is the
// group's one output, elementwise and of its shape, computed by that output's threads
// (a 2-d matrix product in shared-memory tiles where they divide it, a convolution in
// register tiles); every other stage at the root with schedule_gpu_root.
// `tuned` (optional) is asked first for each product (a convolution, a dense or matrix
// product) with its epilogue (undefined where it has none): true when it scheduled both
// (the tuner's records, through lower_group's ScheduleHook).
using GpuAnchorHook = std::function<bool(const te::Tensor& product, const te::Tensor& epilogue)>;
void schedule_gpu_group(schedule::Schedule& s, const std::vector<te::Tensor>& outs, const target::MachineTraits& machine,
                        const GpuAnchorHook& tuned = {});

}  // namespace kiln::graph
