#pragma once
// The tuning loop of one task: the search policy (policy.h: grid, random, xgb)
// proposes a batch of configurations, the measurer (measure.h: a process pool, or
// MPI ranks) measures them, their records are appended to the file, the policy
// learns from the results, and so on until the trials are done or the policy has
// nothing left to propose. No configuration is measured twice: earlier records of
// the same template and workload count as measured.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tuner/measure.h"
#include "tuner/records.h"

namespace kiln::tuner {

// Features of one task's configurations by index, kept by a caller that tunes the
// same task (template and workload) more than once, so that its candidates are
// lowered once (bench/tuner runs each task for several seeds).
struct FeatureMemo {
  std::unordered_map<int64_t, std::vector<float>> features;
};

struct TuneOptions {
  std::string tuner = "xgb";  // the search policy's name (policy.h: xgb, random, grid)
  int trials = 64;            // measurements of this task (with --resume: in total)
  // Stop when this many measurements in a row found nothing better (0: never), as
  // AutoTVM's early_stopping.
  int early_stopping = 0;
  // Measurements per batch. 0: batches of init_batch while the policy is not guided
  // by what it learned (xgb before its model has data; grid and random always), then
  // batches of small_batch until grow_after trials, then twice that (never fewer
  // than the measurer's parallelism).
  int batch = 0;
  int init_batch = 8;
  int small_batch = 4;
  int grow_after = 64;
  int64_t score_all_below = 20000;  // xgb: spaces up to this size are scored whole, not annealed
  uint64_t seed = 0;
  bool resume = false;        // records of this task in the file count as trials
  double epsilon = 0.05;      // xgb: share of random picks per batch
  int sa_points = 48;         // xgb: parallel annealing chains
  int sa_steps = 30;          // xgb: annealing steps per batch
  std::string records;        // the JSON-lines file ("" for none)
  // What the records are keyed by: the template's target ("" ) or, for an accelerator,
  // its records key with the configuration's fingerprint (graph::Strategy::records_key).
  // Records of another target are neither resumed nor learned from.
  std::string target;
  // The target string the candidates are built for (MeasureOptions::target): the
  // machine the default configuration (Template::default_config) and the candidates
  // lowered for the cost model's features are scheduled for ("": the host CPU).
  std::string candidates_target;
  std::shared_ptr<FeatureMemo> feature_memo;  // null: features live for this tune only
  // xgb: the model also trains on records of other workloads of the same template
  // (XgbTransferTuner; XgbTuner without)
  bool transfer = true;
  // Called after every batch (progress lines); the tuner prints nothing itself.
  std::function<void(const struct TuneProgress&)> on_progress;
};

struct TuneProgress {
  std::string task;  // "matmul.cpu matmul:M=..."
  int done = 0, total = 0, errors = 0;
  double best_cost = 0;   // 0 while nothing succeeded
  double best_gflops = 0;
  double elapsed_s = 0, eta_s = 0;
};

struct TuneResult {
  int measured = 0;  // in this run
  int errors = 0;
  bool stopped_early = false;  // TuneOptions::early_stopping ended it
  std::optional<Record> best;  // over this run and the earlier records of the task
  // The best cost after each trial of this run (0 until one succeeded).
  std::vector<double> best_curve;
  std::vector<Record> records;  // this run's
  // Records of other workloads of the same template the model also trained on.
  int transfer_records = 0;
  // The measurement of the compiler's default schedule (Template::default_config), in
  // this run (its first trial) or an earlier one; empty where the template has none.
  std::optional<Record> default_record;
};

// Tunes one task. Throws std::invalid_argument for bad options (unknown tuner,
// trials < 1, a template of another op) and for a bad records file, and
// std::logic_error when the policy proposes a configuration outside the space or one
// measured already. Without `resume`, earlier records of the task still train the
// model and are not measured again, but do not count as trials.
TuneResult tune(const Template& t, const Workload& w, Measurer& m, const TuneOptions& opt);

}  // namespace kiln::tuner
