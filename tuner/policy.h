#pragma once
// Search policies (AutoTVM's Tuner): a policy proposes the configurations of one
// task to measure next and learns from their measurements; tune() (tuner.h) is the
// loop around one: propose, measure, record, update. Policies are kept in a registry
// by name (`kiln tune --tuner NAME`, TuneOptions::tuner):
//
//   grid    GridTuner        configurations in index order (a baseline)
//   random  RandomTuner      uniformly random, without repetition (a baseline)
//   xgb     XgbTuner         the XGBoost cost model's best-scored configurations
//           XgbTransferTuner the same model, first trained on the records of other
//                            workloads of the template (TuneOptions::transfer)
//
// A new policy is a Tuner subclass plus one register_tuner call (or one line in
// the built-in table, policy.cc). See docs/tuning.md, "Search policies".
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tuner/measure.h"
#include "tuner/records.h"

namespace kiln::tuner {

struct TuneOptions;  // tuner.h

// What a policy is made from: one task (template, workload, its space), the records
// the file already holds, and the tuning options.
struct TuneTask {
  const Template& tmpl;
  const Workload& workload;
  const ConfigSpace& space;
  // This task's earlier records: measured already, never to be proposed again.
  std::vector<const Record*> earlier;
  // Records of other workloads of the same template and target, by workload key
  // (empty unless TuneOptions::transfer): what a transfer policy learns from.
  std::map<std::string, std::vector<const Record*>> others;
  const TuneOptions& options;
};

class Tuner {
 public:
  // A policy keeps a reference to its task, which must outlive it (tune() holds both).
  explicit Tuner(const TuneTask& task);
  virtual ~Tuner() = default;
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;

  // At most n configurations (indices into the space) to measure next, none measured
  // before (the task's earlier records, earlier batches) and none twice; fewer only
  // when the policy has no more. The loop measures them in this order.
  virtual std::vector<int64_t> next_batch(int n) = 0;
  // The measurements of the batch just proposed: results[k] is inputs[k]'s.
  virtual void update(const std::vector<MeasureInput>& inputs, const std::vector<MeasureResult>& results);
  // Whether next_batch has a configuration left to propose.
  virtual bool has_next() const;
  // Whether the next batch is guided by what the policy has learned; the loop then
  // measures in the smaller batches of TuneOptions::small_batch (tuner.h).
  virtual bool guided() const { return false; }
  // Records of other workloads that the policy learned from (transfer).
  virtual int transfer_records() const { return 0; }

 protected:
  // Notes a proposal; false (and nothing noted) when it was measured or proposed
  // before, or is outside the space.
  bool take(int64_t index, std::vector<int64_t>* batch);
  bool visited(int64_t index) const { return visited_.count(index) > 0; }
  // A random configuration not visited, or -1 when none is left.
  int64_t random_unvisited();
  // Random unvisited configurations appended to `batch` until it holds n.
  void fill_random(int n, std::vector<int64_t>* batch);

  const TuneTask& task_;
  const ConfigSpace& space_;
  std::mt19937_64 rng_;  // seeded from TuneOptions::seed
  std::set<int64_t> visited_;  // measured or proposed
};

class GridTuner : public Tuner {
 public:
  using Tuner::Tuner;
  std::vector<int64_t> next_batch(int n) override;

 private:
  int64_t next_ = 0;
};

class RandomTuner : public Tuner {
 public:
  using Tuner::Tuner;
  std::vector<int64_t> next_batch(int n) override;
};

using TunerFactory = std::function<std::unique_ptr<Tuner>(const TuneTask&)>;

// Adds (or replaces) a policy under `name`.
void register_tuner(const std::string& name, TunerFactory make);
// The registered names, sorted.
std::vector<std::string> tuner_names();
bool has_tuner(const std::string& name);
// The policy `name` for a task; std::invalid_argument "unknown tuner 'NAME' (grid,
// random or xgb)" when no policy has that name.
std::unique_ptr<Tuner> make_tuner(const std::string& name, const TuneTask& task);
// The error make_tuner throws for an unknown name.
std::string unknown_tuner_message(const std::string& name);

}  // namespace kiln::tuner
