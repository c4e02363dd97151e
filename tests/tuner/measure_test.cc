// Measurement in worker processes: a crashing or hanging candidate is killed and
// recorded as an error, and tuning goes on. Faults are injected with the test-only
// KILN_TUNER_INJECT (a real segfault, a real hang). Also: the XGBoost cost model and
// the search loop.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "backend-cpu/graph_backend.h"
#include "tuner/cost_model.h"
#include "tuner/records.h"
#include "tuner/tuner.h"

namespace kiln::tuner {
namespace {

namespace fs = std::filesystem;

class Measure : public ::testing::Test {
 protected:
  void SetUp() override { cpu::register_graph_backend(); }
  void TearDown() override { unsetenv("KILN_TUNER_INJECT"); }
  Workload w = parse_workload("matmul:M=32,N=32,K=32");
};

TEST_F(Measure, CrashAndHangAreIsolatedAndRecordedAsErrors) {
  setenv("KILN_TUNER_INJECT", "crash:1,hang:2,fail:3", 1);
  MeasureOptions o;
  o.timeout_s = 3;
  LocalPool pool(2, o);
  std::vector<MeasureInput> in;
  for (int64_t i = 0; i < 5; ++i) in.push_back({"matmul.cpu", w, i});
  std::vector<MeasureResult> r = pool.measure(in);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_TRUE(r[0].ok()) << r[0].error;
  EXPECT_GT(r[0].cost, 0);
  EXPECT_NE(r[1].error.find("crash: worker died of signal 11"), std::string::npos) << r[1].error;
  EXPECT_NE(r[2].error.find("timeout: killed after 3 s"), std::string::npos) << r[2].error;
  EXPECT_NE(r[3].error.find("error: injected failure"), std::string::npos) << r[3].error;
  EXPECT_TRUE(r[4].ok()) << r[4].error;
}

TEST_F(Measure, EachResultIsReportedAsItFinishes) {
  setenv("KILN_TUNER_INJECT", "hang:0", 1);
  MeasureOptions o;
  o.timeout_s = 3;
  LocalPool pool(2, o);
  std::vector<MeasureInput> in;
  for (int64_t i = 0; i < 4; ++i) in.push_back({"matmul.cpu", w, i});
  std::vector<size_t> order;
  pool.set_on_result([&](size_t k, const MeasureResult& r) {
    order.push_back(k);
    EXPECT_EQ(r.ok(), k != 0) << k << ": " << r.error;
  });
  std::vector<MeasureResult> r = pool.measure(in);
  // Candidate 0 hangs until its timeout, so the others are reported before it.
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order.back(), 0u);
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_FALSE(r[0].ok());
}

// Holds the host lock exclusively from another process (a lock held by this one would
// be inherited by the pool's forked workers) for `seconds`, as another worker's timing
// would; returns once it is held.
pid_t hold_host_lock(double seconds) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    int fd = open(host_lock_path().c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(1);
    char c = 1;
    if (write(ready[1], &c, 1) != 1) _exit(1);
    usleep(static_cast<useconds_t>(seconds * 1e6));
    _exit(0);
  }
  close(ready[1]);
  char c = 0;
  ssize_t n = read(ready[0], &c, 1);
  close(ready[0]);
  return n == 1 ? pid : -1;
}

// One candidate measured by a pool of one worker while another process holds the
// host lock for `hold_s`.
MeasureResult measure_while_locked(const Workload& w, const MeasureOptions& o, double hold_s) {
  pid_t holder = hold_host_lock(hold_s);
  EXPECT_GT(holder, 0);
  LocalPool pool(1, o);
  std::vector<MeasureResult> r = pool.measure({{"matmul.cpu", w, 0}});
  int status = 0;
  if (holder > 0) waitpid(holder, &status, 0);
  EXPECT_EQ(r.size(), 1u);
  return r.empty() ? MeasureResult{} : r[0];
}

TEST_F(Measure, WaitingForTheHostLockIsNotCountedAgainstTheTimeout) {
  MeasureOptions o;
  o.timeout_s = 2;
  MeasureResult r = measure_while_locked(w, o, 3.5);
  EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_GT(r.elapsed_s, 3.0);  // it did wait for the lock
}

