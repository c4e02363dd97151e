#include "tuner/tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "support/error.h"
#include "tuner/policy.h"

namespace kiln::tuner {

namespace {

using Clock = std::chrono::steady_clock;

// The records file's records of this template and target, measured alone: this
// task's, and (for transfer) other workloads', by key.
void split_earlier(const std::vector<Record>& earlier, const Template& t, const std::string& key, const std::string& target,
                   bool transfer, TuneTask* task) {
  for (const Record& r : earlier) {
    if (r.template_name != t.name || r.target != target || r.in_model()) continue;
    if (r.workload == key) task->earlier.push_back(&r);
    else if (transfer) task->others[r.workload].push_back(&r);
  }
}

// A policy's batch must be new configurations of the space: anything else would
// measure a configuration twice or write a record that decodes to nothing.
void check_batch(const std::vector<int64_t>& batch, int want, const std::set<int64_t>& measured, const ConfigSpace& space,
                 const std::string& tuner) {
  if (static_cast<int>(batch.size()) > want)
    throw std::logic_error(fmt::format("tuner '{}' proposed {} configurations when asked for {}", tuner, batch.size(), want));
  std::set<int64_t> seen;
  for (int64_t i : batch) {
    if (i < 0 || i >= space.size())
      throw std::logic_error(fmt::format("tuner '{}' proposed configuration {}, outside the space of {}", tuner, i, space.size()));
    if (measured.count(i))
      throw std::logic_error(fmt::format("tuner '{}' proposed configuration {}, which is measured already", tuner, i));
    if (!seen.insert(i).second)
      throw std::logic_error(fmt::format("tuner '{}' proposed configuration {} twice in one batch", tuner, i));
  }
}

}  // namespace

TuneResult tune(const Template& t, const Workload& w, Measurer& m, const TuneOptions& opt) {
  if (!has_tuner(opt.tuner)) throw Error(unknown_tuner_message(opt.tuner));
  if (opt.trials < 1) throw Error("--trials must be at least 1");
  if (opt.early_stopping < 0) throw Error("early stopping must be 0 (never) or a number of trials");
  if (t.op != w.op) throw Error(fmt::format("template '{}' serves {}, not {}", t.name, t.op, w.op));
  const ConfigSpace space = t.space(w);
  const std::string target = opt.target.empty() ? t.target : opt.target;
  const std::vector<Record> earlier = opt.records.empty() ? std::vector<Record>{} : load_records(opt.records);
  TuneTask task{t, w, space, {}, {}, opt};
  split_earlier(earlier, t, w.key(), target, opt.transfer, &task);

  TuneResult res;
  std::set<int64_t> measured;
  for (const Record* r : task.earlier) {
    measured.insert(r->config);
    if (r->ok() && (!res.best || r->cost < res.best->cost)) res.best = *r;
  }
  const int done = opt.resume ? static_cast<int>(task.earlier.size()) : 0;
  const int64_t left_in_space = space.size() - static_cast<int64_t>(measured.size());
  const int to_measure = static_cast<int>(std::min<int64_t>(std::max(0, opt.trials - done), left_in_space));
  std::unique_ptr<RecordWriter> writer = opt.records.empty() ? nullptr : std::make_unique<RecordWriter>(opt.records);
  int last_gain = 0;  // res.measured when the best last improved
  auto note = [&](Record r) {
    if (writer) writer->append(r);
    measured.insert(r.config);
    res.measured++;
    if (!r.ok()) res.errors++;
    if (r.ok() && (!res.best || r.cost < res.best->cost)) {
      res.best = r;
      last_gain = res.measured;
    }
    res.best_curve.push_back(res.best ? res.best->cost : 0);
    res.records.push_back(std::move(r));
  };

  // The compiler's default schedule first (one of the trials), unless measured before:
  // the best record is then never one that the default beats as the tuner measures,
  // and the policy learns from it as from an earlier record.
  const int64_t default_config = t.default_config ? t.default_config(w, machine_traits(opt.candidates_target)) : -1;
  Record default_record;
  if (default_config >= 0 && !measured.count(default_config) && to_measure > 0) {
    std::vector<MeasureResult> r = m.measure({{t.name, w, default_config}});
    if (r.size() != 1) throw std::logic_error(fmt::format("{} returned {} results for 1 candidate", m.describe(), r.size()));
    default_record = record_of(t, w, space, target, default_config, r[0], done + 1, opt.tuner);
    note(default_record);
    task.earlier.push_back(&default_record);
  }
  for (const Record* r : task.earlier)
    if (default_config >= 0 && r->config == default_config && r->ok()) res.default_record = *r;

  std::unique_ptr<Tuner> policy = make_tuner(opt.tuner, task);
  res.transfer_records = policy->transfer_records();
  // Large batches until the policy is guided by what it learned, then batches small
  // enough that it learns often while it knows little.
  auto batch_size = [&] {
    if (opt.batch > 0) return opt.batch;
    if (!policy->guided()) return std::max(opt.init_batch, m.parallelism());
    return std::max(res.measured < opt.grow_after ? opt.small_batch : 2 * opt.small_batch, m.parallelism());
  };
  const auto t0 = Clock::now();

  while (res.measured < to_measure && policy->has_next()) {
    if (opt.early_stopping > 0 && res.measured - last_gain >= opt.early_stopping) {
      res.stopped_early = true;
      break;
    }
    const int want = std::min(batch_size(), to_measure - res.measured);
    std::vector<int64_t> batch = policy->next_batch(want);
    check_batch(batch, want, measured, space, opt.tuner);
    if (batch.empty()) break;
    std::vector<MeasureInput> inputs;
    for (int64_t i : batch) inputs.push_back({t.name, w, i});
    std::vector<MeasureResult> results = m.measure(inputs);
    if (results.size() != inputs.size())
      throw std::logic_error(fmt::format("{} returned {} results for {} candidates", m.describe(), results.size(), inputs.size()));
    for (size_t k = 0; k < batch.size(); ++k)
      note(record_of(t, w, space, target, batch[k], results[k], done + res.measured + 1, opt.tuner));
    policy->update(inputs, results);
    if (!opt.on_progress) continue;
    TuneProgress p;
    p.task = t.name + " " + w.key();
    p.done = done + res.measured;
    p.total = done + to_measure;
    p.errors = res.errors;
    p.best_cost = res.best ? res.best->cost : 0;
    p.best_gflops = res.best && res.best->unit == "s" ? w.flops() / res.best->cost / 1e9 : 0;
    p.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
    p.eta_s = p.elapsed_s / res.measured * (to_measure - res.measured);
    opt.on_progress(p);
  }
  return res;
}

}  // namespace kiln::tuner
