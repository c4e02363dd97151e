// kiln explore: the hardware/software co-design search (explore/, docs/explore.md).

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <memory>
#include <sstream>

#include "boards/flow/synth.h"
#include "explore/report.h"
#include "explore/search.h"
#include "support/error.h"
#include "tuner/mpi.h"

namespace kiln::cli {

namespace {

struct ExploreArgs {
  std::string workload, layers;
  std::vector<std::string> ops;
  std::string board, config, budget;
  int evaluations = 8, max_synth = 0, jobs = 1;
  std::string records, out, work_dir, search = "guided";
  uint64_t seed = 0;
  double timeout = 3600;
  bool json = false;
};

// "lut=80%,bram=75%,dsp=0.9" -> {LUT: 0.8, BRAM: 0.75, DSP: 0.9}.
std::map<std::string, double> parse_budget(const std::string& text) {
  std::map<std::string, double> out;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    auto eq = part.find('=');
    std::string kind = part.substr(0, eq);
    for (char& c : kind) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (eq == std::string::npos || std::find(boards::kResourceKinds.begin(), boards::kResourceKinds.end(), kind) ==
                                       boards::kResourceKinds.end())
      throw Error(fmt::format("--budget: '{}' is not KIND=SHARE with KIND one of lut, ff, dsp, bram, spram", part));
    std::string v = part.substr(eq + 1);
    const bool percent = !v.empty() && v.back() == '%';
    if (percent) v.pop_back();
    double share = 0;
    try {
      size_t used = 0;
      share = std::stod(v, &used);
      if (used != v.size()) share = -1;
    } catch (const std::exception&) {
      share = -1;
    }
    if (percent) share /= 100;
    if (!(share > 0 && share <= 1))
      throw Error(fmt::format("--budget: {}: the share must be in (0, 100%] (e.g. 80% or 0.8)", part));
    out[kind] = share;
  }
  return out;
}

explore::ExploreWorkload workload_of(const ExploreArgs& a, const explore::HwSpace& space) {
  const int given = !a.workload.empty() + !a.ops.empty() + !a.layers.empty();
  if (given != 1) throw Error("kiln explore: give exactly one of --workload MODEL.onnx, --op SPEC..., --layers resnet18");
  if (!a.workload.empty()) return explore::workload_of_model(a.workload, space.max_block());
  if (!a.ops.empty()) return explore::workload_of_ops(a.ops);
  if (a.layers == "resnet18") return explore::resnet18_table();
  throw Error(fmt::format("--layers: unknown set '{}' (resnet18: ResNet-18's C2..C12 as the TVM paper lists them)", a.layers));
}

void explore_main(const ExploreArgs& a) {
  auto ctx = std::make_shared<explore::ExploreContext>();
  ctx->board = boards::load_board(a.board, boards::boards_dir());
  const hw::Config base = boards::load_config(a.config.empty() ? ctx->board.config : a.config);
  ctx->space = explore::HwSpace::for_board(ctx->board, base);
  ctx->workload = workload_of(a, ctx->space);
  ctx->work_dir = a.work_dir.empty() ? a.records + ".work" : a.work_dir;
  ctx->verilator_jobs = a.jobs > 1 ? 1 : 2;
  explore::register_explore_templates(ctx);

  explore::ExploreOptions opt;
  opt.budget = parse_budget(a.budget);
  opt.evaluations = a.evaluations;
  opt.max_synth = a.max_synth;
  opt.search = a.search;
  opt.seed = a.seed;
  opt.records = a.records;
  opt.on_progress = [](const std::string& s) { fmt::print(stderr, "[explore] {}\n", s); };

  tuner::MeasureOptions mo;
  mo.timeout_s = a.timeout;
  std::unique_ptr<tuner::MpiSession> mpi;
  std::unique_ptr<tuner::Measurer> measurer = tuner::command_measurer(mo, a.jobs, mpi);
  if (!measurer) return;  // an MPI rank that evaluated for rank 0
  fmt::print(stderr, "kiln explore: {} ({} layers, {:.3g} GMAC) on {} ({}), space of {} configurations, {} search, {} RTL "
             "evaluations, {}, records {}\n",
             ctx->workload.name, ctx->workload.layers.size(), static_cast<double>(ctx->workload.macs()) / 1e9,
             ctx->board.name, ctx->board.part, ctx->space.size(), a.search, a.evaluations, measurer->describe(), a.records);
  explore::ExploreResult r = explore::explore(*ctx, *measurer, opt);
  if (mpi) mpi->stop_workers();

  const std::filesystem::path out = a.out.empty() ? a.records + ".front" : a.out;
  std::vector<std::filesystem::path> written = explore::write_front_configs(r, out);
  nlohmann::json j = explore::result_json(r, *ctx, opt);
  j["front_configs"] = nlohmann::json::array();
  for (const auto& p : written) j["front_configs"].push_back(p.string());
  j["svg"] = (out / "front.svg").string();
  std::ofstream(out / "front.svg") << explore::front_svg(r, *ctx, opt);
  std::ofstream(out / "result.json") << j.dump(2) << "\n";
  if (a.json) {
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("{}", explore::front_table(r, *ctx));
  const nlohmann::json& ce = r.model_error["cycles"];
  if (ce.value("points", 0) > 0)
    fmt::print("cycle model against the RTL over {} verified points: mean |error| {:.1f}%, max {:.1f}%; scaled by the "
               "median measured/modelled ratio {:.3g}: mean {:.1f}%, max {:.1f}%\n",
               ce["points"].get<int>(), 100 * ce["mean_abs"].get<double>(), 100 * ce["max_abs"].get<double>(),
               ce["correction"].get<double>(), 100 * r.model_error["cycles_corrected"]["mean_abs"].get<double>(),
               100 * r.model_error["cycles_corrected"]["max_abs"].get<double>());
  if (r.model_error.contains("resources"))
    for (const auto& [kind, e] : r.model_error["resources"].items())
      fmt::print("resource model ({}) against Yosys over {} points: mean |error| {:.1f}%, max {:.1f}%\n", kind,
                 e["points"].get<int>(), 100 * e["mean_abs"].get<double>(), 100 * e["max_abs"].get<double>());
  fmt::print("{} syntheses ({} run now), {} RTL evaluations ({} run now); front configurations, front.svg and "
             "result.json in {}\n",
             r.synth_runs, r.synth_new, r.rtl_runs, r.rtl_new, out.string());
}

}  // namespace

void add_explore_command(CLI::App& app) {
  auto a = std::make_shared<ExploreArgs>();
  CLI::App* e = app.add_subcommand(
      "explore", "search accelerator configurations and schedules together for a board; every front point synthesized "
                 "and verified on the RTL (docs/explore.md)");
  e->add_option("--workload", a->workload, "MODEL.onnx: the model's convolutions that the accelerator takes");
  e->add_option("--op", a->ops, "one layer per --op, e.g. conv2d:N=1,C=64,H=56,W=56,O=64,KH=3,KW=3,stride=1,pad=1");
  e->add_option("--layers", a->layers, "a named layer set: resnet18 (C2..C12 of the TVM paper's table)");
  e->add_option("--board", a->board, "the board (boards/<name>): its part's resources, flow and clock")->required();
  e->add_option("--config", a->config, "the configuration the space is built around (default: the board's)");
  e->add_option("--budget", a->budget, "resource shares the design may use, e.g. lut=80%,bram=75%,dsp=90%");
  e->add_option("-n,--evaluations", a->evaluations, "RTL (tier 3) evaluations, the board's own configuration not counted")
      ->capture_default_str();
  e->add_option("--max-synth", a->max_synth, "syntheses (tier 2) at most (0: 4 x the evaluations)")->capture_default_str();
  e->add_option("-j,--jobs", a->jobs, "worker processes evaluating at once (without mpirun)")->capture_default_str();
  e->add_option("-r,--records", a->records, "JSON-lines file every evaluation is appended to; a rerun resumes from it")
      ->required();
  e->add_option("--search", a->search, "guided (the analytic tiers choose what to verify) or random (the baseline)")
      ->capture_default_str();
  e->add_option("--seed", a->seed, "random seed (the random search's draws)")->capture_default_str();
  e->add_option("--out", a->out, "folder for the front's configurations, front.svg and result.json (default RECORDS.front)");
  e->add_option("--work-dir", a->work_dir, "folder for synthesis outputs (default RECORDS.work)");
  e->add_option("--timeout", a->timeout, "seconds one synthesis or RTL evaluation may take before it is killed")
      ->capture_default_str();
  e->add_flag("--json", a->json, "print the result as JSON");
  e->callback([a] { explore_main(*a); });
}

}  // namespace kiln::cli
