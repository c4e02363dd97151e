// The tuner against itself and a peer: for a float32 GEMM 1024 and two ResNet-18
// convolutions, best-so-far against trials for the XGBoost tuner and for random
// search, averaged over seeds; the tuned GEMM against OpenBLAS's cblas_sgemm in the
// same run. Writes the tuning curves as an SVG plot; --json prints the figures.
//
//   tuner_bench [--trials 64] [--seeds 5] [--svg tuner_curves.svg] [--only NAME] [--json]
//               [--cache FILE] [--table RECORDS]... [--trace] [--init-batch N] [--small-batch N]
//               [--no-transfer | [--transfer-samples 64] [--transfer-from tuned|sampled]
//                                [--transfer-source SPEC]...]
//
// --init-batch and --small-batch set TuneOptions' first random batch and the batches
// after it (defaults 8 and 4), for trying the search (with --cache, against a table).
//
// A third curve, xgb_transfer (unless --no-transfer; --transfer is accepted and
// changes nothing): the XGBoost tuner given a records file that holds other
// workloads of the same template (transfer learning, docs/tuning.md),
// as `kiln tune MODEL` leaves it after the model's earlier operators, so that its model
// is trained before the first batch. The sources are measured in the same run, for
// every seed afresh (seed kTransferSeed + seed): each tuned by xgb for
// --transfer-samples trials, learning from the sources before it (--transfer-from
// tuned, the default), or a random sample of that many (--transfer-from sampled).
// GEMM 1024's sources are the three GEMMs with one dimension halved; a convolution's
// are the other three stride-1 3x3 convolutions of ResNet-18. --transfer-source SPEC
// (repeatable, with --only) replaces them. Each seed's file lives in a temporary
// folder removed at exit. --json gives, per operator, the xgb_transfer curve and
// trials to 95%, random_over_xgb_transfer_trials and "transfer" (the sources, their
// records over all seeds, records the tuner trained on per seed).
//
// One measurement per configuration and operator: a configuration that a second seed
// or another tuner picks again (or that was a transfer sample) gets the time measured
// the first time (a cache in front of the process pool), so that all curves share one
// set of measurements and the run stays short. As bench/gemm, the bench re-executes itself once without
// OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, which slow OpenBLAS down (Kiln reads neither).
// --cache FILE keeps that cache across runs (read at start, appended to). --table
// RECORDS (repeatable) fills it from a records file of `kiln tune`: with whole spaces
// measured by `kiln tune --op SPEC --tuner grid`, the tuners replay against those
// tables, nothing is measured again, and many seeds take minutes (docs/performance.md
// reports such replays). A configuration in several tables (repeated runs of one
// space) keeps its fastest time, as the measurer keeps its fastest repeat. Where the
// measurements cover an operator's whole space, the bench adds random search's exact
// expectation (its mean over every seed) to the text, the plot (dashed) and --json
// ("random_expected": curve, trials to 95%, and those trials over xgb's and
// xgb_transfer's).
// --trace prints each xgb trial of seed 0 (configuration, GFLOP/s), to see where
// trials go (and of xgb_transfer's).
#include <cblas.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backend-cpu/graph_backend.h"
#include "tuner/features.h"
#include "tuner/tuner.h"

