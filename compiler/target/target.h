#pragma once
// The Target value (as TVM's Target): what a model is compiled for. A kind and its
// options, written as a target string, "cpu", "llvm -mcpu=znver4",
// "vta -config=tiny -device=rtl". The graph compiler, the executor, the tuner's records
// and the CLI pass it around. For an accelerator the options name its configuration
// and carry the configuration's fingerprint once the backend has resolved it (the
// compiler knows no hardware), so that a compiled model or a record made for one
// configuration is never applied to another. The CPU groups of an accelerator
// target run on its host, the CPU target in `-host` (default "llvm").
#include <map>
#include <string>
#include <string_view>

namespace kiln::target {

class Target {
 public:
  Target() = default;
  explicit Target(std::string kind, std::map<std::string, std::string> options = {});

  // "kind -key=value -key=value ...", "llvm ..." is kind "cpu" with its string kept
  // whole for the CPU backend. CompileError on a malformed string.
  static Target parse(std::string_view text);

  const std::string& kind() const { return kind_; }
  bool is_cpu() const { return kind_ == "cpu"; }
  // An option's value, or `def`.
  std::string option(const std::string& key, const std::string& def = "") const;
  bool has_option(const std::string& key) const { return options_.count(key) != 0; }
  void set_option(const std::string& key, std::string value) { options_[key] = std::move(value); }
  const std::map<std::string, std::string>& options() const { return options_; }

  // The backend registered for this kind ("cpu", "vta", "interp").
  const std::string& backend() const { return kind_; }
  // The CPU target string for the host's kernels: the `-host` option, else "llvm"
  // (for a CPU target its own string).
  std::string host() const;

  // The canonical text form, parseable again.
  std::string str() const;
  bool operator==(const Target& o) const { return kind_ == o.kind_ && options_ == o.options_; }

 private:
  std::string kind_ = "cpu";
  std::map<std::string, std::string> options_;
  std::string llvm_;  // a CPU target's LLVM string ("llvm -mcpu=..."), empty for plain "cpu"
};

}  // namespace kiln::target
