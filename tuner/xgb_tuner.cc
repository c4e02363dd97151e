#include "tuner/xgb_tuner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "tuner/features.h"

namespace kiln::tuner {

FeatureCache::FeatureCache(const Template& t, const Workload& w, ConfigSpace space, target::MachineTraits machine,
                           std::shared_ptr<FeatureMemo> memo)
    : t_(t), w_(w), space_(std::move(space)), machine_(machine), memo_(memo ? std::move(memo) : std::make_shared<FeatureMemo>()) {}

const std::vector<float>& FeatureCache::get(int64_t index) {
  auto it = memo_->features.find(index);
  if (it != memo_->features.end()) return it->second;
  std::vector<float> f;
  try {
    Config c = space_.get(index);
    f = candidate_features(lower_candidate(t_, w_, c, machine_), space_, c);
  } catch (const std::exception&) {
    f.clear();
  }
  return memo_->features[index] = std::move(f);
}

namespace {

Sample sample_of(const Record& r) { return {r.config, r.ok(), r.cost}; }

// One ranking group: relevance best cost / cost (1 for the best, 0 for failures).
void add_group(FeatureCache& fc, const std::vector<Sample>& samples, TrainSet* ts) {
  double best = 0;
  for (const Sample& s : samples)
    if (s.ok && (best == 0 || s.cost < best)) best = s.cost;
  unsigned n = 0;
  for (const Sample& s : samples) {
    if (s.config < 0 || s.config >= fc.space().size()) continue;
    const std::vector<float>& f = fc.get(s.config);
    if (f.empty()) continue;
    if (!ts->x.empty() && f.size() != ts->x[0].size()) continue;
    ts->x.push_back(f);
    ts->y.push_back(s.ok && best > 0 ? static_cast<float>(best / s.cost) : 0.0f);
    ++n;
  }
  if (n) ts->groups.push_back(n);
}

// The other workloads' records, each workload decoded in its own space.
TrainSet transfer_set(const TuneTask& task) {
  TrainSet ts;
  for (const auto& [key, recs] : task.others) {
    try {
      Workload w = Workload::from_key(key);
      FeatureCache fc(task.tmpl, w, task.tmpl.space(w), machine_traits(task.options.candidates_target));
      std::vector<Sample> samples;
      for (const Record* r : recs) samples.push_back(sample_of(*r));
      add_group(fc, samples, &ts);
    } catch (const std::exception&) {
    }
  }
  return ts;
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

bool higher_score(const std::pair<float, int64_t>& a, const std::pair<float, int64_t>& b) {
  return a.first != b.first ? a.first > b.first : a.second < b.second;
}

// Simulated annealing over the model's scores: `points` chains, `steps` steps, the
// temperature falling linearly to 0; returns the best-scored configurations visited
// that are not in `taken`.
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
  while (static_cast<int>(cur.size()) < points) cur.push_back(std::uniform_int_distribution<int64_t>(0, s.size() - 1)(rng));
  std::vector<float> cur_score = score(cur);
  std::map<int64_t, float> seen;  // every configuration visited and not taken, with its score
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
  std::sort(ranked.begin(), ranked.end(), higher_score);
  std::vector<int64_t> r;
  for (size_t i = 0; i < ranked.size() && r.size() < want; ++i) r.push_back(ranked[i].second);
  return r;
}

// Every configuration of the space not in `taken` scored by the model; the best `want`.
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
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(n), ranked.end(), higher_score);
  std::vector<int64_t> r;
  for (size_t i = 0; i < n; ++i) r.push_back(ranked[i].second);
  return r;
}

}  // namespace

XgbTuner::XgbTuner(const TuneTask& task, TrainSet prior)
    : Tuner(task),
      features_(task.tmpl, task.workload, task.space, machine_traits(task.options.candidates_target), task.options.feature_memo),
      model_(task.options.seed),
      prior_(std::move(prior)) {
  for (const Record* r : task.earlier) samples_.push_back(sample_of(*r));
  train();
}

void XgbTuner::train() {
  TrainSet ts = prior_;
  if (!ts.x.empty()) {
    // Keep the prior rows only if they have this task's feature length.
    const std::vector<float>* probe = nullptr;
    for (const Sample& s : samples_)
      if (!(probe = &features_.get(s.config))->empty()) break;
    if (probe && !probe->empty() && probe->size() != ts.x[0].size()) ts = TrainSet{};
  }
  add_group(features_, samples_, &ts);
  if (ts.x.size() >= 2) model_.fit(ts.x, ts.y, ts.groups);
}

void XgbTuner::update(const std::vector<MeasureInput>& inputs, const std::vector<MeasureResult>& results) {
  for (size_t k = 0; k < inputs.size() && k < results.size(); ++k)
    samples_.push_back({inputs[k].config, results[k].ok(), results[k].ok() ? results[k].cost : 0});
  train();
}

std::vector<int64_t> XgbTuner::next_batch(int n) {
  std::vector<int64_t> batch;
  if (!model_.trained()) {
    fill_random(n, &batch);
    return batch;
  }
  const TuneOptions& opt = task_.options;
  std::vector<std::pair<double, int64_t>> measured;
  for (const Sample& s : samples_)
    if (s.ok) measured.push_back({s.cost, s.config});
  std::sort(measured.begin(), measured.end());
  std::vector<int64_t> starts;
  for (const auto& m : measured) starts.push_back(m.second);
  const size_t want = static_cast<size_t>(n) * 2;
  std::vector<int64_t> best = space_.size() <= opt.score_all_below
                                  ? score_all(features_, model_, visited_, want)
                                  : anneal(rng_, features_, model_, visited_, starts, opt.sa_points, opt.sa_steps, want);
  // Each slot is an exploration slot with probability epsilon. The model's picks
  // come first and the random ones last: the pool starts a batch's measurements in
  // order, and records (trial numbers) follow it.
  std::uniform_real_distribution<double> u(0, 1);
  int explore = 0;
  for (int k = 0; k < n; ++k)
    if (u(rng_) < opt.epsilon) ++explore;
  for (size_t b = 0; b < best.size() && static_cast<int>(batch.size()) < n - explore; ++b) take(best[b], &batch);
  fill_random(n, &batch);
  return batch;
}

XgbTransferTuner::XgbTransferTuner(const TuneTask& task) : XgbTuner(task, transfer_set(task)) {}

}  // namespace kiln::tuner
