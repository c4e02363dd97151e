// The search-policy interface (tuner/policy.h) and the loop around it (tune): every
// policy proposes only new configurations of the space, the loop stops at the budget
// (trials, or a policy with nothing left), a policy's update sees the measured
// results, and a policy that proposes a measured configuration is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backend-cpu/graph_backend.h"
#include "tuner/policy.h"
#include "tuner/tuner.h"
#include "tuner/xgb_tuner.h"

namespace kiln::tuner {
namespace {

// A made-up cost per configuration, every 17th one failing.
MeasureResult fake_result(int64_t config) {
  MeasureResult r{1.0 + static_cast<double>(config * 7919 % 101), "s", "", 0};
  if (config % 17 == 3) r.error = "error: made up";
  return r;
}

// Answers in-process with fake_result, and notes each batch.
class FakeMeasurer : public Measurer {
 public:
  std::vector<MeasureResult> measure(const std::vector<MeasureInput>& in) override {
    batches.push_back(static_cast<int>(in.size()));
    std::vector<MeasureResult> out;
    for (const auto& i : in) out.push_back(fake_result(i.config));
    return out;
  }
  int parallelism() const override { return 1; }
  std::string describe() const override { return "fake"; }
  std::vector<int> batches;
};

Record record_of(const Template& t, const Workload& w, int64_t config) {
  Record r;
  r.template_name = t.name;
  r.workload = w.key();
  r.config = config;
  MeasureResult m = fake_result(config);
  r.cost = m.ok() ? m.cost : 0;
  r.error = m.error;
  return r;
}

struct Task {
  const Template& t = find_template("matmul.cpu");
  Workload w = parse_workload("matmul:M=2,N=16,K=2");  // 480 configurations
  ConfigSpace space = t.space(w);
  std::vector<Record> earlier, other;
  TuneOptions options;
  TuneTask task() const {
    TuneTask k{t, w, space, {}, {}, options};
    for (const Record& r : earlier) k.earlier.push_back(&r);
    for (const Record& r : other) k.others[r.workload].push_back(&r);
    return k;
  }
};

// Drives a policy by hand until it has nothing left: each batch holds new
// configurations of the space, as many as asked while enough are left, and together
// with the earlier records they cover the whole space.
void exhaust(const std::string& name, Task& k) {
  for (int64_t c : {0, 5, 17, 100, 479}) k.earlier.push_back(record_of(k.t, k.w, c));
  TuneTask task = k.task();
  std::unique_ptr<Tuner> policy = make_tuner(name, task);
  std::set<int64_t> seen;
  for (const Record& r : k.earlier) seen.insert(r.config);
  const int n = 60;
  while (policy->has_next()) {
    size_t left = static_cast<size_t>(k.space.size()) - seen.size();
    std::vector<int64_t> batch = policy->next_batch(n);
    ASSERT_EQ(batch.size(), std::min<size_t>(n, left)) << name;
    std::vector<MeasureInput> in;
    std::vector<MeasureResult> out;
    for (int64_t c : batch) {
      ASSERT_GE(c, 0) << name;
      ASSERT_LT(c, k.space.size()) << name;
      ASSERT_TRUE(seen.insert(c).second) << name << " proposed configuration " << c << " again";
      in.push_back({k.t.name, k.w, c});
      out.push_back(fake_result(c));
    }
    policy->update(in, out);
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), k.space.size()) << name;
  EXPECT_TRUE(policy->next_batch(n).empty()) << name;
}

TEST(Policies, ProposeOnlyUnseenConfigurationsOfTheSpace) {
  for (std::string name : {"grid", "random", "xgb"}) {
    Task k;
    exhaust(name, k);
  }
}

TEST(Policies, XgbProposesOnlyUnseenConfigurationsWhenAnnealing) {
  Task k;
  k.options.score_all_below = 0;
  k.options.epsilon = 0.2;
  exhaust("xgb", k);
}

TEST(Policies, XgbWithTransferIsGuidedBeforeItsFirstMeasurement) {
  Task k;
  Workload other = parse_workload("matmul:M=4,N=16,K=2");
  for (int64_t c = 0; c < 12; ++c) k.other.push_back(record_of(k.t, other, c * 13));
  TuneTask task = k.task();
  std::unique_ptr<Tuner> transfer = make_tuner("xgb", task);
  EXPECT_NE(dynamic_cast<XgbTransferTuner*>(transfer.get()), nullptr);
  EXPECT_TRUE(transfer->guided());
  EXPECT_EQ(transfer->transfer_records(), 12);
  k.options.transfer = false;
  std::unique_ptr<Tuner> plain = make_tuner("xgb", task);
  EXPECT_EQ(dynamic_cast<XgbTransferTuner*>(plain.get()), nullptr);
  EXPECT_FALSE(plain->guided());
  EXPECT_EQ(plain->transfer_records(), 0);
  std::unique_ptr<Tuner> random = make_tuner("random", task);
  EXPECT_FALSE(random->guided());
  EXPECT_EQ(random->transfer_records(), 0);
}

TEST(Policies, AnUnknownNameListsTheRegisteredOnes) {
  Task k;
  TuneTask task = k.task();
  try {
    make_tuner("annealing", task);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown tuner 'annealing' (grid, random"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(has_tuner("annealing"));
}

// A trial policy, as a newcomer would add one: one class, one register_tuner call.
// It proposes configurations from the top of the space down, at most `limit` in all,
// and logs what update sees.
struct TrialLog {
  int limit = 1 << 30;
  int64_t repeat = -1;  // >= 0: propose this configuration in every batch after the first (a broken policy)
  std::vector<std::vector<int64_t>> proposed;
  std::vector<std::vector<MeasureInput>> inputs;
  std::vector<std::vector<MeasureResult>> results;
};

class TopDownTuner : public Tuner {
 public:
  TopDownTuner(const TuneTask& task, std::shared_ptr<TrialLog> log)
      : Tuner(task), log_(std::move(log)), next_(task.space.size() - 1) {}
  std::vector<int64_t> next_batch(int n) override {
    std::vector<int64_t> batch;
    if (log_->repeat >= 0 && batches_++ > 0) batch.push_back(log_->repeat);
    while (static_cast<int>(batch.size()) < n && has_next()) take(next_--, &batch);
    log_->proposed.push_back(batch);
    return batch;
  }
  bool has_next() const override { return next_ >= 0 && static_cast<int>(visited_.size()) < log_->limit; }
  void update(const std::vector<MeasureInput>& in, const std::vector<MeasureResult>& out) override {
    log_->inputs.push_back(in);
    log_->results.push_back(out);
  }

 private:
  std::shared_ptr<TrialLog> log_;
  int64_t next_;
  int batches_ = 0;
};

std::shared_ptr<TrialLog> register_trial() {
  auto log = std::make_shared<TrialLog>();
  register_tuner("topdown", [log](const TuneTask& t) { return std::make_unique<TopDownTuner>(t, log); });
  return log;
}

// The 480-configuration task tuned by the trial policy, in batches of `batch`.
TuneResult tune_topdown(Measurer& m, int trials, int batch) {
  Task k;
  TuneOptions o;
  o.tuner = "topdown";
  o.trials = trials;
  o.batch = batch;
  return tune(k.t, k.w, m, o);
}

TEST(Loop, StopsAtTheTrialsAndRecordsThePolicysName) {
  std::shared_ptr<TrialLog> log = register_trial();
  Task k;
  FakeMeasurer m;
  TuneResult r = tune_topdown(m, 10, 3);
  EXPECT_EQ(m.batches, (std::vector<int>{3, 3, 3, 1}));
  EXPECT_EQ(r.measured, 10);
  ASSERT_EQ(r.records.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(r.records[i].config, k.space.size() - 1 - i);
    EXPECT_EQ(r.records[i].trial, i + 1);
    EXPECT_EQ(r.records[i].tuner, "topdown");
  }
  EXPECT_EQ(r.errors, static_cast<int>(std::count_if(r.records.begin(), r.records.end(), [](const Record& x) { return !x.ok(); })));
}

TEST(Loop, EarlyStoppingEndsAfterThatManyTrialsWithoutAGain) {
  std::shared_ptr<TrialLog> log = register_trial();
  Task k;
  FakeMeasurer m;
  TuneOptions o;
  o.tuner = "topdown";
  o.trials = 400;
  o.batch = 1;
  o.early_stopping = 5;
  TuneResult r = tune(k.t, k.w, m, o);
  EXPECT_TRUE(r.stopped_early);
  ASSERT_TRUE(r.best);
  EXPECT_LT(r.measured, 400);
  EXPECT_EQ(r.measured, r.best->trial + 5);
  // Every earlier stretch of five trials held a gain, or it would have stopped there.
  std::vector<int> gains = {0};  // the trials that improved the best
  double before = 0;             // 0: nothing succeeded yet
  for (size_t i = 0; i < r.best_curve.size(); ++i) {
    if (r.best_curve[i] != 0 && (before == 0 || r.best_curve[i] < before)) gains.push_back(static_cast<int>(i) + 1);
    before = r.best_curve[i];
  }
  for (size_t j = 0; j + 1 < gains.size(); ++j) EXPECT_LE(gains[j + 1] - gains[j], 5) << j;
  EXPECT_EQ(r.measured, gains.back() + 5);
  o.early_stopping = -1;
  EXPECT_THROW(tune(k.t, k.w, m, o), std::invalid_argument);
}

TEST(Loop, StopsWhenThePolicyHasNothingLeft) {
  std::shared_ptr<TrialLog> log = register_trial();
  log->limit = 5;
  FakeMeasurer m;
  TuneResult r = tune_topdown(m, 10, 4);
  EXPECT_EQ(m.batches, (std::vector<int>{4, 1}));
  EXPECT_EQ(r.measured, 5);
}

TEST(Loop, UpdateSeesTheMeasuredResults) {
  std::shared_ptr<TrialLog> log = register_trial();
  Task k;
  FakeMeasurer m;
  TuneResult r = tune_topdown(m, 40, 8);  // configurations 479 down to 440: 479, 462 and 445 fail
  ASSERT_EQ(log->inputs.size(), 5u);
  ASSERT_EQ(log->results.size(), 5u);
  size_t at = 0;
  int failed = 0;
  for (size_t b = 0; b < log->inputs.size(); ++b) {
    ASSERT_EQ(log->inputs[b].size(), log->proposed[b].size());
    ASSERT_EQ(log->results[b].size(), log->inputs[b].size());
    for (size_t i = 0; i < log->inputs[b].size(); ++i, ++at) {
      const MeasureInput& in = log->inputs[b][i];
      const MeasureResult& out = log->results[b][i];
      EXPECT_EQ(in.config, log->proposed[b][i]);
      EXPECT_EQ(in.template_name, k.t.name);
      EXPECT_EQ(in.workload.key(), k.w.key());
      MeasureResult want = fake_result(in.config);
      EXPECT_EQ(out.cost, want.cost);
      EXPECT_EQ(out.error, want.error);
      ASSERT_LT(at, r.records.size());
      EXPECT_EQ(r.records[at].config, in.config);
      EXPECT_EQ(r.records[at].error, out.error);
      if (!out.ok()) ++failed;
    }
  }
  EXPECT_EQ(at, 40u);
  EXPECT_EQ(failed, 3);
  EXPECT_EQ(r.errors, 3);
}

TEST(Loop, RefusesAPolicyThatProposesAMeasuredConfiguration) {
  std::shared_ptr<TrialLog> log = register_trial();
  log->repeat = 479;  // measured in the first batch, proposed again in the second
  FakeMeasurer m;
  try {
    tune_topdown(m, 10, 3);
    FAIL() << "no error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("tuner 'topdown' proposed configuration 479, which is measured already"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(m.batches, (std::vector<int>{3}));
  log->repeat = 480;  // outside the space
  EXPECT_THROW(tune_topdown(m, 10, 3), std::logic_error);
}


// A template that names the compiler's default schedule (matmul_packed.cpu) has it
// measured first, as trial 1 in a batch of its own; the policy never proposes it, and
// the result carries its measurement.
TEST(Loop, TheDefaultScheduleIsTheFirstTrial) {
  cpu::register_graph_backend();
  std::shared_ptr<TrialLog> log = register_trial();
  const Template& t = find_template("matmul_packed.cpu");
  Workload w = parse_workload("matmul_packed:M=16,N=64,K=32,block=32");
  const int64_t d = t.default_config(w, machine_traits("cpu"));
  ASSERT_GE(d, 0);
  FakeMeasurer m;
  TuneOptions o;
  o.tuner = "topdown";
  o.trials = 5;
  o.batch = 2;
  TuneResult r = tune(t, w, m, o);
  EXPECT_EQ(m.batches, (std::vector<int>{1, 2, 2}));
  ASSERT_EQ(r.records.size(), 5u);
  EXPECT_EQ(r.records[0].config, d);
  EXPECT_EQ(r.records[0].trial, 1);
  ASSERT_TRUE(r.default_record);
  EXPECT_EQ(r.default_record->config, d);
  for (const auto& batch : log->proposed) EXPECT_EQ(std::count(batch.begin(), batch.end(), d), 0);
  // Not for a template without one (bench/gemm's matmul.cpu).
  Task k;
  FakeMeasurer plain;
  EXPECT_FALSE(tune(k.t, k.w, plain, o).default_record);
  EXPECT_EQ(plain.batches, (std::vector<int>{2, 2, 1}));
}

}  // namespace
}  // namespace kiln::tuner
