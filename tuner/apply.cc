#include "tuner/apply.h"

#include <fmt/format.h>

#include <memory>

#include "compiler/graph/executor.h"

namespace kiln::tuner {

graph::ScheduleHook records_hook(const std::string& records_path, std::ostream& warn, ApplyStats* stats, const std::string& target) {
  auto best = std::make_shared<std::map<std::string, Record>>(best_records(load_records(records_path), target));
  auto own = std::make_shared<ApplyStats>();
  return [best, own, stats, &warn, records_path](const graph::AnchorStage& a) {
    ApplyStats& st = stats ? *stats : *own;
    const graph::Node& n = a.graph.node(a.node);
    std::optional<Workload> w = workload_of(a.graph, a.node);
    if (!w) {
      if (st.missing.insert(n.op + " '" + n.name + "'").second)
        warn << fmt::format("kiln: warning: no template for {} '{}' ({}); it keeps the default schedule\n", n.op, n.name,
                            n.type.to_string());
      return false;
    }
    std::string key = w->key();
    auto it = best->find(key);
    if (it == best->end()) {
      if (st.missing.insert(key).second)
        warn << fmt::format("kiln: warning: no tuning record in {} for {} (node '{}'); it keeps the default schedule\n",
                            records_path, key, n.name);
      return false;
    }
    const Template& t = find_template(it->second.template_name);
    ConfigSpace space = t.space(*w);
    t.apply(a, *w, space.get(it->second.config));
    st.applied.insert(key);
    return true;
  };
}

std::vector<std::pair<Workload, std::string>> model_workloads(const graph::Graph& g) {
  std::vector<std::pair<Workload, std::string>> out;
  std::set<std::string> seen;
  graph::CompileOptions o;
  o.schedule_hook = [&](const graph::AnchorStage& a) {
    if (auto w = workload_of(a.graph, a.node))
      if (seen.insert(w->key()).second) out.push_back({*w, a.graph.node(a.node).name});
    return false;
  };
  graph::compile(g, o);
  return out;
}

}  // namespace kiln::tuner
