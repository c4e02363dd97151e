// kiln_bench_systemc: ResNet-18's convolutions C2..C12 (VTA backend, latency hiding)
// on the SystemC platform and on the rtl harness in one run.
//  - parity: the platform's memory at the rtl harness's timing (32 cycles, 8 bytes per
//    cycle each way): cycles on both (the same within 2% is the goal) and simulation
//    speed (simulated cycles per wall second) on both;
//  - --presets: every memory preset (cycles, GEMM utilization);
//  - --sweep GBPS,...: the rtl timing's latency at each bandwidth;
//  - --svg FILE: utilization against bandwidth per layer, from the sweep;
//  - --accelerators 1,2,4: that many accelerators on one memory (the rtl timing) each
//    running the layer at once: per-accelerator cycles, slowdown against one alone,
//    and throughput (layers per million cycles).
// Every output is checked against the CPU reference; a mismatch fails the run.
// Usage: kiln_bench_systemc [--layers C2,C4] [--presets] [--sweep 0.4,0.8,1.6]
//                           [--svg FILE] [--accelerators 1,2,4] [--json]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "bench/support/cpu_time.h"
#include "backend-vta/ops.h"
#include "backend-vta/reference.h"
#include "compiler/support/error.h"
#include "hw/driver/device.h"
#include "hw/driver/systemc/systemc_device.h"
#include "hw/sim/systemc/memory_model.h"
#include "hw/spec/error.h"
#include "support/error.h"

namespace kiln {
namespace {

using hw::regs::Counter;

struct Layer {
  vta::Conv2DWorkload wl;
  vta::Program program;
  std::vector<int8_t> data, kernel, want;
  std::vector<int32_t> bias;
  uint64_t ideal;
};

struct Run {
  uint64_t cycles;
  double wall_s;
  double cpu_s;  // the simulating thread's CPU time
};

// Progress on stderr with an ETA: the work is the layers' ideal cycles times the
// accelerators of each run (the rtl and systemc runs of a layer take about as long).
class Progress {
 public:
  void plan(double work) { total_ += work; }
  void done(double work, const std::string& what) {
    done_ += work;
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    double eta = done_ > 0 ? el * (total_ - done_) / done_ : 0;
    std::cerr << fmt::format("[{:3.0f}%] {}: elapsed {:.0f} s, ETA {:.0f} s\n", 100 * done_ / total_, what, el,
                             eta);
  }

