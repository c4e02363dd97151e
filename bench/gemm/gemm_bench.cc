// float32 GEMM: Kiln's CPU backend (a packed, register-tiled TE schedule compiled by
// LLVM) against OpenBLAS's cblas_sgemm at the same thread count, in one process; and
// an int8 GEMM (u8 x s8 -> s32) against oneDNN's dnnl_gemm_u8s8s32.
//
//   gemm_bench [--json] [--sizes 256,512,1024,2048] [--threads 1,2] [--min-time 0.3] [--no-int8] [--peer-only]
//
// OpenBLAS runs with the fastest of its kernels for this CPU, chosen by measuring them
// (choose_openblas_kernel); the machine's OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are
// not kept. Kiln does not read them.
#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend-cpu/module.h"
#include "backend-cpu/runtime/parallel.h"
#include "bench/gemm/gemm_schedule.h"
#include "bench/support/parse_list.h"
#include "bench/support/time_best.h"

namespace {

using kiln::bench_support::parse_list;
using kiln::bench_support::time_best;
using kiln::cpu::NDArray;
using kiln::ir::DataType;

// OpenBLAS picks its kernel from CPUID at load time, and on some machines (a guest
// that hides its CPU model) it picks badly: "Prescott", an SSE3 kernel at a fifth of
// the AVX-512 one's speed. The peer must run at its best, so the bench measures the
// kernels that could fit this CPU, each in a child process (the kernel is fixed at
// load), and re-executes itself with the fastest. KILN_OPENBLAS_CHOSEN carries the
// probe's figures to the final process, which prints them.
const char* const kCoreTypes[] = {"", "SkylakeX", "Cooperlake", "Haswell"};  // "": OpenBLAS's own choice

// The child's work: one-thread sgemm 512 and 1024 in GFLOP/s, the better of the two.
int openblas_probe() {
  openblas_set_num_threads(1);
  double best = 0;
  for (int n : {512, 1024}) {
    std::vector<float> a(static_cast<size_t>(n) * n, 0.5f), b(a), c(a.size());
    double t = time_best([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    }, 0.2);
    best = std::max(best, 2.0 * n * n * n / t * 1e-9);
  }
  std::printf("%s %.1f\n", openblas_get_corename(), best);
  return 0;
}

void choose_openblas_kernel(char** argv) {
  if (std::getenv("KILN_OPENBLAS_CHOSEN")) return;  // the re-executed process
  std::string table, best_type;
  double best = -1;
  for (const char* type : kCoreTypes) {
    std::string cmd = std::string(*type ? "OPENBLAS_CORETYPE=" + std::string(type) + " " : "env -u OPENBLAS_CORETYPE ") +
                      "env -u OPENBLAS_L2_SIZE /proc/" + std::to_string(getpid()) + "/exe --openblas-probe";
    FILE* f = popen(cmd.c_str(), "r");
    char core[64] = {0};
    double gflops = 0;
    bool ok = f && std::fscanf(f, "%63s %lf", core, &gflops) == 2;
    if (f) pclose(f);
    if (!ok) continue;
    std::string name = *type ? type : std::string("auto:") + core;
    table += (table.empty() ? "" : ", ") + name + " " + std::to_string(static_cast<int>(gflops + 0.5));
    if (gflops > best) {
      best = gflops;
      best_type = type;
    }
  }
  if (best < 0) return;  // no probe ran: keep whatever this process has
  if (best_type.empty()) unsetenv("OPENBLAS_CORETYPE");
  else setenv("OPENBLAS_CORETYPE", best_type.c_str(), 1);
  unsetenv("OPENBLAS_L2_SIZE");
  setenv("KILN_OPENBLAS_CHOSEN", table.c_str(), 1);
  execv("/proc/self/exe", argv);
  std::perror("gemm_bench: re-exec failed; OpenBLAS keeps the kernel it chose");
}

struct Row {
  std::string kind;
  int n, threads;
  double kiln, peer, max_err;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--openblas-probe") return openblas_probe();
  choose_openblas_kernel(argv);
  bool json = false;
  std::vector<int> sizes{256, 512, 1024, 2048}, threads{1, 2};
  double min_time = 0.3;
  bool int8 = true, peer_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json") json = true;
    else if (a == "--sizes" && i + 1 < argc) sizes = parse_list(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = parse_list(argv[++i]);
    else if (a == "--min-time" && i + 1 < argc) min_time = std::atof(argv[++i]);
    else if (a == "--no-int8") int8 = false;
    else if (a == "--peer-only") peer_only = true;
    else {
      std::fprintf(stderr, "usage: %s [--json] [--sizes a,b] [--threads 1,2] [--min-time s] [--no-int8] [--peer-only]\n", argv[0]);
      return 2;
    }
  }
  kiln::cpu::Target target = kiln::cpu::Target::host();
  if (!json) {
    const char* probe = std::getenv("KILN_OPENBLAS_CHOSEN");
    std::printf("target: %s\nOpenBLAS: %s\nOpenBLAS kernel: %s, the fastest of the probe (GFLOP/s, one thread: %s)\n",
                target.to_string().c_str(), openblas_get_config(), openblas_get_corename(), probe ? probe : "not run");
    std::printf("%-6s %6s %8s %12s %12s %8s %10s\n", "kind", "n", "threads", "kiln GF/s", "peer GF/s", "ratio", "max err");
  }
  std::vector<Row> rows;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int n : sizes) {
    // --peer-only: OpenBLAS alone (bench/models compares `kiln run` on an ONNX MatMul with it).
    std::optional<kiln::cpu::Module> mod;
    if (!peer_only) mod = kiln::bench::build_sgemm(n, n, n, target);
    NDArray a = NDArray::empty({n, n}, DataType::Float(32));
    NDArray b = NDArray::empty({n, n}, DataType::Float(32));
    NDArray c = NDArray::zeros({n, n}, DataType::Float(32));
    std::vector<float> ref(static_cast<size_t>(n) * n);
    for (int64_t i = 0; i < a.size(); ++i) a.data_as<float>()[i] = dist(rng);
    for (int64_t i = 0; i < b.size(); ++i) b.data_as<float>()[i] = dist(rng);
    double flops = 2.0 * n * n * n;
    for (int t : threads) {
      kiln_set_num_threads(t);
      openblas_set_num_threads(t);
      void* args[3] = {a.data(), b.data(), c.data()};
      double tk = peer_only ? 0 : time_best([&] { mod->call_packed("sgemm", args); }, min_time);
      double tp = time_best([&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data_as<float>(), n, b.data_as<float>(), n,
                    0.0f, ref.data(), n);
      }, min_time);
      double err = 0;
      for (size_t i = 0; i < ref.size() && !peer_only; ++i)
        err = std::max(err, static_cast<double>(std::fabs(ref[i] - c.data_as<float>()[i])));
      rows.push_back({"sgemm", n, t, peer_only ? 0 : flops / tk * 1e-9, flops / tp * 1e-9, err});
      const Row& r = rows.back();
      if (!json) {
        std::printf("%-6s %6d %8d %12.1f %12.1f %8.2f %10.2e\n", r.kind.c_str(), n, t, r.kiln, r.peer, r.kiln / r.peer, err);
        std::fflush(stdout);
      }
    }
  }
  if (int8 && !peer_only) {
    // u8 x s8 -> s32, the quantized GEMM, at 1024 single-thread and both thread counts.
    int n = 1024;
    auto mod = kiln::bench::build_gemm_u8s8s32(n, n, n, target);
    NDArray a = NDArray::empty({n, n}, DataType::UInt(8));
    NDArray b = NDArray::empty({n, n}, DataType::Int(8));
    NDArray c = NDArray::zeros({n, n}, DataType::Int(32));
    std::vector<int32_t> ref(static_cast<size_t>(n) * n);
    for (int64_t i = 0; i < a.size(); ++i) a.data_as<uint8_t>()[i] = static_cast<uint8_t>(rng() % 256);
    for (int64_t i = 0; i < b.size(); ++i) b.data_as<int8_t>()[i] = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
    double ops = 2.0 * n * n * n;
    for (int t : threads) {
      kiln_set_num_threads(t);
      omp_set_num_threads(t);  // oneDNN runs on OpenMP here
      void* args[3] = {a.data(), b.data(), c.data()};
      double tk = time_best([&] { mod.call_packed("gemm_u8s8s32", args); }, min_time);
      int32_t co = 0;
      double tp = time_best([&] {
        dnnl_gemm_u8s8s32('N', 'N', 'F', n, n, n, 1.0f, a.data_as<uint8_t>(), n, 0, b.data_as<int8_t>(), n, 0, 0.0f,
                          ref.data(), n, &co);
      }, min_time);
      double err = 0;
      for (size_t i = 0; i < ref.size(); ++i) err = std::max(err, std::fabs(static_cast<double>(ref[i]) - c.data_as<int32_t>()[i]));
      rows.push_back({"u8s8", n, t, ops / tk * 1e-9, ops / tp * 1e-9, err});
      const Row& r = rows.back();
      if (!json) {
        std::printf("%-6s %6d %8d %12.1f %12.1f %8.2f %10.2e   (GOP/s, peer oneDNN)\n", r.kind.c_str(), n, t, r.kiln, r.peer,
                    r.kiln / r.peer, err);
        std::fflush(stdout);
      }
    }
  }
  if (json) {
    const char* probe = std::getenv("KILN_OPENBLAS_CHOSEN");
    std::printf("{\"target\": \"%s\", \"peer\": \"OpenBLAS %s\", \"openblas_probe\": \"%s\", \"rows\": [",
                target.to_string().c_str(), openblas_get_corename(), probe ? probe : "not run");
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf("%s\n  {\"kind\": \"%s\", \"n\": %d, \"threads\": %d, \"kiln_gflops\": %.2f, \"peer_gflops\": %.2f, "
                  "\"ratio\": %.3f, \"max_abs_err\": %.3g%s}",
                  i ? "," : "", r.kind.c_str(), r.n, r.threads, r.kiln, r.peer, r.kiln / r.peer, r.max_err,
                  r.kind == "u8s8" ? ", \"peer_name\": \"oneDNN dnnl_gemm_u8s8s32\"" : "");
    }
    std::printf("\n]}\n");
  }
  return 0;
}