TEST_F(Measure, AWorkerWaitingTooLongForTheHostLockIsKilled) {
  MeasureOptions o;
  o.timeout_s = 20;
  o.max_lock_wait_s = 1;
  MeasureResult r = measure_while_locked(w, o, 3);
  EXPECT_NE(r.error.find("timeout: waited 1 s for the host lock " + host_lock_path()), std::string::npos) << r.error;
}

TEST_F(Measure, TuningGoesOnPastBrokenCandidates) {
  setenv("KILN_TUNER_INJECT", "crash:1,hang:2", 1);
  MeasureOptions mo;
  mo.timeout_s = 3;
  LocalPool pool(1, mo);
  fs::path p = fs::temp_directory_path() / ("kiln-tune-faults-" + std::to_string(getpid()) + ".jsonl");
  fs::remove(p);
  TuneOptions o;
  o.tuner = "grid";
  o.trials = 6;
  o.records = p.string();
  TuneResult r = tune(find_template("matmul.cpu"), w, pool, o);
  EXPECT_EQ(r.measured, 6);
  EXPECT_EQ(r.errors, 2);
  ASSERT_TRUE(r.best.has_value());
  std::vector<Record> rs = load_records(p.string());
  ASSERT_EQ(rs.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(rs[i].config, i);  // grid order
  EXPECT_NE(rs[1].error.find("crash"), std::string::npos);
  EXPECT_NE(rs[2].error.find("timeout"), std::string::npos);
  fs::remove(p);
}

TEST(CostModel, LearnsARanking) {
  // Relevance grows with x0 and falls with x1; x2 is noise.
  std::vector<std::vector<float>> x;
  std::vector<float> y;
  for (int i = 0; i < 60; ++i) {
    float a = static_cast<float>(i % 10), b = static_cast<float>((i * 7) % 6), c = static_cast<float>((i * 13) % 5);
    x.push_back({a, b, c});
    y.push_back(std::max(0.0f, (a - b + 6) / 16));
  }
  CostModel m(1);
  EXPECT_FALSE(m.trained());
  m.fit(x, y, {60});
  ASSERT_TRUE(m.trained());
  std::vector<float> p = m.predict({{9, 0, 2}, {5, 3, 2}, {0, 5, 2}});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_GT(p[0], p[1]);
  EXPECT_GT(p[1], p[2]);
  EXPECT_THROW(m.predict({{1, 2}}), std::invalid_argument);
}

TEST_F(Measure, XgbTunerNeverMeasuresAConfigurationTwiceAndResumes) {
  LocalPool pool(2, MeasureOptions{});
  fs::path p = fs::temp_directory_path() / ("kiln-tune-xgb-" + std::to_string(getpid()) + ".jsonl");
  fs::remove(p);
  TuneOptions o;
  o.trials = 20;
  o.batch = 5;
  o.seed = 7;
  o.records = p.string();
  int progress_calls = 0;
  o.on_progress = [&](const TuneProgress& pr) {
    ++progress_calls;
    EXPECT_LE(pr.done, pr.total);
  };
  TuneResult r = tune(find_template("matmul.cpu"), w, pool, o);
  EXPECT_EQ(r.measured, 20);
  EXPECT_EQ(progress_calls, 4);
  o.trials = 30;
  o.resume = true;
  TuneResult r2 = tune(find_template("matmul.cpu"), w, pool, o);
  EXPECT_EQ(r2.measured, 10);
  std::vector<Record> rs = load_records(p.string());
  ASSERT_EQ(rs.size(), 30u);
  std::set<int64_t> configs;
  for (const auto& rec : rs) EXPECT_TRUE(configs.insert(rec.config).second) << "config " << rec.config << " twice";
  EXPECT_EQ(rs.back().trial, 30);
  // The best curve never gets worse.
  for (size_t i = 1; i < r.best_curve.size(); ++i) EXPECT_LE(r.best_curve[i], r.best_curve[i - 1]);
  fs::remove(p);
}

// Answers in-process with a made-up cost per configuration, and notes each batch.
class FakeMeasurer : public Measurer {
 public:
  std::vector<MeasureResult> measure(const std::vector<MeasureInput>& in) override {
    batches.push_back(static_cast<int>(in.size()));
    std::vector<MeasureResult> out;
    for (const auto& i : in) out.push_back({1.0 + static_cast<double>(i.config * 7919 % 101), "s", "", 0});
    return out;
  }
  int parallelism() const override { return 2; }
  std::string describe() const override { return "fake"; }
  std::vector<int> batches;
};

TEST(Tuner, XgbStartsWithARandomBatchThenSmallModelGuidedBatches) {
  Workload w = parse_workload("matmul:M=2,N=16,K=2");  // 480 configurations
  const Template& t = find_template("matmul.cpu");
  for (int64_t score_all_below : {int64_t{1} << 40, int64_t{0}}) {  // scoring the whole space; annealing
    FakeMeasurer m;
    TuneOptions o;
    o.trials = 26;
    o.grow_after = 20;
    o.score_all_below = score_all_below;
    o.feature_memo = std::make_shared<FeatureMemo>();
    TuneResult r = tune(t, w, m, o);
    EXPECT_EQ(m.batches, (std::vector<int>{8, 4, 4, 4, 6})) << "score_all_below " << score_all_below;
    std::set<int64_t> configs;
    for (const auto& rec : r.records) EXPECT_TRUE(configs.insert(rec.config).second) << "config " << rec.config << " twice";
    if (score_all_below > 0) {
      EXPECT_EQ(static_cast<int64_t>(o.feature_memo->features.size()), t.space(w).size());
    }
    // A second tune of the task with the same memo lowers nothing again.
    size_t lowered = o.feature_memo->features.size();
    o.seed = 1;
    tune(t, w, m, o);
    if (score_all_below > 0) {
      EXPECT_EQ(o.feature_memo->features.size(), lowered);
    }
  }
  // A fixed batch size holds for every batch.
  FakeMeasurer m;
  TuneOptions o;
  o.trials = 12;
  o.batch = 3;
  tune(t, w, m, o);
  EXPECT_EQ(m.batches, (std::vector<int>{3, 3, 3, 3}));
}

// Exploration (epsilon) slots go after the model's picks in a batch: with the model
// trained before the batch (earlier records of the task), the batch begins with the
// batch that epsilon 0 gives, and the rest are random configurations.
TEST(Tuner, ModelPicksComeBeforeExplorationInABatch) {
  Workload w = parse_workload("matmul:M=2,N=16,K=2");  // 480 configurations
  const Template& t = find_template("matmul.cpu");
  fs::path base = fs::temp_directory_path() / ("kiln-tune-order-" + std::to_string(getpid()));
  fs::remove(base.string() + ".jsonl");
  {
    FakeMeasurer m;
    TuneOptions o;
    o.tuner = "random";
    o.trials = 16;
    o.records = base.string() + ".jsonl";
    tune(t, w, m, o);
  }
  auto one_batch = [&](uint64_t seed, double epsilon) {
    fs::path p = base.string() + "-run.jsonl";
    fs::copy_file(base.string() + ".jsonl", p, fs::copy_options::overwrite_existing);
    FakeMeasurer m;
    TuneOptions o;
    o.trials = 4;
    o.seed = seed;
    o.epsilon = epsilon;
    o.records = p.string();
    TuneResult r = tune(t, w, m, o);
    fs::remove(p);
    EXPECT_EQ(m.batches, (std::vector<int>{4}));
    std::vector<int64_t> configs;
    for (const auto& rec : r.records) configs.push_back(rec.config);
    return configs;
  };
  int mixed = 0;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    std::vector<int64_t> model = one_batch(seed, 0.0), batch = one_batch(seed, 0.5);
    ASSERT_EQ(model.size(), 4u);
    ASSERT_EQ(batch.size(), 4u);
    size_t k = 0;
    while (k < batch.size() && batch[k] == model[k]) ++k;
    for (size_t i = k; i < batch.size(); ++i)
      EXPECT_EQ(std::count(model.begin(), model.end(), batch[i]), 0) << "seed " << seed << ": the model's pick " << batch[i] << " after a random one";
    if (k > 0 && k < batch.size()) ++mixed;
  }
  EXPECT_GT(mixed, 0) << "no seed gave a batch of both model and random picks";
  fs::remove(base.string() + ".jsonl");
}

