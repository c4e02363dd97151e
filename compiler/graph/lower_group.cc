#include "compiler/graph/lower_group.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "compiler/graph/gpu_schedule.h"
#include "compiler/graph/op.h"
#include "compiler/graph/passes/passes.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/analyzer.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/op.h"
#include "compiler/support/error.h"
#include "support/integer.h"

namespace kiln::graph {

namespace {

// A vector width (in lanes) that divides the extent, or 0.
int vector_factor(int64_t extent) {
  for (int f : {16, 8, 4})
    if (extent % f == 0) return f;
  return 0;
}

int64_t extent_of(const ir::IterVar& iv) { return *ir::as_const_int(iv->dom.extent); }

// The vector of a row that no width divides (ViT's 197 tokens), the last one partial.
constexpr int kPartialVector = 16;


// The bytes of a tensor of constant shape.
int64_t bytes_of(const te::Tensor& t) {
  int64_t n = t->dtype.storage_bytes();
  for (const ir::Expr& d : t->shape) n *= *ir::as_const_int(d);
  return n;
}

// Whether two shapes are the same constants.
bool same_shape(const std::vector<ir::Expr>& a, const std::vector<ir::Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d) {
    auto x = ir::as_const_int(a[d]), y = ir::as_const_int(b[d]);
    if (!x || !y || *x != *y) return false;
  }
  return true;
}

// The largest divisor of n that is at most `want` (at least 1).
int64_t fit(int64_t n, int64_t want) { return largest_divisor_at_most(n, want); }

// Fuses the leading `axes` (adjacent, outermost) until there is enough parallel work
// or they run out, and makes the result parallel where it has more than one iteration.
void parallel_outer(schedule::Stage& st, const std::vector<ir::IterVar>& axes, const std::vector<int64_t>& extents) {
  if (axes.empty()) return;
  ir::IterVar outer = axes[0];
  int64_t work = extents[0];
  for (size_t k = 1; k < axes.size() && work < 64; ++k) {
    outer = st.fuse(outer, axes[k]);
    work *= extents[k];
  }
  if (work > 1) st.parallel(outer);
}

// For each tensor a stage reads (its body after inlining), the element distance in that
// tensor between the reads of neighbouring points along each of the stage's axes,
// probed in the middle of the iteration space: [load][axis], 0 where not constant there.
std::vector<std::vector<int64_t>> load_strides(const te::Tensor& t) {
  std::vector<const ir::ProducerLoadNode*> loads;
  class Collect : public ir::IRVisitor {
   public:
    explicit Collect(std::vector<const ir::ProducerLoadNode*>* l) : l_(l) {}
    using IRVisitor::visit;

   protected:
    void visit_(const ir::ProducerLoadNode* op) override {
      l_->push_back(op);
      IRVisitor::visit_(op);
    }

   private:
    std::vector<const ir::ProducerLoadNode*>* l_;
  } collect(&loads);
  collect.visit(t->body);
  const auto& axes = t->axis;
  // The flat offset of a load with the axes at `point`, or nullopt.
  auto offset = [&](const ir::ProducerLoadNode* ld, const std::vector<int64_t>& point) -> std::optional<int64_t> {
    ir::VarMap map;
    for (size_t d = 0; d < axes.size(); ++d) map[axes[d]->var.get()] = ir::make_int(point[d], axes[d]->var.dtype());
    const auto& shape = ld->producer->producer_shape();
    int64_t flat = 0;
    for (size_t d = 0; d < ld->indices.size(); ++d) {
      const int64_t* e = ir::as_const_int(shape[d]);
      const int64_t* i = ir::as_const_int(ir::simplify(ir::substitute(ld->indices[d], map)));
      if (!e || !i) return std::nullopt;
      flat = flat * *e + *i;
    }
    return flat;
  };
  std::vector<int64_t> mid;
  for (const auto& a : axes) mid.push_back(extent_of(a) / 2 - (extent_of(a) > 1 && extent_of(a) % 2 == 0 ? 1 : 0));
  std::vector<std::vector<int64_t>> strides;
  for (const ir::ProducerLoadNode* ld : loads) {
    std::vector<int64_t> row(axes.size(), 0);
    std::optional<int64_t> base = offset(ld, mid);
    for (size_t d = 0; base && d < axes.size(); ++d) {
      if (extent_of(axes[d]) < 2) continue;
      std::vector<int64_t> next = mid;
      next[d]++;
      if (std::optional<int64_t> o = offset(ld, next)) row[d] = *o - *base;
    }
    strides.push_back(row);
  }
  return strides;
}

// A transpose's tile: where a stage without reductions reads some tensor across its
// rows along the innermost axis (a gather per vector) and along another axis `c` in
// order (K^T of attention heads: [h, d, s] from [s, h * d]), the innermost axis is
// split by the vector and `c` runs between its halves, so a tile reads whole lines of
// a few rows (few pages) instead of one element of a row per page; the outer axes and
// the innermost's outer half parallel. False where it does not apply.
// BERT-base's K^T (12 x 64 x 128 from a 128 x 2304 product): 0.107 -> 0.017 ms.
bool schedule_transpose(schedule::Schedule& s, const te::Tensor& t) {
  const auto& axes = t->axis;
  size_t n = axes.size();
  if (n < 2 || !t->reduce_axis.empty()) return false;
  int64_t inner_extent = extent_of(axes[n - 1]);
  int vf = vector_factor(inner_extent);
  if (!vf || inner_extent == vf) return false;
  int c = -1;
  for (const auto& row : load_strides(t)) {
    if (std::abs(row[n - 1]) <= 1) continue;
    for (size_t d = 0; d + 1 < n; ++d)
      if (row[d] == 1 && extent_of(axes[d]) > 1) c = static_cast<int>(d);
    if (c >= 0) break;
  }
  if (c < 0) return false;
  schedule::Stage st = s[t];
  auto [io, ii] = st.split(axes[n - 1], vf);
  std::vector<ir::IterVar> outer;
  std::vector<int64_t> extents;
  for (size_t d = 0; d + 1 < n; ++d) {
    if (static_cast<int>(d) == c) continue;
    outer.push_back(axes[d]);
    extents.push_back(extent_of(axes[d]));
  }
  outer.push_back(io);
  extents.push_back(inner_extent / vf);
  std::vector<ir::IterVar> order = outer;
  order.push_back(axes[c]);
  order.push_back(ii);
  st.reorder(order);
  st.vectorize(ii);
  parallel_outer(st, outer, extents);
  return true;
}

// Stage `st` of `t` with its innermost axis split by the vector width and vectorized
// (where `vectorize` and the width divides it, or, with `partial`, where the axis is
// at least two vectors: the last one partial, a scalar loop in a copy of its own after
// loop partitioning; for a split whose outer loop stays serial), inside the reduction
// loops where `t` has any, so a reduction accumulates a vector of outputs. Returns the
// axes outside the vector, outermost first (the split's outer half last), and their
// extents.
std::pair<std::vector<ir::IterVar>, std::vector<int64_t>> vectorize_innermost(schedule::Stage& st, const te::Tensor& t,
                                                                            bool vectorize, bool partial = false) {
  std::vector<ir::IterVar> axes = t->axis;
  std::vector<int64_t> extents;
  for (const auto& a : axes) extents.push_back(extent_of(a));
  ir::IterVar inner = axes.back();
  int64_t inner_extent = extents.back();
  axes.pop_back();
  extents.pop_back();
  int vf = vectorize ? vector_factor(inner_extent) : 0;
  if (vectorize && !vf && partial && inner_extent >= 2 * kPartialVector) vf = kPartialVector;
  ir::IterVar vi;
  if (vf && inner_extent > vf) {
    auto [o, i] = st.split(inner, vf);
    axes.push_back(o);
    extents.push_back(ceil_div(inner_extent, vf));
    vi = i;
  } else if (vf) {
    vi = inner;
  } else {
    axes.push_back(inner);
    extents.push_back(inner_extent);
  }
  if (vi.defined() && !t->reduce_axis.empty()) {
    std::vector<ir::IterVar> order = axes;
    for (const auto& r : t->reduce_axis) order.push_back(r);
    order.push_back(vi);
    st.reorder(order);
  }
  if (vi.defined()) st.vectorize(vi);
  // One element per row reduced over a vector's worth (reduce_last_axis's partial
  // results): the reduction's loop is the vector, its lanes combined as a tree
  // (vectorize_loop's lane reduction) instead of a chain of dependent scalar steps.
  if (!vi.defined() && vectorize && inner_extent == 1 && t->tag == "reduce" && t->reduce_axis.size() == 1) {
    int64_t r = extent_of(t->reduce_axis[0]);
    if (r >= 4 && vector_factor(r) == r) st.vectorize(t->reduce_axis[0]);
  }
  return {axes, extents};
}

// A group of row reductions: every stage left after inlining but the group's one output
// is a reduction, or an elementwise stage kept at the root, that keeps the output's
// leading axes (a layer norm's halves: the row's partial sums and its sum, then the
// normalized row; a softmax's maximum, exponentials and sum). Each row is then computed
// whole, every stage at the output's parallel loop over rows: one launch where there
// were three (six), and the row stays in L1 between them. False (nothing scheduled)
// where the group is not one. BERT-base's layer norms at two threads: 1.21 -> 1.00 ms
// in all. A softmax's rows were slower so while the row's maximum and sum were chains of
// 16 dependent scalar steps (1.08 -> 1.17 ms); with those as lane reductions
// (vectorize_innermost) BERT-base's [12, 128, 128] takes 0.057 ms alone at one thread,
// 0.091 stage by stage.
bool schedule_rows(schedule::Schedule& s, const te::Tensor& output) {
  schedule::Stage os = s[output];
  const te::Tensor out = os->op;  // after inlining rewrote it
  size_t n = out->axis.size();
  if (n < 2 || !out->reduce_axis.empty()) return false;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < n; ++d) rows *= extent_of(out->axis[d]);
  if (rows < 2) return false;
  std::vector<schedule::Stage> inner;
  for (const schedule::Stage& st : s->stages) {
    if (st->is_placeholder() || st->attach_type == schedule::AttachType::Inline || st.get() == os.get()) continue;
    const te::Tensor& t = st->op;
    if (t->axis.size() != n || (t->tag != "reduce" && t->tag != "elemwise")) return false;
    for (size_t d = 0; d + 1 < n; ++d)
      if (extent_of(t->axis[d]) != extent_of(out->axis[d])) return false;
    inner.push_back(st);
  }
  if (inner.empty()) return false;
  // The output: rows fused and parallel, each row's vectors inside.
  const auto& ax = out->axis;
  ir::IterVar par = ax[0];
  for (size_t d = 1; d + 1 < n; ++d) par = os.fuse(par, ax[d]);
  vectorize_innermost(os, out, true, true);
  os.parallel(par);
  // The others at the row, each with its last axis as the vector (inside its reduction).
  for (schedule::Stage st : inner) {
    st.compute_at(os, par);
    vectorize_innermost(st, st->op, true, true);
  }
  return true;
}

