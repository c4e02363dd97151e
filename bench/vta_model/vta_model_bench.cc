// kiln_bench_vta_model: a quantized ONNX model (kiln quantize's QDQ output) compiled
// for the accelerator and run whole on a device (the Verilated RTL by default, with
// its default DRAM model): per accelerator kernel its cycles, ideal cycles, GEMM
// utilization and DRAM bytes; in total the accelerator's cycles (beside Apache VTA's
// published ~31 M cycles for ResNet-18 in its simulator), the host kernels' time and
// the simulation's wall time. The output must equal the CPU's execution of the same
// quantized graph bit for bit, or the run fails. With --float MODEL.onnx, the int8
// model is compared with the float model over --samples inputs: top-1 agreement and
// the SQNR of the output. The int8 model runs there on the CPU (--accuracy-on cpu), or
// with the accelerator on fsim (--accuracy-on fsim: faster where the CPU's int8
// kernels are slow; fsim's results are bit-exact with the RTL's and the CPU's, which
// the first input checks again).
// Usage: kiln_bench_vta_model MODEL.q.onnx [--config NAME] [--device rtl|fsim]
//                             [--float MODEL.onnx --samples N [--accuracy-on cpu|fsim]] [--json]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>

#include "backend-cpu/graph_backend.h"
#include "backend-vta/graph_target.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "compiler/support/error.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

graph::Executor build(const graph::Graph& g, const std::string& target, std::vector<graph::Placement>* placement = nullptr) {
  graph::CompileOptions o;
  o.target = target::Target::parse(target);
  graph::CompiledModel m = graph::compile(g, o);
  if (placement) *placement = m.placement;
  return graph::make_executor(m);  // the host kernels on the target's host
}

// Input 0 filled with uniform floats in [-1, 1] from a seed.
std::vector<float> random_input(const graph::Executor& ex, uint32_t seed) {
  if (ex.input_type(0).dtype != ir::DataType::Float(32)) throw CompileError("the model's first input is not float32");
  std::vector<float> x(static_cast<size_t>(ex.input_type(0).size()));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto& v : x) v = d(rng);
  return x;
}

std::vector<float> run(graph::Executor& ex, const std::vector<float>& x) {
  ex.set_input(0, x.data(), static_cast<int64_t>(x.size() * sizeof(float)));
  ex.run();
  if (ex.output_type(0).dtype != ir::DataType::Float(32)) throw CompileError("the model's first output is not float32");
  std::vector<float> y(static_cast<size_t>(ex.output_type(0).size()));
  std::memcpy(y.data(), ex.output(0), y.size() * sizeof(float));
  return y;
}

size_t argmax(const std::vector<float>& v) { return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin()); }