namespace {

using namespace kiln::tuner;

void reexec_without_openblas_overrides(char** argv) {
  if (!std::getenv("OPENBLAS_CORETYPE") && !std::getenv("OPENBLAS_L2_SIZE")) return;
  if (std::getenv("KILN_BENCH_REEXEC")) return;
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("OPENBLAS_L2_SIZE");
  setenv("KILN_BENCH_REEXEC", "1", 1);
  execv("/proc/self/exe", argv);
}

// Measures each configuration once; repeats are answered from the cache.
class CachedMeasurer : public Measurer {
 public:
  explicit CachedMeasurer(Measurer& inner, const std::string& file = "") : inner_(inner), file_(file) {
    if (file_.empty()) return;
    std::ifstream in(file_);
    std::string line;
    while (std::getline(in, line)) {
      auto sp = line.find(' ');
      if (sp == std::string::npos) continue;
      try {
        cache_[line.substr(0, sp)] = MeasureResult::from_json(line.substr(sp + 1));
      } catch (const std::exception&) {
      }
    }
  }
  std::vector<MeasureResult> measure(const std::vector<MeasureInput>& in) override {
    std::vector<MeasureInput> todo;
    for (const auto& i : in)
      if (!cache_.count(key(i))) todo.push_back(i);
    std::vector<MeasureResult> got = todo.empty() ? std::vector<MeasureResult>{} : inner_.measure(todo);
    std::ofstream save;
    if (!file_.empty()) save.open(file_, std::ios::app);
    for (size_t k = 0; k < todo.size(); ++k) {
      cache_[key(todo[k])] = got[k];
      if (save) save << key(todo[k]) << ' ' << got[k].to_json() << '\n';
    }
    std::vector<MeasureResult> out;
    for (const auto& i : in) out.push_back(cache_.at(key(i)));
    return out;
  }
  // Measurements of a records file (`kiln tune --records`), e.g. a whole space measured
  // with --tuner grid, answer the picks of its workloads; returns how many it held.
  size_t add_records(const std::string& file) {
    std::vector<Record> rs = load_records(file);
    for (const Record& r : rs) {
      MeasureResult m;
      m.cost = r.cost;
      m.unit = r.unit;
      m.error = r.error;
      // A configuration measured more than once (tables of repeated runs) keeps its
      // fastest time, as the measurer keeps its fastest repeat.
      auto [it, fresh] = cache_.try_emplace(key(r.workload, r.template_name, r.config), m);
      if (!fresh && m.ok() && (!it->second.ok() || m.cost < it->second.cost)) it->second = m;
    }
    return rs.size();
  }
  int parallelism() const override { return inner_.parallelism(); }
  std::string describe() const override { return "cached " + inner_.describe(); }
  size_t unique() const { return cache_.size(); }
  // GFLOP/s of every configuration of `w`'s space (0 for a failed one), or nothing
  // when some configuration was never measured.
  std::vector<double> whole_space(const Template& t, const Workload& w) const {
    int64_t size = t.space(w).size();
    std::vector<double> g;
    for (int64_t i = 0; i < size; ++i) {
      auto it = cache_.find(key(w.key(), t.name, i));
      if (it == cache_.end()) return {};
      g.push_back(it->second.ok() ? w.flops() / it->second.cost / 1e9 : 0.0);
    }
    return g;
  }
  double best_cost(const std::string& workload) const {
    double best = 0;
    for (const auto& [k, r] : cache_)
      if (k.rfind(workload + "#", 0) == 0 && r.ok() && (best == 0 || r.cost < best)) best = r.cost;
    return best;
  }

 private:
  static std::string key(const std::string& workload, const std::string& template_name, int64_t config) {
    return fmt::format("{}#{}#{}", workload, template_name, config);
  }
  static std::string key(const MeasureInput& i) { return key(i.workload.key(), i.template_name, i.config); }
  Measurer& inner_;
  std::string file_;
  std::map<std::string, MeasureResult> cache_;
};

// A folder under the system's temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-tuner-bench-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary folder from " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Seed s's transfer sources are tuned (or sampled) with seed kTransferSeed + s, so
// that the seeds' mean also averages over what the sources' records happened to be.
constexpr uint64_t kTransferSeed = 1;

// Measures `n` distinct random configurations of `w` (all of them when the space is
// smaller) and returns them as the records a tuner would have written.
std::vector<Record> sample_records(const Template& t, const Workload& w, int n, uint64_t seed, Measurer& m) {
  ConfigSpace space = t.space(w);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, space.size() - 1);
  std::set<int64_t> chosen;
  std::vector<MeasureInput> inputs;
  while (static_cast<int64_t>(inputs.size()) < std::min<int64_t>(n, space.size())) {
    int64_t i = pick(rng);
    if (chosen.insert(i).second) inputs.push_back({t.name, w, i});
  }
  std::vector<MeasureResult> got = m.measure(inputs);
  std::vector<Record> recs;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Record r;
    r.template_name = t.name;
    r.workload = w.key();
    r.target = t.target;
    r.config = inputs[k].config;
    r.knobs = space.get(r.config).describe();
    r.cost = got[k].ok() ? got[k].cost : 0;
    r.unit = got[k].unit;
    r.error = got[k].error;
    r.flops = w.flops();
    r.trial = static_cast<int>(k) + 1;
    r.tuner = "random";
    r.timestamp = static_cast<int64_t>(std::time(nullptr));
    recs.push_back(std::move(r));
  }
  return recs;
}