// A pooling window of up to 25 taps (a 3x3 or 5x5 pool's) unrolled around its vector:
// each tap's bounds then fold to a test of the pixel's position, and nothing of the
// loops is left per tap. ResNet-18's 3x3 max pool at stride 2 (64 channels, 112x112 ->
// 56x56), one thread here: 0.086-0.092 -> 0.063-0.069 ms.
void unroll_window(schedule::Stage& st, const te::Tensor& t) {
  if (t->tag != "pool" || t->reduce_axis.empty()) return;
  int64_t taps = 1;
  for (const ir::IterVar& r : t->reduce_axis) taps *= extent_of(r);
  if (taps > 25) return;
  for (const ir::IterVar& r : t->reduce_axis) st.unroll(r);
}

// The default CPU schedule of one root stage: the outer data-parallel axes fused and
// parallel; the innermost axis vectorized, inside the reduction loops of a reduction
// (so a convolution accumulates a vector of outputs).
// `vectorize` false: parallel only (a stage whose loads would be gathers). A row no
// vector divides takes a partial last vector where the rows alone are parallel work
// enough (parallel_outer does not fuse the split's outer loop then).
void schedule_root(schedule::Schedule& s, const te::Tensor& t, bool vectorize = true) {
  if (vectorize && schedule_transpose(s, t)) return;
  if (t->axis.empty()) return;
  schedule::Stage st = s[t];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < t->axis.size(); ++d) rows *= extent_of(t->axis[d]);
  auto [axes, extents] = vectorize_innermost(st, t, vectorize, rows >= 64);
  parallel_outer(st, axes, extents);
  if (vectorize) unroll_window(st, t);
}

// A window's sum (an average pool's) computed inside the loops of its one reader, a
// stage of its shape (the average, and what is fused after it) scheduled by
// schedule_root: a vector of sums at a time, the taps' loops around it and the sums in
// registers, at the reader's innermost loop outside its vector. At the root it was a
// pass of its own over memory, a load and a store of the sum per tap, and then the
// reader's. With the window unrolled (unroll_window), at one thread here: Inception-V3's
// 3x3 average pools at 35x35 (192 to 288 channels) 0.18-0.34 -> 0.065-0.105 ms, its ten
// 1.6-1.9 -> 0.53-0.65 ms (1.0-1.4 with the sum inside but the window's loops left).
// False (nothing scheduled) where the reader has no such loop.
bool compute_window_sum(schedule::Schedule& s, const te::Tensor& sum, const schedule::Stage& reader) {
  ir::IterVar at;
  for (const ir::IterVar& iv : reader->leaf_iter_vars) {
    auto a = reader->iter_attrs.find(iv.get());
    if (a != reader->iter_attrs.end() && a->second.kind == ir::ForKind::Vectorized) break;
    at = iv;
  }
  if (!at.defined()) return false;
  schedule::Stage st = s[sum];
  st.compute_at(reader, at);
  st.set_scope("local");
  vectorize_innermost(st, sum, true);
  unroll_window(st, sum);
  return true;
}

// The register tile's accumulator of a product computed into `out`: the product
// itself, kept local, where `out` is its epilogue; else a local copy that `out`
// (the product) is written from.
te::Tensor accumulator(schedule::Schedule& s, const te::Tensor& product, const te::Tensor& out) {
  if (out.get() == product.get()) return s.cache_write(product, "local");
  s[product].set_scope("local");
  return product;
}

// The blocked convolution of AlterLayout ([N, O/b, OH, OW, b] with reductions rc, ry,
// rx; for int8, AlterLayoutInt8's words with one dot_u8s8x4 per lane): a register tile of up to 8 output pixels times one channel block accumulates
// in a local buffer (kept in registers) while the reduction runs around it; the block
// is the vector, the pixels are unrolled; rows and channel blocks run in parallel.
// With `at` defined, the stage is computed inside `at` of `consumer` (a depthwise
// convolution fused before a pointwise one: its rows for the pointwise's row tile),
// serially there.
void schedule_conv_nchwc(schedule::Schedule& s, const te::Tensor& conv, const te::Tensor& out_t,
                         const te::Tensor& consumer = te::Tensor(), const ir::IterVar& at = ir::IterVar()) {
  int64_t ow = extent_of(conv->axis[3]);
  int xb = static_cast<int>(fit(ow, 8));
  te::Tensor local = accumulator(s, conv, out_t);
  schedule::Stage out = s[out_t];
  const auto& ax = out->op->axis;
  auto [xo, xi] = out.split(ax[3], xb);
  out.reorder({ax[0], ax[1], ax[2], xo, xi, ax[4]});
  out.vectorize(ax[4]);
  if (at.defined()) {
    out.compute_at(s[consumer], at);
  } else {
    ir::IterVar par = out.fuse(out.fuse(ax[0], ax[1]), ax[2]);
    out.parallel(par);
  }
  schedule::Stage ls = s[local];
  ls.compute_at(out, xo);
  const auto& la = local->axis;
  std::vector<ir::IterVar> order = {la[0], la[1], la[2]};
  for (const auto& r : local->reduce_axis) order.push_back(r);
  order.push_back(la[3]);
  order.push_back(la[4]);
  ls.reorder(order);
  ls.unroll(la[3]);
  ls.vectorize(la[4]);
}

// Whether a stage is a blocked float convolution that takes a register tile: a
// conv2d_nchwc over channels too (3 reductions on NCHW data, 4 on NCHWc), not depthwise.
bool is_tiled_conv(const te::Tensor& t) { return t->tag == "conv2d_nchwc" && t->reduce_axis.size() >= 3; }


// A HostBuffer with the te shape of a graph type (rank 0 becomes [1]), same bytes:
// zeros, or unwritten for a caller that copies every byte in.
interp::HostBuffer te_buffer(const TensorType& t, bool zeroed = true) {
  std::vector<int64_t> shape = t.shape.empty() ? std::vector<int64_t>{1} : t.shape;
  if (!zeroed) return interp::HostBuffer(t.dtype, shape, interp::HostBuffer::Uninitialized{});
  return interp::HostBuffer(t.dtype, shape);
}

// Weights from memory. In a model, a layer's weight is not in cache when the layer
// starts (the other layers' weights pushed it out), and the register-tiled kernels read
// it a block at a time (a GEMM's panel, a convolution's output channel blocks): the
// first tile of a block would read it as fast as the FMAs go, faster than one core's
// share of memory bandwidth, and the block's other tiles from L2. So each step of the
// reduction also fetches `per_step` lines of the block that comes next, the lines spread
// over the current block's first tiles; past the block's end, its last line again (a
// cache hit). Measured at one thread: a 768 x 768 product with its bias in a chain of
// 40 (94 MB of weights) 0.78 -> 0.69 ms, what it takes alone with the weight in cache;
// BERT-base 4-8% faster in alternating runs. The prefetch asks for every cache level
// (T0): for L2 only (T1), MobileNetV2 gained less, and so did a hand-written C kernel
// of the GEMM's tile.

