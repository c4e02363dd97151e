// kiln_gpu_bench: Kiln's GPU path timed on the device it is given (bench/gpu/run.sh
// runs it on a lent GPU next to PyTorch's CUDA path and cuBLAS, peers.py).
//
//   kiln_gpu_bench --target "cuda -arch=sm_90" --gemm 4096 [--repeat 10] [--json]
//       an N x N x N float32 matrix product in the GPU's shared-memory tiles, the
//       default tile and larger ones, each checked on sampled entries; GFLOP/s from the
//       kernels' event times (fastest of the repeats)
//   kiln_gpu_bench --target ... --model M.onnx --input X.npy --reference Y.npy [--repeat 50]
//       the model compiled for the target and run: its error against the reference
//       (max |error| / max |reference|) and its latency (wall clock of a whole run, the
//       median and the fastest)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "backend-cpu/runtime/tensor.h"
#include "backend-gpu/graph_backend.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "compiler/graph/gpu_schedule.h"
#include "compiler/schedule/lower.h"
#include "compiler/target/backend.h"
#include "compiler/target/target.h"
#include "compiler/te/ops.h"
#include "support/error.h"

namespace {

using namespace kiln;

struct Args {
  std::string target = "cuda -arch=sm_90";
  std::string model, input, reference;
  int64_t gemm = 0;
  int repeat = 10;
  bool json = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(k + " needs a value");
      return argv[++i];
    };
    if (k == "--target") a.target = value();
    else if (k == "--model") a.model = value();
    else if (k == "--input") a.input = value();
    else if (k == "--reference") a.reference = value();
    else if (k == "--gemm") a.gemm = std::stoll(value());
    else if (k == "--repeat") a.repeat = std::max(1, std::stoi(value()));
    else if (k == "--json") a.json = true;
    else throw Error("unknown argument '" + k + "' (--target, --gemm N, --model M --input X --reference Y, --repeat, --json)");
  }
  if ((a.gemm > 0) == !a.model.empty()) throw Error("give --gemm N or --model M.onnx");
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string gemm(const Args& a) {
  const int64_t n = a.gemm;
  target::Target t = target::Target::parse(a.target);
  std::vector<graph::GpuMatmulTile> tiles = {graph::GpuMatmulTile{}, {64, 64, 16, 16, 8}, {64, 64, 16, 16, 16},
                                             {128, 128, 16, 16, 8}, {128, 64, 16, 16, 8}};
  std::vector<float> x(static_cast<size_t>(n * n)), y(x.size()), z(x.size());
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float& v : x) v = dist(rng);
  for (float& v : y) v = dist(rng);
  std::vector<std::string> rows;
  double best = 0;
  std::string best_tile;
  for (const graph::GpuMatmulTile& tile : tiles) {
    std::string name = fmt::format("{}x{}/{}x{}/{}", tile.block_rows, tile.block_cols, tile.threads_rows, tile.threads_cols,
                                   tile.k_tile);
    te::Tensor A = te::placeholder({static_cast<int>(n), static_cast<int>(n)}, ir::DataType::Float(32), "A");
    te::Tensor B = te::placeholder({static_cast<int>(n), static_cast<int>(n)}, ir::DataType::Float(32), "B");
    te::Tensor C = te::matmul(A, B, "C");
    schedule::Schedule s = schedule::create_schedule({C});
    if (!graph::schedule_gpu_matmul(s, C, C, tile)) continue;
    std::string error;
    double ms = -1, err = 0;
    try {
      auto mod = target::make_backend(t.kind())->build({schedule::lower(s, {A, B, C}, "gemm")}, t.str());
      void* args[] = {x.data(), y.data(), z.data()};
      mod->call(0, args);
      // Sampled entries against a double-precision reference.
      std::uniform_int_distribution<int64_t> pick(0, n - 1);
      for (int k = 0; k < 256; ++k) {
        int64_t i = pick(rng), j = pick(rng);
        double want = 0;
        for (int64_t r = 0; r < n; ++r) want += static_cast<double>(x[i * n + r]) * y[r * n + j];
        err = std::max(err, std::fabs(want - z[i * n + j]) / std::sqrt(static_cast<double>(n)));
      }
      for (int r = 0; r < a.repeat; ++r) {
        mod->call(0, args);
        double sum = 0;
        for (const auto& k : mod->stats())
          if (auto it = k.values.find("ms"); it != k.values.end()) sum += it->second;
        ms = ms < 0 ? sum : std::min(ms, sum);
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
    double gflops = ms > 0 ? 2.0 * n * n * n / (ms / 1e3) / 1e9 : 0;
    if (error.empty() && err > 1e-3) error = fmt::format("wrong result: error {:.2e}", err);
    if (error.empty() && gflops > best) {
      best = gflops;
      best_tile = name;
    }
    if (!a.json)
      fmt::print("gemm {} tile {}: {}\n", n, name,
                 error.empty() ? fmt::format("{:.3f} ms, {:.0f} GFLOP/s (sampled error {:.1e})", ms, gflops, err) : error);
    rows.push_back(fmt::format(R"({{"tile": "{}", "ms": {}, "gflops": {:.1f}, "error": "{}"}})", name, ms, gflops, error));
  }
  if (!a.json) fmt::print("gemm {}: best {:.0f} GFLOP/s ({})\n", n, best, best_tile);
  return fmt::format(R"({{"gemm": {}, "target": "{}", "best_gflops": {:.1f}, "best_tile": "{}", "tiles": [{}]}})", n, t.str(),
                     best, best_tile, fmt::join(rows, ", "));
}

std::string model(const Args& a) {
  auto t0 = std::chrono::steady_clock::now();
  graph::CompileOptions o;
  o.target = target::Target::parse(a.target);
  graph::CompiledModel m = graph::compile(frontend::import_onnx_file(a.model), o);
  graph::Executor ex = graph::make_executor(m);
  double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  cpu::NDArray input = cpu::NDArray::load_npy(a.input);
  ex.set_input(0, input.data(), input.nbytes());
  ex.run();
  double err = -1;
  if (!a.reference.empty()) {
    cpu::NDArray ref = cpu::NDArray::load_npy(a.reference);
    if (ref.nbytes() != ex.output_bytes(0)) throw Error("the reference's size differs from the model's output");
    const float* want = static_cast<const float*>(ref.data());
    const float* got = static_cast<const float*>(ex.output(0));
    double diff = 0, top = 0;
    for (int64_t i = 0; i < ref.size(); ++i) {
      diff = std::max(diff, static_cast<double>(std::fabs(want[i] - got[i])));
      top = std::max(top, static_cast<double>(std::fabs(want[i])));
    }
    err = diff / top;
  }
  std::vector<double> ms;
  for (int r = 0; r < a.repeat; ++r) {
    auto s = std::chrono::steady_clock::now();
    ex.run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  double med = median(ms), mn = *std::min_element(ms.begin(), ms.end());
  if (!a.json)
    fmt::print("{} on {}: {} kernels, compile {:.0f} ms; error {:.2e} of max |reference|; latency median {:.3f} ms, min {:.3f} ms "
               "({} runs)\n",
               a.model, o.target.str(), m.kernels.size(), compile_ms, err, med, mn, a.repeat);
  return fmt::format(R"({{"model": "{}", "target": "{}", "kernels": {}, "compile_ms": {:.1f}, "error": {:.3e}, "median_ms": {:.4f}, )"
                     R"("min_ms": {:.4f}, "runs": {}}})",
                     a.model, o.target.str(), m.kernels.size(), compile_ms, err, med, mn, a.repeat);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    kiln::gpu::register_graph_backends();
    Args a = parse(argc, argv);
    std::string json = a.gemm > 0 ? gemm(a) : model(a);
    if (a.json) std::cout << json << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "kiln_gpu_bench: error: " << e.what() << "\n";
    return 1;
  }
}
