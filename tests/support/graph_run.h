#pragma once
// Compiling a graph for a target and running it with one int8 input, for the tests
// that compare an accelerator's results with the CPU's (the host kernels on the CPU
// backend). The backends must be registered first.
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/graph/executor.h"

namespace kiln::test {

inline graph::CompiledModel compile_for(const graph::Graph& g, const std::string& target) {
  graph::CompileOptions o;
  o.target = target::Target::parse(target);
  return graph::compile(g, o);
}

// Sets input 0 to `x`, runs, and returns output 0 (float32).
inline std::vector<float> run(graph::Executor& ex, const std::vector<int8_t>& x) {
  ex.set_input(0, x.data(), static_cast<int64_t>(x.size()));
  ex.run();
  std::vector<float> out(static_cast<size_t>(ex.output_type(0).size()));
  std::memcpy(out.data(), ex.output(0), out.size() * sizeof(float));
  return out;
}

inline std::vector<float> run_on(const graph::Graph& g, const std::string& target, const std::vector<int8_t>& x) {
  graph::Executor ex = graph::make_executor(compile_for(g, target), "cpu", "llvm");
  return run(ex, x);
}

// The compiled model saved as a .kiln package (named `name` in the temporary
// directory) and loaded again, as `kiln run MODEL.kiln` does.
inline graph::Executor save_and_load(const graph::Executor& ex, const std::string& name) {
  std::string path = (std::filesystem::temp_directory_path() / (name + ".kiln")).string();
  graph::save_model(path, ex, "cpu", "llvm");
  graph::Executor loaded = graph::load_model(path);
  std::filesystem::remove(path);
  return loaded;
}

}  // namespace kiln::test