constexpr int64_t kLineBytes = 64;  // x86-64's and AArch64's cache line

// Elements of w in one cache line.
int64_t line_elements(const te::Tensor& w) { return std::max<int64_t>(1, kLineBytes / std::max(1, w->dtype.bits() / 8)); }

// Indices that address w's element at row-major offset `flat`: all of it in the
// innermost index, whose stride is 1, the others 0. Only for a prefetch's address (no
// element is read): split into one index per dimension, the address took 4 divisions and
// 3 remainders by constants per line, which the simplifier cannot fold back, on the
// ports the FMAs use (ResNet-18's 512-channel 3x3 convolutions, 3 lines per 126 FMAs).
std::vector<ir::Expr> flat_address(const te::Tensor& w, const ir::Expr& flat) {
  std::vector<ir::Expr> idx(w->shape.size(), ir::make_int(0, flat.dtype()));
  idx.back() = flat;
  return idx;
}

// At every iteration of `at`, the `step`-th of `steps` in the current block, fetches
// `per_step` lines of the region [start, start + region) of w (elements), the next
// block's. False (and nothing fetched) where that would take more than 4 per step.
bool prefetch_next_block(schedule::Stage& st, const te::Tensor& w, const ir::IterVar& at, const ir::Expr& start, int64_t region,
                         const ir::Expr& step, int64_t steps) {
  int64_t per_line = line_elements(w);
  int64_t lines = (region + per_line - 1) / per_line;
  int64_t per_step = (lines + steps - 1) / std::max<int64_t>(steps, 1);
  if (steps < 1 || per_step > 4) return false;
  auto c = [&](int64_t v) { return ir::make_int(v, step.dtype()); };
  for (int64_t i = 0; i < per_step; ++i) {
    ir::Expr line = ir::min(step * c(per_step) + c(i), c(lines - 1));
    st.pragma(at, "prefetch", w(flat_address(w, start + line * c(per_line))));
  }
  return true;
}

}  // namespace

GemmTile default_gemm_tile(const te::Tensor& mm, const target::MachineTraits& machine) {
  int64_t m = extent_of(mm->axis[0]), n = extent_of(mm->axis[1]), k = extent_of(mm->reduce_axis[0]);
  int64_t nr = *ir::as_const_int(mm->input_tensors().at(1)->shape[2]);
  GemmTile t;
  // Rows with no divisor near the tile's (ViT's 197 tokens, where a divisor left a row a
  // tile and the weight read once per row): whole tiles, the last one partial.
  const int64_t rows = register_tile_rows(nr, machine);
  t.rows = rows_take_partial_tiles(m, rows) ? rows : fit(m, rows);
  // k unrolled as the core runs it fastest (MachineTraits::gemm_k_unroll). By 8 on
  // Intel's cores, so more of the weight's loads are in flight: one row (a matrix-vector
  // product, a classifier): `kiln tune` picked it for MobileNetV2's 1280 x 1000 and
  // ResNet-18's 512 x 1000 layers, 1.47x alone with the weight in cache; rows: what
  // `kiln tune` picked for three of BERT-base's four products, 2-5% faster each than
  // with k by 4, the model 2.4% at one thread and 3% at two; MatMul 1024 and 4096
  // unchanged within the noise. By 4 on AMD's Zen 5, where 8 was 10-15% slower.
  t.k_unroll = fit(k, machine.gemm_k_unroll);
  t.parallel_rows = n / nr < 8 && m / t.rows > 1;
  return t;
}

bool takes_partial_row_tiles(int64_t ow) { return ow > 24 && fit(ow, 8) < 4; }

ConvTile default_conv_tile(const te::Tensor& t, const target::MachineTraits& machine) {
  // [N, O/b, OH, OW, b]; reductions rc, ry, rx (and rci).
  int64_t blocks = extent_of(t->axis[1]), oh = extent_of(t->axis[2]), ow = extent_of(t->axis[3]);
  int64_t lanes = machine.lanes(t->dtype.bits()), b = extent_of(t->axis[4]);
  int64_t per_block = (b + lanes - 1) / lanes;  // vectors per channel block
  int64_t budget = std::max<int64_t>(1, machine.vector_registers * 3 / 4 / per_block);  // accumulators, in blocks
  ConvTile c;
  // Three or two channel blocks per tile where they divide the blocks and the registers
  // allow (as many weight loads feed every broadcast of the input), up to 8 pixels of a
  // row, rows only with registers left. Three where they divide: MobileNetV2's 56x56
  // expansions to 144 channels (9 blocks, one block a tile before) 0.217 -> 0.186 ms at
  // one thread, 0.132 -> 0.098 at two; its expansions to 576 and 960 (3 blocks rather
  // than 2) 1-6% faster at one thread, unchanged at two.
  c.oc = budget >= 24 && blocks % 3 == 0 ? 3 : fit(blocks, budget >= 16 ? 2 : 1);
  // Pixels a tile: at most 8, and as many as leave registers for the step's operands
  // beside the accumulators, the tile's weight vectors and a broadcast of the input a
  // pixel, unless that would leave fewer than 12 accumulators (two FMA pipes' latency)
  // in flight. 3 blocks by 8 pixels asked for 35 of AVX-512's 32 registers, and LLVM's
  // code for a 1x1 convolution so spilled 4 vectors to the stack (none by 7). By 7,
  // alone at one thread on the Zen 5 guest: a 3x3 convolution of 48 channels at 56x56
  // 0.85 -> 0.62 ms, MobileNetV2's expansions at 56x56 (24 -> 144) 0.124 -> 0.10 ms
  // and 112x112 (16 -> 96) 0.265 -> 0.195, its projection to 24 channels 0.14 -> 0.125.
  // AVX2's 6 pixels of a 16-channel block stay (MobileNetV2 and ResNet-18 compiled for
  // Haswell ran alike with 4).
  const int64_t vectors = c.oc * per_block;  // accumulators a pixel
  const int64_t pixels = std::max((machine.vector_registers - vectors) / (vectors + 1), ceil_div<int64_t>(12, vectors));
  const int64_t row_tile = std::min<int64_t>({8, budget / c.oc, pixels});
  c.ow = fit(ow, row_tile);
  c.oh = fit(oh, std::max<int64_t>(1, std::min(budget / c.oc, pixels) / c.ow));
  // A width with no divisor up to 8 (a prime: Inception-V3's 17, SqueezeNet's 13) left
  // a pixel a tile, 1 to 3 accumulators, too few to cover the FMAs' latency: then the
  // whole row, with as many channel blocks as the registers hold. Inception-V3's 17x17
  // convolutions at one thread here: 67-68 -> 171-188 GFLOP/s (the model 124 -> 61 ms);
  // SqueezeNet 1.1's 13x13 ones 56-70 -> 176-208 (the model 7.5 -> 3.7 ms).
  if (c.oc * c.ow * c.oh < 8 && ow <= budget) {
    c.oc = fit(blocks, std::min(c.oc, budget / ow));
    c.ow = ow;
    c.oh = fit(oh, std::max<int64_t>(1, budget / c.oc / c.ow));
  } else if (takes_partial_row_tiles(ow) && row_tile >= 4 && c.oc * c.ow * c.oh * 2 <= budget) {
    // A longer row of that kind, the registers half idle: tiles of the full width, the
    // last one partial. SqueezeNet 1.0's first convolution (109 x 109 pixels, a pixel
    // a tile before) 3.76 -> 1.92 ms at one thread here, Inception-V3's 1x1 at 73 x 73
    // 0.93 -> 0.36 ms.
    c.ow = row_tile;
    c.oh = fit(oh, std::max<int64_t>(1, budget / c.oc / c.ow));
  }
  // rc not unrolled: on ResNet-18 here, unrolling it by 4 or 8 measured 10-20% slower.
  c.rc = 1;
  // Rows in parallel too where the channel groups are few, or split unevenly over 2 or
  // 4 threads (9 groups on two threads: one waits a group's time; MobileNetV2's 56x56
  // expansions to 144 channels, as 9 groups of one block, 0.146 -> 0.129 ms at two
  // threads, one unchanged).
  // Not otherwise: ResNet-18's 8-group 3x3 convolutions were 6% slower at one thread
  // with rows inside the groups (and no prefetch of the next group's weight).
  int64_t groups = blocks / c.oc;
  c.parallel_oh = groups < 8 || (groups < 16 && groups % 4 != 0);
  // Row tiles outermost, in parallel, each through every channel group, where the data
  // outweighs the weight (and the weight fits in half of L2, as every row tile reads all
  // of it): split by channel groups, each thread would read all of the data, and the
  // next layer, split by rows, half of its input from the other core's cache. At two
  // threads here: MobileNetV2's 112x112 expansion (16 -> 96) 0.172 -> 0.141 ms, its 56x56
  // and 28x28 ones 7-9%, ResNet-18's first convolution 0.88 -> 0.74 ms and its 1x1
  // downsamples 0.07 -> 0.05 ms; one thread unchanged. Not ResNet-18's 3x3 convolution
  // from 128 to 256 channels at 14x14 (a 1.2 MB weight against 0.4 MB of data): 6%
  // slower at one thread so.
  const std::vector<te::Tensor> ins = t->input_tensors();
  int64_t data_bytes = bytes_of(ins.front()), weight_bytes = bytes_of(ins.back());
  if (groups > 1 && oh / c.oh >= 8 && weight_bytes <= data_bytes && weight_bytes <= machine.l2_bytes / 2) {
    c.rows_outer = true;
    c.parallel_oh = false;
  }
  // On NCHWc data, a block's channels outside ry and rx: the weight is then read in
  // order ([O/b, C, KH, KW, b]); inside them it jumps by KH x KW x b per channel
  // (ResNet-18's 3x3 convolutions here: 1.9 ms against 2.45). The kernel's width
  // unrolled: what `kiln tune` chose for 10 of ResNet-18's 11 such convolutions
  // (layer4's 3x3 here: 1.55 ms against 1.56-2.1).
  if (t->reduce_axis.size() == 4) {
    c.reduce_order = 2;
    c.unroll_kw = true;
  } else {
    // On NCHW data (a first layer's few channels): the kernel's rows and columns
    // outside the channels, what `kiln tune` chose for the first convolutions of
    // MobileNetV2 and ResNet-18 (MobileNetV2's alone at two threads: 2.07x; inside the
    // model about 10% at two threads, ResNet-18's unchanged).
    c.reduce_order = 1;
  }
  return c;
}

