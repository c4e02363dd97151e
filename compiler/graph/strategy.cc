#include "compiler/graph/strategy.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "compiler/support/error.h"
#include "compiler/target/backend.h"

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
  {
    std::lock_guard lock(registry().mu);
    auto it = registry().factories.find(kind);
    if (it != registry().factories.end()) return it->second();
  }
  if (target::Target(kind).is_host()) return nullptr;
  throw CompileError(target::unknown_target_message(kind));
}

std::string records_key_of(const target::Target& t) {
  std::unique_ptr<Strategy> s = make_strategy(t.kind());
  return s ? s->records_key(s->resolve(t)) : "cpu";
}

std::string node_target(const Node& n) { return n.attrs.get_string("target", ""); }

}  // namespace kiln::graph
