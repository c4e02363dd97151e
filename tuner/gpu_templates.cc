// The built-in GPU templates, one set per GPU target ("opencl", "cuda"): the GPU's
// default schedules (compiler/graph/gpu_schedule.h) with their tiles as knobs, measured
// on the target's device (the kernels' own times, from the device's events).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "compiler/graph/gpu_schedule.h"
#include "compiler/target/backend.h"
#include "support/error.h"
#include "support/integer.h"
#include "tuner/template.h"

namespace kiln::tuner {

namespace {

std::vector<int64_t> divisors_upto(int64_t n, int64_t max) {
  std::vector<int64_t> r;
  for (int64_t f : divisors(n))
    if (f <= max) r.push_back(f);
  return r;
}

// The machine a GPU target's default schedules assume (its backend's, where registered).
target::MachineTraits gpu_machine(const std::string& kind) {
  if (target::has_backend(kind)) return target::make_backend(kind)->traits("");
  target::MachineTraits m;
  m.gpu_threads = 256;
  return m;
}

using ApplyFn = std::function<void(const graph::AnchorStage&, const Workload&, const Config&)>;

// A template of `kind` whose candidates are the workload's one-node graph lowered with
// the GPU's schedules, `apply` scheduling the anchor.
Template gpu_template(const std::string& op, const std::string& kind, std::function<ConfigSpace(const Workload&)> space,
                      ApplyFn apply) {
  Template t{op + "." + kind, op, kind, std::move(space), apply, {}, {}};
  t.lower = [name = t.name, kind, apply](const Workload& w, const Config& c) {
    graph::NodeId node = -1;
    graph::Graph g = workload_graph(w, &node);
    bool applied = false;
    graph::ScheduleHook hook = [&](const graph::AnchorStage& a) {
      apply(a, w, c);
      applied = true;
      return true;
    };
    graph::LoweredGroup lg = graph::lower_group(g, {node}, "candidate", {}, hook, gpu_machine(kind));
    if (!applied) throw std::logic_error("template '" + name + "' found no anchor stage in " + w.key());
    return std::vector<schedule::LoweredFunc>{lg.func};
  };
  return t;
}

// ------------------------------------------------------------------ conv2d (NCHW)

ConfigSpace conv_space(const Workload& w) {
  ConfigSpace s;
  int64_t ow = (w.at("W") + 2 * w.at("pad") - w.at("KW")) / w.at("stride") + 1;
  s.define_split_list("tile_oc", w.at("O"), divisors_upto(w.at("O"), 8));
  s.define_split_list("tile_ow", ow, divisors_upto(ow, 8));
  s.define_knob("threads", {"64", "128", "256"});
  return s;
}

void conv_apply(const graph::AnchorStage& a, const Workload&, const Config& cfg) {
  graph::GpuConvTile t{cfg.factor("tile_oc"), cfg.factor("tile_ow"), std::stoll(cfg.name("threads"))};
  graph::schedule_gpu_conv2d(a.schedule, a.stage, a.epilogue.defined() ? a.epilogue : a.stage, t);
}

// ------------------------------------------------------------------ dense, matmul

// Every tile that divides the product and fits a block (at most 1024 threads, 48 KiB of
// shared memory, at most 8 x 8 outputs a thread), as one categorical knob:
// "BRxBC/TRxTC/KT"; those with a warp's 32 threads or more where there are any.
ConfigSpace gemm_space(const Workload& w) {
  std::vector<std::string> tiles, small;
  for (int64_t br : divisors_upto(w.at("M"), 128))
    for (int64_t bc : divisors_upto(w.at("N"), 128))
      for (int64_t tr : divisors_upto(br, 32))
        for (int64_t tc : divisors_upto(bc, 32))
          for (int64_t kt : divisors_upto(w.at("K"), 32)) {
            if (tr * tc > 1024 || (br + bc) * kt * 4 > (48 << 10) || br / tr > 8 || bc / tc > 8) continue;
            (tr * tc >= 32 ? tiles : small).push_back(fmt::format("{}x{}/{}x{}/{}", br, bc, tr, tc, kt));
          }
  ConfigSpace s;
  s.define_knob("tile", tiles.empty() ? small : tiles);  // never empty: 1x1/1x1/1 fits any product
  return s;
}

void gemm_apply(const graph::AnchorStage& a, const Workload& w, const Config& cfg) {
  graph::GpuMatmulTile t;
  if (std::sscanf(cfg.name("tile").c_str(), "%ldx%ld/%ldx%ld/%ld", &t.block_rows, &t.block_cols, &t.threads_rows,
                  &t.threads_cols, &t.k_tile) != 5)
    throw Error("malformed GPU tile '" + cfg.name("tile") + "'");
  te::Tensor out = a.epilogue.defined() ? a.epilogue : a.stage;
  if (!graph::schedule_gpu_matmul(a.schedule, a.stage, out, t))
    throw Error(fmt::format("{}: the tile {} does not divide the product", w.key(), cfg.name("tile")));
}

}  // namespace

void register_gpu_templates() {
  for (const char* kind : {"opencl", "cuda"}) {
    register_template(gpu_template("conv2d_nchw", kind, conv_space, conv_apply));
    register_template(gpu_template("dense", kind, gemm_space, gemm_apply));
    register_template(gpu_template("matmul", kind, gemm_space, gemm_apply));
  }
}

}  // namespace kiln::tuner
