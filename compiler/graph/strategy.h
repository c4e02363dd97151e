#pragma once
// Per-target strategies at the graph level (as TVM's op strategy): what a target can
// compute and how. compiler/ knows no backend, so an accelerator backend registers a
// Strategy under its target kind ("vta"); the CPU's strategy is the default schedule
// of lower_group() and is always there.
//
// compile() for a target asks its strategy to place the graph first: place() rewrites
// the nodes the target computes into its own operators (packed layouts, layout
// transforms at the boundaries, weights packed by constant folding, graph_pack's job)
// and marks each of them with the attribute `target` = the kind. FuseOps keeps such
// nodes in groups of their own; lower() turns each into one function that the
// target's backend (compiler/target registry, same name) builds. Every other group
// runs on the host CPU.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"
#include "compiler/graph/lower_group.h"
#include "compiler/target/target.h"

namespace kiln::graph {

// Where one operator of the model runs, and why (what `kiln run` reports).
struct Placement {
  std::string node;    // the operator's name in the model
  std::string op;      // its op
  std::string target;  // "vta", or "cpu"
  std::string reason;  // why it stayed on the CPU; empty when placed
};

// Tuned schedules for the nodes a strategy lowers (the tuner's records: tuner/apply.h).
// Asked with the placed graph, a node marked for the target, the tuning template the
// strategy schedules it with ("conv2d.vta") and the target's records_key(); answers the
// template's knobs in words, or nothing, and then the strategy keeps its default.
using KnobHook = std::function<std::optional<std::map<std::string, std::string>>(
    const Graph&, NodeId, const std::string& template_name, const std::string& records_key)>;

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string kind() const = 0;
  // Rewrites what this target computes; appends one Placement per candidate operator.
  virtual Graph place(const Graph& g, const target::Target& t, std::vector<Placement>& report) const = 0;
  // One node marked for this target, lowered to the function its backend builds
  // (arguments: the node's inputs, then its output).
  virtual LoweredGroup lower(const Graph& g, NodeId node, const std::string& name, const target::Target& t) const = 0;
  // The same with tuned knobs where `knobs` has them; a strategy without tuning
  // templates ignores them.
  virtual LoweredGroup lower(const Graph& g, NodeId node, const std::string& name, const target::Target& t,
                             const KnobHook& knobs) const {
    (void)knobs;
    return lower(g, node, name, t);
  }
  // The target with what the backend resolves (the configuration's fingerprint).
  virtual target::Target resolve(const target::Target& t) const { return t; }
  // What a tuning record of this target is keyed by: the resolved target without the
  // options that change where it runs but not what a schedule costs (the device kind,
  // a waveform file). Records made for one configuration never apply to another.
  virtual std::string records_key(const target::Target& resolved) const { return resolved.str(); }
};

using StrategyFactory = std::function<std::unique_ptr<Strategy>()>;
void register_strategy(const std::string& kind, StrategyFactory factory);
// The strategy of an accelerator kind; null for a host kind (Target::is_host: cpu,
// interp); CompileError naming the registered kinds otherwise.
std::unique_ptr<Strategy> make_strategy(const std::string& kind);

// The key a target's tuning records carry: an accelerator's strategy resolves the
// target and keys it (Strategy::records_key); the host's is "cpu".
std::string records_key_of(const target::Target& t);

// The target a node is marked for ("" for the host).
std::string node_target(const Node& n);

}  // namespace kiln::graph
