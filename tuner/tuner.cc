#include "tuner/tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "support/error.h"
#include "tuner/cost_model.h"
#include "tuner/features.h"

namespace kiln::tuner {

namespace {

using Clock = std::chrono::steady_clock;

// Features of configurations of one task, computed once (lowering is the cost) into
// the caller's memo when it gives one.
class FeatureCache {
 public:
  FeatureCache(const Template& t, const Workload& w, std::shared_ptr<FeatureMemo> memo = nullptr)
      : t_(t), w_(w), space_(t.space(w)), memo_(memo ? std::move(memo) : std::make_shared<FeatureMemo>()) {}
  const ConfigSpace& space() const { return space_; }
  // Empty when the configuration does not lower (an invalid schedule).
  const std::vector<float>& get(int64_t index) {
    auto it = memo_->features.find(index);
    if (it != memo_->features.end()) return it->second;
    std::vector<float> f;
    try {
      Config c = space_.get(index);
      f = candidate_features(lower_candidate(t_, w_, c), space_, c);
    } catch (const std::exception&) {
      f.clear();
    }
    return memo_->features[index] = std::move(f);
  }

 private:
  const Template& t_;
  Workload w_;
  ConfigSpace space_;
  std::shared_ptr<FeatureMemo> memo_;
};

struct TrainSet {
  std::vector<std::vector<float>> x;
  std::vector<float> y;
  std::vector<unsigned> groups;
};

// Relevance of a group's records: best cost / cost (1 for the best, 0 for failures).
void add_group(FeatureCache& fc, const std::vector<const Record*>& recs, TrainSet* ts) {
  double best = 0;
  for (const Record* r : recs)
    if (r->ok() && (best == 0 || r->cost < best)) best = r->cost;
  unsigned n = 0;
  for (const Record* r : recs) {
    if (r->config < 0 || r->config >= fc.space().size()) continue;
    const std::vector<float>& f = fc.get(r->config);
    if (f.empty()) continue;
    if (!ts->x.empty() && f.size() != ts->x[0].size()) continue;
    ts->x.push_back(f);
    ts->y.push_back(r->ok() && best > 0 ? static_cast<float>(best / r->cost) : 0.0f);
    ++n;
  }
  if (n) ts->groups.push_back(n);
}

int64_t random_index(std::mt19937_64& rng, int64_t size) { return std::uniform_int_distribution<int64_t>(0, size - 1)(rng); }

// A random configuration not in `taken`, or -1 when the space is exhausted.
int64_t random_unmeasured(std::mt19937_64& rng, const ConfigSpace& s, const std::set<int64_t>& taken) {
  int64_t size = s.size();
  if (static_cast<int64_t>(taken.size()) >= size) return -1;
  for (int tries = 0; tries < 1000; ++tries) {
    int64_t i = random_index(rng, size);
    if (!taken.count(i)) return i;
  }
  for (int64_t i = 0; i < size; ++i)
    if (!taken.count(i)) return i;
  return -1;
}

// One knob of `index` changed to another of its choices.
int64_t neighbour(std::mt19937_64& rng, const ConfigSpace& s, int64_t index) {
  std::vector<int> d = s.digits(index);
  std::vector<size_t> movable;
  for (size_t k = 0; k < d.size(); ++k)
    if (s.knobs()[k].choices.size() > 1) movable.push_back(k);
  if (movable.empty()) return index;
  size_t k = movable[std::uniform_int_distribution<size_t>(0, movable.size() - 1)(rng)];
  int n = static_cast<int>(s.knobs()[k].choices.size());
  int c = std::uniform_int_distribution<int>(0, n - 2)(rng);
  d[k] = c >= d[k] ? c + 1 : c;
  return s.index_of(d);
}

// Simulated annealing over the model's scores: `points` chains, `steps` steps, the
// temperature falling linearly to 0; returns the best-scored unmeasured configurations.
std::vector<int64_t> anneal(std::mt19937_64& rng, FeatureCache& fc, const CostModel& model, const std::set<int64_t>& taken,
                            const std::vector<int64_t>& starts, int points, int steps, size_t want) {
  const ConfigSpace& s = fc.space();
  auto score = [&](const std::vector<int64_t>& idx) {
    std::vector<std::vector<float>> x;
    std::vector<size_t> rows;
    std::vector<float> out(idx.size(), -1e30f);
    for (size_t i = 0; i < idx.size(); ++i) {
      const auto& f = fc.get(idx[i]);
      if (f.size() == model.num_features()) {
        x.push_back(f);
        rows.push_back(i);
      }
    }
    std::vector<float> p = model.predict(x);
    for (size_t i = 0; i < rows.size(); ++i) out[rows[i]] = p[i];
    return out;
  };
  // Half the chains start at the best measured configurations (as AutoTVM's), the
  // rest at random ones.
  std::vector<int64_t> cur;
  for (size_t i = 0; i < starts.size() && static_cast<int>(cur.size()) < points / 2; ++i) cur.push_back(starts[i]);
  while (static_cast<int>(cur.size()) < points) cur.push_back(random_index(rng, s.size()));
  std::vector<float> cur_score = score(cur);
  std::map<int64_t, float> seen;  // every unmeasured configuration visited, with its score
  auto note = [&](int64_t i, float sc) {
    if (!taken.count(i) && sc > -1e29f) seen[i] = sc;
  };
  for (size_t i = 0; i < cur.size(); ++i) note(cur[i], cur_score[i]);
  std::uniform_real_distribution<double> u(0, 1);
  for (int step = 0; step < steps; ++step) {
    double temp = 1.0 - static_cast<double>(step) / steps;
    std::vector<int64_t> next;
    for (int64_t i : cur) next.push_back(neighbour(rng, s, i));
    std::vector<float> next_score = score(next);
    for (size_t i = 0; i < cur.size(); ++i) {
      note(next[i], next_score[i]);
      double gain = next_score[i] - cur_score[i];
      if (gain >= 0 || u(rng) < std::exp(gain / std::max(temp, 1e-3))) {
        cur[i] = next[i];
        cur_score[i] = next_score[i];
      }
    }
  }
  std::vector<std::pair<float, int64_t>> ranked;
  for (const auto& [i, sc] : seen) ranked.push_back({sc, i});
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<int64_t> r;
  for (size_t i = 0; i < ranked.size() && r.size() < want; ++i) r.push_back(ranked[i].second);
  return r;
}

// Every unmeasured configuration of the space scored by the model; the best `want`.
std::vector<int64_t> score_all(FeatureCache& fc, const CostModel& model, const std::set<int64_t>& taken, size_t want) {
  const int64_t size = fc.space().size();
  std::vector<std::vector<float>> x;
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < size; ++i) {
    if (taken.count(i)) continue;
    const auto& f = fc.get(i);
    if (f.size() != model.num_features()) continue;
    x.push_back(f);
    idx.push_back(i);
  }
  std::vector<float> p = model.predict(x);
  std::vector<std::pair<float, int64_t>> ranked;
  for (size_t i = 0; i < idx.size(); ++i) ranked.push_back({p[i], idx[i]});
  size_t n = std::min(want, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(n), ranked.end(),
                    [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<int64_t> r;
  for (size_t i = 0; i < n; ++i) r.push_back(ranked[i].second);
  return r;
}

}  // namespace

TuneResult tune(const Template& t, const Workload& w, Measurer& m, const TuneOptions& opt) {
  if (opt.tuner != "xgb" && opt.tuner != "random" && opt.tuner != "grid")
    throw Error("unknown tuner '" + opt.tuner + "' (xgb, random or grid)");
  if (opt.trials < 1) throw Error("--trials must be at least 1");
  if (t.op != w.op) throw Error(fmt::format("template '{}' serves {}, not {}", t.name, t.op, w.op));
  FeatureCache fc(t, w, opt.feature_memo);
  const ConfigSpace& space = fc.space();
  const std::string key = w.key();
  std::string task = t.name + " " + key;

  // Earlier records: this task's (resume, never re-measured) and other workloads of
  // the same template (transfer).
  const std::string target = opt.target.empty() ? t.target : opt.target;
  std::vector<Record> earlier = opt.records.empty() ? std::vector<Record>{} : load_records(opt.records);
  std::vector<const Record*> mine;
  std::map<std::string, std::vector<const Record*>> others;
  for (const Record& r : earlier) {
    if (r.template_name != t.name || r.target != target) continue;
    if (r.workload == key) mine.push_back(&r);
    else if (opt.transfer) others[r.workload].push_back(&r);
  }
  TuneResult res;
  std::set<int64_t> taken;
  for (const Record* r : mine) {
    taken.insert(r->config);
    if (r->ok() && (!res.best || r->cost < res.best->cost)) res.best = *r;
  }
  int done = opt.resume ? static_cast<int>(mine.size()) : 0;
  int total = opt.trials;
  int64_t left_in_space = space.size() - static_cast<int64_t>(taken.size());
  int todo = static_cast<int>(std::min<int64_t>(std::max(0, total - done), left_in_space));

  std::unique_ptr<RecordWriter> writer = opt.records.empty() ? nullptr : std::make_unique<RecordWriter>(opt.records);
  std::mt19937_64 rng(opt.seed * 0x9E3779B97F4A7C15ull + 1);
  CostModel model(opt.seed);
  // A first random batch, then model-guided batches small enough that the model is
  // refit often while it knows little.
  auto batch_size = [&](int measured) {
    if (opt.batch > 0) return opt.batch;
    if (!model.trained()) return std::max(opt.init_batch, m.parallelism());
    return std::max(measured < opt.grow_after ? opt.small_batch : 2 * opt.small_batch, m.parallelism());
  };
  int64_t grid_next = 0;
  std::vector<Record> run_records;
  auto t0 = Clock::now();

  // Transfer data is decoded in the other workload's space.
  TrainSet transfer;
  for (const auto& [wk, recs] : others) {
    try {
      FeatureCache ofc(t, parse_workload(wk));
      add_group(ofc, recs, &transfer);
    } catch (const std::exception&) {
    }
  }

  res.transfer_records = static_cast<int>(transfer.x.size());

  auto train = [&] {
    TrainSet ts = transfer;
    std::vector<const Record*> all = mine;
    for (const Record& r : run_records) all.push_back(&r);
    if (!ts.x.empty()) {
      // Keep the transfer rows only if they have this task's feature length.
      const std::vector<float>* probe = nullptr;
      for (const Record* r : all)
        if (!(probe = &fc.get(r->config))->empty()) break;
      if (probe && !probe->empty() && probe->size() != ts.x[0].size()) ts = TrainSet{};
    }
    add_group(fc, all, &ts);
    if (ts.x.size() >= 2) model.fit(ts.x, ts.y, ts.groups);
  };
  if (opt.tuner == "xgb") train();

  while (res.measured < todo) {
    int want = std::min(batch_size(res.measured), todo - res.measured);
    std::vector<int64_t> picks;
    std::set<int64_t> chosen = taken;
    auto take = [&](int64_t i) {
      if (i < 0 || chosen.count(i)) return;
      picks.push_back(i);
      chosen.insert(i);
    };
    if (opt.tuner == "grid") {
      while (static_cast<int>(picks.size()) < want && grid_next < space.size()) take(grid_next++);
    } else if (opt.tuner == "random" || !model.trained()) {
      while (static_cast<int>(picks.size()) < want) {
        int64_t i = random_unmeasured(rng, space, chosen);
        if (i < 0) break;
        take(i);
      }
    } else {
      std::vector<std::pair<double, int64_t>> measured;
      for (const Record* r : mine)
        if (r->ok()) measured.push_back({r->cost, r->config});
      for (const Record& r : run_records)
        if (r.ok()) measured.push_back({r.cost, r.config});
      std::sort(measured.begin(), measured.end());
      std::vector<int64_t> starts;
      for (const auto& m : measured) starts.push_back(m.second);
      std::vector<int64_t> best =
          space.size() <= opt.score_all_below
              ? score_all(fc, model, taken, static_cast<size_t>(want) * 2)
              : anneal(rng, fc, model, taken, starts, opt.sa_points, opt.sa_steps, static_cast<size_t>(want) * 2);
      // Each slot is an exploration slot with probability epsilon. The model's picks
      // come first and the random ones last: the pool starts a batch's measurements in
      // order, and records (trial numbers) follow it.
      std::uniform_real_distribution<double> u(0, 1);
      int explore = 0;
      for (int k = 0; k < want; ++k)
        if (u(rng) < opt.epsilon) ++explore;
      for (size_t b = 0; b < best.size() && static_cast<int>(picks.size()) < want - explore; ++b) take(best[b]);
      while (static_cast<int>(picks.size()) < want) {
        int64_t i = random_unmeasured(rng, space, chosen);
        if (i < 0) break;
        take(i);
      }
    }
    if (picks.empty()) break;
    std::vector<MeasureInput> inputs;
    for (int64_t i : picks) inputs.push_back({t.name, w, i});
    std::vector<MeasureResult> results = m.measure(inputs);
    for (size_t k = 0; k < picks.size(); ++k) {
      const MeasureResult& mr = results[k];
      Record r;
      r.template_name = t.name;
      r.workload = key;
      r.target = target;
      r.config = picks[k];
      r.knobs = space.get(picks[k]).describe();
      r.cost = mr.ok() ? mr.cost : 0;
      r.unit = mr.unit;
      r.error = mr.error;
      r.flops = w.flops();
      r.trial = done + res.measured + 1;
      r.tuner = opt.tuner;
      r.timestamp = static_cast<int64_t>(std::time(nullptr));
      if (writer) writer->append(r);
      taken.insert(r.config);
      res.measured++;
      if (!r.ok()) res.errors++;
      if (r.ok() && (!res.best || r.cost < res.best->cost)) res.best = r;
      res.best_curve.push_back(res.best ? res.best->cost : 0);
      run_records.push_back(r);
    }
    if (opt.tuner == "xgb") train();
    if (opt.on_progress) {
      TuneProgress p;
      p.task = task;
      p.done = done + res.measured;
      p.total = done + todo;
      p.errors = res.errors;
      p.best_cost = res.best ? res.best->cost : 0;
      p.best_gflops = res.best && res.best->unit == "s" ? w.flops() / res.best->cost / 1e9 : 0;
      p.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
      p.eta_s = p.elapsed_s / res.measured * (todo - res.measured);
      opt.on_progress(p);
    }
  }
  res.records = std::move(run_records);
  return res;
}

}  // namespace kiln::tuner