TEST_F(Measure, LearnsFromRecordsOfOtherWorkloadsOfTheSameTemplate) {
  LocalPool pool(2, MeasureOptions{});
  fs::path p = fs::temp_directory_path() / ("kiln-tune-transfer-" + std::to_string(getpid()) + ".jsonl");
  fs::remove(p);
  TuneOptions o;
  o.tuner = "random";
  o.trials = 8;
  o.records = p.string();
  TuneResult first = tune(find_template("matmul.cpu"), w, pool, o);
  EXPECT_EQ(first.transfer_records, 0);
  o.tuner = "xgb";
  Workload other = parse_workload("matmul:M=64,N=32,K=32");
  TuneResult second = tune(find_template("matmul.cpu"), other, pool, o);
  EXPECT_EQ(second.transfer_records, 8);
  EXPECT_EQ(second.measured, 8);
  o.transfer = false;
  o.trials = 9;
  o.resume = true;
  EXPECT_EQ(tune(find_template("matmul.cpu"), other, pool, o).transfer_records, 0);
  fs::remove(p);
}

TEST_F(Measure, RejectsBadOptions) {
  LocalPool pool(1, MeasureOptions{});
  TuneOptions o;
  o.tuner = "annealing";
  EXPECT_THROW(tune(find_template("matmul.cpu"), w, pool, o), std::invalid_argument);
  o.tuner = "random";
  o.trials = 0;
  EXPECT_THROW(tune(find_template("matmul.cpu"), w, pool, o), std::invalid_argument);
  o.trials = 1;
  EXPECT_THROW(tune(find_template("conv2d_nchwc.cpu"), w, pool, o), std::invalid_argument);
}

