#include "compiler/target/target.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <vector>

#include "compiler/support/error.h"
#include "compiler/target/backend.h"

namespace kiln::target {

Target::Target(std::string kind, std::map<std::string, std::string> options)
    : kind_(std::move(kind)), options_(std::move(options)) {}

Target Target::read(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty()) throw CompileError("empty target string");
  Target t;
  t.llvm_ = words[0] == "llvm";
  t.kind_ = t.llvm_ ? "cpu" : words[0];
  for (size_t k = 1; k < words.size(); ++k) {
    const std::string& w = words[k];
    auto eq = w.find('=');
    if (w.size() < 2 || w[0] != '-' || eq == std::string::npos || eq == 1)
      throw CompileError(fmt::format("target '{}': option '{}' is not -key=value", text, w));
    std::string key = w.substr(1, eq - 1);
    if (t.options_.count(key)) throw CompileError(fmt::format("target '{}': option -{} given twice", text, key));
    t.options_[key] = w.substr(eq + 1);
  }
  return t;
}

Target Target::parse(std::string_view text) {
  Target t = read(text);
  t.check(std::string(text));
  return t;
}

void Target::check() const { check(str()); }

void Target::check(const std::string& text) const {
  if (!has_backend(kind_)) {
    std::string why = unknown_target_message(kind_);
    throw CompileError(text == kind_ ? why : fmt::format("target '{}': {}", text, why));
  }
  std::unique_ptr<Backend> b = make_backend(kind_);
  // An "llvm ..." string's options are LLVM's, which the CPU backend checks itself.
  if (llvm_) {
    b->check(*this);
    return;
  }
  std::vector<std::string> known = b->option_names();
  if (!b->is_host()) known.push_back("host");
  for (const auto& [key, value] : options_) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::vector<std::string> dashed;
    for (const auto& k : known) dashed.push_back("-" + k);
    throw CompileError(fmt::format("target '{}': {} takes no option -{} ({})", text, kind_, key,
                                   dashed.empty() ? "it takes none" : fmt::format("it takes {}", fmt::join(dashed, " "))));
  }
  if (has_option("host")) {
    Target h = read(option("host"));
    try {
      h.check();
    } catch (const CompileError& e) {
      throw CompileError(fmt::format("target '{}': -host: {}", text, e.what()));
    }
    if (!h.is_host()) {
      std::vector<std::string> hosts;
      for (const std::string& k : backend_names())
        if (make_backend(k)->is_host()) hosts.push_back(k);
      throw CompileError(fmt::format("target '{}': -host={} is not a host target ({})", text, h.str(), fmt::join(hosts, ", ")));
    }
  }
  b->check(*this);
}

bool Target::is_host() const { return is_cpu() || (has_backend(kind_) && make_backend(kind_)->is_host()); }

std::string Target::option(const std::string& key, const std::string& def) const {
  auto it = options_.find(key);
  return it == options_.end() ? def : it->second;
}

Target Target::host_target() const {
  if (is_host()) return *this;
  return read(option("host", "llvm"));
}

std::string Target::host() const { return host_target().str(); }

std::string Target::str() const {
  std::string s = llvm_ ? "llvm" : kind_;
  for (const auto& [k, v] : options_) s += fmt::format(" -{}={}", k, v);
  return s;
}

}  // namespace kiln::target