 private:
  double total_ = 0, done_ = 0;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

// One run of `l` on a fresh device of `kind`; checks the output.
Run run_layer(const std::string& kind, const hw::Config& cfg, const vta::Env& env, const Layer& l,
              const driver::DeviceOptions& opts) {
  auto dev = driver::make_device(kind, cfg, opts);
  auto t0 = std::chrono::steady_clock::now();
  double c0 = bench_support::thread_cpu_seconds();
  vta::Conv2DResult r = vta::run_conv2d(*dev, l.program, vta::pack_data(env, l.wl, l.data),
                                        vta::pack_kernel(env, l.wl, l.kernel),
                                        vta::pack_bias(env, l.wl, l.bias));
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = bench_support::thread_cpu_seconds() - c0;
  if (vta::unpack_out(env, l.wl, r.out) != l.want)
    throw hw::Error(fmt::format("{} on {}: the output differs from the CPU reference", l.wl.name, kind));
  return {r.counters.at(Counter::kCycles), wall, cpu};
}

// `l` on every device of one platform at once, one thread each; the cycles of each.
std::vector<uint64_t> run_shared(const hw::Config& cfg, const vta::Env& env, const Layer& l,
                                 driver::DeviceOptions opts, int n) {
  opts.accelerators = n;
  opts.dram_bytes *= uint64_t(n);
  auto devs = driver::make_systemc_devices(cfg, opts);
  std::vector<uint64_t> cycles(static_cast<size_t>(n), 0);
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      try {
        vta::Conv2DResult r = vta::run_conv2d(*devs[size_t(i)], l.program, vta::pack_data(env, l.wl, l.data),
                                              vta::pack_kernel(env, l.wl, l.kernel),
                                              vta::pack_bias(env, l.wl, l.bias));
        if (vta::unpack_out(env, l.wl, r.out) != l.want) errors[size_t(i)] = "output differs from the reference";
        cycles[size_t(i)] = r.counters.at(Counter::kCycles);
      } catch (const std::exception& e) {
        errors[size_t(i)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < n; ++i)
    if (!errors[size_t(i)].empty())
      throw hw::Error(fmt::format("{} on accelerator {} of {}: {}", l.wl.name, i, n, errors[size_t(i)]));
  return cycles;
}

std::string svg_plot(const std::vector<double>& gbps, const std::vector<Layer>& layers,
                     const std::vector<std::vector<double>>& util) {
  const double w = 640, h = 400, x0 = 60, y0 = 340, pw = 540, ph = 300;
  double lo = std::log2(gbps.front()), hi = std::log2(gbps.back());
  if (hi <= lo) hi = lo + 1;
  auto px = [&](double g) { return x0 + (std::log2(g) - lo) / (hi - lo) * pw; };
  auto py = [&](double u) { return y0 - u * ph; };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"20\" font-size=\"13\">GEMM utilization against memory bandwidth "
      "(SystemC platform, 100 MHz, latency 32 cycles)</text>\n",
      w, h, x0, 0);
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", x0, y0, x0 + pw, y0);
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", x0, y0, x0, y0 - ph);
  for (double g : gbps)
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(g), y0 + 15, g);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">GB/s each way (log scale)</text>\n",
                   x0 + pw / 2, y0 + 32);
  for (int k = 0; k <= 4; ++k)
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}%</text>\n", x0 - 5,
                     py(k / 4.0) + 4, k * 25);
  const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                          "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000"};
  for (size_t i = 0; i < layers.size(); ++i) {
    std::string pts;
    for (size_t k = 0; k < gbps.size(); ++k) pts += fmt::format("{:.1f},{:.1f} ", px(gbps[k]), py(util[i][k]));
    const char* c = colors[i % 11];
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", c, pts);
    s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>\n", x0 + pw + 8, 60 + 14 * i, c,
                     layers[i].wl.name);
  }
  return s + "</svg>\n";
}

