// The built-in CPU templates: matmul/dense as a register-tiled GEMM (bench/gemm's
// schedule with its tile sizes, loop order, unrolling and parallel loop as knobs),
// matmul_packed (the compiler's default GEMM of constant weights, with knobs), conv2d
// NCHWc (lower_group's blocked convolution with its register tile, reduction split and
// order as knobs) and conv2d_winograd (its alpha^2 products' register tile and order).
#include <fmt/format.h>

#include <algorithm>

#include "compiler/graph/passes/passes.h"
#include "compiler/graph/winograd.h"
#include "compiler/ir/node.h"
#include "compiler/schedule/schedule.h"
#include "support/error.h"
#include "support/integer.h"
#include "tuner/template.h"

namespace kiln::tuner {

namespace {

using ir::IterVar;

std::vector<int64_t> divisors_upto(int64_t n, int64_t max, const std::vector<int64_t>& pick = {}) {
  std::vector<int64_t> r;
  for (int64_t f : divisors(n))
    if (f <= max && (pick.empty() || std::find(pick.begin(), pick.end(), f) != pick.end())) r.push_back(f);
  return r;
}

// The configuration of `space` whose tile (`tile_of`, what apply schedules with) is the
// compiler's default on `machine` (`pick`: graph::default_conv_tile, default_gemm_tile),
// or -1.
template <typename Tile>
int64_t default_config_of(const Workload& w, const target::MachineTraits& machine, const ConfigSpace& space,
                          Tile (*pick)(const te::Tensor&, const target::MachineTraits&), Tile (*tile_of)(const Config&)) {
  Tile d{};
  visit_default_anchor(w, machine, [&](const te::Tensor& t, const target::MachineTraits& m) { d = pick(t, m); });
  for (int64_t i = 0; i < space.size(); ++i)
    if (tile_of(space.get(i)) == d) return i;
  return -1;
}

// ------------------------------------------------------------------ matmul, dense

ConfigSpace gemm_space(const Workload& w) {
  ConfigSpace s;
  int64_t m = w.at("M"), n = w.at("N"), k = w.at("K");
  s.define_split("tile_i", m, 2, SplitPolicy::Factors, 16);
  // Columns: whole vectors of 16 lanes when they divide N, else any divisor up to 16.
  std::vector<int64_t> cols;
  for (int64_t f : {16, 32, 64, 128})
    if (n % f == 0) cols.push_back(f);
  if (cols.empty()) cols = divisors_upto(n, 16);
  s.define_split_list("tile_j", n, cols);
  s.define_split_list("tile_k", k, divisors_upto(k, 8, {1, 2, 4, 8}));
  // Row tiles per cache block: the B panel is reused across them while they run.
  s.define_knob("block_i", {"1", "2", "4", "8", "16"});
  // Loop order of (row blocks, rows in a block, column panels): rows outer, column
  // panels outer, or row blocks then panels then rows.
  s.define_reorder("order", {{0, 1, 2}, {2, 0, 1}, {0, 2, 1}});
  s.define_annotate("unroll_i", {"unroll", "none"});
  s.define_knob("parallel", {"outer", "fused"});
  // Copy the (K x tile_j) panel of B that a tile reads into a compact buffer first.
  s.define_knob("pack_b", {"none", "panel"});
  return s;
}

// C[M, N] += A . B over k: an (tile_i x tile_j) tile of C accumulates in a local
// buffer (registers) while k runs around it; rows unrolled, columns vectorized.
void gemm_apply(const graph::AnchorStage& a, const Workload& w, const Config& cfg) {
  schedule::Schedule& s = a.schedule;
  te::Tensor c = a.stage;
  int mr = static_cast<int>(cfg.factor("tile_i")), nr = static_cast<int>(cfg.factor("tile_j"));
  int ku = static_cast<int>(cfg.factor("tile_k"));
  te::Tensor cc = s.cache_write(c, "local");
  schedule::Stage out = s[c];
  const auto& ax = out->op->axis;
  std::vector<IterVar> t = out.tile(ax[0], ax[1], mr, nr);  // io, jo, ii, ji
  // The block is the largest divisor of the row tiles not above the knob's value.
  int64_t row_tiles = w.at("M") / mr, rb = std::stoll(cfg.name("block_i"));
  while (row_tiles % rb) --rb;
  auto [ib, it] = out.split(t[0], static_cast<int>(rb));
  std::vector<IterVar> loops = {ib, it, t[1]};
  std::vector<IterVar> order;
  for (int64_t p : cfg["order"].ints) order.push_back(loops[p]);
  out.reorder({order[0], order[1], order[2], t[2], t[3]});
  // Where the panel index (t[1]) is fixed: the loop that holds B's panel.
  size_t panel_at = static_cast<size_t>(std::find(order.begin(), order.end(), t[1]) - order.begin());
  if (cfg.name("parallel") == "fused") {
    order[1] = out.fuse(order[0], order[1]);
    order.erase(order.begin());
    if (panel_at > 0) --panel_at;
  }
  out.parallel(order[0]);
  IterVar attach = order.back();
  graph::vectorize_columns(out, t[3], nr);
  schedule::Stage ls = s[cc];
  ls.compute_at(out, attach);
  if (cfg.name("pack_b") == "panel") {
    // B is the second operand of matmul (B[K, N]) and of dense (W[N, K]).
    te::Tensor b = cc->input_tensors().at(1);
    te::Tensor packed = s.cache_read(b, "global", {cc});
    schedule::Stage ps = s[packed];
    ps.compute_at(out, order[panel_at]);
    if (a.graph.node(a.node).op == "matmul") ps.vectorize(packed->axis[1]);
  }
  auto [ko, ki] = ls.split(cc->reduce_axis[0], ku);
  ls.reorder({ko, ki, cc->axis[0], cc->axis[1]});
  if (ku > 1) ls.unroll(ki);
  if (cfg.name("unroll_i") == "unroll") ls.unroll(cc->axis[0]);
  graph::vectorize_columns(ls, cc->axis[1], nr);
}

// ------------------------------------------------------------------ matmul_packed

// A constant matrix product with its weight packed at compile time (AlterLayout): the
// compiler's own GEMM schedule (graph::schedule_matmul_packed, which is also the
// default without records) with its row tile, k unrolling and parallel loop as knobs.
ConfigSpace gemm_packed_space(const Workload& w) {
  ConfigSpace s;
  // Rows with no divisor near a register tile (ViT's 197 tokens): tiles of 3 to 8 rows
  // too, the last one partial (the default's there, graph::rows_take_partial_tiles).
  std::vector<int64_t> partial;
  for (int64_t f = 3; f <= 8; ++f)
    if (graph::rows_take_partial_tiles(w.at("M"), f)) partial.push_back(f);
  s.define_split_list("tile_i", w.at("M"), divisors_upto(w.at("M"), 12), partial);
  s.define_split_list("tile_k", w.at("K"), divisors_upto(w.at("K"), 8, {1, 2, 4, 8}));
  s.define_knob("parallel", {"panels", "panels_rows"});
  s.define_knob("row_block", {"0", "8", "32", "128"});  // row tiles per cache block (0: none)
  return s;
}

graph::GemmTile gemm_packed_tile(const Config& cfg) {
  return {cfg.factor("tile_i"), cfg.factor("tile_k"), cfg.name("parallel") == "panels_rows", std::stoll(cfg.name("row_block"))};
}

void gemm_packed_apply(const graph::AnchorStage& a, const Workload&, const Config& cfg) {
  graph::schedule_matmul_packed(a.schedule, a.stage, a.epilogue.defined() ? a.epilogue : a.stage, gemm_packed_tile(cfg));
}

int64_t gemm_packed_default(const Workload& w, const target::MachineTraits& machine) {
  return default_config_of(w, machine, gemm_packed_space(w), graph::default_gemm_tile, gemm_packed_tile);
}

// ------------------------------------------------------------------ conv2d NCHWc

int64_t conv_out(const Workload& w, const char* in, const char* k) {
  return (w.at(in) + 2 * w.at("pad") - w.at(k)) / w.at("stride") + 1;
}

// graph::ConvTile::reduce_order's orders, by index, as the knob's choices.
const std::vector<std::vector<int64_t>>& conv_reduce_orders() {
  static const std::vector<std::vector<int64_t>> orders = {{0, 1, 2, 3}, {1, 2, 0, 3}, {0, 3, 1, 2}};
  return orders;
}

ConfigSpace conv_space(const Workload& w) {
  ConfigSpace s;
  int64_t oh = conv_out(w, "H", "KH"), ow = conv_out(w, "W", "KW");
  // Divisors up to 16 pixels of a row and 4 rows, and the whole row or column where it
  // may fit the registers (up to 24): the default's tile where the width or height has
  // no small divisor (Inception-V3's 17, SqueezeNet's 13; graph::default_conv_tile).
  // The spaces of other shapes, and so their records' indices, are as before.
  auto upto = [](int64_t n, int64_t max) {
    std::vector<int64_t> d = divisors_upto(n, max);
    if (n > max && n <= 24) d.push_back(n);
    return d;
  };
  // A long row with no divisor from 4 to 8: tiles of 4 to 8 pixels too, the last one
  // partial (the default's there, graph::takes_partial_row_tiles).
  std::vector<int64_t> partial;
  if (graph::takes_partial_row_tiles(ow))
    for (int64_t f = 4; f <= 8; ++f)
      if (ow % f) partial.push_back(f);
  s.define_split_list("tile_ow", ow, upto(ow, 16), partial);
  s.define_split_list("tile_oh", oh, upto(oh, 4));
  // Channel blocks (vectors) per output pixel in the register tile.
  s.define_split("tile_oc", w.at("O") / w.at("block"), 2, SplitPolicy::Factors, 4);
  // The channels unrolled: of C on NCHW data, of a block's on NCHWc data, of a group's
  // when grouped (one reduction over them on either).
  int64_t groups = w.params.count("groups") ? w.at("groups") : 1;
  int64_t rc = groups > 1 ? w.at("C") / groups : w.params.count("in_block") && w.at("in_block") > 0 ? w.at("in_block") : w.at("C");
  s.define_split_list("tile_rc", rc, divisors_upto(rc, 8, {1, 2, 4, 8}));
  // Reduction order: 0: rc.o, ry, rx, rc.i; 1: ry, rx, rc.o, rc.i; 2: rc.o, rc.i, ry, rx.
  s.define_reorder("reduce_order", conv_reduce_orders());
  s.define_annotate("unroll_kw", {"none", "unroll"});
  s.define_knob("parallel", {"n_oc", "n_oc_oh", "n_oh"});
  return s;
}

// The blocked convolution [N, O/b, OH, OW, b]: the compiler's own schedule
// (graph::schedule_conv2d_nchwc, also the default without records) with its tiles,
// reduction split and order, kw unrolling and parallel loop as knobs.
graph::ConvTile conv_tile(const Config& cfg) {
  graph::ConvTile t;
  t.oh = cfg.factor("tile_oh");
  t.ow = cfg.factor("tile_ow");
  t.oc = cfg.factor("tile_oc");
  t.rc = cfg.factor("tile_rc");
  t.reduce_order = 0;
  const std::vector<int64_t>& order = cfg["reduce_order"].ints;
  for (size_t k = 0; k < conv_reduce_orders().size(); ++k)
    if (order == conv_reduce_orders()[k]) t.reduce_order = static_cast<int>(k);
  t.unroll_kw = cfg.name("unroll_kw") == "unroll";
  t.parallel_oh = cfg.name("parallel") == "n_oc_oh";
  t.rows_outer = cfg.name("parallel") == "n_oh";
  return t;
}

void conv_apply(const graph::AnchorStage& a, const Workload&, const Config& cfg) {
  graph::schedule_conv2d_nchwc(a.schedule, a.stage, a.epilogue.defined() ? a.epilogue : a.stage, conv_tile(cfg));
}

int64_t conv_default(const Workload& w, const target::MachineTraits& machine) {
  return default_config_of(w, machine, conv_space(w), graph::default_conv_tile, conv_tile);
}

// ------------------------------------------------------------------ conv2d_winograd

// A Winograd convolution's alpha^2 products [alpha^2, P, O] (P: the tiles, padded to a
// multiple of winograd::kTileRows) over its C input channels, with its transforms:
// graph::schedule_winograd (also the default without records) with the products'
// register rows, columns, k unrolling and the order of tiles and products as knobs.
ConfigSpace winograd_space(const Workload& w) {
  ConfigSpace s;
  const int64_t oh = w.at("H") + 2 * w.at("pad") - 2, ow = w.at("W") + 2 * w.at("pad") - 2;
  const int64_t rows = graph::winograd::product_rows(graph::winograd::tile_count(w.at("N"), oh, ow, static_cast<int>(w.at("tile"))));
  s.define_split_list("tile_i", rows, divisors_upto(rows, 8));
  // Columns: whole vectors of 16 lanes that divide O, else of 8.
  std::vector<int64_t> cols;
  for (int64_t f : {16, 32, 64})
    if (w.at("O") % f == 0) cols.push_back(f);
  if (cols.empty()) cols = {8};
  s.define_split_list("tile_j", w.at("O"), cols);
  s.define_split_list("tile_k", w.at("C"), divisors_upto(w.at("C"), 8, {1, 2, 4, 8}));
  // slices: each of the alpha^2 products over all tiles in turn (its weight slice read
  // once); tiles: each row tile through all the products (the tiles a thread
  // transforms); rows: a row of image tiles at a time through the input transform, the
  // products and the output transform (tile_i then the largest divisor of a row's tiles
  // not above it).
  s.define_knob("order", {"slices", "tiles", "rows"});
  return s;
}

graph::MatmulTile winograd_tile(const Config& cfg) {
  return {cfg.factor("tile_i"), cfg.factor("tile_j"), cfg.factor("tile_k"), cfg.name("order") == "tiles", cfg.name("order") == "rows"};
}

void winograd_apply(const graph::AnchorStage& a, const Workload& w, const Config& cfg) {
  if (!graph::schedule_winograd(a.schedule, a.stage, winograd_tile(cfg), a.machine))
    throw Error(fmt::format("conv2d_winograd.cpu: configuration {} does not tile the products of {}", cfg.index(), w.key()));
}

graph::MatmulTile default_winograd_tile(const te::Tensor& mm, const target::MachineTraits& machine) {
  return graph::default_matmul_tile(mm, machine).value_or(graph::MatmulTile{0, 0, 0, false, false});
}

// The configuration whose schedule is the default's (by rows of image tiles, the rows
// are the largest divisor of a row's tiles not above the tile's), or -1.
int64_t winograd_default(const Workload& w, const target::MachineTraits& machine) {
  const int64_t m = w.at("tile"), row_tiles = (w.at("W") + 2 * w.at("pad") - 2 + m - 1) / m;
  auto effective = [&](graph::MatmulTile t) {
    if (t.by_tile_rows) t.rows = largest_divisor_at_most(row_tiles, t.rows);
    return t;
  };
  graph::MatmulTile d{};
  visit_default_anchor(w, machine,
                       [&](const te::Tensor& t, const target::MachineTraits& m) { d = effective(default_winograd_tile(t, m)); });
  const ConfigSpace space = winograd_space(w);
  for (int64_t i = 0; i < space.size(); ++i)
    if (effective(winograd_tile(space.get(i))) == d) return i;
  return -1;
}

}  // namespace

void register_cpu_templates() {
  register_template(Template{"matmul.cpu", "matmul", "cpu", gemm_space, gemm_apply, {}, {}});
  register_template(Template{"dense.cpu", "dense", "cpu", gemm_space, gemm_apply, {}, {}});
  register_template(Template{"matmul_packed.cpu", "matmul_packed", "cpu", gemm_packed_space, gemm_packed_apply, {}, gemm_packed_default});
  register_template(Template{"conv2d_nchwc.cpu", "conv2d", "cpu", conv_space, conv_apply, {}, conv_default});
  register_template(Template{"conv2d_winograd.cpu", "conv2d_winograd", "cpu", winograd_space, winograd_apply, {}, winograd_default});
}

}  // namespace kiln::tuner
