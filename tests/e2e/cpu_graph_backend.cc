#include "tests/e2e/cpu_graph_backend.h"

#include <fmt/format.h>

#include "backend-cpu/module.h"
#include "compiler/target/backend.h"

namespace kiln::test {

namespace {

class CpuKernels : public target::KernelModule {
 public:
  explicit CpuKernels(cpu::Module m) : m_(std::move(m)), names_(m_.function_names()) {}
  void call(size_t index, void* const* args) const override {
    int32_t rc = m_.call_packed(names_.at(index), const_cast<void**>(args));
    if (rc != 0) throw cpu::RuntimeError(fmt::format("kernel '{}' failed with code {}", names_[index], rc));
  }

 private:
  cpu::Module m_;
  std::vector<std::string> names_;
};

class CpuBackend : public target::Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::unique_ptr<target::KernelModule> build(const std::vector<schedule::LoweredFunc>& funcs,
                                              const std::string& options) const override {
    return std::make_unique<CpuKernels>(cpu::build(funcs, options.empty() ? "llvm" : options));
  }
};

}  // namespace

void register_cpu_graph_backend() {
  target::register_backend("cpu", [] { return std::make_unique<CpuBackend>(); });
}

}  // namespace kiln::test