int main_impl(int argc, char** argv) {
  CLI::App app{"A quantized model on the accelerator, whole"};
  std::string model, float_model, config = "default", device = "rtl";
  std::string accuracy_on = "cpu";
  int samples = 100;
  bool json = false;
  app.add_option("model", model, "MODEL.q.onnx (kiln quantize)")->required();
  app.add_option("--config", config, "the configuration")->capture_default_str();
  app.add_option("--device", device, "the device that runs the accelerator's kernels")->capture_default_str();
  app.add_option("--float", float_model, "the float model, for top-1 agreement and SQNR");
  app.add_option("--samples", samples, "inputs for the accuracy figures")->capture_default_str();
  app.add_option("--accuracy-on", accuracy_on, "where the int8 model runs for them: cpu, or fsim (with the accelerator)")
      ->check(CLI::IsMember({"cpu", "fsim"}))
      ->capture_default_str();
  app.add_flag("--json", json, "one JSON object");
  CLI11_PARSE(app, argc, argv);
  cpu::register_graph_backend();
  vta::register_graph_target();

  graph::Graph g = frontend::import_onnx_file(model);
  std::string target = fmt::format("vta -config={} -device={}", config, device);
  auto t0 = Clock::now();
  std::vector<graph::Placement> placement;
  graph::Executor accel = build(g, target, &placement);
  double compile_s = seconds_since(t0);
  graph::Executor host = build(g, "cpu");
  std::vector<float> x = random_input(host, 1);
  std::vector<float> want = run(host, x);
  t0 = Clock::now();
  accel.set_input(0, x.data(), static_cast<int64_t>(x.size() * sizeof(float)));
  std::vector<double> ms = accel.run_profiled();
  double run_s = seconds_since(t0);
  std::vector<float> got(want.size());
  std::memcpy(got.data(), accel.output(0), got.size() * sizeof(float));
  bool exact = got == want;

  nlohmann::json j{{"model", model}, {"target", accel.plan().accelerator}, {"compile_s", compile_s},
                   {"run_wall_s", run_s}, {"bit_exact_with_cpu", exact}};
  int placed = 0;
  for (const auto& p : placement) {
    placed += p.target != "cpu";
    if (p.target == "cpu") j["on_cpu"].push_back({{"node", p.node}, {"op", p.op}, {"reason", p.reason}});
  }
  j["placed"] = placed;
  j["candidates"] = placement.size();
  graph::AcceleratorReport r = graph::accelerator_report(accel, ms);
  for (const auto& l : r.layers) {
    nlohmann::json jl{{"kernel", l.kernel}, {"simulation_ms", l.ms}};
    for (const auto& [key, v] : l.values) jl[key] = v;
    j["layers"].push_back(jl);
  }
  double cycles = r.cycles, uops = r.ideal_cycles, bytes = r.dram_bytes, host_ms = r.host_ms;
  j["accelerator_cycles"] = cycles;
  j["ideal_cycles"] = uops;
  j["gemm_utilization"] = r.utilization();
  j["dram_bytes"] = bytes;
  j["host_ms"] = host_ms;
  j["accelerator_simulation_ms"] = r.accelerator_ms;
  j["apache_vta_resnet18_cycles"] = 31e6;

  if (!float_model.empty()) {
    graph::Executor fp = build(frontend::import_onnx_file(float_model), "cpu");
    std::optional<graph::Executor> on_fsim;
    if (accuracy_on == "fsim") {
      on_fsim.emplace(build(g, fmt::format("vta -config={} -device=fsim", config)));
      if (run(*on_fsim, x) != want) throw CompileError("the accelerator on fsim differs from the CPU");
    }
    graph::Executor& quantized = on_fsim ? *on_fsim : host;
    int agree = 0;
    std::set<size_t> classes;  // the float model's top-1 classes: few means the agreement says little
    double signal = 0, noise = 0;
    auto t_acc = Clock::now();
    for (int s = 0; s < samples; ++s) {
      std::vector<float> in = random_input(fp, 1000 + static_cast<uint32_t>(s));
      std::vector<float> yf = run(fp, in), yq = run(quantized, in);
      agree += argmax(yf) == argmax(yq);
      classes.insert(argmax(yf));
      for (size_t i = 0; i < yf.size(); ++i) signal += double(yf[i]) * yf[i], noise += double(yf[i] - yq[i]) * (yf[i] - yq[i]);
      if ((s + 1) % 10 == 0 || s + 1 == samples) {
        double el = seconds_since(t_acc);
        fmt::print(stderr, "accuracy: {}/{} inputs, elapsed {:.0f} s, ETA {:.0f} s\n", s + 1, samples, el,
                   el / (s + 1) * (samples - s - 1));
      }
    }
    j["samples"] = samples;
    j["accuracy_on"] = accuracy_on;
    j["distinct_top1_classes"] = classes.size();
    j["top1_agreement"] = static_cast<double>(agree) / samples;
    j["sqnr_db"] = 10 * std::log10(signal / std::max(noise, 1e-30));
  }

  if (json) {
    std::cout << j.dump(2) << "\n";
  } else {
    fmt::print("{} on {}: {} of {} candidate operators on the accelerator (compiled in {:.1f} s)\n", model,
               accel.plan().accelerator, placed, placement.size(), compile_s);
    for (const auto& l : j["layers"])
      fmt::print("  {:>10.0f} cycles {:>10.0f} ideal {:>5.1f}%  {:>8.1f} KB  {}\n", l.value("cycles", 0.0),
                 l["gemm_uops"].get<double>(), 100 * l.value("gemm_utilization", 0.0), l["dram_bytes"].get<double>() / 1024,
                 l["kernel"].get<std::string>());
    fmt::print("accelerator: {:.3f} M cycles ({:.3f} M ideal, GEMM utilization {:.1f}%), Apache VTA ~31 M; {:.1f} MB DRAM\n",
               cycles / 1e6, uops / 1e6, 100 * (cycles > 0 ? uops / cycles : 0), bytes / 1e6);
    fmt::print("host kernels {:.1f} ms; simulation {:.1f} s wall for the whole run\n", host_ms, run_s);
    fmt::print("output {} the CPU's execution of the same graph\n", exact ? "equals" : "DIFFERS FROM");
    if (j.contains("top1_agreement"))
      fmt::print("int8 ({}) against float over {} inputs: top-1 agreement {:.1f}% ({} distinct float top-1 classes), SQNR "
                 "{:.1f} dB\n",
                 accuracy_on, samples, 100 * j["top1_agreement"].get<double>(), j["distinct_top1_classes"].get<size_t>(),
                 j["sqnr_db"].get<double>());
  }
  return exact ? 0 : 1;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  try {
    return kiln::main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "kiln_bench_vta_model: " << e.what() << "\n";
    return 1;
  }
}
