// kiln_bench_vta_conv2d: ResNet-18's convolutions C2..C12 compiled by the VTA backend
// and run on a device (the Verilated RTL by default, with its default DRAM model),
// each with and without latency hiding (virtual threads). Per layer: cycles, the
// ideal cycles (multiply-accumulates / (BATCH x BLOCK_IN x BLOCK_OUT)), GEMM-core
// utilization (ideal / cycles), bytes moved, the roofline bound max(ideal, bytes /
// DRAM bandwidth) and how close the run comes to it. Every result is checked against
// the CPU reference; a mismatch fails the run.
// Usage: kiln_bench_vta_conv2d [--config FILE] [--device rtl|fsim] [--layers C2,C4]
//                              [--json]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "backend-vta/ops.h"
#include "backend-vta/reference.h"
#include "compiler/support/error.h"
#include "hw/driver/device.h"
#include "hw/spec/error.h"
#include "support/error.h"

namespace kiln {
namespace {

using hw::regs::Counter;

struct Row {
  std::string name;
  bool latency_hiding;
  std::string knobs;
  uint64_t cycles, ideal, bytes, roofline;
  double utilization, of_roofline, wall_s, knob_s = 0, build_s = 0;
  uint64_t compute_bound = 0, estimate = 0;
  driver::Counters counters;
};

uint64_t counter(const driver::Counters& c, Counter k) { return c.count(k) ? c.at(k) : 0; }

int run(int argc, char** argv) {
  CLI::App app{"ResNet-18 convolutions on the VTA backend"};
  std::string config = std::string(KILN_CONFIG_DIR) + "/default.json";
  std::string device = "rtl";
  std::string layers;
  bool json = false;
  int latency = -1, bandwidth = -1;
  app.add_option("--config", config, "accelerator configuration file");
  app.add_option("--device", device, "device to run on (rtl, fsim)");
  app.add_option("--layers", layers, "comma-separated subset of C2..C12");
  app.add_option("--dram-latency", latency, "rtl: DRAM latency in cycles (default: the model's)");
  app.add_option("--dram-bytes-per-cycle", bandwidth, "rtl: DRAM bandwidth (default: the model's, 8)");
  app.add_flag("--json", json, "print one JSON object");
  std::string knobs_text;
  app.add_option("--knobs", knobs_text, "tile_h,tile_w,tile_oc,tile_ic,h_threads,oc_threads[,double_buffer] for every layer (default: the backend's choice)");
  bool bias = false;
  app.add_flag("--bias", bias, "add a bias before the shift (TVM's benchmark has none)");
  CLI11_PARSE(app, argc, argv);

  hw::Config cfg = hw::Config::from_file(config);
  vta::Env env(cfg);
  driver::DeviceOptions opts = vta::default_device_options();
  opts.dram_latency = latency;
  opts.dram_bytes_per_cycle = bandwidth;
  auto dev = driver::make_device(device, cfg, opts);
  double bw = bandwidth > 0 ? bandwidth : 8.0;
  std::vector<std::string> wanted;
  std::stringstream ss(layers);
  for (std::string l; std::getline(ss, l, ',');) wanted.push_back(l);

  std::vector<Row> rows;
  // TVM's conv2d benchmark epilogue: shift right by 8, clip to [0, 127], cast.
  vta::Requant rq;
  rq.bias = bias;
  rq.shift = 8;
  for (const vta::Conv2DWorkload& wl : vta::resnet18_conv_workloads(cfg.batch())) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), wl.name) == wanted.end()) continue;
    vta::Conv2DTensors t = vta::random_conv2d_tensors(wl, 7);
    const std::vector<int8_t>& data = t.data;
    const std::vector<int8_t>& kernel = t.kernel;
    const std::vector<int32_t>& bias = t.bias;
    std::vector<int8_t> want = vta::reference_conv2d(wl, rq, data, kernel, bias);
    for (bool lh : {false, true}) {
      auto c0 = std::chrono::steady_clock::now();
      vta::Conv2DKnobs k = vta::default_conv2d_knobs(env, wl, rq, lh);
      auto c1 = std::chrono::steady_clock::now();
      if (!knobs_text.empty()) {
        if (!lh) continue;
        int db = 0;
        if (std::sscanf(knobs_text.c_str(), "%d,%d,%d,%d,%d,%d,%d", &k.tile_h, &k.tile_w, &k.tile_oc, &k.tile_ic,
                        &k.h_threads, &k.oc_threads, &db) < 6)
          throw hw::Error("--knobs takes six or seven comma-separated numbers");
        k.double_buffer = db != 0;
      }
      vta::Program p = vta::build_conv2d(env, wl, rq, k);
      auto c2 = std::chrono::steady_clock::now();
      double knob_s = std::chrono::duration<double>(c1 - c0).count();
      double build_s = std::chrono::duration<double>(c2 - c1).count();
      auto t0 = std::chrono::steady_clock::now();
      vta::Conv2DResult r = vta::run_conv2d(*dev, p, vta::pack_data(env, wl, data), vta::pack_kernel(env, wl, kernel),
                                            vta::pack_bias(env, wl, bias));
      double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (vta::unpack_out(env, wl, r.out) != want) {
        std::cerr << fmt::format("{} ({}): the accelerator's output differs from the CPU reference\n", wl.name,
                                 k.to_string());
        return 1;
      }
      Row row;
      row.name = wl.name;
      row.latency_hiding = lh;
      row.knobs = k.to_string();
      row.cycles = r.counters.count(Counter::kCycles) ? r.counters.at(Counter::kCycles) : 0;
      row.ideal = uint64_t(wl.macs() / (int64_t{cfg.batch()} * cfg.block_in() * cfg.block_out()));
      row.bytes = r.counters.at(Counter::kDramReadBytes) + r.counters.at(Counter::kDramWriteBytes);
      // The roofline of this operator on this accelerator: the compute module's
      // mandatory work (GEMM micro-ops with the accumulator resets, ALU micro-ops of the
      // requantization, a tensor operand at half rate) against the compulsory DRAM
      // traffic (every input, weight, bias and output byte once; reads and writes have
      // their own channel).
      vta::ProgramStats st = p.stats();
      uint64_t compute = st.gemm_uops + st.gemm_reset_uops + st.alu_uops + st.alu_tensor_uops;
      uint64_t read_bytes = data.size() + kernel.size() + (rq.bias ? bias.size() * 4 : 0);
      uint64_t write_bytes = want.size();
      row.compute_bound = compute;
      row.roofline = std::max<uint64_t>({compute, uint64_t(double(read_bytes) / bw), uint64_t(double(write_bytes) / bw)});
      row.utilization = row.cycles ? double(row.ideal) / double(row.cycles) : 0;
      row.of_roofline = row.cycles ? double(row.roofline) / double(row.cycles) : 0;
      row.wall_s = wall;
      row.knob_s = knob_s;
      row.build_s = build_s;
      row.counters = r.counters;
      row.estimate = uint64_t(vta::estimate_conv2d(env, wl, rq, k, bw).cycles);
      rows.push_back(row);
      if (!json) {
        std::cout << fmt::format("{:4} {:5} cycles {:>9} ideal {:>8} util {:5.1f}% roofline {:>8} ({:5.1f}%) bytes {:>9} "
                                 "[{}] run {:.1f}s, knobs {:.2f}s, build {:.2f}s\n",
                                 row.name, lh ? "lh" : "nolh", row.cycles, row.ideal, 100 * row.utilization,
                                 row.roofline, 100 * row.of_roofline, row.bytes, row.knobs, wall, knob_s, build_s);
        const auto& c = r.counters;
        std::cout << fmt::format("       model {} cycles\n", row.estimate);
        std::cout << fmt::format("       compute busy {} stall {}, load busy {} stall {}, store busy {} stall {}, "
                                 "gemm uops {}, alu uops {}, uop bytes {}\n",
                                 counter(c, Counter::kComputeBusyCycles), counter(c, Counter::kComputeStallCycles),
                                 counter(c, Counter::kLoadBusyCycles), counter(c, Counter::kLoadStallCycles),
                                 counter(c, Counter::kStoreBusyCycles), counter(c, Counter::kStoreStallCycles),
                                 counter(c, Counter::kGemmUops), counter(c, Counter::kAluUops),
                                 counter(c, Counter::kLoadUopBytes));
      }
    }
  }
  double sum3 = 0;
  int n3 = 0;
  for (const Row& r : rows) {
    const auto& all = vta::resnet18_conv_workloads();
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& w) { return w.name == r.name; });
    if (r.latency_hiding && it->kernel_h == 3) {
      sum3 += r.utilization;
      ++n3;
    }
  }
  double mean3 = n3 ? sum3 / n3 : 0;
  double worst = 1;
  for (const Row& r : rows)
    if (r.latency_hiding) worst = std::min(worst, r.of_roofline);
  if (json) {
    nlohmann::json j;
    j["config"] = cfg.name();
    j["device"] = device;
    j["dram_bytes_per_cycle"] = bw;
    for (const Row& r : rows) {
      j["layers"].push_back({{"name", r.name}, {"latency_hiding", r.latency_hiding}, {"cycles", r.cycles},
                             {"ideal_cycles", r.ideal}, {"utilization", r.utilization}, {"bytes", r.bytes},
                             {"roofline_cycles", r.roofline}, {"compute_bound_cycles", r.compute_bound}, {"model_cycles", r.estimate}, {"of_roofline", r.of_roofline}, {"knobs", r.knobs},
                             {"wall_s", r.wall_s}, {"build_s", r.build_s}});
    }
    j["mean_utilization_3x3_latency_hiding"] = mean3;
    j["worst_of_roofline_latency_hiding"] = worst;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format("mean GEMM utilization over the 3x3 layers with latency hiding: {:.1f}%\n", 100 * mean3);
    std::cout << fmt::format("worst layer with latency hiding: {:.1f}% of its roofline\n", 100 * worst);
  }
  return 0;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  try {
    return kiln::run(argc, argv);
  } catch (const kiln::Error& e) {  // the compiler's and the accelerator's alike
    std::cerr << "error: " << e.what() << "\n";
  }
  return 1;
}
