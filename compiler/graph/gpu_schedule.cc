#include "compiler/graph/gpu_schedule.h"

#include <algorithm>
#include <set>

#include "compiler/ir/node.h"
#include "support/integer.h"

namespace kiln::graph {

namespace {

int64_t extent_of(const ir::IterVar& iv) { return *ir::as_const_int(iv->dom.extent); }

// All axes of a stage fused into one (the stage's own axes, outermost first).
ir::IterVar fuse_all(schedule::Stage& st, const std::vector<ir::IterVar>& axes) {
  ir::IterVar f = axes.front();
  for (size_t i = 1; i < axes.size(); ++i) f = st.fuse(f, axes[i]);
  return f;
}

bool same_shape(const te::Tensor& a, const te::Tensor& b) {
  if (a->shape.size() != b->shape.size()) return false;
  for (size_t d = 0; d < a->shape.size(); ++d) {
    const int64_t *x = ir::as_const_int(a->shape[d]), *y = ir::as_const_int(b->shape[d]);
    if (!x || !y || *x != *y) return false;
  }
  return true;
}

// The root schedule, returning the axis bound to threadIdx.x (undefined for a stage
// without axes).
ir::IterVar bind_root(schedule::Schedule& s, const te::Tensor& t, const target::MachineTraits& machine) {
  schedule::Stage st = s[t];
  std::vector<ir::IterVar> axes = st->op->axis;
  if (axes.empty()) return {};
  int64_t total = 1;
  for (const auto& a : axes) total *= extent_of(a);
  ir::IterVar f = fuse_all(st, axes);
  auto [bx, tx] = st.split(f, static_cast<int>(std::min<int64_t>(total, machine.gpu_threads)));
  st.bind(bx, "blockIdx.x");
  st.bind(tx, "threadIdx.x");
  return tx;
}

}  // namespace

void schedule_gpu_root(schedule::Schedule& s, const te::Tensor& t, const target::MachineTraits& machine) {
  bind_root(s, t, machine);
}

bool schedule_gpu_matmul(schedule::Schedule& s, const te::Tensor& mm, const te::Tensor& out, const GpuMatmulTile& tile) {
  if (mm->shape.size() != 2 || mm->reduce_axis.size() != 1 || !same_shape(mm, out)) return false;
  int64_t m = extent_of(mm->axis[0]), n = extent_of(mm->axis[1]), k = extent_of(mm->reduce_axis[0]);
  const GpuMatmulTile& t = tile;
  if (m % t.block_rows || n % t.block_cols || k % t.k_tile || t.block_rows % t.threads_rows || t.block_cols % t.threads_cols)
    return false;
  std::vector<te::Tensor> operands = s[mm]->op->input_tensors();
  if (operands.size() != 2) return false;

  te::Tensor acc = out.get() == mm.get() ? s.cache_write(mm, "local") : mm;
  if (out.get() != mm.get()) s[mm].set_scope("local");
  schedule::Stage os = s[out];
  const auto& ax = os->op->axis;
  auto [bi, ii] = os.split(ax[0], static_cast<int>(t.block_rows));
  auto [bj, jj] = os.split(ax[1], static_cast<int>(t.block_cols));
  auto [ty, yi] = os.split_nparts(ii, static_cast<int>(t.threads_rows));
  auto [tx, xi] = os.split_nparts(jj, static_cast<int>(t.threads_cols));
  os.reorder({bi, bj, ty, tx, yi, xi});
  os.bind(bi, "blockIdx.y");
  os.bind(bj, "blockIdx.x");
  os.bind(ty, "threadIdx.y");
  os.bind(tx, "threadIdx.x");

  schedule::Stage as = s[acc];
  as.compute_at(os, tx);
  const auto& la = acc->axis;
  auto [ko, ki] = as.split(acc->reduce_axis[0], static_cast<int>(t.k_tile));
  as.reorder({ko, ki, la[0], la[1]});
  as.unroll(la[0]);
  as.unroll(la[1]);

  // Each step of k: the block's slices of both operands copied to shared memory, every
  // thread of the block taking its share.
  for (const te::Tensor& operand : operands) {
    te::Tensor shared = s.cache_read(operand, "shared", {acc});
    schedule::Stage ss = s[shared];
    ss.compute_at(as, ko);
    ir::IterVar f = fuse_all(ss, ss->op->axis);
    auto [o, fx] = ss.split(f, static_cast<int>(t.threads_cols));
    auto [oo, fy] = ss.split(o, static_cast<int>(t.threads_rows));
    ss.bind(fy, "threadIdx.y");
    ss.bind(fx, "threadIdx.x");
    (void)oo;
  }
  return true;
}

void schedule_gpu_conv2d(schedule::Schedule& s, const te::Tensor& conv, const te::Tensor& out, const GpuConvTile& tile) {
  te::Tensor acc = out.get() == conv.get() ? s.cache_write(conv, "local") : conv;
  if (out.get() != conv.get()) s[conv].set_scope("local");
  schedule::Stage os = s[out];
  const auto& ax = os->op->axis;  // n, o, y, x
  int64_t oc = largest_divisor_at_most(extent_of(ax[1]), tile.oc), ow = largest_divisor_at_most(extent_of(ax[3]), tile.ow);
  auto [oo, oi] = os.split(ax[1], static_cast<int>(oc));
  auto [xo, xi] = os.split(ax[3], static_cast<int>(ow));
  os.reorder({ax[0], oo, ax[2], xo, oi, xi});
  ir::IterVar f = os.fuse(os.fuse(os.fuse(ax[0], oo), ax[2]), xo);
  int64_t tiles = extent_of(ax[0]) * (extent_of(ax[1]) / oc) * extent_of(ax[2]) * (extent_of(ax[3]) / ow);
  auto [bx, tx] = os.split(f, static_cast<int>(std::min(tiles, tile.threads)));
  os.bind(bx, "blockIdx.x");
  os.bind(tx, "threadIdx.x");
  schedule::Stage as = s[acc];
  as.compute_at(os, tx);
  const auto& la = acc->axis;
  std::vector<ir::IterVar> order = acc->reduce_axis;
  order.push_back(la[1]);
  order.push_back(la[3]);
  as.reorder(order);
  as.unroll(la[1]);
  as.unroll(la[3]);
}

void schedule_gpu_group(schedule::Schedule& s, const std::vector<te::Tensor>& outs, const target::MachineTraits& machine,
                        const GpuAnchorHook& tuned) {
  for (schedule::Stage st : std::vector<schedule::Stage>(s->stages)) {
    if (st->is_placeholder()) continue;
    if (!st->is_output && st->op->reduce_axis.empty()) st.compute_inline();
  }
  std::vector<schedule::Stage> roots;
  for (const schedule::Stage& st : s->stages)
    if (!st->is_placeholder() && st->attach_type != schedule::AttachType::Inline) roots.push_back(st);
  std::set<const schedule::StageNode*> done;
  // A reduction feeding the group's one output (a fused bias, activation, residual
  // add): computed by the output's threads.
  if (outs.size() == 1 && outs[0]->reduce_axis.empty()) {
    std::vector<te::Tensor> products;
    for (const schedule::Stage& st : roots)
      if (!st->is_output) products.push_back(st->op);
    if (products.size() == 1 && !products[0]->reduce_axis.empty() && same_shape(products[0], outs[0])) {
      const te::Tensor& p = products[0];
      bool tiled = tuned && tuned(p, outs[0]);
      tiled = tiled || ((p->tag == "dense" || p->tag == "matmul") && schedule_gpu_matmul(s, p, outs[0], GpuMatmulTile{}));
      if (!tiled && p->tag == "conv2d") {
        schedule_gpu_conv2d(s, p, outs[0], GpuConvTile{});
        tiled = true;
      }
      if (!tiled) {
        ir::IterVar tx = bind_root(s, outs[0], machine);
        s[p].set_scope("local");
        s[p].compute_at(s[outs[0]], tx);
      }
      done.insert(s[outs[0]].get());
      done.insert(s[p].get());
    }
  }
  for (const schedule::Stage& st : roots) {
    if (done.count(st.get())) continue;
    const te::Tensor& t = st->op;
    if (tuned && !t->reduce_axis.empty() && tuned(t, te::Tensor())) continue;
    if ((t->tag == "dense" || t->tag == "matmul") && schedule_gpu_matmul(s, t, t, GpuMatmulTile{})) continue;
    if (t->tag == "conv2d") {
      schedule_gpu_conv2d(s, t, t, GpuConvTile{});
      continue;
    }
    bind_root(s, t, machine);
  }
}

}  // namespace kiln::graph
