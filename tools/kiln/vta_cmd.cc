// kiln vta: one operator through the VTA backend — compile (strategy, schedule,
// lower, codegen), optionally write the program, its instruction stream as text
// assembly and (on rtl) a timeline of module activity, run it with random tensors on
// a device and check the result against the CPU int8 reference.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "backend-vta/ops.h"
#include "backend-vta/reference.h"
#include "hw/driver/device.h"
#include "hw/driver/runtime/device_buffer.h"
#include "hw/spec/assembly.h"
#include "hw/spec/error.h"
#include "tools/kiln/common.h"
#include "tools/kiln/device_flags.h"
#ifdef KILN_HAVE_TUNER_VTA
#include "compiler/graph/strategy.h"
#include "tuner/records.h"
#include "tuner/vta_templates.h"
#endif

namespace kiln::cli {

namespace {

struct VtaArgs {
  std::string config = "default";
  std::string layer;
  vta::Conv2DWorkload wl;
  int kernel = 3, pad = -1, stride = 1;
  std::string knobs;
  bool no_latency_hiding = false;
  bool bias = false, no_relu = false;
  int shift = 8;
  std::string device = "fsim";
  std::string asm_out, program_out, records;
  DeviceFlags flags;
  uint64_t seed = 1;
  bool json = false;
};

vta::Conv2DKnobs parse_knobs(const std::string& text) {
  vta::Conv2DKnobs k;
  char tail = 0;
  int db = 0;
  int n = std::sscanf(text.c_str(), "%d,%d,%d,%d,%d,%d,%d%c", &k.tile_h, &k.tile_w, &k.tile_oc, &k.tile_ic, &k.h_threads,
                      &k.oc_threads, &db, &tail);
  if (n != 6 && n != 7)
    throw hw::Error(
        "--knobs takes six or seven comma-separated numbers: tile_h,tile_w,tile_oc,tile_ic,h_threads,oc_threads"
        "[,double_buffer]; got '" + text + "'");
  k.double_buffer = db != 0;
  return k;
}

void run_vta(VtaArgs a, bool dense) {
  hw::Config cfg = load_config(a.config);
  vta::Env env(cfg);
  vta::Conv2DWorkload wl = a.wl;
  if (dense) {
    wl = vta::dense_workload(a.wl.batch, a.wl.in_channels, a.wl.out_channels);
  } else if (!a.layer.empty()) {
    bool found = false;
    for (const vta::Conv2DWorkload& w : vta::resnet18_conv_workloads(a.wl.batch))
      if (w.name == a.layer) wl = w, found = true;
    if (!found) throw hw::Error("--layer: '" + a.layer + "' is not one of ResNet-18's C2..C12");
  } else {
    wl.kernel_h = wl.kernel_w = a.kernel;
    wl.pad_h = wl.pad_w = a.pad >= 0 ? a.pad : a.kernel / 2;
    wl.stride_h = wl.stride_w = a.stride;
  }
  vta::Requant rq;
  rq.bias = a.bias;
  rq.shift = a.shift;
  rq.relu = !a.no_relu;
  vta::Conv2DKnobs k = a.knobs.empty() ? vta::default_conv2d_knobs(env, wl, rq, !a.no_latency_hiding) : parse_knobs(a.knobs);
  if (!a.records.empty()) {
    if (!a.knobs.empty()) throw hw::Error("give --knobs or --records, not both");
#ifdef KILN_HAVE_TUNER_VTA
    // The best record of `kiln tune --target vta` for this shape.
    tuner::register_vta_templates(cfg);
    const tuner::Template& t = tuner::find_template("conv2d.vta");
    tuner::Workload w = tuner::parse_workload(fmt::format("conv2d:N={},C={},H={},W={},O={},KH={},KW={},stride={},pad={}",
                                                          wl.batch, wl.in_channels, wl.height, wl.width, wl.out_channels,
                                                          wl.kernel_h, wl.kernel_w, wl.stride_h, wl.pad_h));
    auto best = tuner::best_records(tuner::load_records(a.records, tuner::IfMissing::kError),
                                    graph::records_key_of(target::Target("vta", {{"config", a.config}})));
    auto it = best.find(w.key());
    if (it == best.end()) {
      std::cerr << fmt::format("kiln: warning: {} has no record for {}; using the default schedule\n", a.records, w.key());
    } else {
      k = tuner::vta_knobs(t.space(w).get(it->second.config));
    }
#else
    throw hw::Error("--records: this build has no tuner for the VTA backend");
#endif
  }
  vta::Program p = vta::build_conv2d(env, wl, rq, k);
  if (!a.program_out.empty()) p.save(a.program_out);

  driver::DeviceOptions opts = a.flags.options(a.device, vta::default_device_options());
  auto dev = driver::make_device(a.device, cfg, opts);

  vta::Conv2DTensors t = vta::random_conv2d_tensors(wl, static_cast<uint32_t>(a.seed));
  const std::vector<int8_t>& data = t.data;
  const std::vector<int8_t>& kernel = t.kernel;
  const std::vector<int32_t>& bias = t.bias;

  if (!a.asm_out.empty()) {
    // The stream as it would run with the tensors at these addresses.
    std::vector<runtime::DeviceBuffer> bufs;
    std::vector<driver::DevAddr> addrs;
    for (const vta::ProgramArg& arg : p.args()) {
      bufs.emplace_back(*dev, arg.bytes());
      addrs.push_back(bufs.back().address());
    }
    std::string text = fmt::format("# {} on {}: {}\n# schedule: {}\n", wl.to_string(), cfg.name(),
                                   p.args().size() == 4 ? "bias, shift, clip" : "shift, clip", k.to_string());
    for (size_t i = 0; i < addrs.size(); ++i)
      text += fmt::format("# argument {} '{}' at 0x{:x}\n", i, p.args()[i].name, addrs[i]);
    text += p.assembly(*dev, addrs);
    // The micro-op kernels, which LOAD UOP copies from DRAM, as comments.
    for (size_t i = 0; i < p.kernels().size(); ++i) {
      const runtime::UopKernel& kern = p.kernels()[i];
      text += fmt::format("# kernel {} '{}': {} loop(s), {} micro-op(s)\n", i, kern.name(), kern.loops().size(),
                          kern.uops().size());
      std::istringstream uops(hw::disassemble_uops(kern.uops()));
      for (std::string line; std::getline(uops, line);) text += "#   " + line + "\n";
    }
    std::ofstream out(a.asm_out);
    out << text;
    if (!out) throw hw::Error("cannot write '" + a.asm_out + "'");
  }

  vta::Conv2DResult r = vta::run_conv2d(*dev, p, vta::pack_data(env, wl, data), vta::pack_kernel(env, wl, kernel),
                                        vta::pack_bias(env, wl, bias));
  bool match = vta::unpack_out(env, wl, r.out) == vta::reference_conv2d(wl, rq, data, kernel, bias);
  vta::ProgramStats st = p.stats();
  uint64_t ideal = uint64_t(wl.macs() / (int64_t{cfg.batch()} * cfg.block_in() * cfg.block_out()));
  uint64_t cycles = r.counters.count(hw::regs::Counter::kCycles) ? r.counters.at(hw::regs::Counter::kCycles) : 0;
  if (a.json) {
    nlohmann::json j{{"workload", wl.to_string()}, {"config", cfg.name()}, {"device", a.device},
                     {"knobs", k.to_string()}, {"matches_reference", match}, {"instructions_loads", st.loads},
                     {"instructions_stores", st.stores}, {"instructions_gemm", st.gemm_insns},
                     {"instructions_alu", st.alu_insns}, {"gemm_uops", st.gemm_uops}, {"ideal_cycles", ideal}};
    if (cycles) {
      j["cycles"] = cycles;
      j["utilization"] = double(ideal) / double(cycles);
    }
    for (const auto& info : hw::regs::kCounters)
      if (r.counters.count(info.id)) j["counters"][std::string(info.name)] = r.counters.at(info.id);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format("{} on {} ({}): {}\n", wl.to_string(), a.device, cfg.name(),
                             match ? "matches the CPU reference" : "DIFFERS from the CPU reference");
    std::cout << fmt::format("schedule: {}\n", k.to_string());
    std::cout << fmt::format("program: {} loads, {} stores, {} GEMM and {} ALU instructions, {} GEMM micro-ops\n",
                             st.loads, st.stores, st.gemm_insns, st.alu_insns, st.gemm_uops);
    if (cycles)
      std::cout << fmt::format("cycles: {} (ideal {}, GEMM utilization {:.1f}%)\n", cycles, ideal,
                               100.0 * double(ideal) / double(cycles));
  }
  if (!match) throw hw::Error("the accelerator's result differs from the CPU reference");
}

void add_common(CLI::App* c, VtaArgs& a) {
  add_config_option(c, a.config);
  c->add_option("--knobs", a.knobs, "schedule: tile_h,tile_w,tile_oc,tile_ic,h_threads,oc_threads[,double_buffer] (default: chosen)");
  c->add_flag("--no-latency-hiding", a.no_latency_hiding, "default schedule without virtual threads");
  c->add_flag("--bias", a.bias, "add an int32 bias before the shift");
  c->add_option("--shift", a.shift, "requantization: arithmetic shift right (default 8)");
  c->add_flag("--no-relu", a.no_relu, "clip to [-128, 127] instead of [0, 127]");
  c->add_option("--device", a.device, "device to run on (default fsim; see `kiln hw devices`)");
  c->add_option("--asm", a.asm_out, "write the instruction stream as text assembly");
  c->add_option("--program", a.program_out, "write the compiled program (JSON)");
  c->add_option("--seed", a.seed, "seed of the random tensors");
  a.flags.add_to(c, {"seed"});  // --seed is the tensors' here
  c->add_option("--records", a.records, "apply the best schedule `kiln tune --target vta` recorded for this shape");
  c->add_flag("--json", a.json, "print the results as JSON");
}

}  // namespace

void add_vta_commands(CLI::App& app) {
  CLI::App* vta = app.add_subcommand("vta", "Compile and run one operator on the accelerator (the VTA backend)");
  vta->require_subcommand(1);
  auto conv = std::make_shared<VtaArgs>();
  conv->wl.batch = 1;
  conv->wl.in_channels = conv->wl.out_channels = 16;
  conv->wl.height = conv->wl.width = 14;
  CLI::App* c = vta->add_subcommand("conv2d", "int8 conv2d in the packed layout, requantized on the ALU");
  c->add_option("--layer", conv->layer, "one of ResNet-18's convolutions C2..C12 (instead of the shape options)");
  c->add_option("--batch", conv->wl.batch, "batch (default 1)");
  c->add_option("--in-channels", conv->wl.in_channels, "input channels (default 16)");
  c->add_option("--out-channels", conv->wl.out_channels, "output channels (default 16)");
  c->add_option("--height", conv->wl.height, "input height (default 14)");
  c->add_option("--width", conv->wl.width, "input width (default 14)");
  c->add_option("--kernel", conv->kernel, "kernel size (default 3)");
  c->add_option("--pad", conv->pad, "padding (default kernel/2)");
  c->add_option("--stride", conv->stride, "stride (default 1)");
  add_common(c, *conv);
  c->callback([conv] { run_vta(*conv, false); });

  auto dense = std::make_shared<VtaArgs>();
  dense->wl.batch = 1;
  dense->wl.in_channels = 512;
  dense->wl.out_channels = 256;
  CLI::App* d = vta->add_subcommand("dense", "int8 dense (a 1x1 convolution of a 1x1 image)");
  d->add_option("--batch", dense->wl.batch, "batch (default 1)");
  d->add_option("--in", dense->wl.in_channels, "input features (default 512)");
  d->add_option("--out", dense->wl.out_channels, "output features (default 256)");
  add_common(d, *dense);
  d->callback([dense] { run_vta(*dense, true); });
}

}  // namespace kiln::cli
