// kiln run / kiln compile: ONNX models (or compiled .kiln models) on a backend from
// the registry (compiler/target). Backends must be registered before the command
// line is parsed (main registers the CPU backend).

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "backend-cpu/runtime/tensor.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "compiler/support/error.h"
#include "compiler/support/parse.h"
#include "compiler/target/backend.h"
#include "compiler/target/target.h"
#include "support/statistics.h"
#include "tools/kiln/common.h"
#include "tools/kiln/device_flags.h"
#ifdef KILN_HAVE_TUNER
#include <iostream>

#include "tuner/apply.h"
#endif
#ifdef KILN_HAVE_TUNER_VTA
#include "tuner/vta_templates.h"
#endif

namespace kiln::cli {

namespace {

struct RunArgs {
  std::string model, target = "cpu", output_model, records;
  std::string config, device;  // an accelerator target's -config and -device
  std::string trace;           // the whole inference's timeline (an accelerator on rtl)
  DeviceFlags device_flags;    // the accelerator's device settings (--dram-latency, --memory, ...)
  std::string calibrate;       // quantize on the fly with these calibration inputs
  std::vector<std::string> input_shapes;  // NAME=1x3x224x224: fixes an input's (symbolic) shape
  std::vector<std::string> inputs, outputs;
  int repeat = 0;  // 0: 10 on the host, 1 with an accelerator (a simulation is slow)
  bool json = false;
};

target::Target target_of(const RunArgs& a);

// Compile options: with --records, the best tuning record of each convolution and
// matrix product schedules it (the tuner warns about those without one).
graph::CompileOptions compile_options(const RunArgs& a) {
  graph::CompileOptions o;
  o.target = target_of(a);
  if (a.records.empty()) return o;
#ifdef KILN_HAVE_TUNER
  // A GPU's records are its kind's ("opencl", "cuda"; kiln tune --target opencl).
  const bool gpu = o.target.is_host() && !o.target.is_cpu() &&
                   target::make_backend(o.target.kind())->traits(o.target.str()).is_gpu();
  o.schedule_hook = tuner::records_hook(a.records, std::cerr, nullptr, gpu ? o.target.kind() : "cpu");
  if (o.target.kind() == "vta") {
#ifdef KILN_HAVE_TUNER_VTA
    // The accelerator's convolutions take the best `kiln tune --target vta` record
    // of their shape and configuration.
    tuner::register_vta_templates(load_config(o.target.option("config", "default")));
    o.knob_hook = tuner::knobs_hook(a.records, std::cerr);
#else
    throw CompileError("--records with --target vta: this kiln was built without the accelerator's tuner");
#endif
  }
#else
  throw CompileError("--records: this kiln was built without the tuner");
#endif
  return o;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Where the device writes its own timeline, which write_inference_trace() merges.
std::string device_trace_path(const RunArgs& a) { return a.trace + ".device.json"; }

// The target of the compilation; --config and --device fill an accelerator's options.
target::Target target_of(const RunArgs& a) {
  auto given = a.device_flags.given();
  target::Target t = target::Target::parse(a.target);
  if (t.is_host()) {
    if (!a.config.empty() || !a.device.empty() || !given.empty())
      throw CompileError("--config, --device and the device flags apply to an accelerator target (--target vta), not to " +
                         a.target);
    return t;
  }
  if (!a.config.empty() && !t.has_option("config")) t.set_option("config", a.config);
  if (!a.device.empty() && !t.has_option("device")) t.set_option("device", a.device);
  // The device flags become the target's options (-dram_latency=64), checked here so
  // that an error names the flag as it was given.
  a.device_flags.options(t.option("device", "fsim"));
  for (const auto& [setting, value] : given)
    if (!t.has_option(std::string(setting->name))) t.set_option(std::string(setting->name), value);
  if (!a.trace.empty()) {
    std::string device = t.option("device", "fsim");
    if (device != "rtl" && device != "systemc")
      throw CompileError("--trace needs a device with a clock: --device rtl or systemc (the target's is " + device + ")");
    t.set_option("trace", device_trace_path(a));
  }
  t.check();  // the options the flags added are the kind's (an accelerator of a plugin takes its own)
  return t;
}

// Where each candidate operator went (an accelerator target), one line per operator
// that stayed on the host with the reason.
void print_placement(const graph::CompiledModel& m) {
  if (m.placement.empty()) return;
  size_t placed = 0;
  for (const auto& p : m.placement) placed += p.target != "cpu";
  fmt::print("placement on {}: {} of {} operators on the accelerator\n", m.target.str(), placed, m.placement.size());
  // Grouped by reason: a float model would otherwise print one line per layer.
  std::map<std::string, std::vector<const graph::Placement*>> by_reason;
  for (const auto& p : m.placement)
    if (p.target == "cpu") by_reason[p.reason].push_back(&p);
  for (const auto& [reason, ps] : by_reason) {
    if (ps.size() <= 3) {
      for (const auto* p : ps) fmt::print("  on the CPU: {} ({}): {}\n", p->node, p->op, reason);
      continue;
    }
    fmt::print("  on the CPU: {} operators ({}, ...): {}\n", ps.size(), ps[0]->node, reason);
  }
  if (placed == 0)
    fmt::print("  no operator of this model runs on the accelerator, so it runs on the CPU"
               " (a float model needs `kiln quantize` first)\n");
}

// The model to compile: MODEL.onnx, or with --calibrate the model kiln quantize would
// write from it (max calibration, power-of-two scales, the first convolution in float).
// --input-shape NAME=DxDx... or --input NAME=FILE.npy: the input's shape, replacing the
// model's (its symbolic dimensions, which otherwise take 1).
frontend::OnnxOptions onnx_options(const RunArgs& a) {
  frontend::OnnxOptions o;
  for (const std::string& spec : a.input_shapes) {
    size_t eq = spec.find('=');
    std::string name = spec.substr(0, eq);
    if (eq == std::string::npos || name.empty() || eq + 1 == spec.size())
      throw CompileError("--input-shape '" + spec + "': give NAME=DIMxDIMx... (e.g. input=1x3x224x224)");
    std::vector<int64_t> shape;
    std::string dims = spec.substr(eq + 1);
    size_t start = 0;
    while (start <= dims.size()) {
      size_t x = dims.find('x', start);
      std::string d = dims.substr(start, x == std::string::npos ? std::string::npos : x - start);
      int64_t v = parse_int(d).value_or(0);
      if (v < 1)
        throw CompileError("--input-shape '" + spec + "': '" + d + "' is not a positive dimension");
      shape.push_back(v);
      if (x == std::string::npos) break;
      start = x + 1;
    }
    if (!o.input_shapes.emplace(name, shape).second) throw CompileError("--input-shape: '" + name + "' given twice");
  }
  // An input given as a file takes that file's shape (its symbolic dimensions, "batch"
  // and "sequence", are what the file holds), unless --input-shape names it.
  for (const std::string& spec : a.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) throw CompileError("--input takes NAME=FILE.npy, not '" + spec + "'");
    std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    std::vector<int64_t> shape;
    try {
      shape = cpu::NDArray::load_npy(file).shape();
    } catch (const std::exception&) {
      continue;  // reported once the inputs are set, after the input's name is checked
    }
    auto given = o.input_shapes.emplace(name, shape).first;
    if (given->second != shape)
      throw CompileError(fmt::format("input '{}': --input-shape gives [{}], {} holds [{}]", name, fmt::join(given->second, ", "),
                                     file, fmt::join(shape, ", ")));
  }
  return o;
}

graph::Graph import_model(const RunArgs& a) {
  frontend::OnnxOptions opt = onnx_options(a);
  if (a.calibrate.empty()) {
    graph::Graph g = frontend::import_onnx_file(a.model, opt);
    for (const std::string& spec : a.input_shapes) {
      std::string name = spec.substr(0, spec.find('='));
      bool found = false;
      for (graph::NodeId in : g.inputs()) found |= g.node(in).name == name;
      if (!found) throw CompileError(a.model + " has no input '" + name + "'");
    }
    return g;
  }
  if (!a.input_shapes.empty()) throw CompileError("--input-shape with --calibrate: the calibration inputs give the shape");
  quantize::Report r;
  std::string q = quantize_file(a.model, a.calibrate, quantize::Options{}, &r);
  if (!a.json)
    fmt::print("quantized on the fly: {} nodes (power2 scales), calibrated on {} inputs of {}\n", r.quantized_nodes, r.samples,
               a.calibrate);
  return frontend::import_onnx_bytes(q, {}, a.model + " (quantized)");
}

graph::Executor build(const RunArgs& a, size_t* num_kernels, double* compile_ms) {
  auto t0 = std::chrono::steady_clock::now();
  if (ends_with(a.model, ".kiln")) {
    target::Target::parse(a.target);  // a bad --target is an error here too, though the model names its own
    if (!a.records.empty()) throw CompileError("--records applies when compiling MODEL.onnx; " + a.model + " is compiled already");
    if (!a.trace.empty()) throw CompileError("--trace applies when compiling MODEL.onnx; " + a.model + " is compiled already");
    if (!a.calibrate.empty() || !a.input_shapes.empty())
      throw CompileError("--calibrate and --input-shape apply when compiling MODEL.onnx; " + a.model + " is compiled already");
    graph::Executor ex = graph::load_model(a.model);
    *num_kernels = ex.plan().kernels.size();
    *compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return ex;
  }
  graph::CompileOptions options = compile_options(a);  // the target's errors before the model's
  graph::Graph g = import_model(a);
  graph::CompiledModel m = graph::compile(g, options);
  if (!a.json) print_placement(m);
  *num_kernels = m.kernels.size();
  graph::Executor ex = graph::make_executor(m);  // the host kernels on the target's host
  *compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return ex;
}

}  // namespace

void set_inputs(graph::Executor& ex, const std::vector<std::string>& specs) {
  std::map<std::string, std::string> files;
  for (const auto& s : specs) {
    auto eq = s.find('=');
    if (eq == std::string::npos) throw CompileError("--input takes NAME=FILE.npy, not '" + s + "'");
    files[s.substr(0, eq)] = s.substr(eq + 1);
  }
  std::mt19937 rng(0);
  for (size_t k = 0; k < ex.num_inputs(); ++k) {
    const auto& in = ex.plan().inputs[k];
    auto it = files.find(in.name);
    cpu::NDArray arr;
    if (it != files.end()) {
      arr = cpu::NDArray::load_npy(it->second).contiguous();
      if (arr.dtype() != in.type.dtype || arr.shape() != in.type.shape)
        throw CompileError(fmt::format("input '{}': {} holds {}[{}], the model takes {}", in.name, it->second,
                                       arr.dtype().to_string(), fmt::join(arr.shape(), ", "), in.type.to_string()));
      files.erase(it);
    } else {
      arr = cpu::NDArray::empty(in.type.shape, in.type.dtype);
      // Floats in [-1, 1] (half types rounded from them), integers in [0, 10).
      const ir::DataType t = in.type.dtype;
      std::uniform_real_distribution<float> real(-1, 1);
      std::uniform_int_distribution<int> integer(0, 9);
      for (int64_t i = 0; i < arr.size(); ++i) {
        if (t == ir::DataType::Float(32)) arr.data_as<float>()[i] = real(rng);
        else if (t == ir::DataType::Float(64)) arr.data_as<double>()[i] = real(rng);
        else if (t == ir::DataType::Float(16)) arr.data_as<uint16_t>()[i] = ir::float_to_half_bits(real(rng));
        else if (t == ir::DataType::BFloat16()) arr.data_as<uint16_t>()[i] = ir::float_to_bfloat_bits(real(rng));
        else if (t == ir::DataType::Int(64)) arr.data_as<int64_t>()[i] = integer(rng);
        else if (t == ir::DataType::Int(32)) arr.data_as<int32_t>()[i] = integer(rng);
        else throw CompileError(fmt::format("input '{}' ({}): give it with --input", in.name, in.type.to_string()));
      }
    }
    ex.set_input(k, arr.data(), arr.nbytes());
  }
  if (!files.empty()) throw CompileError("the model has no input named '" + files.begin()->first + "'");
}

namespace {

// The accelerator's figures of the last run as JSON: per kernel and in total, and the
// host's share of the time (Amdahl).
nlohmann::json accelerator_json(const graph::Executor& ex, const std::vector<double>& kernel_ms) {
  nlohmann::json j;
  if (!ex.accelerator()) return j;
  graph::AcceleratorReport r = graph::accelerator_report(ex, kernel_ms);
  for (const auto& l : r.layers) {
    nlohmann::json jl{{"kernel", l.kernel}, {"simulation_ms", l.ms}};
    for (const auto& [key, v] : l.values) jl[key] = v;
    j["layers"].push_back(jl);
  }
  j["target"] = ex.plan().accelerator;
  j["accelerator_cycles"] = r.cycles;
  j["ideal_cycles"] = r.ideal_cycles;
  j["gemm_utilization"] = r.utilization();
  j["dram_bytes"] = r.dram_bytes;
  j["host_bytes"] = r.host_bytes;
  j["host_ms"] = r.host_ms;
  j["simulation_ms"] = r.accelerator_ms;
  return j;
}

void print_accelerator_report(const nlohmann::json& j) {
  if (j.is_null()) return;
  fmt::print("accelerator ({}): {} kernels\n", j["target"].get<std::string>(), j["layers"].size());
  fmt::print("  {:>12} {:>12} {:>6} {:>10} {:>10}  kernel\n", "cycles", "ideal", "util", "DRAM KB", "sim ms");
  for (const auto& l : j["layers"])
    fmt::print("  {:>12.0f} {:>12.0f} {:>5.1f}% {:>10.1f} {:>10.1f}  {}\n", l.value("cycles", 0.0), l["gemm_uops"].get<double>(),
               100 * l.value("gemm_utilization", 0.0), l["dram_bytes"].get<double>() / 1024, l["simulation_ms"].get<double>(),
               l["kernel"].get<std::string>());
  double cycles = j["accelerator_cycles"].get<double>();
  if (cycles > 0)
    fmt::print("  total: {:.3f} M cycles ({:.3f} M ideal, GEMM utilization {:.1f}%), {:.1f} MB of DRAM traffic\n", cycles / 1e6,
               j["ideal_cycles"].get<double>() / 1e6, 100 * j["gemm_utilization"].get<double>(),
               j["dram_bytes"].get<double>() / 1e6);
  fmt::print("  host kernels {:.3f} ms, accelerator kernels (simulated, wall time) {:.1f} ms, {:.1f} KB copied between host "
             "and device\n",
             j["host_ms"].get<double>(), j["simulation_ms"].get<double>(), j["host_bytes"].get<double>() / 1024);
}

// One Chrome/Perfetto timeline of the first inference: the device's tracks (its runs
// and the fetch, load, compute and store modules, in cycles as microseconds) with a
// host track beside them, the host's kernels placed between the accelerator's runs at
// `clock_mhz` (host time is this machine's wall-clock time, converted to cycles).
void write_inference_trace(const RunArgs& a, const graph::Executor& ex, const std::vector<double>& kernel_ms,
                           double clock_mhz) {
  std::string device_path = device_trace_path(a);
  std::ifstream in(device_path);
  if (!in) throw CompileError("--trace: the device wrote no timeline to " + device_path);
  nlohmann::json dev;
  try {
    dev = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw CompileError(fmt::format("--trace: {}: {}", device_path, e.what()));
  }
  in.close();
  std::filesystem::remove(device_path);
  // The accelerator's runs, in order: [start, end) in device cycles.
  std::vector<std::pair<double, double>> runs;
  for (const auto& e : dev["traceEvents"])
    if (e.value("cat", "") == "run") runs.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
  nlohmann::json events = nlohmann::json::array();
  int host_pid = 1;  // after the device's processes (systemc: its accelerators and memory)
  for (const auto& e : dev["traceEvents"]) host_pid = std::max(host_pid, e.value("pid", 0) + 1);
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", host_pid}, {"args", {{"name", "host CPU"}}}});
  events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", host_pid}, {"tid", 0}, {"args", {{"name", "kernels"}}}});
  // Walk the plan: host kernels advance the clock by their time, accelerator kernels by
  // their run; `shift` maps the device's own cycles onto the merged timeline.
  double now = 0;
  std::vector<double> shift;
  size_t run = 0;
  for (size_t k = 0; k < ex.plan().kernels.size(); ++k) {
    const auto& pk = ex.plan().kernels[k];
    if (pk.on_accelerator) {
      if (run >= runs.size()) break;
      shift.push_back(now - runs[run].first);
      now += runs[run].second - runs[run].first;
      ++run;
      continue;
    }
    double dur = kernel_ms.at(k) * 1000 * clock_mhz;
    events.push_back({{"name", pk.name}, {"cat", "host"}, {"ph", "X"}, {"pid", host_pid}, {"tid", 0}, {"ts", now},
                      {"dur", dur}, {"args", {{"ms", kernel_ms[k]}}}});
    now += dur;
  }
  for (auto e : dev["traceEvents"]) {
    if (e.contains("ts")) {
      double ts = e["ts"].get<double>();
      size_t r = 0;
      while (r + 1 < runs.size() && ts >= runs[r].second) ++r;
      if (r >= shift.size()) continue;  // a later inference
      e["ts"] = ts + shift[r];
    }
    events.push_back(e);
  }
  std::ofstream out(a.trace);
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"},
                        {"otherData", {{"time_unit", fmt::format("1 us = 1 accelerator cycle; host at {} MHz", clock_mhz)}}}}
             .dump();
  if (!out) throw CompileError("--trace: cannot write " + a.trace);
}

void run_model(const RunArgs& a) {
  if (a.repeat < 0) throw CompileError("--repeat must be at least 1");
  size_t num_kernels = 0;
  double compile_ms = 0;
  graph::Executor ex = build(a, &num_kernels, &compile_ms);
  set_inputs(ex, a.inputs);
  bool accel = ex.accelerator() != nullptr;
  int repeat = a.repeat ? a.repeat : accel ? 1 : 10;

  std::vector<double> total;
  std::vector<std::vector<double>> per_kernel(num_kernels);
  if (accel) {
    // A simulated accelerator: every run is profiled, and the first counts.
    for (int r = 0; r < repeat; ++r) {
      std::vector<double> ms = ex.run_profiled();
      double sum = 0;
      for (size_t k = 0; k < ms.size(); ++k) per_kernel[k].push_back(ms[k]), sum += ms[k];
      total.push_back(sum);
    }
  } else {
    ex.run();  // warm-up (first touches, thread pool start)
    for (int r = 0; r < repeat; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      ex.run();
      total.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    for (int r = 0; r < repeat; ++r) {
      std::vector<double> ms = ex.run_profiled();
      for (size_t k = 0; k < ms.size(); ++k) per_kernel[k].push_back(ms[k]);
    }
  }
  std::vector<double> last_ms, first_ms;
  for (const auto& v : per_kernel) last_ms.push_back(v.empty() ? 0 : v.back()), first_ms.push_back(v.empty() ? 0 : v.front());
  nlohmann::json accel_report = accelerator_json(ex, last_ms);
  if (!a.trace.empty()) {
    if (!accel) throw CompileError("--trace: no kernel of this model runs on the accelerator");
    target::Target t = target::Target::parse(ex.plan().accelerator);
    write_inference_trace(a, ex, first_ms, std::stod(t.option("clock_mhz", "100")));
  }
  if (a.outputs.size() > ex.num_outputs())
    throw CompileError(fmt::format("{} --output files for {} outputs", a.outputs.size(), ex.num_outputs()));
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    cpu::NDArray out = cpu::NDArray::empty(ex.output_type(k).shape, ex.output_type(k).dtype);
    out.copy_from_bytes(ex.output(k), ex.output_bytes(k));
    out.save_npy(a.outputs[k]);
  }

  std::vector<std::pair<double, size_t>> prof;
  double prof_total = 0;
  for (size_t k = 0; k < per_kernel.size(); ++k) {
    prof.push_back({median(per_kernel[k]), k});
    prof_total += prof.back().first;
  }
  double med = median(total), mn = *std::min_element(total.begin(), total.end()),
         mx = *std::max_element(total.begin(), total.end());
  if (a.json) {
    nlohmann::json j;
    j["model"] = a.model;
    j["target"] = a.target;
    j["kernels"] = num_kernels;
    j["repeat"] = repeat;
    if (!accel_report.is_null()) j["accelerator"] = accel_report;
    j["compile_ms"] = compile_ms;
    j["latency_ms"] = {{"median", med}, {"min", mn}, {"max", mx}};
    for (size_t k = 0; k < per_kernel.size(); ++k)
      j["profile"].push_back({{"kernel", ex.plan().kernels[k].name}, {"median_ms", prof[k].first}});
    for (const auto& in : ex.plan().inputs) j["inputs"].push_back({{"name", in.name}, {"type", in.type.to_string()}});
    for (size_t k = 0; k < ex.num_outputs(); ++k)
      j["outputs"].push_back({{"name", ex.plan().outputs[k].name}, {"type", ex.output_type(k).to_string()}});
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("{}: {} kernels on {} ({} in {:.0f} ms)\n", a.model, num_kernels, a.target,
             ends_with(a.model, ".kiln") ? "loaded" : "compiled", compile_ms);
  // The shapes it was compiled for (a symbolic dimension took the --input file's size).
  for (const auto& in : ex.plan().inputs) fmt::print("input '{}': {}\n", in.name, in.type.to_string());
  for (size_t k = 0; k < ex.num_outputs(); ++k)
    fmt::print("output '{}': {}{}\n", ex.plan().outputs[k].name, ex.output_type(k).to_string(),
               k < a.outputs.size() ? " -> " + a.outputs[k] : "");
  fmt::print("latency: median {:.3f} ms, min {:.3f} ms, max {:.3f} ms ({} runs)\n", med, mn, mx, repeat);
  print_accelerator_report(accel_report);
  std::sort(prof.rbegin(), prof.rend());
  fmt::print("profile (median per kernel, slowest first):\n");
  size_t shown = std::min<size_t>(prof.size(), 15);
  for (size_t i = 0; i < shown; ++i)
    fmt::print("  {:>9.3f} ms {:>5.1f}%  {}\n", prof[i].first, 100 * prof[i].first / std::max(prof_total, 1e-9),
               ex.plan().kernels[prof[i].second].name);
  if (prof.size() > shown) {
    double rest = 0;
    for (size_t i = shown; i < prof.size(); ++i) rest += prof[i].first;
    fmt::print("  {:>9.3f} ms {:>5.1f}%  ({} more kernels)\n", rest, 100 * rest / std::max(prof_total, 1e-9), prof.size() - shown);
  }
}

void compile_model(const RunArgs& a) {
  if (a.output_model.empty()) throw CompileError("give the file to write with -o MODEL.kiln");
  graph::CompileOptions options = compile_options(a);  // the target's errors before the model's
  graph::Graph g = import_model(a);
  graph::CompiledModel m = graph::compile(g, options);
  print_placement(m);
  const target::Target host = m.target.host_target();
  graph::Executor ex = graph::make_executor(m);
  graph::save_model(a.output_model, ex, host.backend(), host.str());
  fmt::print("{}: {} operators, {} kernels, {:.1f} MB of activations -> {}\n", a.model, m.graph.num_ops(), m.kernels.size(),
             m.memory.total_bytes() / 1e6, a.output_model);
}

}  // namespace

void add_run_commands(CLI::App& app) {
  auto r = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "compile (or load) a model, run it, print its latency and a per-kernel profile");
  run->add_option("model", r->model, "MODEL.onnx, or MODEL.kiln made by `kiln compile`")->required();
  run->add_option("-t,--target", r->target,
                  "cpu (the host), an `llvm ...` target string, interp, or an accelerator: vta [-config=NAME -device=KIND]")
      ->capture_default_str();
  run->add_option("--config", r->config, "with --target vta: the configuration, a name in hw/config or a file (default)");
  run->add_option("--device", r->device, "with --target vta: the device that runs the accelerator's kernels (fsim, rtl, ...)");
  run->add_option("-i,--input", r->inputs, "NAME=FILE.npy (repeatable); inputs not given are random");
  run->add_option("-o,--output", r->outputs, "FILE.npy for each output, in order");
  run->add_option("-n,--repeat", r->repeat, "timed runs, the latency is their median (default: 10; 1 with an accelerator)");
  run->add_option("--records", r->records, "tuning records (kiln tune): the best one per operator schedules it");
  run->add_option("--input-shape", r->input_shapes,
                  "NAME=1x3x224x224 (repeatable): an input's shape, for models with symbolic dimensions (which otherwise take 1)");
  run->add_option("--calibrate", r->calibrate,
                  "DIR of .npy inputs: quantize the float model to int8 first, as `kiln quantize` does by default");
  run->add_option("--trace", r->trace,
                  "with --target vta on rtl or systemc: FILE.json, one Perfetto timeline of the first inference (host and accelerator)");
  run->add_flag("--json", r->json, "print one JSON object (latency_ms: median, min, max; profile)");
  r->device_flags.add_to(run, {"trace"});  // --trace above is the whole inference's
  run->callback([r] { run_model(*r); });

  auto c = std::make_shared<RunArgs>();
  CLI::App* comp = app.add_subcommand("compile", "compile an ONNX model into one .kiln file (plan, code, weights)");
  comp->add_option("model", c->model, "MODEL.onnx")->required();
  comp->add_option("-t,--target", c->target, "cpu, an `llvm ...` target string, or vta [-config=NAME -device=KIND]")
      ->capture_default_str();
  comp->add_option("--config", c->config, "with --target vta: the configuration (default)");
  comp->add_option("--device", c->device, "with --target vta: the device the package runs on (fsim, rtl, ...)");
  comp->add_option("-o,--output", c->output_model, "MODEL.kiln to write")->required();
  comp->add_option("--records", c->records, "tuning records (kiln tune): the best one per operator schedules it");
  comp->add_option("--input-shape", c->input_shapes,
                   "NAME=1x3x224x224 (repeatable): an input's shape, for models with symbolic dimensions (which otherwise take 1)");
  comp->add_option("--calibrate", c->calibrate,
                   "DIR of .npy inputs: quantize the float model to int8 first, as `kiln quantize` does by default");
  c->device_flags.add_to(comp, {"trace"});
  comp->callback([c] { compile_model(*c); });
}

}  // namespace kiln::cli
