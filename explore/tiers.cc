#include "explore/tiers.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "backend-vta/env.h"
#include "backend-vta/ops.h"
#include "backend-vta/reference.h"
#include "boards/flow/synth.h"
#include "compiler/support/error.h"
#include "hw/driver/device.h"
#include "hw/sim/rtl/axi_dram.h"
#include "hw/sim/rtl/model_builder.h"
#include "hw/spec/error.h"
#include "tuner/measure.h"
#include "tuner/vta_templates.h"

namespace kiln::explore {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The configuration of a tier's candidate, checked against the context it was made for.
hw::Config candidate(const ExploreContext& ctx, const tuner::Template& t, const tuner::Workload& w,
                     const tuner::Config& c) {
  if (w.key() != tier_workload(ctx, t.name).key())
    throw hw::Error(fmt::format("{}: this process explores board {} and workload {}, not {}", t.name, ctx.board.name,
                                ctx.workload.name, w.key()));
  HwSpace::Point p = ctx.space.at(c.index());
  if (!p.config) throw hw::Error("not a configuration: " + p.invalid);
  return *p.config;
}

tuner::MeasureResult synthesize(const ExploreContext& ctx, const hw::Config& cfg) {
  const std::filesystem::path out = ctx.work_dir / "synth" / ctx.board.name / HwSpace::short_name(cfg);
  boards::SynthReport r = boards::run_synth(ctx.board, cfg, boards::default_synth_options(out));
  tuner::MeasureResult m;
  nlohmann::json res = nlohmann::json::object();
  double worst = 0;
  for (const boards::Resource& x : r.resources) {
    res[x.kind] = {{"used", x.used}, {"available", x.available}};
    if (x.available > 0) worst = std::max(worst, x.percent());
  }
  m.cost = std::max(worst, 1e-9);
  m.unit = "%";
  m.detail = {{"tier", 2},
              {"config", HwSpace::short_name(cfg)},
              {"resources", res},
              {"fits", r.fits()},
              {"fmax_mhz", r.fmax_mhz ? nlohmann::json(*r.fmax_mhz) : nlohmann::json(nullptr)},
              {"synth_s", r.seconds},
              {"notes", r.notes},
              {"out_dir", r.out_dir.string()}};
  return m;
}

tuner::MeasureResult run_on_rtl(const ExploreContext& ctx, const hw::Config& cfg) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!sim::has_rtl_model(cfg, ctx.space.core())) {
    sim::ModelBuildOptions build;
    build.core = ctx.space.core();
    build.jobs = ctx.verilator_jobs;
    sim::build_rtl_model(cfg, build);
  }
  const double build_s = seconds_since(t0);

  CycleEstimate plan = model_cycles(cfg, ctx.workload, ctx.space.timing());
  if (!plan.ok()) throw hw::Error(plan.invalid);
  vta::Env env(cfg);
  driver::DeviceOptions opts = vta::default_device_options();
  opts.core = ctx.space.core();
  opts.dram_latency = ctx.space.timing().mem_latency;
  const vta::Requant rq = tuner::tuning_requant();
  nlohmann::json layers = nlohmann::json::array();
  double total = 0;
  for (size_t i = 0; i < ctx.workload.layers.size(); ++i) {
    const Layer& l = ctx.workload.layers[i];
    const LayerPlan& lp = plan.layers[i];
    vta::Program p = vta::build_conv2d(env, l.conv, rq, lp.knobs);
    vta::Conv2DTensors in = vta::random_conv2d_tensors(l.conv, static_cast<uint32_t>(i + 1));
    auto dev = driver::make_device("rtl", cfg, opts);
    vta::Conv2DResult r = vta::run_conv2d(*dev, p, vta::pack_data(env, l.conv, in.data),
                                          vta::pack_kernel(env, l.conv, in.kernel), vta::pack_bias(env, l.conv, in.bias));
    if (vta::unpack_out(env, l.conv, r.out) != vta::reference_conv2d(l.conv, rq, in.data, in.kernel, in.bias))
      throw hw::Error(fmt::format("layer {} ({}): the RTL's result differs from the CPU reference", l.conv.name,
                                  l.conv.to_string()));
    // Cycles are deterministic (the DRAM model has no randomness without back-pressure),
    // so a shape the model runs several times is simulated once.
    const double cycles = static_cast<double>(r.counters.at(hw::regs::Counter::kCycles));
    total += cycles * l.count;
    layers.push_back({{"name", l.conv.name},
                      {"shape", l.conv.to_string()},
                      {"count", l.count},
                      {"cycles", cycles},
                      {"model_cycles", lp.model_cycles},
                      {"knobs", lp.knobs.to_string()}});
  }
  tuner::MeasureResult m;
  m.cost = total;
  m.unit = "cycles";
  m.detail = {{"tier", 3},
              {"config", HwSpace::short_name(cfg)},
              {"cycles", total},
              {"model_cycles", plan.cycles},
              {"bit_exact", true},
              {"layers", layers},
              {"build_s", build_s},
              {"sim_s", seconds_since(t0) - build_s}};
  return m;
}

