#include "compiler/target/backend.h"

#include <fmt/format.h>

#include <map>
#include <cstring>
#include <mutex>

#include "compiler/interp/interpreter.h"
#include "compiler/support/error.h"

namespace kiln::target {

namespace {

// The reference interpreter as a backend: each call copies the arguments into host
// buffers, runs the compiled program and copies the results back.
class InterpModule : public KernelModule {
 public:
  explicit InterpModule(const std::vector<schedule::LoweredFunc>& funcs) {
    for (const auto& f : funcs) {
      funcs_.push_back(f);
      progs_.push_back(std::make_unique<interp::Program>(f));
    }
  }
  void call(size_t index, void* const* args) const override {
    const schedule::LoweredFunc& f = funcs_.at(index);
    std::vector<interp::HostBuffer> bufs;
    bufs.reserve(f.args.size());
    for (size_t k = 0; k < f.args.size(); ++k) {
      std::vector<int64_t> shape;
      for (const auto& e : f.args[k]->shape) shape.push_back(*ir::as_const_int(e));
      bufs.emplace_back(f.args[k]->dtype, shape);
      std::memcpy(bufs.back().data(), args[k], static_cast<size_t>(bufs.back().size() * f.args[k]->dtype.storage_bytes()));
    }
    std::vector<interp::HostBuffer*> ptrs;
    for (auto& b : bufs) ptrs.push_back(&b);
    progs_[index]->run(ptrs);
    for (size_t k = 0; k < f.args.size(); ++k)
      std::memcpy(args[k], bufs[k].data(), static_cast<size_t>(bufs[k].size() * f.args[k]->dtype.storage_bytes()));
  }
 private:
  std::vector<schedule::LoweredFunc> funcs_;
  std::vector<std::unique_ptr<interp::Program>> progs_;
};

class InterpBackend : public Backend {
 public:
  std::string name() const override { return "interp"; }
  bool is_host() const override { return true; }
  std::unique_ptr<KernelModule> build(const std::vector<schedule::LoweredFunc>& funcs, const std::string&) const override {
    return std::make_unique<InterpModule>(funcs);
  }
};

struct Registry {
  std::mutex mu;
  std::map<std::string, BackendFactory> factories{{"interp", [] { return std::make_unique<InterpBackend>(); }}};
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::unique_ptr<KernelModule> Backend::load(const std::string&, const std::vector<KernelSignature>&) const {
  throw CompileError("backend '" + name() + "' cannot load saved kernels (it can only compile them)");
}

void register_backend(const std::string& name, BackendFactory factory) {
  std::lock_guard lock(registry().mu);
  registry().factories[name] = std::move(factory);
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  BackendFactory f;
  {
    std::lock_guard lock(registry().mu);
    auto it = registry().factories.find(name);
    if (it != registry().factories.end()) f = it->second;
  }
  if (!f) throw CompileError(unknown_target_message(name));
  return f();
}

bool has_backend(const std::string& name) {
  std::lock_guard lock(registry().mu);
  return registry().factories.count(name) != 0;
}

MachineTraits machine_of(const Target& t) {
  return has_backend(t.backend()) ? make_backend(t.backend())->traits(t.str()) : MachineTraits{};
}

std::string unknown_target_message(const std::string& kind) {
  return fmt::format("no target '{}' (targets: {})", kind, fmt::join(backend_names(), ", "));
}

std::vector<std::string> backend_names() {
  std::lock_guard lock(registry().mu);
  std::vector<std::string> r;
  for (const auto& [k, v] : registry().factories) r.push_back(k);
  return r;
}

}  // namespace kiln::target
