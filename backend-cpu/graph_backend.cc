#include "backend-cpu/graph_backend.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "backend-cpu/module.h"
#include "backend-cpu/runtime/parallel.h"
#include "compiler/support/error.h"
#include "compiler/target/backend.h"
#include "support/file.h"

namespace kiln::cpu {

namespace {

using PackedFn = int32_t (*)(void**, int32_t);

// Kernels JIT-compiled by the CPU backend; saved as a shared library.
class CpuKernels : public target::KernelModule {
 public:
  explicit CpuKernels(cpu::Module m) : m_(std::move(m)), names_(m_.function_names()) {}
  void call(size_t index, void* const* args) const override {
    int32_t rc = m_.call_packed(names_.at(index), const_cast<void**>(args));
    if (rc != 0) throw cpu::RuntimeError(fmt::format("kernel '{}' failed with code {}", names_[index], rc));
  }
  const cpu::Module& module() const { return m_; }
  std::string save() const override {
    std::string dir = (std::filesystem::temp_directory_path() / "kiln-save-XXXXXX").string();
    if (!mkdtemp(dir.data())) throw CompileError("cannot create a temporary directory");
    std::filesystem::path lib = std::filesystem::path(dir) / "libmodel.so";
    m_.export_library(lib.string());
    std::string bytes = read_file(lib.string());
    std::filesystem::remove_all(dir);
    return bytes;
  }

 private:
  cpu::Module m_;
  std::vector<std::string> names_;
};

// Kernels of a saved shared library, opened with dlopen: no LLVM, no compiler. The
// library stays mapped (RTLD_NODELETE): its thread pool's workers live in it.
class LoadedKernels : public target::KernelModule {
 public:
  LoadedKernels(const std::string& bytes, const std::vector<target::KernelSignature>& sigs) {
    std::string path = (std::filesystem::temp_directory_path() / "kiln-model-XXXXXX").string();
    int fd = mkstemp(path.data());
    if (fd < 0) throw CompileError("cannot create a temporary file");
    bool ok = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    ::close(fd);
    if (ok) handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    std::string err = handle_ ? "" : (ok ? dlerror() : "write failed");
    std::filesystem::remove(path);
    if (!handle_) throw CompileError("cannot load the saved CPU kernels: " + err);
    for (const auto& s : sigs) {
      void* f = dlsym(handle_, (s.name + "_packed").c_str());
      if (!f) throw CompileError("the saved CPU kernels lack '" + s.name + "'");
      fns_.push_back(reinterpret_cast<PackedFn>(f));
      sigs_.push_back(s);
    }
  }
  ~LoadedKernels() override {
    if (handle_) dlclose(handle_);
  }
  void call(size_t index, void* const* args) const override {
    int32_t rc = fns_.at(index)(const_cast<void**>(args), sigs_[index].num_args);
    if (rc != 0) throw cpu::RuntimeError(fmt::format("kernel '{}' failed with code {}", sigs_[index].name, rc));
  }

 private:
  void* handle_ = nullptr;
  std::vector<PackedFn> fns_;
  std::vector<target::KernelSignature> sigs_;
};

// A model whose every operator was folded to a constant runs no kernel.
class NoKernels : public target::KernelModule {
 public:
  void call(size_t index, void* const*) const override {
    throw cpu::RuntimeError(fmt::format("kernel {} called on a model without kernels", index));
  }
  std::string save() const override { return ""; }
};

// The CPU target of the registry's target string: "" is plain "llvm", "cpu" and an
// "llvm ..." string are what cpu::Target makes of them.
cpu::Target cpu_target(const std::string& options) { return cpu::Target::parse(options.empty() ? "llvm" : options); }

class CpuBackend : public target::Backend {
 public:
  std::string name() const override { return "cpu"; }
  bool is_host() const override { return true; }
  // "cpu" takes no options; an "llvm ..." string's are LLVM's, which cpu::Target reads.
  void check(const target::Target& t) const override { (void)cpu::Target(t); }
  target::MachineTraits traits(const std::string& options) const override {
    cpu::Target t = cpu_target(options);
    target::MachineTraits m{t.vector_bits(), t.vector_registers(), t.l1d_cache(), t.l2_cache()};
    m.gemm_k_unroll = t.gemm_k_unroll();
    return m;
  }
  int threads() const override { return kiln_get_num_threads(); }
  std::unique_ptr<target::KernelModule> build(const std::vector<schedule::LoweredFunc>& funcs,
                                              const std::string& options) const override {
    if (funcs.empty()) return std::make_unique<NoKernels>();
    return std::make_unique<CpuKernels>(cpu::build(funcs, cpu_target(options)));
  }
  std::unique_ptr<target::KernelModule> load(const std::string& bytes,
                                             const std::vector<target::KernelSignature>& kernels) const override {
    if (kernels.empty()) return std::make_unique<NoKernels>();
    return std::make_unique<LoadedKernels>(bytes, kernels);
  }
};

}  // namespace

const Module* compiled_module(const target::KernelModule& kernels) {
  const auto* k = dynamic_cast<const CpuKernels*>(&kernels);
  return k ? &k->module() : nullptr;
}

void register_graph_backend() {
  target::register_backend("cpu", [] { return std::make_unique<CpuBackend>(); });
}

}  // namespace kiln::cpu
