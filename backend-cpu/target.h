#pragma once
// CPU targets in TVM's form: `llvm -mtriple=... -mcpu=... -mattr=+avx2,-avx512f`,
// plus `-num-cores=N` (parallel loops' task count), `-opt-level=0..3` and
// `-fast-math-contract=0|1` (fuse a*b+c into FMA; on by default as in TVM). A plain
// `llvm` is the host CPU with all its features.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/target/target.h"

namespace kiln::cpu {

struct Target {
  std::string triple;              // "x86_64-pc-linux-gnu", "aarch64-linux-gnu"
  std::string cpu;                 // "znver4", "cortex-a72", "generic"
  std::vector<std::string> attrs;  // "+avx2", "-avx512f": the -mattr list
  int num_cores = 0;               // 0: the thread pool's size at run time
  int opt_level = 3;
  bool fp_contract = true;
  bool vector_libm = false;
  // -l1d-cache=48K, -l2-cache=2M: the cache sizes the default schedules block for;
  // 0: the host's own (from /sys), or 32K and 1M for another CPU.
  int64_t l1d_bytes = 0;
  int64_t l2_bytes = 0;

  Target() = default;
  // A target of kind cpu as target::Target::parse read it: an "llvm ..." string's
  // options, or a plain "cpu" (default_host_string). Throws CompileError naming the
  // offending option.
  explicit Target(const target::Target& t);
  // The string read by target::Target's reader (no backend registry needed), then the above.
  static Target parse(const std::string& text);
  static Target host();
  // The host as `kiln` compiles for it by default ("cpu"): "llvm", plus -vector-libm=1
  // where glibc's libmvec is there (x86-64 Linux), so that exp, erf, tanh, ... are
  // vector calls (within a few ulp) rather than exact scalar ones.
  static std::string default_host_string();

  // The -mattr list merged over the CPU's features ("+a,+b,-c") for LLVM.
  std::string feature_string() const;
  // Whether the target has a feature ("avx512f", "fma", "neon").
  bool has_feature(const std::string& name) const;
  bool is_host() const;
  bool is_x86() const;
  // Widest native vector, in bits (512 with AVX-512, 256 with AVX2, 128 otherwise).
  int vector_bits() const;
  // Architectural vector registers (32 with AVX-512 or on AArch64, else 16).
  int vector_registers() const;
  // The L1 data and L2 cache sizes in bytes (the options, else as described above).
  int64_t l1d_cache() const;
  int64_t l2_cache() const;
  // The reduction unroll of the default GEMM's register tile (target::MachineTraits):
  // 4 on AMD's Zen 5 and later (-mcpu=znver5), 8 otherwise.
  int gemm_k_unroll() const;
  // The canonical text form, parseable again.
  std::string to_string() const;

  // Resolved features: the CPU's own (host or LLVM's model of -mcpu) plus -mattr.
  std::vector<std::string> features;
};

}  // namespace kiln::cpu
