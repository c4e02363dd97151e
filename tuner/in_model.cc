#include "tuner/in_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <utility>

#include "compiler/target/backend.h"
#include "support/error.h"
#include "support/statistics.h"
#include "tuner/apply.h"
#include "tuner/measure.h"
#include "tuner/records.h"
#include "tuner/template.h"

namespace kiln::tuner {

namespace {

// One workload of the model and its candidates, the default first.
struct Task {
  Workload workload;
  std::string node;
  const Template* tmpl = nullptr;
  ConfigSpace space;
  std::vector<int64_t> configs;  // the default first
};

// The default, then up to `n` other configurations, fastest alone first.
std::vector<int64_t> candidates_of(const std::vector<Record>& all, const Template& t, const std::string& key,
                                   int64_t default_config, int n) {
  std::vector<const Record*> alone;
  for (const Record& r : all)
    if (r.ok() && !r.in_model() && r.template_name == t.name && r.workload == key && r.target == t.target) alone.push_back(&r);
  std::sort(alone.begin(), alone.end(),
            [](const Record* a, const Record* b) { return std::pair(a->cost, a->config) < std::pair(b->cost, b->config); });
  std::vector<int64_t> out{default_config};
  for (const Record* r : alone) {
    if (static_cast<int>(out.size()) > n) break;
    if (std::find(out.begin(), out.end(), r->config) == out.end()) out.push_back(r->config);
  }
  return out;
}

// One compile of the model and its runs: each task's kernels' time (the sum of their
// medians, s; 0 where none ran) and the model's (the sum over every kernel).
struct Timing {
  std::vector<double> task_s;
  std::vector<int> kernels;
  double model_s = 0;
};

// Compiles the model with candidate pick[i] of task i (0: the compiler's default,
// exactly as without records) and times it.
Timing measure(const graph::Graph& g, const InModelOptions& opt, const std::map<std::string, size_t>& task_of,
               const std::vector<Task>& tasks, const std::vector<size_t>& pick) {
  std::map<graph::NodeId, size_t> anchor_task;
  graph::CompileOptions co;
  co.target = opt.target;
  co.schedule_hook = [&](const graph::AnchorStage& a) {
    std::optional<Workload> w = workload_of(a.graph, a.node);
    if (!w) return false;
    auto it = task_of.find(w->key());
    if (it == task_of.end()) return false;
    anchor_task[a.node] = it->second;
    const Task& t = tasks[it->second];
    if (pick[it->second] == 0) return false;
    t.tmpl->apply(a, t.workload, t.space.get(t.configs[pick[it->second]]));
    return true;
  };
  graph::CompiledModel m = graph::compile(g, co);
  graph::Executor ex = graph::make_executor(m);
  if (opt.set_inputs) opt.set_inputs(ex);
  HostTimingLock lock;  // no candidate of another `kiln tune` is timed beside these runs
  ex.run();  // first touches, the thread pool's start
  std::vector<std::vector<double>> per_kernel(m.kernels.size());
  for (int r = 0; r < opt.runs; ++r) {
    std::vector<double> ms = ex.run_profiled();
    for (size_t k = 0; k < ms.size() && k < per_kernel.size(); ++k) per_kernel[k].push_back(ms[k]);
  }
  Timing t{std::vector<double>(tasks.size(), 0), std::vector<int>(tasks.size(), 0), 0};
  for (size_t k = 0; k < m.kernels.size(); ++k) {
    const double s = median(per_kernel[k]) / 1e3;
    t.model_s += s;
    for (graph::NodeId id : m.kernels[k].nodes)
      if (auto it = anchor_task.find(id); it != anchor_task.end()) {
        t.task_s[it->second] += s;
        t.kernels[it->second]++;
        break;
      }
  }
  return t;
}

}  // namespace

InModelResult select_in_model(const graph::Graph& g, const InModelOptions& opt) {
  if (!opt.target.is_cpu())
    throw Error("choosing schedules inside the model runs it on the host CPU; --target " + opt.target.str() + " is not one");
  if (opt.candidates < 1 || opt.rounds < 1 || opt.runs < 1)
    throw Error("in-model selection needs at least one candidate, round and run");
  const std::vector<Record> all = load_records(opt.records);
  std::vector<Task> tasks;
  std::map<std::string, size_t> task_of;
  const target::MachineTraits machine = machine_traits(opt.target.str());
  for (const auto& [w, node] : model_workloads(g, opt.target)) {
    std::vector<const Template*> ts = templates_for(w.op, "cpu");
    if (ts.empty() || !ts[0]->default_config) continue;
    const int64_t d = ts[0]->default_config(w, machine);
    if (d < 0) continue;
    std::vector<int64_t> configs = candidates_of(all, *ts[0], w.key(), d, opt.candidates);
    if (configs.size() < 2) continue;  // nothing measured alone but the default
    task_of[w.key()] = tasks.size();
    tasks.push_back({w, node, ts[0], ts[0]->space(w), configs});
  }
  InModelResult res;
  if (tasks.empty()) return res;
  size_t ranks = 0;
  for (const Task& t : tasks) ranks = std::max(ranks, t.configs.size());
  const int total = opt.rounds * static_cast<int>(ranks + 2);
  const auto t0 = std::chrono::steady_clock::now();
  auto timed = [&](const std::vector<size_t>& pick) {
    Timing t = measure(g, opt, task_of, tasks, pick);
    ++res.compiles;
    if (opt.on_progress)
      opt.on_progress(res.compiles, total, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return t;
  };
  constexpr double kNone = std::numeric_limits<double>::infinity();

  // Screening: compile c gives every task its candidate c (the default where it has
  // fewer); each candidate keeps its fastest round.
  std::vector<std::vector<double>> fastest(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) fastest[i].assign(tasks[i].configs.size(), kNone);
  for (int round = 0; round < opt.rounds; ++round)
    for (size_t rank = 0; rank < ranks; ++rank) {
      std::vector<size_t> pick(tasks.size());
      for (size_t i = 0; i < tasks.size(); ++i) pick[i] = rank < tasks[i].configs.size() ? rank : 0;
      Timing t = timed(pick);
      for (size_t i = 0; i < tasks.size(); ++i)
        if (t.kernels[i]) fastest[i][pick[i]] = std::min(fastest[i][pick[i]], t.task_s[i]);
    }
  std::vector<size_t> winner(tasks.size(), 0);
  for (size_t i = 0; i < tasks.size(); ++i)
    winner[i] = std::min_element(fastest[i].begin(), fastest[i].end()) - fastest[i].begin();

  // The fastest of several is biased low by the noise it was picked from, so the
  // winners are timed again, in compiles of their own taking turns with the default's.
  const std::vector<size_t> defaults(tasks.size(), 0);
  std::vector<double> default_s(tasks.size(), kNone), winner_s(tasks.size(), kNone);
  std::vector<int> kernels(tasks.size(), 0);
  res.model_default_ms = res.model_chosen_ms = kNone;
  for (int round = 0; round < opt.rounds; ++round) {
    Timing d = timed(defaults), w = timed(winner);
    for (size_t i = 0; i < tasks.size(); ++i) {
      default_s[i] = std::min(default_s[i], d.task_s[i]);
      winner_s[i] = std::min(winner_s[i], w.task_s[i]);
      kernels[i] = std::max(d.kernels[i], w.kernels[i]);
    }
    res.model_default_ms = std::min(res.model_default_ms, d.model_s * 1e3);
    res.model_chosen_ms = std::min(res.model_chosen_ms, w.model_s * 1e3);
  }

  const int threads = target::make_backend("cpu")->threads();
  RecordWriter writer(opt.records);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const Task& t = tasks[i];
    // Not found in the compiled model (model_workloads found it there), or timed at 0 by
    // a clock too coarse for it: no record, which would have to be positive.
    if (!kernels[i] || !(default_s[i] > 0) || !(winner_s[i] > 0)) continue;
    InModelChoice c{t.workload.key(), t.node, t.tmpl->name, t.configs[0], t.configs[winner[i]], default_s[i] * 1e3,
                    winner_s[i] * 1e3, static_cast<int>(t.configs.size())};
    auto append = [&](size_t k, double cost) {
      MeasureResult mr;
      mr.cost = cost;
      mr.detail = {{"threads", threads},
                   {"kernels", kernels[i]},
                   {"rounds", opt.rounds},
                   {"runs", opt.runs},
                   {"candidates", t.configs.size()}};
      writer.append(record_of(*t.tmpl, t.workload, t.space, t.tmpl->target, t.configs[k], mr, 0, kInModelTuner));
    };
    append(0, default_s[i]);
    if (winner[i] != 0) append(winner[i], winner_s[i]);
    res.choices.push_back(c);
  }
  return res;
}

}  // namespace kiln::tuner
