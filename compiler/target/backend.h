#pragma once
// The backend registry (as TVM's target registry): compiler/ knows no backend, so a
// backend registers a factory here under the target kind it serves ("cpu", "vta", ...)
// and the graph executor asks for it by that name. The registry is also what
// target::Target::parse checks a target string against: the kinds are the registered
// names, and each backend says which options its kind takes. The reference
// interpreter is always there as "interp".
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/schedule/lower.h"
#include "compiler/target/target.h"

namespace kiln::target {

// What a kernel's last run measured (an accelerator's cycles, utilization, bytes).
struct KernelStats {
  std::string name;
  std::map<std::string, double> values;
};

// How the executor uses one argument of a module's kernel (KernelModule::plan_memory).
struct ArgUse {
  int buffer = -1;            // the memory plan's buffer; arguments naming one buffer share it
  int64_t bytes = 0;          // the buffer's size
  bool constant = false;      // contents that never change (weights): copied in once
  bool device_only = false;   // written and read only by this module's kernels, never by the host
};

// Compiled kernels: function i of the list given to build(), called with one pointer
// per argument buffer (compact row-major data of the argument's type and shape).
class KernelModule {
 public:
  virtual ~KernelModule() = default;
  virtual void call(size_t index, void* const* args) const = 0;
  // Bytes that Backend::load() turns back into this module (a saved compiled model
  // carries them); empty when the backend cannot save its kernels.
  virtual std::string save() const { return ""; }
  // Per kernel, what its last call measured; empty for a backend that measures nothing.
  virtual std::vector<KernelStats> stats() const { return {}; }
  // Called once by the executor before any call, with each kernel's arguments (in
  // kernel order). A module with memory of its own (an accelerator's DRAM) lays the
  // plan's buffers out there: constants are copied in once, and device-only tensors
  // stay there between its kernels instead of going through the host. The default
  // ignores it: every call then copies what it needs.
  virtual void plan_memory(const std::vector<std::vector<ArgUse>>& kernels) { (void)kernels; }
};

// A kernel as a saved module knows it: its name and number of arguments.
struct KernelSignature {
  std::string name;
  int num_args = 0;
};

// What the graph compiler's default schedules need to know of the machine a backend
// compiles for (register tiles from the vector width and register count, cache
// blocking from the cache sizes). The defaults describe a plain 128-bit SIMD core.
struct MachineTraits {
  int vector_bits = 128;
  int vector_registers = 16;
  int64_t l1d_bytes = 32 << 10;
  int64_t l2_bytes = 256 << 10;
  // A GPU's threads per block for the default schedules (every stage's outputs split
  // over blockIdx.x and threadIdx.x, no layouts of the CPU's); 0 for a CPU.
  int gpu_threads = 0;
  // How far the register-tiled GEMM of constant weights (graph::default_gemm_tile)
  // unrolls its reduction: what measured fastest on the core (cpu::Target::gemm_k_unroll).
  int gemm_k_unroll = 8;
  bool is_gpu() const { return gpu_threads > 0; }
  int lanes(int element_bits) const { return std::max(1, vector_bits / element_bits); }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Whether this backend builds the host's kernels (cpu, interp): a target of its kind
  // runs the whole model on it. An accelerator's backend builds the kernels placed on
  // it, the others run on the target's host (Target::host_target). Default: false.
  virtual bool is_host() const { return false; }
  // The -key=value options a target of this kind takes; Target::parse refuses any
  // other (an accelerator kind also takes -host). Default: none.
  virtual std::vector<std::string> option_names() const { return {}; }
  // What Target::parse checks beyond the option names (the CPU backend: a target's
  // LLVM string); CompileError naming the problem. Default: nothing more.
  virtual void check(const Target& t) const { (void)t; }
  // The machine that `options` (a backend-specific target string) compiles for;
  // CompileError on a malformed string. The default: MachineTraits{}.
  virtual MachineTraits traits(const std::string& options) const {
    (void)options;
    return {};
  }
  // The threads its kernels run on now (the CPU backend's pool: KILN_NUM_THREADS, else
  // the hardware threads): what a time measured of them depends on. Default: 1.
  virtual int threads() const { return 1; }
  // `options`: a backend-specific target string ("llvm -mcpu=znver4", "").
  virtual std::unique_ptr<KernelModule> build(const std::vector<schedule::LoweredFunc>& funcs,
                                              const std::string& options) const = 0;
  // Loads what KernelModule::save() wrote, without compiling anything. The default
  // throws: the backend cannot load saved kernels.
  virtual std::unique_ptr<KernelModule> load(const std::string& bytes, const std::vector<KernelSignature>& kernels) const;
};

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

// Registers (or replaces) a backend. Backends call this from their own registration
// function (e.g. kiln::cpu::register_graph_backend()).
void register_backend(const std::string& name, BackendFactory factory);
// The backend of that name; CompileError listing the registered ones otherwise
// (unknown_target_message).
std::unique_ptr<Backend> make_backend(const std::string& name);
bool has_backend(const std::string& name);
// The machine a target compiles for: its backend's traits of its string
// (Backend::traits), or MachineTraits{} where no backend of its kind is registered.
MachineTraits machine_of(const Target& t);
// The registered names: the target kinds there are.
std::vector<std::string> backend_names();
// "no target 'KIND' (targets: cpu, interp, vta)": the one message for a kind that no
// backend serves, from Target::parse, make_backend and the graph's strategies.
std::string unknown_target_message(const std::string& kind);

}  // namespace kiln::target
