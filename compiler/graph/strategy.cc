#include "compiler/graph/strategy.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "compiler/support/error.h"

namespace kiln::graph {

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, StrategyFactory> factories;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_strategy(const std::string& kind, StrategyFactory factory) {
  std::lock_guard lock(registry().mu);
  registry().factories[kind] = std::move(factory);
}

std::unique_ptr<Strategy> make_strategy(const std::string& kind) {
  if (kind == "cpu" || kind == "interp") return nullptr;
  std::lock_guard lock(registry().mu);
  auto it = registry().factories.find(kind);
  if (it == registry().factories.end()) {
    std::vector<std::string> names{"cpu", "interp"};
    for (const auto& [k, v] : registry().factories) names.push_back(k);
    throw CompileError(fmt::format("no target '{}' (targets: {})", kind, fmt::join(names, ", ")));
  }
  return it->second();
}

std::string records_key_of(const target::Target& t) {
  std::unique_ptr<Strategy> s = make_strategy(t.kind());
  return s ? s->records_key(s->resolve(t)) : "cpu";
}

std::string node_target(const Node& n) { return n.attrs.get_string("target", ""); }

}  // namespace kiln::graph