// The in-order core's plan for a layer: the single-thread tilings (nothing overlaps
// there) the VTA strategy's model ranks first, the first kInorderCandidates of them that
// compile (a tiling may need more micro-ops than the uop buffer holds), each costed by
// vta::estimate_inorder on its program; the cheapest wins. Building a program takes
// milliseconds: tier 1 takes about 15 s over the iCEBreaker's 432 configurations.
constexpr size_t kInorderCandidates = 4;

bool plan_inorder(const vta::Env& env, const vta::Conv2DWorkload& wl, const vta::Requant& rq, const CoreTiming& timing,
                  LayerPlan* lp, std::string* why) {
  std::vector<std::pair<double, vta::Conv2DKnobs>> ranked;
  for (const vta::Conv2DKnobs& k : vta::conv2d_knob_space(env, wl, rq))
    if (k.h_threads == 1 && k.oc_threads == 1 && !k.double_buffer)
      ranked.emplace_back(vta::estimate_conv2d(env, wl, rq, k).cycles, k);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const int latency = timing.mem_latency >= 0 ? timing.mem_latency : sim::DramTiming::kDefaultLatency;
  size_t built = 0;
  bool found = false;
  for (const auto& [unused, k] : ranked) {
    if (built == kInorderCandidates) break;
    vta::Program p;
    try {
      p = vta::build_conv2d(env, wl, rq, k);
    } catch (const CompileError& ex) {
      if (why->empty()) *why = ex.what();
      continue;
    }
    ++built;
    const double cycles = vta::estimate_inorder(p, latency).cycles;
    if (!found || cycles < lp->model_cycles) {
      lp->knobs = k;
      lp->model_cycles = cycles;
      found = true;
    }
  }
  if (!found && why->empty()) *why = "no single-thread tiling fits the scratchpads";
  return found;
}

}  // namespace

CycleEstimate model_cycles(const hw::Config& cfg, const ExploreWorkload& w, const CoreTiming& timing) {
  CycleEstimate e;
  vta::Env env(cfg);
  const vta::Requant rq = tuner::tuning_requant();
  for (const Layer& l : w.layers) {
    try {
      vta::conv2d_packed(env, l.conv, rq);  // the shape suits the configuration
      std::vector<vta::Conv2DKnobs> space = vta::conv2d_knob_space(env, l.conv, rq);
      if (space.empty()) throw hw::Error("no tiling fits the scratchpads");
    } catch (const std::exception& ex) {
      e.invalid = fmt::format("layer {} ({}): {}", l.conv.name, l.conv.to_string(), ex.what());
      return e;
    }
    LayerPlan lp;
    lp.name = l.conv.name;
    if (timing.core == "inorder") {
      std::string why;
      if (!plan_inorder(env, l.conv, rq, timing, &lp, &why)) {
        e.invalid = fmt::format("layer {} ({}): {}", l.conv.name, l.conv.to_string(), why);
        return e;
      }
    } else {
      lp.knobs = vta::default_conv2d_knobs(env, l.conv, rq);
      lp.model_cycles = vta::estimate_conv2d(env, l.conv, rq, lp.knobs).cycles;
    }
    e.cycles += lp.model_cycles * l.count;
    e.layers.push_back(lp);
  }
  return e;
}

tuner::Workload tier_workload(const ExploreContext& ctx, const std::string& tmpl) {
  tuner::Workload w{tmpl, {}};
  w.args = ctx.board.name + "|" + ctx.workload.text();
  w.arg_flops = 2.0 * static_cast<double>(ctx.workload.macs());
  return w;
}

void register_explore_templates(std::shared_ptr<const ExploreContext> ctx) {
  for (const char* name : {kSynthTemplate, kRtlTemplate}) {
    tuner::Template t;
    t.name = t.op = t.target = name;
    t.space = [ctx](const tuner::Workload&) { return ctx->space.knobs(); };
    t.apply = [name](const graph::AnchorStage&, const tuner::Workload&, const tuner::Config&) {
      throw hw::Error(fmt::format("{} evaluates accelerator configurations; it schedules no graph", name));
    };
    t.lower = [name](const tuner::Workload&, const tuner::Config&) -> std::vector<schedule::LoweredFunc> {
      throw hw::Error(fmt::format("{} evaluates accelerator configurations; it lowers no loop IR", name));
    };
    tuner::register_template(t);
  }
  tuner::register_measure(kSynthTemplate, [ctx](const tuner::Template& t, const tuner::Workload& w,
                                                const tuner::Config& c, const tuner::MeasureOptions&) {
    return synthesize(*ctx, candidate(*ctx, t, w, c));
  });
  tuner::register_measure(kRtlTemplate, [ctx](const tuner::Template& t, const tuner::Workload& w,
                                              const tuner::Config& c, const tuner::MeasureOptions&) {
    return run_on_rtl(*ctx, candidate(*ctx, t, w, c));
  });
}

}  // namespace kiln::explore
