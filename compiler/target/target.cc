#include "compiler/target/target.h"

#include <fmt/format.h>

#include <sstream>
#include <vector>

#include "compiler/support/error.h"

namespace kiln::target {

Target::Target(std::string kind, std::map<std::string, std::string> options)
    : kind_(std::move(kind)), options_(std::move(options)) {}

Target Target::parse(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty()) throw CompileError("empty target string");
  Target t;
  if (words[0] == "llvm") {
    t.kind_ = "cpu";
    t.llvm_ = std::string(text);
    return t;
  }
  t.kind_ = words[0];
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

std::string Target::option(const std::string& key, const std::string& def) const {
  auto it = options_.find(key);
  return it == options_.end() ? def : it->second;
}

std::string Target::host() const {
  if (is_cpu()) return llvm_.empty() ? "llvm" : llvm_;
  return option("host", "llvm");
}

std::string Target::str() const {
  if (is_cpu() && !llvm_.empty()) return llvm_;
  std::string s = kind_;
  for (const auto& [k, v] : options_) s += fmt::format(" -{}={}", k, v);
  return s;
}

}  // namespace kiln::target