ir::IterVar schedule_conv2d_nchwc(schedule::Schedule& s, const te::Tensor& conv, const te::Tensor& out_t, const ConvTile& c) {
  te::Tensor w = conv->input_tensors().back();  // [O/b, C, KH, KW, b]; before cache_write makes conv a copy
  te::Tensor local = accumulator(s, conv, out_t);
  schedule::Stage out = s[out_t];
  const auto& ax = out->op->axis;
  auto [yo, yi] = out.split(ax[2], static_cast<int>(c.oh));
  auto [xo, xi] = out.split(ax[3], static_cast<int>(c.ow));
  auto [oco, oci] = out.split(ax[1], static_cast<int>(c.oc));
  if (c.rows_outer) out.reorder({ax[0], yo, oco, xo, oci, yi, xi, ax[4]});
  else out.reorder({ax[0], oco, yo, xo, oci, yi, xi, ax[4]});
  out.vectorize(ax[4]);
  ir::IterVar par = c.rows_outer ? out.fuse(ax[0], yo) : out.fuse(ax[0], oco);
  if (c.parallel_oh && !c.rows_outer) par = out.fuse(par, yo);
  out.parallel(par);
  schedule::Stage ls = s[local];
  ls.compute_at(out, xo);
  const auto& la = local->axis;
  const auto& ra = local->reduce_axis;  // rc, ry, rx on NCHW data; rc, ry, rx, rci on NCHWc
  // The channel reduction's parts: outer (rc.o: rc split by `rc` on NCHW data; the
  // blocks rc, then rci split, on NCHWc) and inner (rc.i, unrolled).
  std::vector<ir::IterVar> outer;
  ir::IterVar inner;
  if (ra.size() == 4) {
    auto [o, i] = ls.split(ra[3], static_cast<int>(c.rc));
    outer = {ra[0], o};
    inner = i;
  } else {
    auto [o, i] = ls.split(ra[0], static_cast<int>(c.rc));
    outer = {o};
    inner = i;
  }
  // 0: rc.o, ry, rx, rc.i; 1: ry, rx, rc.o, rc.i; 2: rc.o, rc.i, ry, rx (on NCHWc the
  // blocks stay outside ry and rx in 0 and 2, their channels inside).
  std::vector<ir::IterVar> order = {la[0]};
  auto add = [&](std::initializer_list<ir::IterVar> v) { order.insert(order.end(), v); };
  bool blocked = ra.size() == 4;
  switch (std::clamp(c.reduce_order, 0, 2)) {
    case 0:
      if (blocked) add({outer[0], ra[1], ra[2], outer[1], inner});
      else add({outer[0], ra[1], ra[2], inner});
      break;
    case 1:
      order.push_back(ra[1]);
      order.push_back(ra[2]);
      order.insert(order.end(), outer.begin(), outer.end());
      order.push_back(inner);
      break;
    default:
      order.insert(order.end(), outer.begin(), outer.end());
      add({inner, ra[1], ra[2]});
  }
  for (int d = 1; d < 5; ++d) order.push_back(la[d]);
  ls.reorder(order);
  if (c.rc > 1) ls.unroll(inner);
  if (c.unroll_kw) ls.unroll(ra[2]);
  ls.unroll(la[1]);
  ls.unroll(la[2]);
  ls.unroll(la[3]);
  ls.vectorize(la[4]);
  // Groups of c.oc channel blocks outermost, each group's weight read by its tiles in
  // turn (order 2: rc, rci.o, then the window): fetch the next group's weight at each
  // rci.o. MobileNetV2's 7x7 expansions (160 -> 960) 0.094 -> 0.071 ms at one thread,
  // ResNet-18's layer4 3x3 convolutions 1.33 -> 1.12 ms. Not where rows run in parallel
  // with the groups (few groups, long reductions: MobileNetV2's 14x14 projections were
  // 35% slower with it, at one thread and two).
  int64_t rcio = blocked ? extent_of(ra[3]) / c.rc : 0, groups = extent_of(ax[1]) / c.oc;
  bool floats = w->dtype.is_float() && w->shape.size() == 5;
  if (blocked && floats && !c.parallel_oh && !c.rows_outer && groups > 1 && std::clamp(c.reduce_order, 0, 2) == 2 && rcio > 1) {
    int64_t yo_n = (extent_of(ax[2]) + c.oh - 1) / c.oh, xo_n = (extent_of(ax[3]) + c.ow - 1) / c.ow;
    int64_t rc_n = extent_of(ra[0]), per_block = 1;
    for (size_t d = 1; d < 5; ++d) per_block *= *ir::as_const_int(w->shape[d]);
    auto k = [&](int64_t v) { return ir::make_int(v, par->var.dtype()); };
    ir::Expr tile = yo->var * k(xo_n) + xo->var;  // par is (n, group)
    ir::Expr step = (tile * k(rc_n) + ra[0]->var) * k(rcio) + outer[1]->var;
    ir::Expr next = ir::min(par->var % k(groups) + k(1), k(groups - 1));
    prefetch_next_block(ls, w, outer[1], next * k(c.oc * per_block), c.oc * per_block, step, yo_n * xo_n * rc_n * rcio);
  }
  if (c.rows_outer) return par;
  if (groups != 1) return ir::IterVar();
  return c.parallel_oh ? par : yo;
}

std::optional<MatmulTile> default_matmul_tile(const te::Tensor& mm, const target::MachineTraits& machine) {
  size_t r = mm->axis.size();
  if (r < 2 || mm->reduce_axis.size() != 1) return std::nullopt;
  int64_t m = extent_of(mm->axis[r - 2]), n = extent_of(mm->axis[r - 1]), k = extent_of(mm->reduce_axis[0]);
  int64_t lanes = machine.lanes(mm->dtype.bits());
  MatmulTile t;
  // Columns: AlterLayout's panel width for n, when it is whole vectors.
  t.cols = register_tile_columns(n, machine);
  if (t.cols == 0 || t.cols % lanes) return std::nullopt;
  t.rows = fit(m, std::clamp<int64_t>(machine.vector_registers / 2 / (t.cols / lanes), 1, 8));
  t.k_unroll = fit(k, 4);
  // A Winograd convolution's products whose transformed weight fits in half of L2
  // (the 56x56 convolutions of ResNet-18: 576 KiB) are computed a row of image tiles
  // at a time with the transforms of that row (schedule_winograd), so the transformed
  // tiles stay in L2 beside the weight: 0.75 -> 0.59 ms each at one thread here. A
  // larger weight would be read again for every row (ResNet-18's 28x28 convolutions,
  // 2.3 MiB: 0.69 -> 0.79 ms so); where it fits in L2 the tiles go in the order of the
  // input and output transforms, so that each thread works on the tiles those give it
  // (two threads on the AMD guest: 0.31-0.34 -> 0.28-0.31 ms each); a larger one is
  // read once per alpha^2 slice instead, for all the tiles.
  if (mm->input_tensors().at(0)->tag == "winograd_input") {
    int64_t weight = bytes_of(mm->input_tensors().at(1));
    t.by_tile_rows = weight <= machine.l2_bytes / 2;
    t.rows_outer = !t.by_tile_rows && weight <= machine.l2_bytes;
    // Rows: up to what all the registers hold (schedule_winograd takes the largest
    // divisor of a row's tiles not above it: 7 of 14 for ResNet-18's 56x56).
    if (t.by_tile_rows) t.rows = std::clamp<int64_t>(machine.vector_registers / (t.cols / lanes), 1, 8);
  }
  return t;
}

