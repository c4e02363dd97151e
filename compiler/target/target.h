#pragma once
// The Target value (as TVM's Target): what a model is compiled for. A kind and its
// options, written as a target string, "cpu", "llvm -mcpu=znver4",
// "vta -config=tiny -device=rtl". The graph compiler, the executor, the tuner's records
// and the CLI pass it around, and Target::parse is the one reader of a target string:
// the kinds are the names in the backend registry (compiler/target/backend.h), and
// each backend says which options its kind takes. For an accelerator the options name
// its configuration and carry the configuration's fingerprint once the backend has
// resolved it (the compiler knows no hardware), so that a compiled model or a record
// made for one configuration is never applied to another. The CPU groups of an
// accelerator target run on its host, the CPU target in `-host` (default "llvm").
#include <map>
#include <string>
#include <string_view>

namespace kiln::target {

class Target {
 public:
  Target() = default;
  explicit Target(std::string kind, std::map<std::string, std::string> options = {});

  // "kind -key=value -key=value ...", "llvm -key=value ..." is kind "cpu" with LLVM's
  // options, which the CPU backend reads (cpu::Target). CompileError naming the string
  // on a malformed one, a kind no backend is registered for (listing the kinds there
  // are) or an option the kind does not take (check()).
  static Target parse(std::string_view text);
  // The syntax alone, nothing checked against the registry: for a backend's own reader
  // of its kind's strings (cpu::Target::parse), which works without a registered backend.
  static Target read(std::string_view text);
  // What parse() checks of a target once it is read: its kind is registered, its
  // options are those its backend takes (Backend::option_names, Backend::check), and
  // an accelerator's -host is a host target. For a target assembled with set_option.
  void check() const;

  const std::string& kind() const { return kind_; }
  bool is_cpu() const { return kind_ == "cpu"; }
  // An "llvm ..." string; a plain "cpu" is the host as kiln compiles for it by default.
  bool is_llvm() const { return llvm_; }
  // Whether the whole model runs on the host: "cpu" (the compiler's default), or a kind
  // whose backend builds host kernels (Backend::is_host: the interpreter).
  bool is_host() const;
  // An option's value, or `def`.
  std::string option(const std::string& key, const std::string& def = "") const;
  bool has_option(const std::string& key) const { return options_.count(key) != 0; }
  void set_option(const std::string& key, std::string value) { options_[key] = std::move(value); }
  const std::map<std::string, std::string>& options() const { return options_; }

  // The backend registered for this kind ("cpu", "vta", "interp").
  const std::string& backend() const { return kind_; }
  // What the host's kernels are built for: a host target itself, an accelerator's
  // `-host` option (default "llvm"). Its backend() builds them with its str().
  Target host_target() const;
  // host_target().str(): the host backend's target string.
  std::string host() const;

  // The canonical text form, parseable again.
  std::string str() const;
  bool operator==(const Target& o) const { return kind_ == o.kind_ && llvm_ == o.llvm_ && options_ == o.options_; }

 private:
  // check(), its errors naming `text` (the string as it was given).
  void check(const std::string& text) const;

  std::string kind_ = "cpu";
  std::map<std::string, std::string> options_;
  bool llvm_ = false;
};

}  // namespace kiln::target
