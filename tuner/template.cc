#include "tuner/template.h"

#include <fmt/format.h>

#include <mutex>
#include <stdexcept>

#include "compiler/target/backend.h"
#include "support/error.h"

namespace kiln::tuner {

namespace {

std::vector<Template>& registry() {
  static std::vector<Template> r;
  return r;
}

std::once_flag builtins;

void ensure_builtins() {
  std::call_once(builtins, [] {
    register_cpu_templates();
    register_gpu_templates();
  });
}

}  // namespace

void register_template(Template t) {
  if (t.name.empty() || !t.space || !t.apply) throw Error("a template needs a name, a space and an apply function");
  for (auto& e : registry())
    if (e.name == t.name) {
      e = std::move(t);
      return;
    }
  registry().push_back(std::move(t));
}

const Template& find_template(const std::string& name) {
  ensure_builtins();
  for (const auto& t : registry())
    if (t.name == name) return t;
  throw Error(fmt::format("no template '{}' (known: {})", name, fmt::join(template_names(), ", ")));
}

std::vector<const Template*> templates_for(const std::string& op, const std::string& target) {
  ensure_builtins();
  std::vector<const Template*> r;
  for (const auto& t : registry())
    if (t.op == op && t.target == target) r.push_back(&t);
  return r;
}

std::vector<std::string> template_names() {
  ensure_builtins();
  std::vector<std::string> r;
  for (const auto& t : registry()) r.push_back(t.name);
  return r;
}

target::MachineTraits machine_traits(const std::string& target) {
  if (target.empty() && !target::has_backend("cpu")) return {};  // no CPU to schedule for (a VTA-only build)
  return target::machine_of(target::Target::parse(target.empty() ? "cpu" : target));
}

void visit_default_anchor(const Workload& w, const target::MachineTraits& machine,
                          const std::function<void(const te::Tensor&, const target::MachineTraits&)>& visit) {
  graph::NodeId node = -1;
  graph::Graph g = workload_graph(w, &node);
  bool seen = false;
  graph::ScheduleHook hook = [&](const graph::AnchorStage& a) {
    visit(a.stage, machine);
    seen = true;
    return false;
  };
  graph::lower_group(g, {node}, "default", {}, hook, machine);
  if (!seen) throw std::logic_error("no anchor stage in the graph of " + w.key());
}

std::vector<schedule::LoweredFunc> lower_candidate(const Template& t, const Workload& w, const Config& c) {
  return lower_candidate(t, w, c, machine_traits(""));
}

std::vector<schedule::LoweredFunc> lower_candidate(const Template& t, const Workload& w, const Config& c,
                                                   const target::MachineTraits& machine) {
  if (t.lower) return t.lower(w, c);
  graph::NodeId node = -1;
  graph::Graph g = workload_graph(w, &node);
  bool applied = false;
  graph::ScheduleHook hook = [&](const graph::AnchorStage& a) {
    t.apply(a, w, c);
    applied = true;
    return true;
  };
  graph::LoweredGroup lg = graph::lower_group(g, {node}, "candidate", {}, hook, machine);
  if (!applied) throw std::logic_error("template '" + t.name + "' found no anchor stage in " + w.key());
  return {lg.func};
}

}  // namespace kiln::tuner
