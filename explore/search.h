#pragma once
// The co-design search (docs/explore.md). Nested: the configuration search is outside,
// and each configuration's per-layer schedules are the cycle model's best (tiers.h).
//
// guided: every configuration of the space is costed at tier 1; the board's own
//   configuration is verified first (the reference); then, batch by batch, the
//   configurations the analytic models put on the front (fastest first, then spread
//   over the resource axis) and not dominated by what is verified go to synthesis; the
//   resource model is refitted to each synthesis, and those that fit the budget go to
//   the RTL (a batch: the pool's width, at least two). The cycle model is corrected by
//   the median of measured / modelled cycles of the verified points when it ranks.
// random: the same, with configurations drawn uniformly from those the compiler can run
//   the workload on, as the baseline a search must beat with the same number of RTL runs.
//
// Every evaluation is a tuner record (template explore.synth or explore.rtl, workload
// "<board>|<layers>", configuration index), appended as it finishes; a rerun with the
// same records file takes earlier evaluations from it instead of running them again,
// so a killed search resumes where it was and a finished one replays in seconds.
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "explore/tiers.h"
#include "tuner/measure.h"
#include "tuner/records.h"

namespace kiln::explore {

struct ExploreOptions {
  // Share of each resource the design may use (0..1]: "LUT" -> 0.8. Kinds not named may
  // use the whole part. The utilization objective is the largest share over the kinds
  // named (over LUT, FF, DSP and BRAM when none is).
  std::map<std::string, double> budget;
  int evaluations = 8;  // RTL (tier 3) evaluations, the reference not counted
  int max_synth = 0;    // synthesis (tier 2) runs at most (0: 4 x evaluations)
  std::string search = "guided";  // or "random"
  uint64_t seed = 0;
  std::string records;  // the JSON-lines file (required)
  std::function<void(const std::string&)> on_progress;  // one line per event
};

// One configuration, as far as the search took it.
struct Evaluated {
  int64_t index = -1;
  hw::Config config = hw::Config::vta_default();
  CycleEstimate model;                        // tier 1
  std::map<std::string, double> predicted;    // tier 1 resources when it was chosen
  std::optional<tuner::Record> synth, rtl;    // tiers 2 and 3
  bool reference = false;                     // the board's own configuration

  std::string name() const { return HwSpace::short_name(config); }
  bool synthesized() const { return synth && synth->ok(); }
  bool verified() const { return rtl && rtl->ok(); }
  double used(const std::string& kind) const;       // tier 2
  double available(const std::string& kind) const;  // tier 2
  std::optional<double> fmax_mhz() const;           // tier 2 (boards that place and route)
  double cycles() const { return verified() ? rtl->cost : 0; }
};

struct ExploreResult {
  std::string search;
  std::vector<Evaluated> points;       // every configuration that reached tier 2
  std::vector<size_t> front;           // into points: verified, fits, non-dominated
  std::optional<size_t> reference;     // into points
  int space_size = 0, runnable = 0;    // the space, and the configurations that can run the workload
  int synth_runs = 0, rtl_runs = 0;    // evaluations used (from the records or run now)
  int synth_new = 0, rtl_new = 0;      // of them run in this call
  nlohmann::json model_error;          // tier 1 against tiers 2 and 3
  std::vector<std::string> budget_kinds;
};

// Whether point `p` of `r` fits `opt`'s budget (and, on a board that places and routes,
// meets its target clock); `why` gets the reason when it does not.
bool fits_budget(const Evaluated& p, const ExploreContext& ctx, const ExploreOptions& opt, std::string* why = nullptr);
// The utilization objective of a synthesized point: the largest share over `kinds`.
double utilization(const Evaluated& p, const std::vector<std::string>& kinds);
// The non-dominated points (lower cycles, lower utilization) among `candidates`.
std::vector<size_t> pareto_front(const std::vector<Evaluated>& points, const std::vector<size_t>& candidates,
                                 const std::vector<std::string>& kinds);
// Whether every point of front `b` is weakly dominated by a point of front `a`.
bool front_dominates(const ExploreResult& a, const ExploreResult& b);

ExploreResult explore(const ExploreContext& ctx, tuner::Measurer& measurer, const ExploreOptions& opt);

}  // namespace kiln::explore
