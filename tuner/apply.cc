#include "tuner/apply.h"

#include <fmt/format.h>

#include <memory>

#include "compiler/graph/executor.h"
#include "compiler/target/backend.h"
#include "support/error.h"

namespace kiln::tuner {

namespace {

// The measurement of the template's default schedule of `w` on `machine` among
// `records`, if any.
std::optional<Record> default_record(const Template& t, const Workload& w, const std::vector<Record>& records,
                                     const std::string& target, const target::MachineTraits& machine) {
  if (!t.default_config) return std::nullopt;
  const std::string key = w.key();
  const int64_t d = t.default_config(w, machine);
  std::optional<Record> found;
  for (const Record& r : records)
    if (r.ok() && r.workload == key && r.template_name == t.name && r.target == target && r.config == d &&
        (!found || r.cost < found->cost))
      found = r;
  return found;
}

// The threads the CPU backend's kernels run on now; 0 (any) where it is not registered.
int host_threads() {
  try {
    return target::make_backend("cpu")->threads();
  } catch (const std::exception&) {
    return 0;
  }
}

// Schedules the anchor with the record's configuration.
void apply_record(const Record& r, const graph::AnchorStage& a, const Workload& w, const std::string& records_path) {
  const Template& t = find_template(r.template_name);
  ConfigSpace space = t.space(w);
  if (r.config >= space.size())
    throw Error(fmt::format("{}: the record for {} names configuration {} of '{}', whose space has {}; "
                            "it was tuned with another version of the template",
                            records_path, r.workload, r.config, t.name, space.size()));
  t.apply(a, w, space.get(r.config));
}

}  // namespace

std::map<std::string, InModelPick> in_model_picks(const std::vector<Record>& records, const target::MachineTraits& machine,
                                                  const std::string& target, int threads) {
  auto counts = [&](const Record& r) {
    if (!r.ok() || !r.in_model() || r.target != target) return false;
    auto t = r.detail.find("threads");
    return threads == 0 || t == r.detail.end() || (t->is_number_integer() && t->get<int64_t>() == threads);
  };
  std::map<std::string, InModelPick> picks;
  for (const Record& r : records) {
    if (!counts(r)) continue;
    try {  // as best_records: a record whose configuration no longer decodes is passed by
      if (find_template(r.template_name).space(Workload::from_key(r.workload)).index_of(r.knobs) != r.config) continue;
    } catch (const std::exception&) {
      continue;
    }
    auto it = picks.find(r.workload);
    if (it == picks.end() || r.cost < it->second.best.cost) picks[r.workload].best = r;
  }
  for (auto& [key, p] : picks) {
    const Template& t = find_template(p.best.template_name);
    if (!t.default_config) continue;
    const int64_t d = t.default_config(Workload::from_key(key), machine);
    for (const Record& r : records)
      if (counts(r) && r.workload == key && r.config == d &&
          (!p.default_record || r.cost < p.default_record->cost))
        p.default_record = r;
    p.applies = p.best.config != d && (!p.default_record || p.best.cost <= p.default_record->cost * (1 - kInModelMargin));
  }
  return picks;
}

graph::ScheduleHook records_hook(const std::string& records_path, std::ostream& warn, ApplyStats* stats, const std::string& target) {
  auto all = std::make_shared<std::vector<Record>>(load_records(records_path, IfMissing::kError));
  auto best = std::make_shared<std::map<std::string, Record>>(best_records(*all, target));
  // The in-model picks compare with the default on the machine the model is compiled
  // for (the anchors' traits), known at the first anchor.
  auto picks = std::make_shared<std::optional<std::map<std::string, InModelPick>>>();
  auto own = std::make_shared<ApplyStats>();
  return [all, best, picks, own, stats, &warn, records_path, target](const graph::AnchorStage& a) {
    ApplyStats& st = stats ? *stats : *own;
    if (!*picks) *picks = in_model_picks(*all, a.machine, target, host_threads());
    const graph::Node& n = a.graph.node(a.node);
    std::optional<Workload> w = workload_of(a.graph, a.node);
    if (!w) {
      if (st.missing.insert(n.op + " '" + n.name + "'").second)
        warn << fmt::format("kiln: warning: no template for {} '{}' ({}); it keeps the default schedule\n", n.op, n.name,
                            n.type.to_string());
      return false;
    }
    std::string key = w->key();
    if (auto p = (*picks)->find(key); p != (*picks)->end()) {
      if (!p->second.applies) {
        if (st.kept_default.insert(key).second)
          warn << fmt::format("kiln: note: no record in {} for {} (node '{}') ran {:.0f}% faster than the default schedule "
                              "inside the model; it keeps the default schedule\n",
                              records_path, key, n.name, kInModelMargin * 100);
        return false;
      }
      apply_record(p->second.best, a, *w, records_path);
      st.applied.insert(key);
      return true;
    }
    auto it = best->find(key);
    if (it == best->end()) {
      if (st.missing.insert(key).second)
        warn << fmt::format("kiln: warning: no tuning record in {} for {} (node '{}'); it keeps the default schedule\n",
                            records_path, key, n.name);
      return false;
    }
    const Template& t = find_template(it->second.template_name);
    if (st.kept_default.count(key)) return false;
    if (!st.applied.count(key)) {  // decided once per workload
      std::optional<Record> d = default_record(t, *w, *all, target, a.machine);
      if (d && d->config != it->second.config && it->second.cost > d->cost * (1 - kDefaultMargin)) {
        st.kept_default.insert(key);
        warn << fmt::format("kiln: note: the best record in {} for {} (node '{}') is {:.1f}% faster than the default schedule "
                            "as tuned, under the {:.0f}% it takes to apply one; it keeps the default schedule\n",
                            records_path, key, n.name, (d->cost / it->second.cost - 1) * 100, kDefaultMargin * 100);
        return false;
      }
    }
    apply_record(it->second, a, *w, records_path);
    st.applied.insert(key);
    return true;
  };
}

graph::KnobHook knobs_hook(const std::string& records_path, std::ostream& warn, ApplyStats* stats) {
  auto all = std::make_shared<std::vector<Record>>(load_records(records_path, IfMissing::kError));
  // The best records per records key, chosen when a key is first asked for (the
  // templates are registered by then).
  auto best = std::make_shared<std::map<std::string, std::map<std::string, Record>>>();
  auto own = std::make_shared<ApplyStats>();
  return [all, best, own, stats, &warn, records_path](const graph::Graph& g, graph::NodeId node,
                                                      const std::string& template_name,
                                                      const std::string& key) -> std::optional<std::map<std::string, std::string>> {
    ApplyStats& st = stats ? *stats : *own;
    const graph::Node& n = g.node(node);
    std::optional<Workload> w = workload_of(g, node);
    if (!w) return std::nullopt;
    auto b = best->find(key);
    if (b == best->end()) {
      std::vector<Record> mine;
      for (const Record& r : *all)
        if (r.template_name == template_name) mine.push_back(r);
      b = best->emplace(key, best_records(mine, key)).first;
    }
    auto it = b->second.find(w->key());
    if (it == b->second.end()) {
      if (st.missing.insert(w->key()).second)
        warn << fmt::format("kiln: warning: no tuning record in {} for {} on {} (node '{}'); it keeps the default schedule\n",
                            records_path, w->key(), key, n.name);
      return std::nullopt;
    }
    st.applied.insert(w->key());
    return it->second.knobs;
  };
}

std::vector<std::pair<Workload, std::string>> model_workloads(const graph::Graph& g, const target::Target& target) {
  std::vector<std::pair<Workload, std::string>> out;
  std::set<std::string> seen;
  graph::CompileOptions o;
  o.target = target;
  auto take = [&](const graph::Graph& pg, graph::NodeId node) {
    if (auto w = workload_of(pg, node))
      if (seen.insert(w->key()).second) out.push_back({*w, pg.node(node).name});
  };
  if (target.is_host()) {  // the CPU, a GPU: the anchors of lower_group
    o.schedule_hook = [&](const graph::AnchorStage& a) {
      take(a.graph, a.node);
      return false;
    };
  } else {
    o.knob_hook = [&](const graph::Graph& pg, graph::NodeId node, const std::string&,
                      const std::string&) -> std::optional<std::map<std::string, std::string>> {
      take(pg, node);
      return std::nullopt;
    };
  }
  graph::compile(g, o);
  return out;
}

}  // namespace kiln::tuner