int run(int argc, char** argv) {
  CLI::App app{"ResNet-18 convolutions on the SystemC platform and the rtl harness"};
  std::string config = std::string(KILN_CONFIG_DIR) + "/default.json";
  std::string layers_arg, sweep_arg, svg, accel_arg;
  bool json = false, presets = false, no_rtl = false;
  app.add_option("--config", config, "accelerator configuration file");
  app.add_option("--layers", layers_arg, "comma-separated subset of C2..C12");
  app.add_flag("--presets", presets, "also run every memory preset");
  app.add_option("--sweep", sweep_arg, "also run at these bandwidths (GB/s each way at 100 MHz)");
  app.add_option("--svg", svg, "write utilization against bandwidth (from --sweep) here");
  app.add_option("--accelerators", accel_arg, "also run N accelerators on one memory, for each N listed");
  app.add_flag("--no-rtl", no_rtl, "skip the rtl harness (and the parity section)");
  app.add_flag("--json", json, "print one JSON object");
  CLI11_PARSE(app, argc, argv);
  if (!svg.empty() && sweep_arg.empty()) throw hw::Error("--svg plots the --sweep; give --sweep too");

  hw::Config cfg = hw::Config::from_file(config);
  vta::Env env(cfg);
  std::vector<std::string> wanted;
  std::stringstream ss(layers_arg);
  for (std::string l; std::getline(ss, l, ',');) wanted.push_back(l);
  std::vector<double> sweep;
  std::stringstream sw(sweep_arg);
  for (std::string g; std::getline(sw, g, ',');) sweep.push_back(std::stod(g));
  std::sort(sweep.begin(), sweep.end());

  vta::Requant rq;
  rq.shift = 8;
  std::vector<Layer> layers;
  for (const vta::Conv2DWorkload& wl : vta::resnet18_conv_workloads(cfg.batch())) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), wl.name) == wanted.end()) continue;
    vta::Conv2DTensors t = vta::random_conv2d_tensors(wl, 7);
    Layer l{wl, vta::build_conv2d(env, wl, rq, vta::default_conv2d_knobs(env, wl, rq, true)), t.data,
            t.kernel, {}, t.bias,
            uint64_t(wl.macs() / (int64_t{cfg.batch()} * cfg.block_in() * cfg.block_out()))};
    l.want = vta::reference_conv2d(wl, rq, l.data, l.kernel, l.bias);
    layers.push_back(std::move(l));
  }
  driver::DeviceOptions opts = vta::default_device_options();
  std::vector<int> counts;
  std::stringstream as(accel_arg);
  for (std::string a; std::getline(as, a, ',');) counts.push_back(std::stoi(a));

  Progress progress;
  for (const Layer& l : layers) {
    double w = double(l.ideal);
    int sets = 1 + (no_rtl ? 0 : 1) + (presets ? int(sim::sc::memory_presets().size()) : 0) + int(sweep.size());
    progress.plan(w * sets);
    if (!counts.empty()) progress.plan(w);  // alone
    for (int n : counts)
      if (n > 1) progress.plan(w * n);
  }

  nlohmann::ordered_json j;
  j["config"] = cfg.name();
  nlohmann::ordered_json parity = nlohmann::ordered_json::array();
  uint64_t rtl_cycles = 0, sc_cycles = 0;
  double rtl_wall = 0, sc_wall = 0, rtl_cpu = 0, sc_cpu = 0;
  for (const Layer& l : layers) {
    Run sc = run_layer("systemc", cfg, env, l, opts);
    progress.done(double(l.ideal), l.wl.name + " on systemc");
    nlohmann::ordered_json row = {{"layer", l.wl.name}, {"systemc_cycles", sc.cycles},
                                  {"systemc_wall_s", sc.wall_s}, {"systemc_cpu_s", sc.cpu_s},
                                  {"ideal_cycles", l.ideal}};
    sc_cycles += sc.cycles;
    sc_wall += sc.wall_s;
    sc_cpu += sc.cpu_s;
    if (!no_rtl) {
      Run rtl = run_layer("rtl", cfg, env, l, opts);
      progress.done(double(l.ideal), l.wl.name + " on rtl");
      rtl_cycles += rtl.cycles;
      rtl_wall += rtl.wall_s;
      rtl_cpu += rtl.cpu_s;
      row["rtl_cycles"] = rtl.cycles;
      row["rtl_wall_s"] = rtl.wall_s;
      row["rtl_cpu_s"] = rtl.cpu_s;
      row["cycle_difference"] = double(sc.cycles) / double(rtl.cycles) - 1;
    }
    if (!json)
      std::cout << fmt::format("{:4} systemc {:>9} cycles {:6.1f}s", l.wl.name, sc.cycles, sc.wall_s)
                << (no_rtl ? std::string()
                           : fmt::format("   rtl {:>9} cycles {:6.1f}s   difference {:+.2f}%",
                                         row["rtl_cycles"].get<uint64_t>(), row["rtl_wall_s"].get<double>(),
                                         100 * row["cycle_difference"].get<double>()))
                << "\n";
    parity.push_back(row);
  }
  j["rtl_timing"] = parity;
  // Speeds per wall second and per CPU second of the simulating thread; on a shared
  // machine only the CPU figures compare.
  double sc_speed = double(sc_cycles) / sc_wall, sc_cpu_speed = double(sc_cycles) / sc_cpu;
  j["systemc_cycles_per_second"] = sc_speed;
  j["systemc_cycles_per_cpu_second"] = sc_cpu_speed;
  if (!no_rtl) {
    double rtl_speed = double(rtl_cycles) / rtl_wall, rtl_cpu_speed = double(rtl_cycles) / rtl_cpu;
    j["rtl_cycles_per_second"] = rtl_speed;
    j["rtl_cycles_per_cpu_second"] = rtl_cpu_speed;
    j["speed_ratio_systemc_to_rtl"] = sc_speed / rtl_speed;
    j["cpu_speed_ratio_systemc_to_rtl"] = sc_cpu_speed / rtl_cpu_speed;
    j["total_cycle_difference"] = double(sc_cycles) / double(rtl_cycles) - 1;
    if (!json)
      std::cout << fmt::format("total: systemc {} cycles, rtl {} ({:+.2f}%); speed per CPU second systemc {:.0f} "
                               "cycles/s, rtl {:.0f} ({:.2f}x); per wall second {:.2f}x\n",
                               sc_cycles, rtl_cycles, 100 * j["total_cycle_difference"].get<double>(),
                               sc_cpu_speed, rtl_cpu_speed, sc_cpu_speed / rtl_cpu_speed, sc_speed / rtl_speed);
  }

  if (presets) {
    nlohmann::ordered_json pj = nlohmann::ordered_json::array();
    for (const auto& p : sim::sc::memory_presets()) {
      driver::DeviceOptions o = opts;
      o.memory = p.name;
      for (const Layer& l : layers) {
        Run r = run_layer("systemc", cfg, env, l, o);
        progress.done(double(l.ideal), fmt::format("{} with {}", l.wl.name, p.name));
        double util = double(l.ideal) / double(r.cycles);
        pj.push_back({{"preset", p.name}, {"layer", l.wl.name}, {"cycles", r.cycles}, {"utilization", util}});
        if (!json)
          std::cout << fmt::format("{:16} {:4} {:>9} cycles, GEMM utilization {:5.1f}%\n", p.name, l.wl.name,
                                   r.cycles, 100 * util);
      }
    }
    j["presets"] = pj;
  }

  if (!sweep.empty()) {
    nlohmann::ordered_json sj = nlohmann::ordered_json::array();
    std::vector<std::vector<double>> util(layers.size());
    for (double g : sweep) {
      driver::DeviceOptions o = opts;
      o.dram_gbps = g;
      for (size_t i = 0; i < layers.size(); ++i) {
        Run r = run_layer("systemc", cfg, env, layers[i], o);
        progress.done(double(layers[i].ideal), fmt::format("{} at {} GB/s", layers[i].wl.name, g));
        double u = double(layers[i].ideal) / double(r.cycles);
        util[i].push_back(u);
        sj.push_back({{"gbps", g}, {"layer", layers[i].wl.name}, {"cycles", r.cycles}, {"utilization", u}});
        if (!json)
          std::cout << fmt::format("{:6.2f} GB/s {:4} {:>9} cycles, GEMM utilization {:5.1f}%\n", g,
                                   layers[i].wl.name, r.cycles, 100 * u);
      }
    }
    j["sweep"] = sj;
    if (!svg.empty()) {
      std::ofstream out(svg);
      out << svg_plot(sweep, layers, util);
      if (!out) throw hw::Error(fmt::format("cannot write {}", svg));
    }
  }
  if (!counts.empty()) {
    driver::DeviceOptions o = opts;
    o.dram_bytes = uint64_t{64} << 20;
    nlohmann::ordered_json aj = nlohmann::ordered_json::array();
    for (const Layer& l : layers) {
      uint64_t alone = run_shared(cfg, env, l, o, 1).front();
      progress.done(double(l.ideal), l.wl.name + " alone");
      for (int n : counts) {
        std::vector<uint64_t> c = n == 1 ? std::vector<uint64_t>{alone} : run_shared(cfg, env, l, o, n);
        if (n > 1) progress.done(double(l.ideal) * n, fmt::format("{} on {} accelerators", l.wl.name, n));
        uint64_t worst = *std::max_element(c.begin(), c.end());
        double slowdown = double(worst) / double(alone);
        double throughput = 1e6 * n / double(worst);
        aj.push_back({{"layer", l.wl.name}, {"accelerators", n}, {"cycles", c},
                      {"slowdown", slowdown}, {"layers_per_mcycle", throughput}});
        if (!json)
          std::cout << fmt::format("{:4} x{} accelerators: slowest {:>9} cycles ({:.2f}x alone), {:.2f} layers "
                                   "per million cycles\n",
                                   l.wl.name, n, worst, slowdown, throughput);
      }
    }
    j["accelerators"] = aj;
  }
  if (json) std::cout << j.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  try {
    return kiln::run(argc, argv);
  } catch (const kiln::Error& e) {  // the compiler's and the accelerator's alike
    std::cerr << "error: " << e.what() << "\n";
  } catch (const std::exception& e) {  // a number that does not parse (--sweep, --accelerators)
    std::cerr << "error: " << e.what() << "\n";
  }
  return 1;
}
