#pragma once
// Choosing among tuned schedules inside the model (`kiln tune MODEL`'s last step on a
// CPU). A candidate is measured alone with its inputs hot in cache; inside the model
// the same kernel reads what its neighbour just wrote and weights that other layers
// pushed out of cache, and a schedule that wins alone can lose there (docs/tuning.md).
// So after the search, the model is compiled once per candidate rank: in compile c
// every tuned workload gets its c-th candidate (the default schedule first, then its
// best records measured alone), the model runs, and each workload's kernels are timed
// where they run. The compiles take turns for a few rounds; each (workload,
// candidate) keeps its fastest round, and the fastest candidate of each workload wins
// the screening. Being the fastest of several, its time is biased low by the noise,
// so the winners are timed again: the model compiled with every winner, taking turns
// with the model compiled with the defaults. Those two times per workload are
// appended to the records file as records of the tuner kInModelTuner, and
// records_hook (apply.h) chooses among them.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/graph/executor.h"
#include "compiler/graph/graph.h"
#include "compiler/target/target.h"

namespace kiln::tuner {

struct InModelOptions {
  int candidates = 3;  // best records measured alone per workload, beside the default
  int rounds = 3;      // turns over the compiles; each candidate keeps its fastest
  int runs = 10;       // profiled runs of the model per compile and round (the median counts)
  std::string records;  // the file with the search's records; the in-model records are appended
  target::Target target = {};  // a CPU target: "cpu" or an `llvm ...` string
  // Fills the model's inputs before the runs (kiln tune: --input files, else random).
  std::function<void(graph::Executor&)> set_inputs;
  // After each compile and its runs: done, total, seconds so far.
  std::function<void(int, int, double)> on_progress;
};

// One workload's choice: its time inside the model (all its kernels, summed) with the
// default schedule and with the screening's winner (which may be the default), as the
// second timing measured them.
struct InModelChoice {
  std::string workload;  // Workload::key()
  std::string node;      // a node of the model with this workload
  std::string template_name;
  int64_t default_config = -1, best_config = -1;
  double default_ms = 0, best_ms = 0;
  int candidates = 0;  // measured, the default included
};

struct InModelResult {
  std::vector<InModelChoice> choices;
  int compiles = 0;
  // The whole model (every kernel's median, summed; the fastest round) with the
  // defaults, and with every workload's winner.
  double model_default_ms = 0, model_chosen_ms = 0;
};

// Measures the candidates of every workload of `g` that has records in
// `opt.records` and a default configuration, appends the in-model records of its
// default and its winner, and returns the choices. Workloads without records keep the
// default and are not measured. Throws on a target that is not a CPU.
InModelResult select_in_model(const graph::Graph& g, const InModelOptions& opt);

}  // namespace kiln::tuner