// The length of the cost model's feature vector for `w`'s configurations, from the
// first of `configs` that lowers (0 if none does). The tuner trains on transfer
// records only while they have the tuned workload's length.
size_t feature_length(const Template& t, const Workload& w, const std::vector<int64_t>& configs) {
  ConfigSpace space = t.space(w);
  for (int64_t i : configs) {
    try {
      Config c = space.get(i);
      return candidate_features(lower_candidate(t, w, c), space, c).size();
    } catch (const std::exception&) {
    }
  }
  return 0;
}

// The best-so-far that random search reaches on average over all seeds, trial by trial:
// E[best of the first k of a uniformly random order of `gflops`]. The best k draws
// without replacement is the i-th best value with probability C(n-i, k-1) / C(n, k).
std::vector<double> expected_random_curve(std::vector<double> gflops, int trials) {
  std::sort(gflops.begin(), gflops.end(), std::greater<>());
  const double n = static_cast<double>(gflops.size());
  auto log_choose = [](double a, double b) { return std::lgamma(a + 1) - std::lgamma(b + 1) - std::lgamma(a - b + 1); };
  std::vector<double> curve;
  for (int k = 1; k <= trials && k <= static_cast<int>(gflops.size()); ++k) {
    double e = 0;
    for (size_t i = 0; i + k <= gflops.size(); ++i)  // i: 0-based rank, n-i-1 worse ones left
      e += gflops[i] * std::exp(log_choose(n - static_cast<double>(i) - 1, k - 1) - log_choose(n, k));
    curve.push_back(e);
  }
  while (static_cast<int>(curve.size()) < trials) curve.push_back(curve.back());
  return curve;
}

// The first trial (from 1) at which a best-so-far curve reaches `level`; -1: never.
int first_trial_at(const std::vector<double>& curve, double level) {
  auto it = std::find_if(curve.begin(), curve.end(), [&](double v) { return v >= level; });
  return it == curve.end() ? -1 : static_cast<int>(it - curve.begin()) + 1;
}

struct OpResult {
  std::string name, workload;
  double best_gflops = 0;  // the best configuration any run found
  std::map<std::string, std::vector<double>> curve;  // mean best-so-far GFLOP/s per trial
  std::map<std::string, int> trials_to_95;           // first trial whose mean reaches 95% (-1: never)
  // When the measurements (--table) cover the whole space: random search's exact
  // expectation, the limit of its mean over ever more seeds.
  std::vector<double> random_expected;
  int random_expected_to_95 = -1;
  size_t measured = 0;
  Record best;
  // Unless --no-transfer: the source workloads, their samples, and what each seed's
  // xgb_transfer run trained on.
  struct Source {
    std::string workload;
    int samples = 0, errors = 0;
    double best_gflops = 0;  // the source's best in its sample
  };
  std::vector<Source> sources;
  size_t feature_length = 0;
  std::vector<int> transfer_records;  // per seed
};

double openblas_gflops(int n) {
  std::vector<float> a(static_cast<size_t>(n) * n), b(a.size()), c(a.size());
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  auto run = [&] { cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a.data(), n, b.data(), n, 0, c.data(), n); };
  run();
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    int k = 0;
    double el = 0;
    while (el < 0.2) {
      run();
      ++k;
      el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    best = std::min(best, el / k);
  }
  return 2.0 * n * n * n / best / 1e9;
}

