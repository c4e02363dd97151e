#pragma once
// The VTA template: "conv2d.vta" tunes the VTA backend's conv2d strategy (dense is
// its 1x1 case) for one accelerator configuration. Its knobs are the strategy's
// (backend-vta/strategy.h): output tiles, the input-channel step, virtual threads and
// double buffering; a candidate is measured in cycles on a device that counts them
// (by default the rtl device: the Verilated RTL with its default DRAM model), and only
// when its result matches the CPU int8 reference. Settings that do not fit the
// scratchpads are errors, measured in microseconds without a simulation.
#include <memory>
#include <string>

#include "backend-vta/ops.h"
#include "backend-vta/strategy.h"
#include "hw/driver/device.h"
#include "hw/spec/config.h"
#include "tuner/template.h"

namespace kiln::tuner {

// The device a candidate is measured on: its kind and options (kiln tune's --device
// and device flags).
struct VtaDevice {
  std::string kind = "rtl";
  driver::DeviceOptions options = vta::default_device_options();
};

// Registers "conv2d.vta" (target "vta") and the "vta" measure function for `cfg`,
// measuring on `device`, replacing an earlier registration. kiln tune --target vta calls it.
void register_vta_templates(const hw::Config& cfg, const VtaDevice& device = {});

// A device to measure on, made as `device` says; Error when it counts no cycles (fsim).
// kiln tune makes one first, so that a device that cannot measure is refused before
// any candidate.
std::unique_ptr<driver::Device> make_vta_device(const hw::Config& cfg, const VtaDevice& device);

// The epilogue a tuned convolution is measured with (TVM's conv2d benchmark: shift right
// by 8, clip to [0, 127], no bias); the co-design search measures with it too.
vta::Requant tuning_requant();

// The strategy's workload and knobs of a "conv2d.vta" task and configuration.
vta::Conv2DWorkload vta_workload(const Workload& w);
vta::Conv2DKnobs vta_knobs(const Config& c);

}  // namespace kiln::tuner
