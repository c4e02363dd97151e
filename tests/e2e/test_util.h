#pragma once
// Helpers of the graph tests: random data, running a graph through an executor, a
// direct reference for small graphs.
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "compiler/graph/executor.h"

namespace kiln::test {

inline std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

// Compiles and runs `g` on float inputs with a backend; returns output 0 as floats.
inline std::vector<float> run_graph(const graph::Graph& g, const std::vector<std::vector<float>>& inputs,
                                    const std::string& backend = "interp", graph::CompileOptions opt = {},
                                    size_t output = 0) {
  graph::Executor ex = graph::make_executor(graph::compile(g, opt), backend);
  for (size_t k = 0; k < inputs.size(); ++k)
    ex.set_input(k, inputs[k].data(), static_cast<int64_t>(inputs[k].size() * sizeof(float)));
  ex.run();
  std::vector<float> out(static_cast<size_t>(ex.output_type(output).size()));
  std::memcpy(out.data(), ex.output(output), out.size() * sizeof(float));
  return out;
}

// max |a - b| / max |b|.
inline double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 1e-30, e = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    m = std::max(m, std::fabs(static_cast<double>(b[i])));
    e = std::max(e, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return e / m;
}

}  // namespace kiln::test