bool schedule_matmul(schedule::Schedule& s, const te::Tensor& mm, const te::Tensor& out, const MatmulTile& tile) {
  size_t r = mm->axis.size();
  if (r < 2 || mm->reduce_axis.size() != 1 || tile.rows < 1 || tile.cols < 1 || tile.k_unroll < 1) return false;
  int64_t m = extent_of(mm->axis[r - 2]), n = extent_of(mm->axis[r - 1]), k = extent_of(mm->reduce_axis[0]);
  if (m % tile.rows || n % tile.cols || k % tile.k_unroll) return false;
  const te::Tensor w = mm->input_tensors().at(1);  // before cache_write makes mm a copy of the accumulator
  const bool winograd = mm->input_tensors().at(0)->tag == "winograd_input";
  te::Tensor acc = accumulator(s, mm, out);
  schedule::Stage os = s[out];
  const auto& ax = os->op->axis;
  std::vector<ir::IterVar> t = os.tile(ax[r - 2], ax[r - 1], static_cast<int>(tile.rows), static_cast<int>(tile.cols));  // io, jo, ii, ji
  std::vector<ir::IterVar> batches(ax.begin(), ax.begin() + static_cast<std::ptrdiff_t>(r - 2));
  std::vector<ir::IterVar> order;
  if (tile.rows_outer) order.push_back(t[0]);
  order.insert(order.end(), batches.begin(), batches.end());
  order.insert(order.end(), t.begin() + (tile.rows_outer ? 1 : 0), t.end());
  os.reorder(order);
  vectorize_columns(os, t[3], tile.cols);
  // Batches and row tiles in parallel.
  ir::IterVar par = order.front();
  for (size_t d = 1; d < order.size() - 3; ++d) par = os.fuse(par, order[d]);
  os.parallel(par);
  schedule::Stage as = s[acc];
  as.compute_at(os, t[1]);
  const auto& la = acc->axis;
  auto [ko, ki] = as.split(acc->reduce_axis[0], static_cast<int>(tile.k_unroll));
  std::vector<ir::IterVar> inner(la.begin(), la.begin() + static_cast<std::ptrdiff_t>(r - 2));
  inner.insert(inner.end(), {ko, ki, la[r - 2], la[r - 1]});
  as.reorder(inner);
  as.unroll(ki);
  as.unroll(la[r - 2]);
  vectorize_columns(as, la[r - 1], tile.cols);
  // A Winograd convolution's products slice by slice: the next slice's weight is
  // fetched while this one's tiles run (ResNet-18's 28x28 convolutions, 2.3 MiB of
  // transformed weight read from L3 per call, 0.69 -> 0.60 ms at one thread; its 14x14
  // ones, 4.2 MiB, 0.99 -> 0.84 ms; at two threads 3-10%). Not where k is one step of
  // the unrolling: a loop of one step is no loop, its variable not in the code.
  if (winograd && !tile.rows_outer && r == 3 && w->is_placeholder() && k / tile.k_unroll > 1) {
    int64_t slices = extent_of(mm->axis[0]), row_tiles = m / tile.rows, panels = n / tile.cols, steps = k / tile.k_unroll;
    auto c = [&](int64_t v) { return ir::make_int(v, ko->var.dtype()); };
    ir::Expr next = ir::min(par->var / c(row_tiles) + c(1), c(slices - 1));
    ir::Expr panel = panels > 1 ? ir::Expr(t[1]->var) : c(0);
    ir::Expr step = (par->var % c(row_tiles) * c(panels) + panel) * c(steps) + ko->var;
    prefetch_next_block(as, w, ko, next * c(k * n), k * n, step, row_tiles * panels * steps);
  }
  return true;
}

namespace {

// A Winograd convolution's input transform ([alpha^2, P, C]): per tile and vector of
// channels, the alpha^2 elements unrolled (each then keeps its own additions, and the
// loads of the tile are shared); tiles in parallel, or, with `at` defined, the tiles
// that `at` of `consumer` reads computed there.
void schedule_winograd_input(schedule::Schedule& s, const te::Tensor& v, const target::MachineTraits& machine,
                             const te::Tensor& consumer = te::Tensor(), const ir::IterVar& at = ir::IterVar()) {
  schedule::Stage st = s[v];
  const auto& ax = v->axis;  // e, p, c
  auto [co, ci] = st.split(ax[2], static_cast<int>(fit(extent_of(ax[2]), machine.lanes(v->dtype.bits()))));
  st.reorder({ax[1], co, ax[0], ci});
  st.unroll(ax[0]);
  st.vectorize(ci);
  if (at.defined()) st.compute_at(s[consumer], at);
  else st.parallel(ax[1]);
}

// The tile m of a Winograd convolution whose products `mm` hold alpha^2 elements:
// alpha - 2.
int winograd_tile(const te::Tensor& mm) {
  int64_t elements = extent_of(mm->axis[0]), alpha = 1;
  while (alpha * alpha < elements) ++alpha;
  return static_cast<int>(alpha - 2);
}

// The stages, not inlined, that read `t` (after inlining: where an inlined stage read
// it, the stage it was inlined into).
std::vector<schedule::Stage> readers_of(const schedule::Schedule& s, const te::Tensor& t) {
  std::vector<schedule::Stage> r;
  for (const schedule::Stage& st : s->stages) {
    if (st->attach_type == schedule::AttachType::Inline || st->op.get() == t.get()) continue;
    const std::vector<te::Tensor> ins = st->op->input_tensors();
    if (std::any_of(ins.begin(), ins.end(), [&](const te::Tensor& in) { return in.get() == t.get(); })) r.push_back(st);
  }
  return r;
}

// The stage that reads a Winograd convolution's products `mm`: its output transform,
// or the epilogue that it is inlined into ([N, O/b, OH, OW, b] both); undefined if none.
te::Tensor winograd_reader(const schedule::Schedule& s, const te::Tensor& mm) {
  std::vector<schedule::Stage> r = readers_of(s, mm);
  return r.empty() ? te::Tensor() : r.front()->op;
}

// Its output transform ([N, O/b, OH, OW, b]), or the elementwise epilogue into which
// it is inlined: each m x m tile unrolled (so each pixel keeps its own additions), the
// channel block as the vector; images, rows of tiles and channel blocks in parallel, in
// that order: a thread takes the tiles of its share of the input transform (whose tiles
// run in parallel) and of the products. Returns the loop over images and rows of tiles
// (with `by_tile_rows`, the parallel one: the channel blocks inside it).
ir::IterVar schedule_winograd_output(schedule::Schedule& s, const te::Tensor& y, int m, bool by_tile_rows) {
  schedule::Stage st = s[y];
  const auto& ax = st->op->axis;
  auto [yo, yi] = st.split(ax[2], m);
  auto [xo, xi] = st.split(ax[3], m);
  st.reorder({ax[0], yo, ax[1], xo, yi, xi, ax[4]});
  st.unroll(yi);
  st.unroll(xi);
  st.vectorize(ax[4]);
  ir::IterVar rows = st.fuse(ax[0], yo);
  st.parallel(by_tile_rows ? rows : st.fuse(rows, ax[1]));
  return rows;
}

// The products of a row of image tiles, computed inside `at` of the output transform
// `y` (schedule_winograd with by_tile_rows): each alpha^2 slice in turn, its
// rows x cols register tiles accumulating while the input channels run around them.
void schedule_winograd_row(schedule::Schedule& s, const te::Tensor& mm, const te::Tensor& y, const ir::IterVar& at,
                           const MatmulTile& tile) {
  te::Tensor acc = s.cache_write(mm, "local");
  schedule::Stage ms = s[mm];
  const auto& ax = ms->op->axis;  // e, p, o
  std::vector<ir::IterVar> t = ms.tile(ax[1], ax[2], static_cast<int>(tile.rows), static_cast<int>(tile.cols));  // po, oo, pi, oi
  ms.reorder({ax[0], t[0], t[1], t[2], t[3]});
  vectorize_columns(ms, t[3], tile.cols);
  ms.compute_at(s[y], at);
  schedule::Stage as = s[acc];
  as.compute_at(ms, t[1]);
  const auto& la = acc->axis;
  auto [ko, ki] = as.split(acc->reduce_axis[0], static_cast<int>(tile.k_unroll));
  as.reorder({la[0], ko, ki, la[1], la[2]});
  as.unroll(ki);
  as.unroll(la[1]);
  vectorize_columns(as, la[2], tile.cols);
}

}  // namespace

