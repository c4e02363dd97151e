#pragma once
// From graph nodes to loop IR: a group of nodes (one fused kernel) becomes one tensor
// expression program with a default CPU schedule, lowered to one function whose
// arguments are the group's inputs (graph nodes outside the group) followed by its
// outputs. Constants of one element are embedded in the code as immediates.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"
#include "compiler/schedule/lower.h"
#include "compiler/target/backend.h"

namespace kiln::graph {

struct LoweredGroup {
  schedule::LoweredFunc func;
  std::vector<NodeId> nodes;    // the graph nodes the group computes
  std::vector<NodeId> inputs;   // graph nodes read by the group, in argument order
  std::vector<NodeId> outputs;  // graph nodes the group writes (after the inputs)
  bool on_accelerator = false;  // lowered by the target's strategy for its backend
};

// A schedule for one anchor stage that someone outside compiler/ provides (the
// tuner's records; compiler/ knows no tuner). Anchors are the reductions of
// conv2d_nchwc (not depthwise), dense, matmul_packed and 2-d matmul nodes, and for a GPU
// (MachineTraits::is_gpu) those of conv2d nodes, whose layout it keeps. The hook schedules
// `stage` (a root stage of `schedule`; its consumers are scheduled by default) and
// returns true, or returns false to keep the default schedule.
struct AnchorStage {
  const Graph& graph;
  NodeId node;                   // the operator node
  schedule::Schedule& schedule;  // the group's schedule
  te::Tensor stage;              // the reduction to schedule
  // Where defined: the group's output, elementwise on `stage` and of its shape (a fused
  // bias, activation or residual add), into whose tiles a matmul_packed's or an NCHWc
  // convolution's tiles can be computed; a hook that returns true has scheduled it too.
  te::Tensor epilogue = {};
  // The machine lower_group schedules for (what the stages a hook takes with its anchor
  // are scheduled for: a Winograd convolution's transforms).
  target::MachineTraits machine = {};
};
using ScheduleHook = std::function<bool(const AnchorStage&)>;

// The register-tiled GEMM of a matmul_packed stage (AlterLayout's constant matrix
// products, weight [N/b, K, b]): a `rows` x b tile of the output accumulates in
// registers while k runs around it (rows unrolled, the b columns as vectors, k unrolled
// by `k_unroll`). Panels of columns run outermost, so a panel of the weight stays in
// cache while every row tile uses it, in parallel (with the row tiles fused in when
// `parallel_rows`). `out`: the stage that writes memory, `mm` itself or its epilogue
// (AnchorStage::epilogue), which then reads the tile from registers.
struct GemmTile {
  int64_t rows = 4;
  int64_t k_unroll = 4;
  bool parallel_rows = false;
  // Row tiles per cache block, the blocks outermost, so that a block's rows stay in L2
  // while every panel passes them (0, or not dividing the row tiles: panels outermost).
  int64_t row_block = 0;
  bool operator==(const GemmTile&) const = default;
};
void schedule_matmul_packed(schedule::Schedule& s, const te::Tensor& mm, const te::Tensor& out, const GemmTile& tile);
// Vectorizes `iv`, a register tile's `n` columns, in vectors of a power-of-two lane
// count (n = 48: three vectors of 16, unrolled); every matrix product's schedule, the
// tuner's templates too, vectorizes its columns so.
void vectorize_columns(schedule::Stage& st, const ir::IterVar& iv, int64_t n);
// The default without tuning: half the vector registers hold accumulators (4 x 64 with
// AVX-512's 32), rows and k (up to 8) as the largest divisors that fit, rows in
// parallel too when there are fewer than 8 panels; no row blocks (measured here on
// 1024 x 1024 x 1024 with blocks of 256 rows: no gain above the machine's noise, so
// left to the tuner).
GemmTile default_gemm_tile(const te::Tensor& mm, const target::MachineTraits& machine);

// The register tile of a matmul whose operands are both computed (attention's Q.K^T and
// scores.V, a Winograd convolution's products; batch dimensions included): a rows x
// cols tile of each batch's output accumulates in registers while k runs around it,
// unrolled by k_unroll (the rows unrolled, the columns as vectors); batches and row
// tiles in parallel, the batches outermost, or the row tiles with `rows_outer`.
struct MatmulTile {
  int64_t rows = 4, cols = 64, k_unroll = 4;
  bool rows_outer = false;
  // A Winograd convolution's products only (schedule_winograd): computed one row of
  // image tiles at a time, inside the output transform's loop over those rows, with
  // that row's input transform, so the transformed tiles stay in cache; `rows` then the
  // largest divisor of a row's tiles not above it.
  bool by_tile_rows = false;
  bool operator==(const MatmulTile&) const = default;
};
// The default without tuning: cols AlterLayout's panel width (register_tile_columns)
// where that is whole vectors, rows what half the registers hold (up to 8), k by 4.
// For a Winograd convolution's products: by rows of image tiles where the transformed
// weight fits in half of L2, else the row tiles outermost where it fits in L2. Nullopt
// where the columns are not whole vectors.
std::optional<MatmulTile> default_matmul_tile(const te::Tensor& mm, const target::MachineTraits& machine);
// Schedules `mm` with the tile into `out` (`mm` itself or its epilogue). False (nothing
// scheduled) where the tile does not divide the product or it has not one reduction.
bool schedule_matmul(schedule::Schedule& s, const te::Tensor& mm, const te::Tensor& out, const MatmulTile& tile);
// A Winograd convolution's stages (conv2d_winograd, ops_winograd.cc), `mm` its alpha^2
// products: those with the tile, its input transform and its output transform (or the
// elementwise epilogue that computes it), each whole in turn or, with
// `tile.by_tile_rows`, a row of image tiles at a time. False (nothing scheduled) where
// the tile does not divide the products.
bool schedule_winograd(schedule::Schedule& s, const te::Tensor& mm, const MatmulTile& tile, const target::MachineTraits& machine);

// The blocked float convolution of AlterLayout (conv2d_nchwc, not depthwise: the stage
// [N, O/b, OH, OW, b] with reductions rc, ry, rx on NCHW data, rc, ry, rx, rci on NCHWc
// data): an (oh x ow) tile of output pixels times `oc` channel blocks accumulates in
// registers while the reduction runs around it (the channels split by `rc`, the inner
// part unrolled; reduce_order 0: rc.o, ry, rx, rc.i; 1: ry, rx, rc.o, rc.i; 2: rc.o,
// rc.i, ry, rx, where on NCHWc data rc.o is the blocks, then the block's channels
// split); a channel block is one vector, the rest unrolled. Batch and channel-block
// tiles run in parallel (with rows too when `parallel_oh`). `out`: the stage that
// writes memory, the convolution itself or its epilogue (AnchorStage::epilogue, NCHWc
// out), which then reads the tile from registers. `rows_outer`: row tiles outside the
// channel groups, in parallel. Returns the loop over row tiles whose body computes
// every channel block of them (with one tile group or `rows_outer`), undefined
// otherwise: a fused depthwise convolution is computed there.
struct ConvTile {
  int64_t oh = 1, ow = 8, oc = 1, rc = 1;
  int reduce_order = 0;
  bool unroll_kw = false;
  bool parallel_oh = false;
  bool rows_outer = false;  // row tiles outside the channel groups, rows in parallel
  bool operator==(const ConvTile&) const = default;
};
ir::IterVar schedule_conv2d_nchwc(schedule::Schedule& s, const te::Tensor& conv, const te::Tensor& out, const ConvTile& tile);
// A row of output pixels longer than a register tile holds with no divisor from 4 to 8
// (SqueezeNet 1.0's 109, Inception-V3's 149 and 73): tiles of 4 to 8 pixels may leave
// the last one partial (computed in a copy of the loop of its own, guarded).
bool takes_partial_row_tiles(int64_t ow);
ConvTile default_conv_tile(const te::Tensor& blocked, const target::MachineTraits& machine);

// `nodes`: operator nodes of `g` in topological order. Outputs are the nodes used
// outside the group or as graph outputs (or the last node when `outputs` is empty).
LoweredGroup lower_group(const Graph& g, const std::vector<NodeId>& nodes, const std::string& name,
                         std::vector<NodeId> outputs = {}, const ScheduleHook& hook = {},
                         const target::MachineTraits& machine = {});

// Evaluates one operator on constant inputs with the reference interpreter
// (FoldConstant and the frontend's folding of shape arithmetic use it).
ConstData evaluate_op(const Graph& g, NodeId node);

}  // namespace kiln::graph
