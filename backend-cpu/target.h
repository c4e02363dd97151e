#pragma once
// CPU targets in TVM's form: `llvm -mtriple=... -mcpu=... -mattr=+avx2,-avx512f`,
// plus `-num-cores=N` (parallel loops' task count), `-opt-level=0..3` and
// `-fast-math-contract=0|1` (fuse a*b+c into FMA; on by default as in TVM). A plain
// `llvm` is the host CPU with all its features.
#include <string>
#include <vector>

namespace kiln::cpu {

struct Target {
  std::string triple;              // "x86_64-pc-linux-gnu", "aarch64-linux-gnu"
  std::string cpu;                 // "znver4", "cortex-a72", "generic"
  std::vector<std::string> attrs;  // "+avx2", "-avx512f": the -mattr list
  int num_cores = 0;               // 0: the thread pool's size at run time
  int opt_level = 3;
  bool fp_contract = true;
  bool vector_libm = false;

  // Throws CompileError naming the offending option.
  static Target parse(const std::string& text);
  static Target host();

  // The -mattr list merged over the CPU's features ("+a,+b,-c") for LLVM.
  std::string feature_string() const;
  // Whether the target has a feature ("avx512f", "fma", "neon").
  bool has_feature(const std::string& name) const;
  bool is_host() const;
  bool is_x86() const;
  // Widest native vector, in bits (512 with AVX-512, 256 with AVX2, 128 otherwise).
  int vector_bits() const;
  // The canonical text form, parseable again.
  std::string to_string() const;

  // Resolved features: the CPU's own (host or LLVM's model of -mcpu) plus -mattr.
  std::vector<std::string> features;
};

}  // namespace kiln::cpu
