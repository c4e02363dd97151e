// kiln tune: tunes the convolutions and matrix products of a model (or one operator
// given with --op) with the tuner (tuner/, docs/tuning.md) and appends the
// measurements to a records file that `kiln compile/run --records` apply. Under
// mpirun, rank 0 searches and the other ranks measure.

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/strategy.h"
#include "compiler/support/error.h"
#include "compiler/target/backend.h"
#include "compiler/target/target.h"
#include "hw/driver/device_settings.h"
#include "tools/kiln/common.h"
#include "tools/kiln/device_flags.h"
#include "tuner/apply.h"
#include "tuner/in_model.h"
#include "tuner/mpi.h"
#include "tuner/policy.h"
#include "tuner/tuner.h"
#ifdef KILN_HAVE_TUNER_VTA
#include "backend-vta/graph_target.h"
#include "tuner/vta_templates.h"
#endif

namespace kiln::cli {

namespace {

struct TuneArgs {
  std::string model, op, target = "cpu", records, tuner = "xgb";
  std::string config = "default";  // --target vta: the accelerator configuration
  std::string device;              // --target vta: the device the candidates run on (default rtl)
  DeviceFlags device_flags;        // --target vta: its settings (--core, --dram-latency, ...)
  int trials = 64, jobs = 1, batch = 0, early_stopping = 0;
  int in_model = 3;                 // a model on a CPU: candidates per workload timed inside it (0: none)
  std::vector<std::string> inputs;  // the model's inputs for those runs (NAME=FILE.npy)
  uint64_t seed = 0;
  double timeout = 20;
  bool resume = false;
};

// What the tasks of one run share, derived from the arguments once.
struct TuneTarget {
  bool vta = false;          // --target vta: costs are cycles on `device`
  std::string device;        // --target vta: the device's kind
  target::Target model;      // what a model's tasks are placed for
  std::string records_key;   // an accelerator's records key ("" for the template's target)
  std::string templates;     // the templates' target: "cpu", "opencl", "cuda" or "vta"
  std::string host;          // the target string the host's candidates (CPU or GPU) are built for
};

std::string clock_text(double s) {
  int t = static_cast<int>(s + 0.5);
  return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
}

void print_progress(const tuner::TuneProgress& p, bool cycles) {
  bool tty = isatty(STDERR_FILENO);
  std::string best = p.best_cost <= 0 ? "best -"
                     : cycles       ? fmt::format("best {:.0f} cycles", p.best_cost)
                                    : fmt::format("best {:.1f} GFLOP/s ({:.4g} ms)", p.best_gflops, p.best_cost * 1e3);
  fmt::print(stderr, "{}[{}] {}/{} trials, {}, {} errors, elapsed {}, ETA {}{}", tty ? "\r" : "", p.task, p.done, p.total, best,
             p.errors, clock_text(p.elapsed_s), clock_text(p.eta_s), tty ? "   " : "\n");
}

#ifdef KILN_HAVE_TUNER_VTA
// The device the accelerator's candidates are measured on: the target's -device, else
// --device, else rtl, with the device settings of the target string and of the flags
// (the string's first, as kiln run takes them). Made once here, so that a device that
// cannot be made or counts no cycles is refused before any candidate.
tuner::VtaDevice tune_device(const TuneArgs& a, const target::Target& given, const hw::Config& cfg) {
  target::Target t = given;
  if (!t.has_option("device")) t.set_option("device", a.device.empty() ? "rtl" : a.device);
  a.device_flags.options(t.option("device"));  // an error names the flag as it was given
  for (const auto& [setting, value] : a.device_flags.given())
    if (!t.has_option(std::string(setting->name))) t.set_option(std::string(setting->name), value);
  for (const std::string per_run : {"wave", "trace"})
    if (t.has_option(per_run))
      throw CompileError("--" + per_run + ": kiln tune runs every candidate on a device of its own, each writing its file over " +
                         "the last one's; the best one's is `kiln vta conv2d ... --records FILE --" + per_run + " FILE`");
  tuner::VtaDevice device{t.option("device"), vta::device_options_of(t)};
  tuner::make_vta_device(cfg, device);
  return device;
}
#endif

// Checks the arguments and registers the accelerator's templates for --target vta.
// An accelerator's records are keyed by its configuration and fingerprint, so that
// cycles tuned on one configuration are never applied to another; a model's tasks
// are the convolutions its placement puts on the accelerator.
TuneTarget tune_target(const TuneArgs& a) {
  if (a.model.empty() == a.op.empty()) throw CompileError("give either MODEL.onnx or --op SPEC");
  if (!tuner::has_tuner(a.tuner)) throw CompileError(tuner::unknown_tuner_message(a.tuner));
  if (a.jobs < 1) throw CompileError("--jobs must be at least 1");
  if (a.timeout <= 0) throw CompileError("--timeout must be positive");
  if (a.in_model < 0) throw CompileError("--in-model must be 0 (none) or a number of candidates");
  if (!a.inputs.empty() && a.model.empty()) throw CompileError("--input gives a model's inputs; --op has none");
  TuneTarget t;
  const target::Target given = target::Target::parse(a.target);
  t.vta = given.kind() == "vta";
  // A GPU target's templates and records are its kind's ("opencl", "cuda").
  const bool gpu = !t.vta && !given.is_cpu() && given.is_host() && target::make_backend(given.kind())->traits(given.str()).is_gpu();
  t.templates = t.vta ? "vta" : gpu ? given.kind() : "cpu";
  if (!given.is_cpu() && !t.vta && !gpu)
    throw CompileError("--target '" + a.target +
                       "': the tuner has templates for cpu (or an `llvm ...` target string), opencl, cuda and vta");
  if (!t.vta) {
    if (!a.device.empty() || !a.device_flags.given().empty())
      throw CompileError("--device and the device flags apply to --target vta, not to " + a.target);
    t.model = given;
    t.host = given.str();
    return t;
  }
  // The accelerator's costs are cycles on a device of a configuration, the target's
  // -config or --config.
  for (const auto& [key, value] : given.options())
    if (key != "config" && key != "device" && !driver::find_device_setting(key))
      throw CompileError("--target '" + a.target + "': kiln tune measures cycles on a device of a configuration; -" + key +
                         " does not apply");
  std::string config = given.option("config", a.config);
  if (given.has_option("config") && config != a.config && a.config != "default")
    throw CompileError("--target '" + a.target + "' and --config " + a.config + " name two configurations");
#ifdef KILN_HAVE_TUNER_VTA
  const hw::Config cfg = load_config(config);
  tuner::VtaDevice device = tune_device(a, given, cfg);
  t.device = device.kind;
  tuner::register_vta_templates(cfg, device);
#else
  throw CompileError("--target vta: this build has no VTA backend");
#endif
  t.model = target::Target("vta", {{"config", config}});
  t.records_key = graph::records_key_of(t.model);
  t.host = t.model.host();
  return t;
}

std::vector<std::pair<tuner::Workload, std::string>> tune_tasks(const TuneArgs& a, const TuneTarget& tt) {
  std::vector<std::pair<tuner::Workload, std::string>> tasks;
  if (!a.op.empty()) tasks.push_back({tuner::parse_workload(a.op), "--op"});
  else tasks = tuner::model_workloads(frontend::import_onnx_file(a.model), tt.model);
  if (tasks.empty() && tt.vta)
    throw CompileError(a.model + ": no convolution of this model runs on the accelerator (" + tt.records_key +
                       "); a float model needs `kiln quantize` first");
  if (tasks.empty()) throw CompileError(a.model + ": no operator has a tuning template (conv2d, dense, matmul)");
  return tasks;
}

tuner::TuneOptions tune_options(const TuneArgs& a, const TuneTarget& tt) {
  tuner::TuneOptions o;
  o.tuner = a.tuner;
  o.trials = a.trials;
  o.early_stopping = a.early_stopping;
  o.batch = a.batch;
  o.seed = a.seed;
  o.resume = a.resume;
  o.records = a.records;
  o.target = tt.records_key;
  o.candidates_target = tt.host;
  o.on_progress = [cycles = tt.vta](const tuner::TuneProgress& p) { print_progress(p, cycles); };
  return o;
}

// How the best compares with the compiler's default schedule, where it was measured.
std::string against_default(const tuner::TuneResult& r) {
  if (!r.default_record) return "";
  if (r.default_record->config == r.best->config) return ", the default schedule";
  return fmt::format(", {:.2f}x the default schedule's speed ({:.4g} ms, config {})", r.default_record->cost / r.best->cost,
                     r.default_record->cost * 1e3, r.default_record->config);
}

void print_result(const tuner::Workload& w, const std::string& where, const tuner::TuneResult& r, const TuneTarget& tt) {
  if (r.stopped_early) fmt::print("{} ({}): stopped early, no better configuration in the last trials\n", w.key(), where);
  if (!r.best) {
    fmt::print("{} ({}): no configuration ran successfully; {} measured now, {} errors\n", w.key(), where, r.measured, r.errors);
    return;
  }
  std::vector<std::string> knobs;
  for (const auto& [k, v] : r.best->knobs) knobs.push_back(k + "=" + v);
  if (tt.vta)
    fmt::print("{} ({}): best {:.0f} cycles on {} ({}), config {} [{}]; {} measured now, {} errors\n", w.key(), where,
               r.best->cost, tt.device, tt.records_key, r.best->config, fmt::join(knobs, " "), r.measured, r.errors);
  else
    fmt::print("{} ({}): best {:.4g} ms, {:.1f} GFLOP/s, config {} [{}]{}; {} measured now, {} errors\n", w.key(), where,
               r.best->cost * 1e3, w.flops() / r.best->cost / 1e9, r.best->config, fmt::join(knobs, " "), against_default(r),
               r.measured, r.errors);
}

// The search's last step for a model on a CPU (tuner/in_model.h): its candidates timed
// inside the model, and what `kiln run --records` will apply.
void choose_in_model(const TuneArgs& a, const TuneTarget& tt) {
  const int threads = target::make_backend("cpu")->threads();
  tuner::InModelOptions o;
  o.candidates = a.in_model;
  o.records = a.records;
  o.target = tt.model;
  o.set_inputs = [&a](graph::Executor& ex) { set_inputs(ex, a.inputs); };
  o.on_progress = [](int done, int total, double elapsed) {
    bool tty = isatty(STDERR_FILENO);
    fmt::print(stderr, "{}[in the model] {}/{} compiles, elapsed {}, ETA {}{}", tty ? "\r" : "", done, total,
               clock_text(elapsed), clock_text(elapsed / done * (total - done)), tty ? "   " : "\n");
  };
  fmt::print(stderr,
             "kiln tune: timing the default and up to {} best candidates of each workload inside the model on {} thread{}, "
             "{} rounds, then the winners against the defaults\n",
             o.candidates, threads, threads == 1 ? "" : "s", o.rounds);
  const tuner::InModelResult r = tuner::select_in_model(frontend::import_onnx_file(a.model), o);
  if (isatty(STDERR_FILENO) && r.compiles) fmt::print(stderr, "\n");
  const auto picks = tuner::in_model_picks(tuner::load_records(a.records), tuner::machine_traits(o.target.str()), "cpu", threads);
  double before = 0, after = 0;
  for (const tuner::InModelChoice& c : r.choices) {
    auto p = picks.find(c.workload);
    bool applies = p != picks.end() && p->second.applies;
    double ms = applies ? p->second.best.cost * 1e3 : c.default_ms;
    before += c.default_ms;
    after += ms;
    std::string what = applies ? fmt::format("{:.4g} ms with config {} ({:.2f}x), applied", ms, p->second.best.config,
                                             c.default_ms / ms)
                       : c.best_config == c.default_config
                           ? fmt::format("the fastest of {} candidates: the default stays", c.candidates)
                           : fmt::format("{:.4g} ms with config {}, the fastest of {} candidates timed again, under {:.0f}% "
                                         "faster: the default stays",
                                         c.best_ms, c.best_config, c.candidates, tuner::kInModelMargin * 100);
    fmt::print("{} ({}): in the model {:.4g} ms with the default schedule, {}\n", c.workload, c.node, c.default_ms, what);
  }
  if (!r.choices.empty())
    fmt::print("in the model: the tuned workloads' kernels {:.4g} ms with the default schedules, {:.4g} ms as chosen; all kernels "
               "{:.4g} ms with the defaults, {:.4g} ms with every winner ({} compiles)\n",
               before, after, r.model_default_ms, r.model_chosen_ms, r.compiles);
}

void tune_main(const TuneArgs& a) {
  const TuneTarget tt = tune_target(a);
  tuner::MeasureOptions mo;
  mo.timeout_s = a.timeout;
  mo.target = tt.host;
  std::unique_ptr<tuner::MpiSession> mpi;
  std::unique_ptr<tuner::Measurer> measurer = tuner::command_measurer(mo, a.jobs, mpi);
  if (!measurer) return;  // an MPI rank that measured for rank 0
  const auto tasks = tune_tasks(a, tt);
  fmt::print(stderr, "kiln tune: {} task{}, {} trials each, tuner {}, {}, records {}\n", tasks.size(), tasks.size() == 1 ? "" : "s",
             a.trials, a.tuner, measurer->describe(), a.records);
  const tuner::TuneOptions o = tune_options(a, tt);
  for (const auto& [w, where] : tasks) {
    std::vector<const tuner::Template*> ts = tuner::templates_for(w.op, tt.templates);
    if (ts.empty()) throw CompileError("no " + tt.templates + " template for " + w.key());
    tuner::TuneResult r = tuner::tune(*ts[0], w, *measurer, o);
    if (isatty(STDERR_FILENO)) fmt::print(stderr, "\n");
    if (r.transfer_records > 0)
      fmt::print(stderr, "[{} {}] the cost model also learned from {} records of other {} workloads\n", ts[0]->name, w.key(),
                 r.transfer_records, w.op);
    print_result(w, where, r, tt);
  }
  if (!a.model.empty() && tt.templates == "cpu" && a.in_model > 0 && !a.records.empty()) choose_in_model(a, tt);
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  CLI::App* t = app.add_subcommand("tune", "tune a model's convolutions and matrix products (or one --op) and record the measurements");
  t->add_option("model", a->model,
                "MODEL.onnx: tune every conv2d, dense and matmul of the model (with --target vta: every convolution "
                "the accelerator runs)");
  t->add_option("--op", a->op, "one operator instead of a model, e.g. matmul:M=1024,N=1024,K=1024 or "
                               "conv2d:C=64,H=56,W=56,O=64,KH=3,pad=1 (a GPU's: conv2d_nchw:...[,groups=G])");
  t->add_option("-t,--target", a->target,
                "cpu (the host), an `llvm ...` target string, opencl or cuda [-arch=sm_XX] (a GPU: its kernels' time "
                "from the device's events), or vta [-config=NAME -device=KIND] (the accelerator: cycles on a device)")
      ->capture_default_str();
  add_config_option(t, a->config);
  t->add_option("--device", a->device,
                "with --target vta: the device the candidates are measured on, one that counts cycles (default rtl)");
  t->add_option("-n,--trials", a->trials, "measurements per operator (with --resume: in total)")->capture_default_str();
  t->add_option("-r,--records", a->records, "JSON-lines file the measurements are appended to")->required();
  t->add_option("--tuner", a->tuner,
                fmt::format("the search policy: {} (xgb: XGBoost cost model, small spaces scored whole, large ones by "
                            "simulated annealing)",
                            fmt::join(tuner::tuner_names(), ", ")))
      ->capture_default_str();
  t->add_option("--seed", a->seed, "random seed of the search")->capture_default_str();
  t->add_option("--early-stopping", a->early_stopping,
                "stop an operator after this many measurements in a row without a better one (0: never)")
      ->capture_default_str();
  t->add_flag("--resume", a->resume, "count the records already in the file as trials and continue");
  t->add_option("--in-model", a->in_model,
                "a model on a CPU: after the search, time the default and this many best candidates of each workload "
                "inside the whole model, and apply what wins there (0: apply the best measured alone)")
      ->capture_default_str();
  t->add_option("-i,--input", a->inputs, "NAME=FILE.npy: a model input for the runs inside the model (default: random data)");
  t->add_option("-j,--jobs", a->jobs, "worker processes measuring at once (without mpirun)")->capture_default_str();
  t->add_option("--batch", a->batch, "candidates per batch between cost-model updates (0: a first random batch of 8, then 4, then 8 after 64 trials, at least the workers)")->capture_default_str();
  t->add_option("--timeout", a->timeout, "seconds one candidate may take to build and run before it is killed")->capture_default_str();
  // --seed and --timeout are the search's and a candidate's: a target string's -seed=N
  // and -timeout=S set the device's.
  a->device_flags.add_to(t, {"seed", "timeout"});
  t->callback([a] { tune_main(*a); });
}

}  // namespace kiln::cli
