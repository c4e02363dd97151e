#pragma once
// The three tiers a candidate configuration is costed in (docs/explore.md):
//   1. analytic: the VTA strategy's cycle model per layer (the schedule chosen by it
//      from every legal tiling) and the resource model (resource_model.h): microseconds;
//   2. synthesis: Yosys for the board's family (and nextpnr for a board with its own
//      top, giving fmax): minutes;
//   3. RTL: the configuration Verilated (hw/sim/rtl/model_builder.h, cached), every
//      layer run on it with the tier-1 schedule, checked bit for bit against the CPU
//      reference, cycles counted: minutes.
// Tiers 2 and 3 are tuner templates ("explore.synth", "explore.rtl") whose space is the
// board's configurations (space.h), so they run in the tuner's worker processes or on
// MPI ranks, with its timeouts, and land in its records (tuner/records.h) with their
// figures in Record::detail.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "boards/flow/board.h"
#include "explore/space.h"
#include "explore/workload.h"
#include "tuner/template.h"

namespace kiln::explore {

inline constexpr const char* kSynthTemplate = "explore.synth";
inline constexpr const char* kRtlTemplate = "explore.rtl";

struct LayerPlan {
  std::string name;
  vta::Conv2DKnobs knobs;
  double model_cycles = 0;  // one run
};

// Tier 1 cycles: each layer's best schedule by the cycle model of the board's core. The
// decoupled core: the VTA strategy's model, the tiling it ranks first among every legal
// one. The in-order core: among the single-thread tilings (nothing overlaps there), the
// four that model ranks first and that compile, each program costed by
// vta::estimate_inorder at the board's memory latency, the cheapest kept. `invalid`
// says why the configuration cannot run the workload (a layer's channels, no tiling
// that fits).
struct CycleEstimate {
  std::string invalid;
  double cycles = 0;  // every run of every layer
  std::vector<LayerPlan> layers;
  bool ok() const { return invalid.empty(); }
};
CycleEstimate model_cycles(const hw::Config& cfg, const ExploreWorkload& w, const CoreTiming& timing = {});

// What the worker processes need: the same on every MPI rank, since each rank builds
// it from the same command line.
struct ExploreContext {
  boards::Board board;
  HwSpace space;
  ExploreWorkload workload;
  std::filesystem::path work_dir;   // synthesis outputs under work_dir/synth/<config>
  int verilator_jobs = 2;           // per model build
};

// The tuner workload of a tier: op = the template, args = "<board>|<workload text>".
tuner::Workload tier_workload(const ExploreContext& ctx, const std::string& tmpl);
// Registers the two templates and their measure functions for `ctx`.
void register_explore_templates(std::shared_ptr<const ExploreContext> ctx);

}  // namespace kiln::explore