std::string svg(const std::vector<OpResult>& ops, double blas_gflops) {
  const int w = 370, h = 260, ml = 60, mb = 40, mt = 30;
  std::string s = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)",
                              w * static_cast<int>(ops.size()), h + 20);
  s += "\n";
  std::map<std::string, std::string> color = {{"xgb", "#1f77b4"}, {"random", "#ff7f0e"}, {"xgb_transfer", "#9467bd"}};
  for (size_t p = 0; p < ops.size(); ++p) {
    const OpResult& o = ops[p];
    int x0 = static_cast<int>(p) * w + ml, pw = w - ml - 15, ph = h - mt - mb;
    double ymax = o.best_gflops;
    if (o.name == "gemm1024") ymax = std::max(ymax, blas_gflops);
    ymax *= 1.1;
    size_t n = o.curve.begin()->second.size();
    auto X = [&](size_t i) { return x0 + static_cast<double>(i) * pw / std::max<size_t>(n - 1, 1); };
    auto Y = [&](double v) { return mt + ph - v / ymax * ph; };
    s += fmt::format(R"(<text x="{}" y="18" font-size="13">{}</text>)", x0, o.name) + "\n";
    s += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>)", x0, mt, pw, ph) + "\n";
    for (int t = 0; t <= 4; ++t) {
      double v = ymax * t / 4;
      s += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{:.0f}</text>)", x0 - 4, Y(v) + 4, v) + "\n";
    }
    s += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">trials (1..{})</text>)", x0 + pw / 2, h - 8, n) + "\n";
    s += fmt::format(R"x(<text x="{}" y="{}" transform="rotate(-90 {} {})" text-anchor="middle">GFLOP/s</text>)x", x0 - 44,
                     mt + ph / 2, x0 - 44, mt + ph / 2) + "\n";
    for (const auto& [tuner, c] : o.curve) {
      std::string pts;
      for (size_t i = 0; i < c.size(); ++i) pts += fmt::format("{:.1f},{:.1f} ", X(i), Y(c[i]));
      s += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>)", color[tuner], pts) + "\n";
    }
    if (!o.random_expected.empty()) {
      std::string pts;
      for (size_t i = 0; i < o.random_expected.size(); ++i) pts += fmt::format("{:.1f},{:.1f} ", X(i), Y(o.random_expected[i]));
      s += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="1" stroke-dasharray="4,3" points="{}"/>)", color["random"], pts) + "\n";
    }
    s += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#2ca02c" stroke-dasharray="2,3"/>)", x0, x0 + pw,
                     Y(0.95 * o.best_gflops), Y(0.95 * o.best_gflops)) + "\n";
    if (o.name == "gemm1024")
      s += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#d62728" stroke-dasharray="6,3"/><text x="{}" y="{:.1f}" fill="#d62728">OpenBLAS</text>)",
                       x0, x0 + pw, Y(blas_gflops), Y(blas_gflops), x0 + 4, Y(blas_gflops) - 3) + "\n";
    // The legend in the plot's lower right corner, one line per curve and the 95% line.
    int ly = mt + ph - 12 - 14 * static_cast<int>(o.curve.size() + (o.random_expected.empty() ? 0 : 1));
    int lx = x0 + pw - (o.curve.count("xgb_transfer") ? 170 : 120);
    for (const auto& [tuner, c] : o.curve) {
      s += fmt::format(R"(<text x="{}" y="{}" fill="{}">{} (mean of seeds)</text>)", lx, ly, color[tuner], tuner) + "\n";
      ly += 14;
    }
    if (!o.random_expected.empty()) {
      s += fmt::format(R"(<text x="{}" y="{}" fill="{}">random, expected (table)</text>)", lx, ly, color["random"]) + "\n";
      ly += 14;
    }
    s += fmt::format(R"(<text x="{}" y="{}" fill="#2ca02c">95% of best</text>)", lx, ly) + "\n";
  }
  return s + "</svg>\n";
}

// The operators, each with its transfer sources: other workloads of the same template
// (tuner.cc only uses records of the tuned template), as the records file holds them
// when `kiln tune` tunes a model's operators in turn. A convolution's sources are the
// other stride-1 3x3 convolutions of ResNet-18; GEMM 1024's are the three GEMMs with
// one of its dimensions halved.
struct OpSpec {
  std::string name, workload;
  std::vector<std::string> transfer_sources;
};