// Vectorizes a register tile's columns in vectors of a power-of-two lane count: a panel
// of 48 columns (three AVX-512 vectors, for a product with 96 or 48 columns) as three
// vectors of 16 unrolled. LLVM built a 48-lane vector an element at a time (538
// shuffles in the kernel): ConvNeXt's 384 -> 96 products, 1024 x 384 x 96, took 2.95 ms
// at one thread against 0.43 for its 96 -> 384 ones.
// `n`: the columns (a split's loop has no extent before bounds are inferred).
void vectorize_columns(schedule::Stage& st, const ir::IterVar& iv, int64_t n) {
  const int64_t chunk = n & -n;  // the largest power of two dividing n
  if (chunk == n) {
    st.vectorize(iv);
    return;
  }
  auto [outer, inner] = st.split(iv, static_cast<int>(chunk));
  st.unroll(outer);
  st.vectorize(inner);
}

void schedule_matmul_packed(schedule::Schedule& s, const te::Tensor& mm, const te::Tensor& out, const GemmTile& tile) {
  te::Tensor w = mm->input_tensors().at(1);  // before cache_write makes mm a copy of the accumulator
  int64_t nr = *ir::as_const_int(w->shape[2]);
  te::Tensor acc = accumulator(s, mm, out);
  schedule::Stage os = s[out];
  const auto& ax = os->op->axis;
  std::vector<ir::IterVar> t = os.tile(ax[0], ax[1], static_cast<int>(tile.rows), static_cast<int>(nr));  // io, jo, ii, ji
  int64_t row_tiles = ceil_div(extent_of(mm->axis[0]), tile.rows);  // the last one partial where the tile does not divide
  ir::IterVar at = t[0];
  if (tile.row_block > 0 && tile.row_block < row_tiles && row_tiles % tile.row_block == 0) {
    // Blocks of rows outermost: a block's rows stay in L2 while every panel passes them.
    auto [ib, it] = os.split(t[0], static_cast<int>(tile.row_block));
    os.reorder({ib, t[1], it, t[2], t[3]});
    at = it;
  } else {
    os.reorder({t[1], t[0], t[2], t[3]});
  }
  vectorize_columns(os, t[3], nr);
  if (tile.parallel_rows && at.same_as(t[0]) && extent_of(mm->axis[0]) % tile.rows) {
    // A partial last row tile: the row tiles outermost and parallel, each over the
    // panels, where fused with them (below) its guards would stay in every tile (loop
    // partitioning finds no last tile in a fused loop).
    os.reorder({t[0], t[1]});  // j.inner may be split into vectors by now
    os.parallel(t[0]);
    at = t[1];
  } else if (tile.parallel_rows) {
    at = os.fuse(t[1], at);
    os.parallel(at);
  } else {
    os.parallel(t[1]);
  }
  schedule::Stage as = s[acc];
  as.compute_at(os, at);
  const auto& la = acc->axis;
  auto [ko, ki] = as.split(acc->reduce_axis[0], static_cast<int>(tile.k_unroll));
  as.reorder({ko, ki, la[0], la[1]});
  if (tile.k_unroll > 1) as.unroll(ki);
  as.unroll(la[0]);
  vectorize_columns(as, la[1], nr);
  // Panels outermost, each read by its row tiles in turn: fetch the next panel.
  bool panel_outer = !(tile.row_block > 0 && tile.row_block < row_tiles && row_tiles % tile.row_block == 0);
  const int64_t panels = *ir::as_const_int(w->shape[0]), k = *ir::as_const_int(w->shape[1]);
  auto c = [&](int64_t v) { return ir::make_int(v, ko->var.dtype()); };
  if (panel_outer && !tile.parallel_rows && row_tiles >= 4) {
    int64_t steps = (k + tile.k_unroll - 1) / tile.k_unroll;
    ir::Expr next = ir::min(t[1]->var + c(1), c(panels - 1));
    prefetch_next_block(as, w, ko, next * c(k * nr), k * nr, t[0]->var * c(steps) + ko->var, row_tiles * steps);
  }
  if (row_tiles == 1) {
    // One row tile (a matrix-vector product: a classifier): the weight is read once, a
    // panel after another, and nothing else in the step waits for memory, so each step
    // fetches every line of the step 8 KiB further on (6 steps of a 40-column panel with
    // k unrolled by 8, 12 by 4), into the next panel at a panel's end and never past the
    // weight's. Inside the model at one thread on the Zen 5 guest of docs/performance.md,
    // medians of alternating runs: MobileNetV2's 1280 x 1000 classifier 0.161 -> 0.145
    // ms, ResNet-18's 512 x 1000 0.091 -> 0.080; 4 KiB ahead or every other line gained
    // less.
    constexpr int64_t kAheadBytes = 8 << 10;
    const int64_t per_line = line_elements(w), step = tile.k_unroll * nr, total = panels * k * nr;
    // The panel: the fused loop's variable where panels and the one row tile run fused.
    ir::Expr panel = tile.parallel_rows ? at->var : t[1]->var;
    ir::Expr ahead = panel * c(k * nr) + ko->var * c(step) + c(kAheadBytes / kLineBytes * per_line);
    for (int64_t e = 0; e < step; e += per_line)
      as.pragma(ko, "prefetch", w(flat_address(w, ir::min(ahead + c(e), c(total - 1)))));
  }
}

bool schedule_winograd(schedule::Schedule& s, const te::Tensor& mm, const MatmulTile& tile, const target::MachineTraits& machine) {
  const te::Tensor v = mm->input_tensors().at(0), y = winograd_reader(s, mm);
  if (v->tag != "winograd_input" || !y.defined() || y->shape.size() != 5) return false;
  const int m = winograd_tile(mm);
  if (!tile.by_tile_rows) {
    if (!schedule_matmul(s, mm, mm, tile)) return false;
    schedule_winograd_input(s, v, machine);
    schedule_winograd_output(s, y, m, false);
    return true;
  }
  // A row of image tiles at a time: the register tile's rows divide a row's tiles.
  MatmulTile t = tile;
  t.rows = fit((*ir::as_const_int(y->shape[3]) + m - 1) / m, tile.rows);
  if (tile.rows < 1 || t.cols < 1 || t.k_unroll < 1 || extent_of(mm->axis[2]) % t.cols || extent_of(mm->reduce_axis[0]) % t.k_unroll)
    return false;
  ir::IterVar at = schedule_winograd_output(s, y, m, true);
  schedule_winograd_row(s, mm, y, at, t);
  schedule_winograd_input(s, v, machine, y, at);
  return true;
}

