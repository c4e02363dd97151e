#pragma once
// The cost-model search (policy "xgb", policy.h). XgbTuner trains the XGBoost cost
// model (cost_model.h) on the task's measurements after every batch and proposes the
// best-scored unmeasured configurations: all of them scored when the space has at
// most TuneOptions::score_all_below, found by simulated annealing over the model's
// scores otherwise. Each slot of a batch is a random configuration instead with
// probability TuneOptions::epsilon; those come after the model's picks. Until the
// model has data, batches are random. XgbTransferTuner also trains on the records of
// other workloads of the same template (each workload one ranking group), so that a
// new workload starts with a trained model.
#include <cstdint>
#include <memory>
#include <vector>

#include "tuner/cost_model.h"
#include "tuner/policy.h"
#include "tuner/tuner.h"

namespace kiln::tuner {

// Features of configurations of one task, its candidates lowered for `machine` (as they
// are measured), computed once (lowering is the cost) into the caller's memo when it
// gives one.
class FeatureCache {
 public:
  FeatureCache(const Template& t, const Workload& w, ConfigSpace space, target::MachineTraits machine,
               std::shared_ptr<FeatureMemo> memo = nullptr);
  const ConfigSpace& space() const { return space_; }
  // Empty when the configuration does not lower (an invalid schedule).
  const std::vector<float>& get(int64_t index);

 private:
  const Template& t_;
  Workload w_;
  ConfigSpace space_;
  target::MachineTraits machine_;
  std::shared_ptr<FeatureMemo> memo_;
};

// The cost model's training rows: features, relevance, sizes of ranking groups.
struct TrainSet {
  std::vector<std::vector<float>> x;
  std::vector<float> y;
  std::vector<unsigned> groups;
};

// One measurement as the model sees it.
struct Sample {
  int64_t config = -1;
  bool ok = false;
  double cost = 0;  // when ok
};

class XgbTuner : public Tuner {
 public:
  // `prior`: rows the model trains on besides this task's measurements.
  explicit XgbTuner(const TuneTask& task, TrainSet prior = {});
  std::vector<int64_t> next_batch(int n) override;
  void update(const std::vector<MeasureInput>& inputs, const std::vector<MeasureResult>& results) override;
  bool guided() const override { return model_.trained(); }
  int transfer_records() const override { return static_cast<int>(prior_.x.size()); }

 private:
  void train();

  FeatureCache features_;
  CostModel model_;
  TrainSet prior_;
  std::vector<Sample> samples_;  // the task's measurements: earlier records, then this run's
};

class XgbTransferTuner : public XgbTuner {
 public:
  explicit XgbTransferTuner(const TuneTask& task);
};

}  // namespace kiln::tuner
