// kiln run / kiln compile: ONNX models (or compiled .kiln models) on a backend from
// the registry (compiler/target). Backends must be registered before the command
// line is parsed (main registers the CPU backend).

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
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
#ifdef KILN_HAVE_TUNER
#include <iostream>

#include "tuner/apply.h"
#endif

namespace kiln::cli {

namespace {

struct RunArgs {
  std::string model, target = "cpu", output_model, records;
  std::vector<std::string> inputs, outputs;
  int repeat = 10;
  bool json = false;
};

// Compile options: with --records, the best tuning record of each convolution and
// matrix product schedules it (the tuner warns about those without one).
graph::CompileOptions compile_options(const RunArgs& a) {
  graph::CompileOptions o;
  if (a.records.empty()) return o;
#ifdef KILN_HAVE_TUNER
  try {
    o.schedule_hook = tuner::records_hook(a.records, std::cerr);
  } catch (const std::invalid_argument& e) {
    throw CompileError(e.what());
  }
#else
  throw CompileError("--records: this kiln was built without the tuner");
#endif
  return o;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "cpu" -> backend "cpu" with target "llvm"; "llvm -mcpu=..." -> the CPU backend with
// that target string; any other registered backend by name.
std::pair<std::string, std::string> backend_of(const std::string& target) {
  if (target == "cpu") return {"cpu", "llvm"};
  if (target.rfind("llvm", 0) == 0) return {"cpu", target};
  return {target, ""};
}

graph::Executor build(const RunArgs& a, size_t* num_kernels, double* compile_ms) {
  auto t0 = std::chrono::steady_clock::now();
  auto [backend, target] = backend_of(a.target);
  if (ends_with(a.model, ".kiln")) {
    if (!a.records.empty()) throw CompileError("--records applies when compiling MODEL.onnx; " + a.model + " is compiled already");
    graph::Executor ex = graph::load_model(a.model);
    *num_kernels = ex.plan().kernels.size();
    *compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return ex;
  }
  graph::Graph g = frontend::import_onnx_file(a.model);
  graph::CompiledModel m = graph::compile(g, compile_options(a));
  *num_kernels = m.kernels.size();
  graph::Executor ex = graph::make_executor(m, backend, target);
  *compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return ex;
}

// Inputs from NAME=FILE.npy; the others random (floats in [-1, 1], integers in [0, 10)).
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
      for (int64_t i = 0; i < arr.size(); ++i) {
        if (in.type.dtype == ir::DataType::Float(32)) arr.data_as<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
        else if (in.type.dtype == ir::DataType::Int(64)) arr.data_as<int64_t>()[i] = std::uniform_int_distribution<int>(0, 9)(rng);
        else if (in.type.dtype == ir::DataType::Int(32)) arr.data_as<int32_t>()[i] = std::uniform_int_distribution<int>(0, 9)(rng);
        else throw CompileError(fmt::format("input '{}' ({}): give it with --input", in.name, in.type.to_string()));
      }
    }
    ex.set_input(k, arr.data(), arr.nbytes());
  }
  if (!files.empty()) throw CompileError("the model has no input named '" + files.begin()->first + "'");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void run_model(const RunArgs& a) {
  if (a.repeat < 1) throw CompileError("--repeat must be at least 1");
  size_t num_kernels = 0;
  double compile_ms = 0;
  graph::Executor ex = build(a, &num_kernels, &compile_ms);
  set_inputs(ex, a.inputs);
  ex.run();  // warm-up (first touches, thread pool start)

  std::vector<double> total;
  std::vector<std::vector<double>> per_kernel(num_kernels);
  for (int r = 0; r < a.repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    ex.run();
    total.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  for (int r = 0; r < a.repeat; ++r) {
    std::vector<double> ms = ex.run_profiled();
    for (size_t k = 0; k < ms.size(); ++k) per_kernel[k].push_back(ms[k]);
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
    j["repeat"] = a.repeat;
    j["compile_ms"] = compile_ms;
    j["latency_ms"] = {{"median", med}, {"min", mn}, {"max", mx}};
    for (size_t k = 0; k < per_kernel.size(); ++k)
      j["profile"].push_back({{"kernel", ex.plan().kernels[k].name}, {"median_ms", prof[k].first}});
    for (size_t k = 0; k < ex.num_outputs(); ++k)
      j["outputs"].push_back({{"name", ex.plan().outputs[k].name}, {"type", ex.output_type(k).to_string()}});
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("{}: {} kernels on {} ({} in {:.0f} ms)\n", a.model, num_kernels, a.target,
             ends_with(a.model, ".kiln") ? "loaded" : "compiled", compile_ms);
  for (size_t k = 0; k < ex.num_outputs(); ++k)
    fmt::print("output '{}': {}{}\n", ex.plan().outputs[k].name, ex.output_type(k).to_string(),
               k < a.outputs.size() ? " -> " + a.outputs[k] : "");
  fmt::print("latency: median {:.3f} ms, min {:.3f} ms, max {:.3f} ms ({} runs)\n", med, mn, mx, a.repeat);
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
  auto [backend, target] = backend_of(a.target);
  graph::Graph g = frontend::import_onnx_file(a.model);
  graph::CompiledModel m = graph::compile(g, compile_options(a));
  graph::Executor ex = graph::make_executor(m, backend, target);
  graph::save_model(a.output_model, ex, backend, target);
  fmt::print("{}: {} operators, {} kernels, {:.1f} MB of activations -> {}\n", a.model, m.graph.num_ops(), m.kernels.size(),
             m.memory.total_bytes() / 1e6, a.output_model);
}

}  // namespace

void add_run_commands(CLI::App& app) {
  auto r = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "compile (or load) a model, run it, print its latency and a per-kernel profile");
  run->add_option("model", r->model, "MODEL.onnx, or MODEL.kiln made by `kiln compile`")->required();
  run->add_option("-t,--target", r->target, "cpu (the host), an `llvm ...` target string, or interp")->capture_default_str();
  run->add_option("-i,--input", r->inputs, "NAME=FILE.npy (repeatable); inputs not given are random");
  run->add_option("-o,--output", r->outputs, "FILE.npy for each output, in order");
  run->add_option("-n,--repeat", r->repeat, "timed runs (the latency is their median)")->capture_default_str();
  run->add_option("--records", r->records, "tuning records (kiln tune): the best one per operator schedules it");
  run->add_flag("--json", r->json, "print one JSON object (latency_ms: median, min, max; profile)");
  run->callback([r] { run_model(*r); });

  auto c = std::make_shared<RunArgs>();
  CLI::App* comp = app.add_subcommand("compile", "compile an ONNX model into one .kiln file (plan, code, weights)");
  comp->add_option("model", c->model, "MODEL.onnx")->required();
  comp->add_option("-t,--target", c->target, "cpu or an `llvm ...` target string")->capture_default_str();
  comp->add_option("-o,--output", c->output_model, "MODEL.kiln to write")->required();
  comp->add_option("--records", c->records, "tuning records (kiln tune): the best one per operator schedules it");
  comp->callback([c] { compile_model(*c); });
}

}  // namespace kiln::cli