LoweredGroup lower_group(const Graph& g, const std::vector<NodeId>& nodes, const std::string& name, std::vector<NodeId> outputs,
                         const ScheduleHook& hook, const target::MachineTraits& machine) {
  std::set<NodeId> in_group(nodes.begin(), nodes.end());
  if (outputs.empty()) {
    std::vector<int> uses_outside(g.size(), 0);
    for (NodeId id = 0; id < g.size(); ++id)
      if (!in_group.count(id))
        for (NodeId i : g.node(id).inputs) uses_outside[i]++;
    for (NodeId o : g.outputs()) uses_outside[o]++;
    for (NodeId n : nodes)
      if (uses_outside[n]) outputs.push_back(n);
    if (outputs.empty()) outputs.push_back(nodes.back());
  }

  LoweredGroup r;
  r.nodes = nodes;
  std::map<NodeId, te::Tensor> tensors;
  std::vector<te::Tensor> params;
  auto tensor_of = [&](NodeId id) -> te::Tensor {
    auto it = tensors.find(id);
    if (it != tensors.end()) return it->second;
    const Node& n = g.node(id);
    te::Tensor t;
    if (n.is_constant() && n.type.size() == 1) {
      // A scalar constant is an immediate, so the code has no argument for it.
      double v = n.value->dtype().is_float() ? n.value->get(0) : static_cast<double>(n.value->get_int(0));
      ir::Expr e = ir::make_const(n.type.dtype, v);
      t = te::compute(te_shape(n.type), [e](const std::vector<ir::Var>&) { return e; }, n.name, "elemwise");
    } else {
      t = te::placeholder(te_shape(n.type), n.type.dtype, fmt::format("p{}", r.inputs.size()));
      r.inputs.push_back(id);
      params.push_back(t);
    }
    tensors[id] = t;
    return t;
  };
  for (NodeId id : nodes) {
    const Node& n = g.node(id);
    if (n.is_input() || n.is_constant()) throw CompileError("lower_group: node '" + n.name + "' is not an operator");
    std::vector<te::Tensor> in;
    for (NodeId i : n.inputs) in.push_back(tensor_of(i));
    try {
      tensors[id] = op_def(n.op).compute(in, n.attrs, n.type);
    } catch (const CompileError& e) {
      throw CompileError(fmt::format("node '{}' ({}): {}", n.name, n.op, e.what()));
    }
  }

  // Anchor stages a schedule hook may take: the reduction of each conv2d_nchwc, dense
  // and 2-d matmul node, the products of a conv2d_winograd.
  std::map<const te::OperationNode*, NodeId> anchors;
  if (hook) {
    for (NodeId id : nodes) {
      const Node& n = g.node(id);
      const te::Tensor& t = tensors.at(id);
      if ((n.op == "dense" || n.op == "matmul_packed" || (n.op == "matmul" && n.type.ndim() == 2)) && !t->reduce_axis.empty())
        anchors[t.get()] = id;
      if (n.op == "conv2d" && t->tag == "conv2d") anchors[t.get()] = id;  // a GPU's (NCHW, any groups)
      if (n.op == "conv2d_winograd")  // its alpha^2 products
        for (const te::Tensor& in : t->input_tensors())
          if (in->tag == "matmul") anchors[in.get()] = id;
      if (n.op == "conv2d_nchwc" && !n.attrs.get_int("depthwise", 0)) {
        if (t->tag == "conv2d_nchwc") anchors[t.get()] = id;  // NCHWc out (CarryLayout)
        for (const te::Tensor& in : t->input_tensors())
          if (in->tag == "conv2d_nchwc") anchors[in.get()] = id;
      }
    }
  }

  std::vector<te::Tensor> outs;
  for (NodeId o : outputs) outs.push_back(tensors.at(o));
  schedule::Schedule s = schedule::create_schedule(outs);
  std::vector<te::Tensor> args = params;
  for (const auto& t : outs) args.push_back(t);
  if (machine.is_gpu()) {
    GpuAnchorHook tuned;
    if (hook) {
      tuned = [&](const te::Tensor& product, const te::Tensor& epilogue) {
        // The operation the anchor was made as (inlining its padding rewrote it).
        auto a = anchors.find(s.stage_of(product.get())->origin_op.get());
        return a != anchors.end() && hook(AnchorStage{g, a->second, s, product, epilogue, machine});
      };
    }
    schedule_gpu_group(s, outs, machine, tuned);
    r.func = schedule::lower(s, args, name);
    r.outputs = outputs;
    return r;
  }
  // The padded input of a blocked convolution is materialized (its loads stay plain),
  // except NCHWc data's padding for a depthwise one: a copy of the whole input there
  // took more than the filter itself (MobileNetV2's 96 channels at 112 x 112: 0.8 ms
  // of copy and filter, 0.3 ms with the padding's selects in the filter's loads).
  std::set<const te::OperationNode*> keep_root;
  for (const schedule::Stage& st : s->stages)
    if (st->op->tag == "conv2d_nchwc" || st->op->tag == "conv2d_nchwc_int8" || st->op->tag == "dense_int8")
      for (const te::Tensor& in : st->op->input_tensors()) {
        bool depthwise_pad = st->op->tag == "conv2d_nchwc" && st->op->reduce_axis.size() == 2 && in->name == "pad";
        if (!depthwise_pad) keep_root.insert(in.get());
      }
  // A depthwise convolution fused before a pointwise one (fuse_depthwise_pointwise): its
  // activation (bias, clip) is a stage of its own (kept, below), computed with it into a
  // row tile's buffer at the pointwise convolution's loop over row tiles, so the
  // expanded channels never go to memory; the pointwise one reads each element once.
  te::Tensor fused_dw, fused_mid, fused_pw;
  for (const schedule::Stage& st : s->stages) {
    if (st->op->tag != "conv2d_nchwc" || st->op->reduce_axis.size() != 4) continue;
    te::Tensor mid = st->op->input_tensors().at(0);
    if (mid->is_placeholder() || !mid->reduce_axis.empty() || mid->shape.size() != 5) continue;
    // Back from the pointwise's data through elementwise stages to a depthwise product.
    std::vector<te::Tensor> pending{mid};
    te::Tensor dw;
    while (!pending.empty() && !dw.defined()) {
      te::Tensor t = pending.back();
      pending.pop_back();
      for (const te::Tensor& in : t->input_tensors()) {
        if (in->tag == "conv2d_nchwc" && in->reduce_axis.size() == 2 && in->shape.size() == 5) dw = in;
        else if (!in->is_placeholder() && in->reduce_axis.empty()) pending.push_back(in);
      }
    }
    if (!dw.defined()) continue;
    fused_dw = dw;
    fused_mid = mid;
    fused_pw = st->op;
  }
  // Inlining rewrites a consumer's operation: a stage is known by the one it was made for.
  auto made_for = [](const schedule::Stage& st, const te::Tensor& t) {
    return t.defined() && (st->op.get() == t.get() || st->origin_op.get() == t.get());
  };
  // A Winograd convolution's stages are each computed once: the padded data and the
  // tiles' transforms; the output's too, unless the group's one output is an
  // elementwise epilogue of its shape (bias, activation, residual add), which then
  // computes it in its own tiles, so the transform's result never goes to memory
  // (ResNet-18's 56x56 convolutions 0.80 -> 0.75 ms at one thread, the others 1-3%).
  te::Tensor winograd_epilogue;
  if (outs.size() == 1 && outs[0]->reduce_axis.empty() && outs[0]->tag != "winograd_output")
    for (const schedule::Stage& st : s->stages)
      if (st->op->tag == "winograd_output" && same_shape(st->op->shape, outs[0]->shape)) winograd_epilogue = outs[0];
  for (const schedule::Stage& st : s->stages)
    if (st->op->tag == "winograd_input" || st->op->tag == "winograd_output") {
      if (st->op->tag == "winograd_output" && winograd_epilogue.defined()) continue;
      keep_root.insert(st->op.get());
      if (st->op->tag == "winograd_input")
        for (const te::Tensor& in : st->op->input_tensors()) keep_root.insert(in.get());
    }
  // Softmax's exponentials are computed once, as vectors, and then summed and divided;
  // inlined, each would be computed twice, as scalars inside the row's sum.
  for (const schedule::Stage& st : s->stages)
    if (st->op->name == "softmax.exp") keep_root.insert(st->op.get());
  for (schedule::Stage st : std::vector<schedule::Stage>(s->stages)) {
    const te::Tensor& t = st->op;
    if (t->is_placeholder() || keep_root.count(t.get()) || made_for(st, fused_mid)) continue;
    if (!st->is_output && t->reduce_axis.empty()) st.compute_inline();
  }
  if (outs.size() == 1 && !fused_dw.defined() && schedule_rows(s, outs[0])) {
    r.func = schedule::lower(s, args, name);
    r.outputs = outputs;
    return r;
  }
  // A matrix product or a blocked convolution whose only consumer is the group's one
  // output, elementwise and of its shape (a fused bias, activation or residual add),
  // computes its tiles into that output's.
  std::map<const te::OperationNode*, te::Tensor> epilogue_of;
  auto is_product = [](const te::Tensor& t) { return t->tag == "matmul_packed" || t->tag == "conv2d_nchwc" || t->tag == "matmul"; };
  if (outs.size() == 1 && !is_product(outs[0]) && outs[0]->reduce_axis.empty()) {
    std::vector<const te::OperationNode*> products;
    for (const schedule::Stage& st : s->stages)
      if (is_product(st->op) && st->attach_type != schedule::AttachType::Inline && !made_for(st, fused_dw))
        products.push_back(st->op.get());
    if (products.size() == 1 && same_shape(products[0]->shape, outs[0]->shape)) epilogue_of[products[0]] = outs[0];
  }
  std::set<const schedule::StageNode*> scheduled;  // epilogues scheduled with their product
  // Windows' sums read by one stage of their shape with no reduction of its own:
  // computed inside its loops where schedule_root schedules it (compute_window_sum),
  // else at the root (below).
  std::map<const schedule::StageNode*, te::Tensor> window_sum_of;  // reader -> sum
  for (const schedule::Stage& st : s->stages) {
    if (st->op->tag != "pool" || st->op->reduce_axis.empty() || st->attach_type == schedule::AttachType::Inline || st->is_output)
      continue;
    std::vector<schedule::Stage> readers = readers_of(s, st->op);
    if (readers.size() == 1 && readers[0]->op->reduce_axis.empty() && same_shape(readers[0]->op->shape, st->op->shape))
      window_sum_of[readers[0].get()] = st->op;
  }
  std::set<const te::OperationNode*> window_sums;
  for (const auto& [reader, sum] : window_sum_of) window_sums.insert(sum.get());
  if (fused_dw.defined()) scheduled.insert(s[fused_mid].get());
  // A Winograd convolution's stages are scheduled together (schedule_winograd): by the
  // hook where it takes the products, else with the default tile; where that does not
  // fit, each stage on its own below.
  for (schedule::Stage st : std::vector<schedule::Stage>(s->stages)) {
    const te::Tensor mm = st->op;
    if (mm->tag != "matmul" || mm->input_tensors().empty() || mm->input_tensors()[0]->tag != "winograd_input") continue;
    const te::Tensor v = mm->input_tensors()[0], y = winograd_reader(s, mm);
    std::set<const schedule::StageNode*> before;
    for (const schedule::Stage& b : s->stages) before.insert(b.get());
    auto anchor = anchors.find(mm.get());
    bool done = anchor != anchors.end() && hook && hook(AnchorStage{g, anchor->second, s, mm, te::Tensor(), machine});
    if (!done) {
      std::optional<MatmulTile> tile = default_matmul_tile(mm, machine);
      done = tile && schedule_winograd(s, mm, *tile, machine);
    }
    if (!done) continue;
    for (const schedule::Stage& a : s->stages)
      if (!before.count(a.get())) scheduled.insert(a.get());
    for (const te::Tensor& t : {mm, v, y}) scheduled.insert(s[t].get());
  }
  for (schedule::Stage st : std::vector<schedule::Stage>(s->stages)) {
    if (st->is_placeholder() || st->attach_type == schedule::AttachType::Inline || scheduled.count(st.get())) continue;
    if (made_for(st, fused_dw)) continue;  // with the pointwise convolution, below
    if (window_sums.count(st->op.get())) continue;  // with its reader, below
    // By the operation the stage was made for: inlining a producer (the strided slice of
    // a product over a chunk of its reduction, AlterLayout's) rewrites the stage's own.
    auto anchor = anchors.find(st->origin_op.get());
    auto e = epilogue_of.find(st->op.get());
    te::Tensor epilogue = e != epilogue_of.end() ? e->second : te::Tensor();
    // The tuner's matmul and dense templates schedule their own stage only: a plain
    // matmul's epilogue is then scheduled as any other stage.
    te::Tensor hook_epilogue = st->op->tag == "matmul" ? te::Tensor() : epilogue;
    if (anchor != anchors.end() && hook && hook(AnchorStage{g, anchor->second, s, st->op, hook_epilogue, machine})) {
      if (hook_epilogue.defined()) scheduled.insert(s[hook_epilogue].get());
      continue;
    }
    if (st->op->tag == "matmul_packed") {
      te::Tensor out = epilogue.defined() ? epilogue : st->op;
      schedule_matmul_packed(s, st->op, out, default_gemm_tile(st->op, machine));
      scheduled.insert(s[out].get());
      continue;
    }
    if (st->op->tag == "matmul") {
      te::Tensor out = epilogue.defined() ? epilogue : st->op;
      std::optional<MatmulTile> tile = default_matmul_tile(st->op, machine);
      if (tile && schedule_matmul(s, st->op, out, *tile)) {
        scheduled.insert(s[out].get());
        continue;
      }
    }
    if (st->op->tag == "conv2d_nchwc" || st->op->tag == "conv2d_nchwc_int8") {
      te::Tensor out = epilogue.defined() ? epilogue : st->op;
      ir::IterVar rows;
      if (is_tiled_conv(st->op)) {
        // A pointwise convolution with a fused depthwise input and several channel
        // groups takes its row tiles outermost (where there are enough to share), so
        // each thread computes the depthwise rows of its own row tiles once, for all
        // groups: MobileNetV2's 14x14 blocks 10-25% faster at two threads (7x7 ones,
        // 7 row tiles, 7-19% slower so).
        ConvTile tile = default_conv_tile(st->op, machine);
        int64_t row_tiles = extent_of(st->op->axis[2]) / tile.oh, groups = extent_of(st->op->axis[1]) / tile.oc;
        if (made_for(st, fused_pw)) tile.rows_outer = groups > 1 && row_tiles >= 8;
        rows = schedule_conv2d_nchwc(s, st->op, out, tile);
      }
      else schedule_conv_nchwc(s, st->op, out);
      if (made_for(st, fused_pw) && rows.defined()) {
        schedule_conv_nchwc(s, fused_dw, fused_mid, out, rows);
        fused_dw = te::Tensor();
      }
      scheduled.insert(s[out].get());
      continue;
    }
    if (st->op->tag == "winograd_input") {
      schedule_winograd_input(s, st->op, machine);
      continue;
    }
    if (st->op->tag == "winograd_output" || made_for(st, winograd_epilogue)) {
      for (const te::Tensor& in : st->op->input_tensors())
        if (in->tag == "matmul") schedule_winograd_output(s, st->op, winograd_tile(in), false);
      continue;
    }
    // Packing int8 data into words reads 4 channels per word: gathers if vectorized.
    schedule_root(s, st->op, st->op->tag != "pack_int8_data");
    if (auto w = window_sum_of.find(st.get()); w != window_sum_of.end() && compute_window_sum(s, w->second, st))
      window_sums.erase(w->second.get());
  }
  // A window's sum whose reader was scheduled otherwise: at the root.
  for (const schedule::Stage& st : s->stages)
    if (window_sums.count(st->op.get())) schedule_root(s, st->op);
  // Where the pointwise convolution has no loop over row tiles that covers all its
  // channel blocks (several tile groups, or a tuned schedule), the depthwise one is
  // computed whole first, in parallel, as it would be in a kernel of its own.
  if (fused_dw.defined()) schedule_conv_nchwc(s, fused_dw, fused_mid);
  r.func = schedule::lower(s, args, name);
  r.outputs = outputs;
  return r;
}

