#include "tuner/vta_templates.h"

#include <fmt/format.h>

#include <memory>
#include <stdexcept>

#include "backend-vta/codegen.h"
#include "backend-vta/ops.h"
#include "backend-vta/reference.h"
#include "compiler/schedule/lower.h"
#include "hw/driver/device.h"
#include "support/error.h"
#include "tuner/measure.h"

namespace kiln::tuner {

vta::Requant tuning_requant() {
  vta::Requant rq;
  rq.bias = false;
  rq.shift = 8;
  return rq;
}

vta::Conv2DWorkload vta_workload(const Workload& w) {
  if (w.op != "conv2d") throw Error("conv2d.vta serves conv2d workloads, not " + w.op);
  vta::Conv2DWorkload wl;
  wl.name = "conv2d";
  wl.batch = static_cast<int>(w.at("N"));
  wl.in_channels = static_cast<int>(w.at("C"));
  wl.out_channels = static_cast<int>(w.at("O"));
  wl.height = static_cast<int>(w.at("H"));
  wl.width = static_cast<int>(w.at("W"));
  wl.kernel_h = static_cast<int>(w.at("KH"));
  wl.kernel_w = static_cast<int>(w.at("KW"));
  wl.pad_h = wl.pad_w = static_cast<int>(w.at("pad"));
  wl.stride_h = wl.stride_w = static_cast<int>(w.at("stride"));
  return wl;
}

vta::Conv2DKnobs vta_knobs(const Config& c) { return vta::conv2d_knobs_from_words(c.describe()); }

std::unique_ptr<driver::Device> make_vta_device(const hw::Config& cfg, const VtaDevice& device) {
  auto dev = driver::make_device(device.kind, cfg, device.options);
  if (!dev->has_counter(hw::regs::Counter::kCycles))
    throw Error(fmt::format("conv2d.vta measures cycles, which the {} device does not count: measure on a device "
                            "with a clock (rtl, systemc, a board)",
                            device.kind));
  return dev;
}

void register_vta_templates(const hw::Config& cfg, const VtaDevice& device) {
  auto env = std::make_shared<vta::Env>(cfg);
  Template t;
  t.name = "conv2d.vta";
  t.op = "conv2d";
  t.target = "vta";
  t.space = [env](const Workload& w) {
    vta::Conv2DWorkload wl = vta_workload(w);
    // Rejects shapes the strategy cannot take (channels not a multiple of the block).
    vta::conv2d_packed(*env, wl, tuning_requant());
    ConfigSpace s;
    for (const auto& [knob, choices] : vta::conv2d_knob_choices(*env, wl)) s.define_knob(knob, choices);
    return s;
  };
  t.apply = [](const graph::AnchorStage&, const Workload&, const Config&) {
    throw Error(
        "conv2d.vta schedules the accelerator's convolutions (through the graph strategy's knob hook, "
        "tuner::knobs_hook), not the host's anchor stages");
  };
  t.lower = [env](const Workload& w, const Config& c) {
    vta::Conv2DWorkload wl = vta_workload(w);
    vta::Conv2DOp op = vta::conv2d_packed(*env, wl, tuning_requant());
    return std::vector<schedule::LoweredFunc>{schedule::lower(vta::schedule_conv2d(*env, op, vta_knobs(c)), op.args(), "conv2d")};
  };
  register_template(t);
  register_measure("vta", [env, device](const Template&, const Workload& w, const Config& c, const MeasureOptions&) {
    vta::Conv2DWorkload wl = vta_workload(w);
    vta::Requant rq = tuning_requant();
    vta::Program p = vta::build_conv2d(*env, wl, rq, vta_knobs(c));
    vta::Conv2DTensors in = vta::random_conv2d_tensors(wl, 1);
    auto dev = make_vta_device(env->config(), device);
    vta::Conv2DResult r = vta::run_conv2d(*dev, p, vta::pack_data(*env, wl, in.data),
                                          vta::pack_kernel(*env, wl, in.kernel), vta::pack_bias(*env, wl, in.bias));
    if (vta::unpack_out(*env, wl, r.out) != vta::reference_conv2d(wl, rq, in.data, in.kernel, in.bias))
      throw std::runtime_error("the accelerator's result differs from the CPU reference");
    MeasureResult m;
    m.cost = static_cast<double>(r.counters.at(hw::regs::Counter::kCycles));
    m.unit = "cycles";
    return m;
  });
}

}  // namespace kiln::tuner
