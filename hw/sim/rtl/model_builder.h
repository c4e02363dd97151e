#pragma once
// Verilated models of configurations this build did not Verilate (KILN_RTL_CONFIGS),
// made at run time for a co-design search: the configuration's parameter package,
// Verilator as hw/sim/rtl/CMakeLists.txt runs it, and a plugin (model.cc.in plus an
// entry point) linked with the Verilated archive into a shared object, which is
// dlopen()ed and registered (register_rtl_model), so that RtlSim and the rtl device
// find it by fingerprint like a built-in model. Results are cached on disk.
//
// The shared object leaves Kiln's and Verilator's runtime symbols undefined: they
// resolve against the executable, which must link kiln_rtl_sim and export its symbols
// (CMake `set_target_properties(<exe> PROPERTIES ENABLE_EXPORTS ON)`, as `kiln` does),
// so that the model shares the executable's Verilated runtime instead of a copy.
// Without that, dlopen fails and build_rtl_model throws hw::Error naming the symbol.

#include <filesystem>
#include <string>

#include "hw/sim/rtl/rtl_model.h"
#include "hw/spec/config.h"

namespace kiln::sim {

struct ModelBuildOptions {
  // Where models are cached. Empty: $KILN_RTL_MODEL_CACHE, else
  // $XDG_CACHE_HOME/kiln/rtl-models, else ~/.cache/kiln/rtl-models.
  std::filesystem::path cache_dir;
  std::string core = "decoupled";  // "decoupled" (kiln_top) or "inorder" (kiln_inorder_axi)
  bool paired_products = false;    // kiln_top's GEMM_PAIR_PRODUCTS
  int jobs = 1;                    // verilator --build -j
  // The whole build; on expiry the running tool's process group is killed and
  // hw::Error says that it timed out.
  double timeout_s = 1800;
};

// Builds (or finds in the cache) the Verilated model of `cfg` and registers it, so that
// RtlSim and the rtl device find it by fingerprint like a built-in one. Returns its info
// (name: cfg's name; config_json: cfg's JSON; core as given). The cache key covers the
// configuration, core, pairing, the RTL and harness sources' contents, Verilator's
// version and arguments: a changed RTL never reuses a stale model. Concurrent callers
// (threads, forked workers, MPI ranks) with the same key build it once; the others wait
// on the cache's lock file and reuse it. Prints a line to stderr when a build starts and
// ends (not for a cached model). Throws hw::Error naming the step that failed (source
// tree, package generation, verilator, the compiler, dlopen) and the log file with the
// tool's output. KILN_SOURCE_DIR in the environment overrides the source tree.
RtlModelInfo build_rtl_model(const hw::Config& cfg, const ModelBuildOptions& opt = {});

}  // namespace kiln::sim
