#pragma once
// What the CPU's kernel suites share (conv_kernels_test, winograd_test): random
// constant weights, a graph compiled and run on one input, and the targets they compile
// for: the host, AVX2's 16 registers and SSE.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/graph/executor.h"
#include "tests/e2e/test_util.h"

namespace kiln::graph::test_util {

inline ConstData random_constant(std::vector<int64_t> shape, uint32_t seed) {
  auto b = std::make_shared<interp::HostBuffer>(ir::DataType::Float(32), shape);
  auto v = test::random_floats(b->size(), seed);
  std::memcpy(b->data(), v.data(), v.size() * sizeof(float));
  return b;
}

// Output `output` of `g` on input x: compiled for `target` on the cpu backend, or
// interpreted unoptimized ("interp"). `compiled`, when given, receives the model.
inline std::vector<float> run_graph(const Graph& g, const std::vector<float>& x, const std::string& backend,
                                    const std::string& target, size_t output = 0, CompiledModel* compiled = nullptr) {
  CompileOptions o;
  if (backend == "cpu") o.target = target::Target::parse(target);
  else o.optimize = false;
  CompiledModel m = compile(g, o);
  Executor ex = make_executor(m, backend, backend == "cpu" ? target : "");
  ex.set_input(0, x.data(), static_cast<int64_t>(x.size() * sizeof(float)));
  ex.run();
  std::vector<float> out(static_cast<size_t>(ex.output_bytes(output) / sizeof(float)));
  std::memcpy(out.data(), ex.output(output), out.size() * sizeof(float));
  if (compiled) *compiled = std::move(m);
  return out;
}

inline const std::vector<std::string> kKernelTargets = {"llvm", "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell",
                                                        "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64"};

inline std::string kernel_target_name(const ::testing::TestParamInfo<std::string>& i) {
  static const char* const names[] = {"host", "avx2", "sse"};
  return names[i.index];
}

}  // namespace kiln::graph::test_util