// Tunes (or samples) each transfer source for `samples` trials with `seed`, its records
// all in `file`.
// False, with a message, when the tuner could not learn from one of them: another
// template, no successful measurement, or feature vectors of another length than
// `w`'s (the tuner would then drop the transfer rows after its first batch, and score
// nothing with a model trained on them before it).
bool prepare_transfer(const Template& t, const Workload& w, const std::vector<std::string>& source_specs, int samples,
                      bool tuned, uint64_t seed, std::map<std::string, std::shared_ptr<FeatureMemo>>& memos, Measurer& m,
                      const std::string& file, OpResult* o) {
  std::vector<int64_t> first;  // probes of the tuned workload's space
  for (int64_t i = 0; i < std::min<int64_t>(16, t.space(w).size()); ++i) first.push_back(i);
  const size_t len = feature_length(t, w, first);
  RecordWriter out(file);
  for (const std::string& spec : source_specs) {
    Workload src = parse_workload(spec);  // main() rejected specs that do not parse
    if (src == w || templates_for(src.op, "cpu").empty() || templates_for(src.op, "cpu")[0]->name != t.name) {
      fmt::print(stderr, "{}: transfer source '{}' is not another workload of template {}\n", o->name, src.key(), t.name);
      return false;
    }
    std::vector<Record> recs;
    if (tuned) {
      // As `kiln tune` leaves a model's earlier operators in the records file: each
      // source tuned by xgb, learning from the sources before it.
      TuneOptions to;
      to.tuner = "xgb";
      to.trials = samples;
      to.seed = seed;
      to.records = file;
      auto& memo = memos[src.key()];
      if (!memo) memo = std::make_shared<FeatureMemo>();
      to.feature_memo = memo;
      recs = tune(t, src, m, to).records;
    } else {
      recs = sample_records(t, src, samples, seed, m);
    }
    std::vector<int64_t> configs;
    auto known = std::find_if(o->sources.begin(), o->sources.end(), [&](const auto& so) { return so.workload == src.key(); });
    OpResult::Source& so = known != o->sources.end() ? *known : o->sources.emplace_back();
    so.workload = src.key();
    so.samples += static_cast<int>(recs.size());
    double best = 0;
    for (const Record& r : recs) {
      if (!tuned) out.append(r);
      configs.push_back(r.config);
      if (!r.ok()) ++so.errors;
      else if (best == 0 || r.cost < best) best = r.cost;
    }
    so.best_gflops = std::max(so.best_gflops, best > 0 ? src.flops() / best / 1e9 : 0);
    if (best == 0) {
      fmt::print(stderr, "{}: none of the {} configurations of transfer source {} measured without error\n", o->name,
                 recs.size(), src.key());
      return false;
    }
    size_t src_len = feature_length(t, src, configs);
    if (src_len == 0 || src_len != len) {
      fmt::print(stderr, "{}: features of transfer source {} have length {}, those of {} {}; the tuner would not use them\n",
                 o->name, src.key(), src_len, w.key(), len);
      return false;
    }
  }
  o->feature_length = len;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  reexec_without_openblas_overrides(argv);
  int trials = 64, seeds = 5, transfer_samples = 64, init_batch = 0, small_batch = 0;
  bool json = false, trace = false, transfer = true, samples_given = false, transfer_tuned = true,
       from_given = false;
  std::string cache_file;
  std::vector<std::string> transfer_sources, tables;
  std::string svg_path = "tuner_curves.svg", only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--trials" && i + 1 < argc) trials = std::atoi(argv[++i]);
    else if (a == "--seeds" && i + 1 < argc) seeds = std::atoi(argv[++i]);
    else if (a == "--svg" && i + 1 < argc) svg_path = argv[++i];
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if (a == "--json") json = true;
    else if (a == "--trace") trace = true;
    else if (a == "--cache" && i + 1 < argc) cache_file = argv[++i];
    else if (a == "--table" && i + 1 < argc) tables.push_back(argv[++i]);
    else if (a == "--transfer") transfer = true;
    else if (a == "--no-transfer") transfer = false;
    else if (a == "--transfer-source" && i + 1 < argc) transfer_sources.push_back(argv[++i]);
    else if (a == "--transfer-from" && i + 1 < argc && (argv[i + 1] == std::string("tuned") || argv[i + 1] == std::string("sampled")))
    {
      transfer_tuned = argv[++i] == std::string("tuned");
      from_given = true;
    }
    else if (a == "--init-batch" && i + 1 < argc) init_batch = std::atoi(argv[++i]);
    else if (a == "--small-batch" && i + 1 < argc) small_batch = std::atoi(argv[++i]);
    else if (a == "--transfer-samples" && i + 1 < argc) {
      transfer_samples = std::atoi(argv[++i]);
      samples_given = true;
    } else {
      fmt::print(stderr,
                 "usage: {} [--trials N] [--seeds N] [--svg FILE] [--only NAME] [--json] [--cache FILE] [--table RECORDS]... [--trace] "
                 "[--no-transfer | [--transfer-samples N] [--transfer-from tuned|sampled] [--transfer-source SPEC]...] "
                 "[--init-batch N] [--small-batch N]\n",
                 argv[0]);
      return 2;
    }
  }
  if (trials < 1 || seeds < 1) {
    fmt::print(stderr, "--trials and --seeds must be positive\n");
    return 2;
  }
  if ((samples_given || from_given) && !transfer) {
    fmt::print(stderr, "--transfer-samples and --transfer-from do not go with --no-transfer\n");
    return 2;
  }
  if (transfer_samples < 2) {
    fmt::print(stderr, "--transfer-samples must be at least 2 (the model needs two records to train)\n");
    return 2;
  }
  kiln::cpu::register_graph_backend();
  MeasureOptions mo;
  LocalPool pool(2, mo);  // two builds at once; a timing overlaps nothing (measure.h)
  CachedMeasurer cached(pool, cache_file);
  for (const std::string& file : tables) {
    size_t n = 0;
    try {
      if (!std::ifstream(file)) throw std::runtime_error("cannot be read");
      n = cached.add_records(file);
      if (n == 0) throw std::runtime_error("holds no records");
    } catch (const std::exception& e) {
      fmt::print(stderr, "--table {}: {}\n", file, e.what());
      return 2;
    }
    fmt::print(stderr, "{}: {} measurements\n", file, n);
  }
  const std::string conv2 = "conv2d:C=64,H=56,W=56,O=64,KH=3,pad=1", conv3 = "conv2d:C=128,H=28,W=28,O=128,KH=3,pad=1",
                    conv4 = "conv2d:C=256,H=14,W=14,O=256,KH=3,pad=1", conv5 = "conv2d:C=512,H=7,W=7,O=512,KH=3,pad=1";
  std::vector<OpSpec> specs = {
      {"gemm1024",
       "matmul:M=1024,N=1024,K=1024",
       {"matmul:M=512,N=1024,K=1024", "matmul:M=1024,N=512,K=1024", "matmul:M=1024,N=1024,K=512"}},
      {"resnet18_conv2_3x3_64", conv2, {conv3, conv4, conv5}},
      {"resnet18_conv4_3x3_256", conv4, {conv2, conv3, conv5}},
  };
  if (!only.empty()) {
    std::erase_if(specs, [&](const OpSpec& sp) { return sp.name != only; });
    if (specs.empty()) {
      fmt::print(stderr, "--only: no operator named '{}' (gemm1024, resnet18_conv2_3x3_64, resnet18_conv4_3x3_256)\n", only);
      return 2;
    }
  }
  if (!transfer_sources.empty()) {
    if (!transfer || only.empty()) {
      fmt::print(stderr, "--transfer-source needs --only and no --no-transfer (it replaces that operator's sources)\n");
      return 2;
    }
    specs[0].transfer_sources = transfer_sources;
  }
  for (const OpSpec& sp : specs)
    for (const std::string& src : sp.transfer_sources) {
      try {
        parse_workload(src);
      } catch (const std::exception& e) {
        fmt::print(stderr, "--transfer-source '{}': {}\n", src, e.what());
        return 2;
      }
    }
  std::vector<std::string> tuners = {"xgb", "random"};
  if (transfer) tuners = {"xgb", "xgb_transfer", "random"};
  std::unique_ptr<TempDir> tmp = transfer ? std::make_unique<TempDir>() : nullptr;
  std::vector<OpResult> results;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  for (const OpSpec& spec : specs) {
    const std::string& name = spec.name;
    Workload w = parse_workload(spec.workload);
    const Template& t = *templates_for(w.op, "cpu").at(0);
    OpResult o;
    o.name = name;
    o.workload = w.key();
    std::map<std::string, std::shared_ptr<FeatureMemo>> source_memos;
    std::map<std::string, std::vector<std::vector<double>>> costs;
    auto memo = std::make_shared<FeatureMemo>();  // features are lowered once per operator
    // Seed by seed, the tuners in turn: a change of the machine's load over the run
    // then falls on all alike.
    for (int seed = 0; seed < seeds; ++seed) {
      for (const std::string& tuner : tuners) {
        TuneOptions opt;
        opt.tuner = tuner == "xgb_transfer" ? "xgb" : tuner;
        opt.trials = trials;
        opt.seed = static_cast<uint64_t>(seed);
        opt.feature_memo = memo;
        if (init_batch > 0) opt.init_batch = init_batch;
        if (small_batch > 0) opt.small_batch = small_batch;
        // The sources' records of this seed, in a file of their own (tune() appends
        // its records to it).
        std::filesystem::path seed_file;
        if (tuner == "xgb_transfer") {
          seed_file = tmp->path() / fmt::format("{}.seed{}.jsonl", name, seed);
          if (!prepare_transfer(t, w, spec.transfer_sources, transfer_samples, transfer_tuned, kTransferSeed + seed,
                                source_memos, cached, seed_file.string(), &o))
            return 1;
          fmt::print(stderr, "{} seed {}: transfer sources {} ({} unique configurations measured so far, {:.0f} s)\n", name, seed,
                     transfer_tuned ? "tuned" : "sampled", cached.unique(), elapsed());
          opt.records = seed_file.string();
        }
        TuneResult r = tune(t, w, cached, opt);
        if (!seed_file.empty()) {
          std::filesystem::remove(seed_file);
          o.transfer_records.push_back(r.transfer_records);
          if (r.transfer_records == 0) {
            fmt::print(stderr, "{} xgb_transfer seed {}: the tuner trained on no transfer records\n", name, seed);
            return 1;
          }
        }
        costs[tuner].push_back(r.best_curve);
        if (trace && seed == 0 && tuner != "random") {
          if (tuner != "xgb") fmt::print(stderr, "  {} trials:\n", tuner);
          for (const Record& rec : r.records)
            fmt::print(stderr, "  trial {:3} config {:5} {:7.1f} GFLOP/s {}\n", rec.trial, rec.config,
                       rec.ok() ? w.flops() / rec.cost / 1e9 : 0.0, rec.ok() ? "" : rec.error);
        }
        if (r.best && (o.best.config < 0 || r.best->cost < o.best.cost)) o.best = *r.best;
        std::string learned = seed_file.empty() ? "" : fmt::format(", trained on {} transfer records", r.transfer_records);
        fmt::print(stderr, "{} {} seed {}: best {:.1f} GFLOP/s{} ({} unique configurations measured so far, {:.0f} s)\n", name,
                   tuner, seed, r.best ? w.flops() / r.best->cost / 1e9 : 0.0, learned, cached.unique(), elapsed());
      }
    }
    o.best_gflops = w.flops() / cached.best_cost(w.key()) / 1e9;
    for (auto& [tuner, runs] : costs) {
      std::vector<double> mean(static_cast<size_t>(trials), 0.0);
      for (const auto& c : runs)
        for (size_t i = 0; i < mean.size(); ++i) {
          double cost = i < c.size() ? c[i] : c.back();
          mean[i] += (cost > 0 ? w.flops() / cost / 1e9 : 0.0) / static_cast<double>(runs.size());
        }
      o.curve[tuner] = mean;
      o.trials_to_95[tuner] = first_trial_at(mean, 0.95 * o.best_gflops);
    }
    std::vector<double> space_gflops = cached.whole_space(t, w);
    if (!space_gflops.empty()) {
      o.random_expected = expected_random_curve(space_gflops, trials);
      o.random_expected_to_95 = first_trial_at(o.random_expected, 0.95 * o.best_gflops);
    }
    results.push_back(o);
  }
  // The tuned GEMM against OpenBLAS: alternate, keep each side's best.
  MeasureOptions fine = mo;
  fine.repeat = 5;
  fine.min_repeat_ms = 200;
  double kiln_best = 0, blas_best = 0;
  const OpResult& gemm = results[0];
  for (int round = 0; round < 3 && gemm.name == "gemm1024"; ++round) {
    MeasureResult r = measure_isolated({gemm.best.template_name, parse_workload(gemm.workload), gemm.best.config}, fine);
    if (r.ok()) kiln_best = std::max(kiln_best, parse_workload(gemm.workload).flops() / r.cost / 1e9);
    blas_best = std::max(blas_best, openblas_gflops(1024));
  }
  std::ofstream(svg_path) << svg(results, blas_best);

  // Random search's trials to 95% (`random`: of its seeds' mean; else `r`) over a
  // tuner's (null when either never got there).
  auto random_over = [](const OpResult& o, const std::string& tuner, int r = 0) {
    int x = o.trials_to_95.at(tuner);
    if (r == 0) r = o.trials_to_95.at("random");
    return x > 0 && r > 0 ? nlohmann::json(static_cast<double>(r) / x) : nlohmann::json(nullptr);
  };
  nlohmann::json j;
  j["trials"] = trials;
  j["seeds"] = seeds;
  for (const auto& o : results) {
    nlohmann::json e;
    e["name"] = o.name;
    e["workload"] = o.workload;
    e["best_gflops"] = o.best_gflops;
    e["best_config"] = o.best.config;
    e["best_knobs"] = o.best.knobs;
    e["trials_to_95pct"] = o.trials_to_95;
    e["random_over_xgb_trials"] = random_over(o, "xgb");
    e["final_mean_gflops"] = nlohmann::json::object();
    for (const auto& [tuner, c] : o.curve) e["final_mean_gflops"][tuner] = c.back();
    e["curves_gflops"] = o.curve;
    if (!o.random_expected.empty()) {
      // Random search's exact expectation over the whole table, and its trials to 95%
      // over each tuner's.
      int r = o.random_expected_to_95;
      e["random_expected"] = {{"curve_gflops", o.random_expected},
                              {"trials_to_95pct", r > 0 ? nlohmann::json(r) : nlohmann::json(nullptr)},
                              {"over_xgb_trials", random_over(o, "xgb", r)}};
      if (transfer) e["random_expected"]["over_xgb_transfer_trials"] = random_over(o, "xgb_transfer", r);
    }
    if (transfer) {
      e["random_over_xgb_transfer_trials"] = random_over(o, "xgb_transfer");
      nlohmann::json sources = nlohmann::json::array();
      for (const OpResult::Source& so : o.sources)
        sources.push_back(
            {{"workload", so.workload}, {"samples", so.samples}, {"errors", so.errors}, {"best_gflops", so.best_gflops}});
      e["transfer"] = {{"sources", sources}, {"seed", kTransferSeed}, {"feature_length", o.feature_length},
                       {"transfer_records_per_seed", o.transfer_records}};
    }
    j["ops"].push_back(e);
  }
  bool have_gemm = gemm.name == "gemm1024";
  if (have_gemm)
    j["gemm1024"] = {{"kiln_tuned_gflops", kiln_best}, {"openblas_gflops", blas_best}, {"ratio", kiln_best / blas_best},
                   {"openblas_core", openblas_get_corename()}};
  j["svg"] = svg_path;
  j["unique_measurements"] = cached.unique();
  if (json) {
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{:<24} {:>10} {:>14} {:>14} {:>8} {:>12} {:>12}", "operator", "best GF/s", "xgb to 95%", "random to 95%", "ratio",
             "xgb final", "random final");
  if (transfer) fmt::print(" {:>16} {:>8} {:>14}", "xgb_tr to 95%", "ratio_tr", "xgb_tr final");
  fmt::print("\n");
  for (const auto& o : results) {
    auto t = [](int v) { return v > 0 ? std::to_string(v) : std::string("never"); };
    auto ratio = [&](const std::string& tuner) {
      nlohmann::json q = random_over(o, tuner);
      return q.is_null() ? std::string("-") : fmt::format("{:.2f}", q.get<double>());
    };
    fmt::print("{:<24} {:>10.1f} {:>14} {:>14} {:>8} {:>12.1f} {:>12.1f}", o.name, o.best_gflops, t(o.trials_to_95.at("xgb")),
               t(o.trials_to_95.at("random")), ratio("xgb"), o.curve.at("xgb").back(), o.curve.at("random").back());
    if (transfer)
      fmt::print(" {:>16} {:>8} {:>14.1f}", t(o.trials_to_95.at("xgb_transfer")), ratio("xgb_transfer"),
                 o.curve.at("xgb_transfer").back());
    fmt::print("\n");
  }
  for (const auto& o : results)
    if (!o.random_expected.empty())
      fmt::print("{}: the measurements cover its whole space; random search reaches 95% in expectation (every seed) at trial {}\n",
                 o.name, o.random_expected_to_95 > 0 ? std::to_string(o.random_expected_to_95) : std::string("never"));
  if (transfer)
    for (const auto& o : results)
      for (const OpResult::Source& so : o.sources)
        fmt::print("{}: xgb_transfer learned from {} {} records of {} (all seeds)\n", o.name, so.samples,
                   transfer_tuned ? "xgb-tuned" : "random", so.workload);
  if (have_gemm)
    fmt::print("GEMM 1024: tuned kiln {:.1f} GFLOP/s, OpenBLAS ({}) {:.1f} GFLOP/s, ratio {:.2f}\n", kiln_best, openblas_get_corename(),
             blas_best, kiln_best / blas_best);
  fmt::print("curves: {}\n", svg_path);
  return 0;
}