namespace {

// A transpose or a matrix weight's packing of a constant, as a copy in C++: each is
// a permutation of elements, exact in any type whose elements are whole bytes, and
// the interpreter takes some 20 ns an element (BERT-base's 85 M weights, transposed
// by the importer and packed by AlterLayout: about 3 s of its 13 s compile). Null
// for every other operator.
ConstData move_elements(const Graph& g, NodeId node) {
  const Node& n = g.node(node);
  if ((n.op != "transpose" && n.op != "pack_matmul_weight") || n.inputs.size() != 1) return nullptr;
  const Node& in = g.node(n.inputs[0]);
  const TensorType& ot = n.type;
  if (!in.is_constant() || in.type.dtype != ot.dtype || ot.dtype.bits() != 8 * ot.dtype.storage_bytes()) return nullptr;
  const size_t e = static_cast<size_t>(ot.dtype.storage_bytes());
  auto out = std::make_shared<interp::HostBuffer>(ot.dtype, ot.shape, interp::HostBuffer::Uninitialized{});  // every element written below
  const uint8_t* src = in.value->data();
  uint8_t* dst = out->data();
  if (ot.size() == 0) return out;
  // The input's element offset for each output axis: a stride per axis.
  std::vector<int64_t> in_strides(in.type.ndim(), 1), step(ot.ndim(), 0);
  for (int d = in.type.ndim() - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * in.type.shape[d + 1];
  if (n.op == "transpose") {
    std::vector<int64_t> perm = n.attrs.get_ints("perm");  // a permutation (checked at inference)
    if (static_cast<int>(perm.size()) != ot.ndim()) return nullptr;
    for (int d = 0; d < ot.ndim(); ++d) step[d] = in_strides[static_cast<size_t>(perm[d])];
  } else {
    // [N/b, K, b] from W[N, K] ("nk") or B[K, N] ("kn"): a panel p, row k, column j is
    // column p*b + j of the matrix.
    int64_t b = ot.shape[2];
    bool nk = n.attrs.get_string("layout", "nk") == "nk";
    int64_t col = nk ? in_strides[0] : in_strides[1], row = nk ? in_strides[1] : in_strides[0];
    step = {b * col, row, col};
  }
  // Output elements in order, the input's offset advanced by the strides.
  std::vector<int64_t> idx(ot.ndim(), 0);
  int64_t off = 0;
  for (int64_t i = 0, total = ot.size(); i < total; ++i) {
    std::memcpy(dst + static_cast<size_t>(i) * e, src + static_cast<size_t>(off) * e, e);
    for (int d = ot.ndim() - 1; d >= 0; --d) {
      off += step[d];
      if (++idx[d] < ot.shape[d]) break;
      off -= step[d] * ot.shape[d];
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace

ConstData evaluate_op(const Graph& g, NodeId node) {
  if (ConstData moved = move_elements(g, node)) return moved;
  LoweredGroup lg = lower_group(g, {node}, "fold", {node});
  std::vector<interp::HostBuffer> bufs;
  bufs.reserve(lg.inputs.size() + 1);
  for (NodeId i : lg.inputs) {
    const Node& c = g.node(i);
    if (!c.is_constant()) throw CompileError("evaluate_op: input '" + c.name + "' is not a constant");
    bufs.push_back(te_buffer(c.type, false));
    size_t bytes = static_cast<size_t>(c.type.size() * c.type.dtype.storage_bytes());
    if (bytes) std::memcpy(bufs.back().data(), c.value->data(), bytes);  // no data() for zero elements
  }
  const TensorType& ot = g.type(node);
  bufs.push_back(te_buffer(ot));
  std::vector<interp::HostBuffer*> ptrs;
  for (auto& b : bufs) ptrs.push_back(&b);
  try {
    interp::run(lg.func, ptrs);
  } catch (const interp::InterpError& e) {
    // Folding a malformed model's constants must fail as a compile error, naming the node.
    const Node& n = g.node(node);
    throw CompileError(fmt::format("node '{}' ({}): cannot be evaluated on its constant inputs: {}", n.name, n.op, e.what()));
  }
  auto out = std::make_shared<interp::HostBuffer>(ot.dtype, ot.shape, interp::HostBuffer::Uninitialized{});
  size_t bytes = static_cast<size_t>(ot.size() * ot.dtype.storage_bytes());
  if (bytes) std::memcpy(out->data(), bufs.back().data(), bytes);
  return out;
}

}  // namespace kiln::graph
