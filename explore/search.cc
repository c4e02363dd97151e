#include "explore/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <set>

#include "boards/flow/synth.h"
#include "explore/resource_model.h"
#include "hw/spec/error.h"

namespace kiln::explore {

namespace {

using Clock = std::chrono::steady_clock;

std::string eta_text(double s) {
  if (s < 90) return fmt::format("{:.0f} s", s);
  if (s < 5400) return fmt::format("{:.0f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

// Runs tier evaluations through the measurer, taking those the records file already
// has from it, and appends every new one the moment it finishes.
class Evaluator {
 public:
  Evaluator(const ExploreContext& ctx, tuner::Measurer& m, const ExploreOptions& opt)
      : ctx_(ctx), measurer_(m), opt_(opt), writer_(opt.records) {
    for (const char* tmpl : {kSynthTemplate, kRtlTemplate}) {
      workload_[tmpl] = tier_workload(ctx, tmpl);
      space_[tmpl] = ctx.space.knobs();
    }
    for (tuner::Record& r : tuner::load_records(opt.records)) {
      auto it = workload_.find(r.template_name);
      if (it != workload_.end() && r.workload == it->second.key()) known_[{r.template_name, r.config}] = r;
    }
  }

  // The records of `indices` at tier `tmpl`, in order.
  std::vector<tuner::Record> run(const std::string& tmpl, const std::vector<int64_t>& indices, int* fresh) {
    std::vector<tuner::MeasureInput> inputs;
    for (int64_t i : indices)
      if (!known_.count({tmpl, i})) inputs.push_back({tmpl, workload_.at(tmpl), i});
    if (!inputs.empty()) measure(tmpl, inputs);
    *fresh += static_cast<int>(inputs.size());
    std::vector<tuner::Record> out;
    for (int64_t i : indices) out.push_back(known_.at({tmpl, i}));
    return out;
  }

 private:
  void measure(const std::string& tmpl, const std::vector<tuner::MeasureInput>& inputs) {
    const tuner::Template& t = tuner::find_template(tmpl);
    const auto t0 = Clock::now();
    size_t done = 0;
    measurer_.set_on_result([&](size_t k, const tuner::MeasureResult& mr) {
      tuner::Record r = tuner::record_of(t, workload_.at(tmpl), space_.at(tmpl), tmpl, inputs[k].config, mr,
                                         ++trials_, opt_.search);
      writer_.append(r);
      known_[{tmpl, inputs[k].config}] = r;
      ++done;
      if (opt_.on_progress) {
        const double el = std::chrono::duration<double>(Clock::now() - t0).count();
        const double per = el / static_cast<double>(done) / std::max(1, measurer_.parallelism());
        opt_.on_progress(fmt::format("{} {} {}: {} ({:.0f} s){}", tmpl, ctx_.space.at(inputs[k].config).config->name(),
                                     mr.ok() ? "done" : "failed", mr.ok() ? fmt::format("{:g} {}", mr.cost, mr.unit) : mr.error,
                                     mr.elapsed_s,
                                     done < inputs.size()
                                         ? fmt::format("; batch ETA {}", eta_text(per * static_cast<double>(inputs.size() - done)))
                                         : ""));
      }
    });
    if (opt_.on_progress)
      opt_.on_progress(fmt::format("{}: {} configuration{} on {}", tmpl, inputs.size(), inputs.size() == 1 ? "" : "s",
                                   measurer_.describe()));
    measurer_.measure(inputs);
    measurer_.set_on_result(nullptr);
  }

  const ExploreContext& ctx_;
  tuner::Measurer& measurer_;
  const ExploreOptions& opt_;
  tuner::RecordWriter writer_;
  std::map<std::string, tuner::Workload> workload_;
  std::map<std::string, tuner::ConfigSpace> space_;
  std::map<std::pair<std::string, int64_t>, tuner::Record> known_;
  int trials_ = 0;
};

boards::SynthReport report_of(const tuner::Record& r) {
  boards::SynthReport s;
  for (const auto& [kind, v] : r.detail.at("resources").items())
    s.resources.push_back({kind, v.at("used").get<double>(), v.at("available").get<int64_t>()});
  return s;
}

// The budget's kinds, or the logic and block RAM the part has. SPRAM is left out by
// default: on the iCEBreaker it is the board top's device memory, the same for every
// configuration (a budget may still name it).
std::vector<std::string> objective_kinds(const ExploreContext& ctx, const ExploreOptions& opt) {
  std::vector<std::string> kinds;
  for (const auto& [k, share] : opt.budget) kinds.push_back(k);
  if (kinds.empty())
    for (const char* k : {"LUT", "FF", "DSP", "BRAM"})
      if (ctx.board.available.count(k) && ctx.board.available.at(k) > 0) kinds.push_back(k);
  return kinds;
}

bool predicted_fits(const std::map<std::string, double>& pred, const ExploreContext& ctx, const ExploreOptions& opt) {
  for (const auto& [kind, avail] : ctx.board.available) {
    if (avail <= 0) continue;
    auto b = opt.budget.find(kind);
    const double share = b == opt.budget.end() ? 1.0 : b->second;
    auto p = pred.find(kind);
    if (p != pred.end() && p->second > share * static_cast<double>(avail)) return false;
  }
  return true;
}

double predicted_utilization(const std::map<std::string, double>& pred, const ExploreContext& ctx,
                             const std::vector<std::string>& kinds) {
  double u = 0;
  for (const std::string& k : kinds) {
    auto a = ctx.board.available.find(k);
    auto p = pred.find(k);
    if (a != ctx.board.available.end() && a->second > 0 && p != pred.end()) u = std::max(u, p->second / static_cast<double>(a->second));
  }
  return u;
}

double median(std::vector<double> v) {
  if (v.empty()) return 1.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

nlohmann::json error_summary(const std::vector<double>& rel) {
  if (rel.empty()) return {{"points", 0}};
  double sum = 0, worst = 0;
  for (double e : rel) {
    sum += std::abs(e);
    worst = std::max(worst, std::abs(e));
  }
  return {{"points", rel.size()}, {"mean_abs", sum / static_cast<double>(rel.size())}, {"max_abs", worst}};
}

}  // namespace

double Evaluated::used(const std::string& kind) const {
  if (!synthesized() || !synth->detail.at("resources").contains(kind)) return 0;
  return synth->detail.at("resources").at(kind).at("used").get<double>();
}

double Evaluated::available(const std::string& kind) const {
  if (!synthesized() || !synth->detail.at("resources").contains(kind)) return 0;
  return synth->detail.at("resources").at(kind).at("available").get<double>();
}

std::optional<double> Evaluated::fmax_mhz() const {
  if (!synthesized() || synth->detail.at("fmax_mhz").is_null()) return std::nullopt;
  return synth->detail.at("fmax_mhz").get<double>();
}

bool fits_budget(const Evaluated& p, const ExploreContext& ctx, const ExploreOptions& opt, std::string* why) {
  auto fail = [&](std::string w) {
    if (why) *why = std::move(w);
    return false;
  };
  if (!p.synthesized()) return fail(p.synth ? p.synth->error : "not synthesized");
  for (const std::string& kind : boards::kResourceKinds) {
    const double avail = p.available(kind);
    if (avail <= 0) continue;
    auto b = opt.budget.find(kind);
    const double share = b == opt.budget.end() ? 1.0 : b->second;
    if (p.used(kind) > share * avail)
      return fail(fmt::format("{} {:g} of {:g} ({:.1f}% > {:.0f}%)", kind, p.used(kind), avail, 100 * p.used(kind) / avail,
                              100 * share));
  }
  if (auto f = p.fmax_mhz(); f && ctx.board.target_mhz > 0 && *f < ctx.board.target_mhz)
    return fail(fmt::format("fmax {:.2f} MHz < the board's {:g} MHz", *f, ctx.board.target_mhz));
  return true;
}

double utilization(const Evaluated& p, const std::vector<std::string>& kinds) {
  double u = 0;
  for (const std::string& k : kinds)
    if (p.available(k) > 0) u = std::max(u, p.used(k) / p.available(k));
  return u;
}

std::vector<size_t> pareto_front(const std::vector<Evaluated>& points, const std::vector<size_t>& candidates,
                                 const std::vector<std::string>& kinds) {
  std::vector<size_t> front;
  for (size_t i : candidates) {
    const double ci = points[i].cycles(), ui = utilization(points[i], kinds);
    bool dominated = false;
    for (size_t j : candidates) {
      if (j == i) continue;
      const double cj = points[j].cycles(), uj = utilization(points[j], kinds);
      if (cj <= ci && uj <= ui && (cj < ci || uj < ui || j < i)) dominated = true;
    }
    if (!dominated) front.push_back(i);
  }
  std::sort(front.begin(), front.end(), [&](size_t a, size_t b) { return points[a].cycles() < points[b].cycles(); });
  return front;
}

bool front_dominates(const ExploreResult& a, const ExploreResult& b) {
  for (size_t j : b.front) {
    const Evaluated& q = b.points[j];
    bool covered = false;
    for (size_t i : a.front) {
      const Evaluated& p = a.points[i];
      if (p.cycles() <= q.cycles() && utilization(p, a.budget_kinds) <= utilization(q, b.budget_kinds)) covered = true;
    }
    if (!covered) return false;
  }
  return !a.front.empty();
}

ExploreResult explore(const ExploreContext& ctx, tuner::Measurer& measurer, const ExploreOptions& opt) {
  if (opt.records.empty()) throw hw::Error("kiln explore needs a records file (-r FILE)");
  if (opt.search != "guided" && opt.search != "random")
    throw hw::Error(fmt::format("unknown search '{}' (guided, random)", opt.search));
  if (opt.evaluations < 1) throw hw::Error("-n: at least one RTL evaluation");
  auto progress = [&](const std::string& s) {
    if (opt.on_progress) opt.on_progress(s);
  };
  ExploreResult res;
  res.search = opt.search;
  res.budget_kinds = objective_kinds(ctx, opt);
  res.space_size = static_cast<int>(ctx.space.size());
  const int max_synth = opt.max_synth > 0 ? opt.max_synth : 4 * opt.evaluations;

  // Tier 1 over the whole space.
  const auto t0 = Clock::now();
  std::vector<Evaluated> all;
  for (int64_t i = 0; i < ctx.space.size(); ++i) {
    HwSpace::Point p = ctx.space.at(i);
    if (!p.config) continue;
    Evaluated e;
    e.index = i;
    e.config = *p.config;
    e.model = model_cycles(e.config, ctx.workload, ctx.space.timing());
    if (e.model.ok()) all.push_back(std::move(e));
  }
  res.runnable = static_cast<int>(all.size());
  progress(fmt::format("tier 1: {} of {} configurations run the workload ({} layers); cycle model in {:.1f} s", all.size(),
                       ctx.space.size(), ctx.workload.layers.size(),
                       std::chrono::duration<double>(Clock::now() - t0).count()));
  if (all.empty()) throw hw::Error("no configuration of the space can run the workload");

  ResourceModel resources = ResourceModel::for_board(ctx.board);
  Evaluator ev(ctx, measurer, opt);
  std::set<int64_t> synthesized;
  std::vector<double> cycle_ratio;  // measured / modelled, verified points
  std::vector<std::pair<std::string, double>> resource_err;
  auto index_in_all = [&](int64_t index) -> std::optional<size_t> {
    for (size_t k = 0; k < all.size(); ++k)
      if (all[k].index == index) return k;
    return std::nullopt;
  };

  // Synthesizes `batch` (indices into all), then runs on the RTL those that fit.
  auto evaluate = [&](const std::vector<size_t>& batch, bool reference) {
    std::vector<int64_t> idx;
    for (size_t k : batch) {
      all[k].predicted = resources.predict(all[k].config);
      all[k].reference = all[k].reference || reference;
      idx.push_back(all[k].index);
      synthesized.insert(all[k].index);
    }
    std::vector<tuner::Record> s = ev.run(kSynthTemplate, idx, &res.synth_new);
    std::vector<int64_t> to_rtl;
    std::vector<size_t> rtl_k;
    for (size_t b = 0; b < batch.size(); ++b) {
      Evaluated& e = all[batch[b]];
      e.synth = s[b];
      if (!e.synthesized()) continue;
      boards::SynthReport rep = report_of(*e.synth);
      for (const boards::Resource& r : rep.resources)
        if (r.used > 0 && e.predicted.count(r.kind))
          resource_err.push_back({r.kind, (e.predicted.at(r.kind) - r.used) / r.used});
      resources.add_point(e.config, rep);
      std::string why;
      if (fits_budget(e, ctx, opt, &why)) {
        to_rtl.push_back(e.index);
        rtl_k.push_back(batch[b]);
      } else {
        progress(fmt::format("{}: does not fit: {}", e.name(), why));
      }
    }
    if (to_rtl.empty()) return 0;
    std::vector<tuner::Record> r = ev.run(kRtlTemplate, to_rtl, &res.rtl_new);
    for (size_t b = 0; b < rtl_k.size(); ++b) {
      Evaluated& e = all[rtl_k[b]];
      e.rtl = r[b];
      if (e.verified()) cycle_ratio.push_back(e.rtl->cost / e.model.cycles);
    }
    return static_cast<int>(to_rtl.size());
  };

  // The reference: the board's own configuration, when the space holds it.
  std::optional<int64_t> ref = ctx.space.index_of(ctx.space.base());
  if (ref)
    if (auto k = index_in_all(*ref)) evaluate({*k}, true);

  const auto search_start = Clock::now();
  std::mt19937_64 rng(opt.seed);
  std::vector<size_t> order(all.size());
  for (size_t k = 0; k < all.size(); ++k) order[k] = k;
  std::shuffle(order.begin(), order.end(), rng);
  size_t next_random = 0;
  // At least two a batch, so that one worker still gets both ends of the predicted front.
  const size_t width = static_cast<size_t>(std::max(2, measurer.parallelism()));
  int rtl_runs = 0;
  while (rtl_runs < opt.evaluations && static_cast<int>(synthesized.size()) < max_synth + (ref ? 1 : 0)) {
    std::vector<size_t> batch;
    const size_t want = std::min(width, static_cast<size_t>(opt.evaluations - rtl_runs));
    if (opt.search == "random") {
      while (batch.size() < want && next_random < order.size()) {
        size_t k = order[next_random++];
        if (!synthesized.count(all[k].index)) batch.push_back(k);
      }
    } else {
      batch = [&] {
        // Candidates the models say fit, scored by corrected cycles and predicted share.
        const double corr = median(cycle_ratio);
        struct Cand {
          size_t k;
          double cycles, util;
        };
        std::vector<Cand> cands;
        for (size_t k = 0; k < all.size(); ++k) {
          if (synthesized.count(all[k].index)) continue;
          std::map<std::string, double> pred = resources.predict(all[k].config);
          if (!predicted_fits(pred, ctx, opt)) continue;
          cands.push_back({k, all[k].model.cycles * corr, predicted_utilization(pred, ctx, res.budget_kinds)});
        }
        // Not dominated by a verified point.
        std::vector<Cand> open;
        for (const Cand& c : cands) {
          bool beaten = false;
          for (const Evaluated& e : all)
            if (e.verified() && fits_budget(e, ctx, opt) && e.cycles() <= c.cycles && utilization(e, res.budget_kinds) <= c.util)
              beaten = true;
          if (!beaten) open.push_back(c);
        }
        if (open.empty()) open = cands;
        // The predicted front of what is open, fastest first.
        std::sort(open.begin(), open.end(), [](const Cand& a, const Cand& b) {
          return a.cycles != b.cycles ? a.cycles < b.cycles : a.util < b.util;
        });
        std::vector<Cand> front;
        for (const Cand& c : open)
          if (front.empty() || c.util < front.back().util) front.push_back(c);
        std::vector<size_t> pick;
        if (front.empty()) return pick;
        // Fastest first, then spread evenly over the front.
        const size_t n = std::min(want, front.size());
        for (size_t j = 0; j < n; ++j) pick.push_back(front[n == 1 ? 0 : j * (front.size() - 1) / (n - 1)].k);
        std::sort(pick.begin(), pick.end());
        pick.erase(std::unique(pick.begin(), pick.end()), pick.end());
        return pick;
      }();
    }
    if (batch.empty()) {
      progress("no configuration left that the models expect to fit the budget");
      break;
    }
    rtl_runs += evaluate(batch, false);
    // The ETA from the time per RTL evaluation so far (syntheses that did not fit included).
    const double spent = std::chrono::duration<double>(Clock::now() - search_start).count();
    progress(fmt::format("{} search: {} of {} RTL evaluations, {} syntheses, {:.0f} s{}", opt.search, rtl_runs,
                         opt.evaluations, synthesized.size(), spent,
                         rtl_runs > 0 && rtl_runs < opt.evaluations
                             ? fmt::format("; ETA {}", eta_text(spent / rtl_runs * (opt.evaluations - rtl_runs)))
                             : ""));
  }

  // What was evaluated, the front and the models' errors.
  for (Evaluated& e : all)
    if (e.synth) res.points.push_back(e);
  std::vector<size_t> ok;
  for (size_t i = 0; i < res.points.size(); ++i) {
    if (res.points[i].reference) res.reference = i;
    if (res.points[i].verified() && fits_budget(res.points[i], ctx, opt)) ok.push_back(i);
    if (res.points[i].synth) ++res.synth_runs;
    if (res.points[i].rtl) ++res.rtl_runs;
  }
  res.front = pareto_front(res.points, ok, res.budget_kinds);
  // The cycle model raw, and scaled by the median measured/modelled ratio the search
  // ranks with (the in-order core, which the model does not describe, takes many times
  // the decoupled core's cycles; the scale keeps its ranking usable).
  const double corr = median(cycle_ratio);
  std::vector<double> cyc_err, corrected;
  for (const Evaluated& e : res.points)
    if (e.verified()) {
      cyc_err.push_back((e.model.cycles - e.cycles()) / e.cycles());
      corrected.push_back((e.model.cycles * corr - e.cycles()) / e.cycles());
    }
  res.model_error["cycles"] = error_summary(cyc_err);
  res.model_error["cycles"]["correction"] = corr;
  res.model_error["cycles_corrected"] = error_summary(corrected);
  for (const std::string& kind : boards::kResourceKinds) {
    std::vector<double> v;
    for (const auto& [k, e] : resource_err)
      if (k == kind) v.push_back(e);
    if (!v.empty()) res.model_error["resources"][kind] = error_summary(v);
  }
  return res;
}

}  // namespace kiln::explore