// The records `kiln tune MODEL` writes of kernels timed inside the model (in_model.h)
// are another kind of time: the search neither counts them as measured nor learns from
// them, and best_records passes them by, however fast they are.
TEST(Tuner, InModelRecordsAreNotTheSearchsHistory) {
  cpu::register_graph_backend();
  Workload w = parse_workload("matmul_packed:M=16,N=64,K=32,block=32");
  const Template& t = find_template("matmul_packed.cpu");
  const int64_t d = t.default_config(w, machine_traits("cpu"));
  fs::path p = fs::temp_directory_path() / ("kiln-in-model-history-" + std::to_string(getpid()) + ".jsonl");
  fs::remove(p);
  MeasureResult fast;
  fast.cost = 1e-9;
  RecordWriter(p.string()).append(record_of(t, w, t.space(w), "cpu", d, fast, 0, kInModelTuner));
  FakeMeasurer m;
  TuneOptions o;
  o.tuner = "random";
  o.trials = 1;
  o.resume = true;
  o.records = p.string();
  TuneResult r = tune(t, w, m, o);
  EXPECT_EQ(r.measured, 1);  // the default, as if the file were empty
  ASSERT_TRUE(r.default_record);
  EXPECT_EQ(r.default_record->tuner, "random");
  std::map<std::string, Record> best = best_records(load_records(p.string()));
  ASSERT_EQ(best.count(w.key()), 1u);
  EXPECT_EQ(best.at(w.key()).tuner, "random");
  fs::remove(p);
}

// tune() measures first the default schedule on the machine the candidates are built
// for (TuneOptions::candidates_target, as `kiln tune -t "llvm -mcpu=..."` sets it), not
// the host's: AVX2's Haswell (16 registers of 8 lanes) and AVX-512's Skylake (32 of 16)
// tile this convolution differently, and one of them is not this host.
TEST(Tuner, TheDefaultMeasuredFirstIsTheCandidatesTargets) {
  cpu::register_graph_backend();
  Workload w = parse_workload("conv2d:N=1,C=32,H=14,W=14,O=64,KH=3,KW=3,stride=1,pad=1,block=16,in_block=16");
  const Template& t = find_template("conv2d_nchwc.cpu");
  const std::vector<std::string> targets = {"llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"};
  EXPECT_NE(t.default_config(w, machine_traits(targets[0])), t.default_config(w, machine_traits(targets[1])));
  for (const std::string& target : targets) {
    FakeMeasurer m;
    TuneOptions o;
    o.tuner = "random";
    o.trials = 1;
    o.candidates_target = target;
    TuneResult r = tune(t, w, m, o);
    ASSERT_TRUE(r.default_record) << target;
    EXPECT_EQ(r.default_record->config, t.default_config(w, machine_traits(target))) << target;
  }
}

}  // namespace
}  // namespace kiln::tuner
