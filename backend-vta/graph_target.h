#pragma once
// The accelerator as a target of the graph compiler: "vta -config=NAME -device=KIND".
//
// The strategy (compiler/graph/strategy.h) places, in an integer graph (the canonical
// form that quantize_realize makes of a quantized model), every convolution chain
//   cast<int8>(clip(right_shift(add(conv2d<int32>(x:int8, w:int8), bias:int32), k)))
// and every residual add of two int8 tensors at power-of-two scales that the
// configuration can run, as conv2d_packed / add_packed nodes in the packed layouts
// (compiler/graph/ops_packed.cc), with layout transforms at the boundaries to the host
// and weights packed at compile time (graph_pack's job). Each placed node lowers to the
// backend's strategy (strategy.h) with the best tuning record of its shape and
// configuration where CompileOptions::knob_hook has one, else the cycle model's
// default knobs.
//
// The backend builds each placed node's function into a Program (codegen.h) and runs
// it on a Device of the target's kind (fsim, rtl, ...), made once per module. The
// memory plan's buffers are laid out in the device's DRAM (plan_memory): constants are
// copied in once, tensors between accelerator kernels stay there, and only what the
// host produces or reads is copied around a run. A module saves as
// JSON (the programs and the target), so a .kiln package runs without the compiler.

#include "compiler/target/target.h"
#include "hw/driver/device.h"

namespace kiln::vta {

// Registers the "vta" strategy and backend (idempotent).
void register_graph_target();

// Device options from a target's options: default_device_options() with every option
// that names a device setting (hw/driver/device_settings.h: -dram_mb, -core, -wave,
// -trace, -dram_latency, -memory, ...) applied for the target's -device (default fsim);
// a setting that device does not take is a CompileError naming it.
driver::DeviceOptions device_options_of(const target::Target& t);

}  // namespace kiln::vta
