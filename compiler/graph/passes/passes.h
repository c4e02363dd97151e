#pragma once
// Every graph pass, one line each. Each pass takes a graph and returns a new one
// (or the partition of one); optimize() (optimize.cc) runs them in order.
#include <vector>

#include "compiler/graph/graph.h"
#include "compiler/target/backend.h"

namespace kiln::graph {

// QDQ (quantize_linear/dequantize_linear around float ops) becomes integer arithmetic:
// int8 conv2d/dense with int32 accumulation, requantized by shifts where the scales are
// powers of two (the accelerator's form), by float scales elsewhere.
Graph quantize_realize(const Graph& g);
bool has_quantization(const Graph& g);
// Float16 and bfloat16 models compute in float32 between casts at their inputs and
// outputs; constants are converted, explicit casts to a half type keep their rounding.
Graph promote_half(const Graph& g);
bool has_half(const Graph& g);
// batch_norm becomes a multiply and an add of per-channel constants; dropout is removed.
Graph simplify_inference(const Graph& g);
// A zero pad of rows and columns before a conv2d or avg_pool2d becomes its padding.
Graph fold_explicit_padding(const Graph& g);
// Operators whose inputs are all constants are evaluated at compile time.
Graph fold_constant(const Graph& g);
// A per-channel multiply after conv2d/dense is folded into the (constant) weights.
Graph fold_scale_axis(const Graph& g);
// A float 3-d convolution with a constant weight becomes one 2-d convolution per kernel
// tap in depth over all its output frames (the frames as the batch), added up.
Graph conv3d_as_conv2d(const Graph& g);
// Float convolutions with more than half a vector of output channels, but not a
// multiple of the vector width, get zero filters up to the next multiple; the zeros go on through
// the operators that keep them, other consumers read the real channels (pad_channels.cc).
Graph pad_channels(const Graph& g, const target::MachineTraits& machine = {});
// CPU convolutions compute blocks of output channels as vectors, weights pre-packed;
// constant matrix products take their weight in panels sized for `machine`.
Graph alter_layout(const Graph& g, const target::MachineTraits& machine = {});
// The blocked convolutions' results stay NCHWc through the activations, adds, pooling
// and convolutions after them; NCHW comes back only where an operator needs it.
Graph carry_layout(const Graph& g);
// 3x3 stride-1 convolutions on blocked data with large enough images become
// conv2d_winograd (F(2x2, 3x3)), their weights transformed at compile time.
Graph winograd_conv(const Graph& g);
// The channel block alter_layout computes a float convolution's output in: 16 or 8
// where they divide its output channels (a group's, when grouped), 4 for a group of a
// multiple of 4; 0: not blocked.
int64_t conv_channel_block(int64_t out_channels, bool grouped);
// The panel width alter_layout packs a constant matrix product of n columns into
// (0: none fits).
int64_t register_tile_columns(int64_t n, const target::MachineTraits& machine);
// The rows of a packed product's register tile for panels of `panel` columns: half the
// vector registers' worth of accumulators, at most 8 rows (default_gemm_tile takes the
// largest divisor of the product's rows up to it, or the tile itself, the last one
// partial, where rows_take_partial_tiles).
int64_t register_tile_rows(int64_t panel, const target::MachineTraits& machine);
// Whether `rows` have no divisor of at least half a register tile of `tile` rows (ViT's
// 197 tokens): then whole tiles and a partial last one, where a divisor would leave a
// row a tile (the weight read once per row).
bool rows_take_partial_tiles(int64_t rows, int64_t tile);
// The reduction chunk it splits an m x k by k x n product, packed in panels of `panel`
// columns, into (k: none): the largest divisor of k, at least 512, whose m x chunk rows
// fit in half the L2 cache and whose chunk x panel block of the weight in a quarter of
// it; where no chunk leaves room for the rows, the largest whose weight block fits,
// else the largest whose rows fit.
int64_t reduction_chunk(int64_t m, int64_t k, int64_t panel, const target::MachineTraits& machine);
// Host int8 conv2d/dense/matmul compute on 4-byte words (VNNI's layout), weights packed
// and folded; after placement, so accelerator nodes keep theirs.
Graph alter_layout_int8(const Graph& g);
// A pointwise binary op after a reshape that keeps the last axis moves before it, so a
// matrix product's bias and residual adds fuse into its epilogue (sink_reshape.cc).
Graph sink_reshape(const Graph& g);
// Nodes that no output depends on are dropped.
Graph dead_code_elimination(const Graph& g);
// Identical nodes (same op, inputs and attributes; constants with the same bytes) become one.
Graph common_subexpression_elimination(const Graph& g);

// FuseOps: a partition of the operator nodes into groups that become one kernel each,
// by TVM's rules (fuse_ops.cc). Groups are in topological order; the nodes of a group too.
struct FusedGroup {
  std::vector<NodeId> nodes;
  NodeId root() const { return nodes.back(); }
};
std::vector<FusedGroup> fuse_ops(const Graph& g);
// On the CPU: a depthwise convolution's group (the convolution, its bias and
// activation) joins the group of the 1x1 convolution that is its one user, so the
// kernel computes the depthwise rows each pointwise row tile needs into a buffer that
// stays in cache (lower_group) instead of writing all its channels to memory and
// reading them back (MobileNetV2's expanded 112 x 112 x 96, 56 x 56 x 144 tensors),
// on the thread that reads them.
std::vector<FusedGroup> fuse_depthwise_pointwise(const Graph& g, std::vector<FusedGroup> groups);
// On the CPU: a strided slice with unit steps whose one user is a matrix product's
// data (matmul_packed, AlterLayout's chunks of a long reduction) joins the product's
// group, so the product reads its rows where they are instead of from a copy.
std::vector<FusedGroup> fuse_slice_product(const Graph& g, std::vector<FusedGroup> groups);

// The standard pipeline: simplify, fold, fold scales, alter layouts, fold again, eliminate.
Graph optimize(const Graph& g, const target::MachineTraits& machine = {});

}  // namespace kiln::graph
