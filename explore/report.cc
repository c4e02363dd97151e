#include "explore/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "boards/flow/board.h"
#include "hw/spec/error.h"

namespace kiln::explore {

namespace {

std::vector<std::string> plotted_kinds(const ExploreResult& r) {
  std::vector<std::string> kinds;
  for (const std::string& k : boards::kResourceKinds)
    for (const Evaluated& p : r.points)
      if (p.available(k) > 0) {
        kinds.push_back(k);
        break;
      }
  return kinds;
}

std::string share(const Evaluated& p, const std::string& kind) {
  return p.available(kind) > 0 ? fmt::format("{:.1f}%", 100 * p.used(kind) / p.available(kind)) : "-";
}

// Wall time of the workload at the clock the design runs at: fmax where place and route
// gave one (capped at the board's target), else the board's target clock.
double clock_mhz(const Evaluated& p, const ExploreContext& ctx) {
  if (auto f = p.fmax_mhz()) return ctx.board.target_mhz > 0 ? std::min(*f, ctx.board.target_mhz) : *f;
  return ctx.board.target_mhz;
}

nlohmann::json point_json(const Evaluated& p, const ExploreContext& ctx, const ExploreResult& r) {
  nlohmann::json j = {{"index", p.index},
                      {"config", p.name()},
                      {"reference", p.reference},
                      {"model_cycles", p.model.cycles},
                      {"predicted", p.predicted}};
  if (p.synth) j["synth"] = p.synth->ok() ? p.synth->detail : nlohmann::json{{"error", p.synth->error}};
  if (p.rtl) {
    j["rtl"] = p.rtl->ok() ? p.rtl->detail : nlohmann::json{{"error", p.rtl->error}};
    if (p.verified()) {
      j["cycles"] = p.cycles();
      j["clock_mhz"] = clock_mhz(p, ctx);
      j["ms"] = p.cycles() / clock_mhz(p, ctx) / 1e3;
      j["utilization"] = utilization(p, r.budget_kinds);
    }
  }
  j["config_json"] = nlohmann::json::parse(p.config.to_json(false));
  return j;
}

}  // namespace

std::string front_table(const ExploreResult& r, const ExploreContext& ctx) {
  std::vector<std::string> kinds = plotted_kinds(r);
  const Evaluated* ref = r.reference ? &r.points[*r.reference] : nullptr;
  std::string s = fmt::format("{:<36} {:>12} {:>9}", "configuration", "cycles", "vs ref");
  for (const std::string& k : kinds) s += fmt::format(" {:>7}", k);
  s += fmt::format(" {:>8} {:>9}\n", "MHz", "ms");
  auto row = [&](const Evaluated& p, const char* mark) {
    std::string line = fmt::format("{:<36} {:>12.0f} {:>9}", p.name() + mark, p.cycles(),
                                   ref && ref->verified() ? fmt::format("{:.2f}x", ref->cycles() / p.cycles()) : "-");
    for (const std::string& k : kinds) line += fmt::format(" {:>7}", share(p, k));
    line += fmt::format(" {:>8.2f} {:>9.3f}\n", clock_mhz(p, ctx), p.cycles() / clock_mhz(p, ctx) / 1e3);
    return line;
  };
  for (size_t i : r.front) s += row(r.points[i], r.points[i].reference ? " *" : "");
  if (ref && ref->verified() && std::find(r.front.begin(), r.front.end(), *r.reference) == r.front.end())
    s += row(*ref, " (ref)");
  s += fmt::format("{} configuration(s) on the front; * / (ref): the board's own configuration ({}). Speed-up against "
                   "it in cycles. MHz: fmax from place and route where the flow has it (at most the board's target), "
                   "else the board's target clock.\n",
                   r.front.size(), ref ? ref->name() : "not in the space");
  return s;
}

nlohmann::json result_json(const ExploreResult& r, const ExploreContext& ctx, const ExploreOptions& opt) {
  nlohmann::json j;
  j["board"] = ctx.board.name;
  j["workload"] = {{"name", ctx.workload.name}, {"layers", ctx.workload.layers.size()}, {"macs", ctx.workload.macs()}};
  j["search"] = r.search;
  j["seed"] = opt.seed;
  j["budget"] = opt.budget;
  j["objective_kinds"] = r.budget_kinds;
  j["space_size"] = r.space_size;
  j["runnable"] = r.runnable;
  j["synth_runs"] = r.synth_runs;
  j["rtl_runs"] = r.rtl_runs;
  j["synth_new"] = r.synth_new;  // of those, run in this call (the rest came from the records)
  j["rtl_new"] = r.rtl_new;
  j["model_error"] = r.model_error;
  j["points"] = nlohmann::json::array();
  for (const Evaluated& p : r.points) j["points"].push_back(point_json(p, ctx, r));
  j["front"] = nlohmann::json::array();
  for (size_t i : r.front) j["front"].push_back(r.points[i].name());
  if (r.reference) {
    const Evaluated& ref = r.points[*r.reference];
    j["reference"] = ref.name();
    if (ref.verified() && !r.front.empty())
      j["best_speedup_vs_reference"] = ref.cycles() / r.points[r.front.front()].cycles();
  }
  return j;
}

std::string front_svg(const ExploreResult& r, const ExploreContext& ctx, const ExploreOptions& opt) {
  std::vector<std::string> kinds = plotted_kinds(r);
  const int pw = 300, ph = 240, ml = 70, mt = 40, gap = 40;
  const int width = ml + static_cast<int>(kinds.size()) * (pw + gap), height = mt + ph + 60;
  double cmax = 0, cmin = 1e300;
  for (const Evaluated& p : r.points)
    if (p.verified()) {
      cmax = std::max(cmax, p.cycles());
      cmin = std::min(cmin, p.cycles());
    }
  if (cmax <= 0) cmax = cmin = 1;
  const double lo = std::pow(10.0, std::floor(std::log10(cmin))), hi = std::pow(10.0, std::ceil(std::log10(cmax * 1.01)));
  auto y_of = [&](double c) { return mt + ph - (std::log10(c) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * ph; };
  std::string s = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)"
      "\n<text x=\"{}\" y=\"18\" font-size=\"13\">kiln explore: {} on {} ({} search; cycles, log scale, against each "
      "resource's share of the part)</text>\n",
      width, height, ml, ctx.workload.name, ctx.board.name, r.search);
  for (size_t k = 0; k < kinds.size(); ++k) {
    const std::string& kind = kinds[k];
    const int x0 = ml + static_cast<int>(k) * (pw + gap);
    auto x_of = [&](double frac) { return x0 + std::min(frac, 1.2) / 1.2 * pw; };
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>\n", x0, mt, pw, ph);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{} used / available</text>\n", x0 + pw / 2, mt + ph + 32,
                     kind);
    for (double f : {0.0, 0.25, 0.5, 0.75, 1.0})
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.0f}%</text>\n", x_of(f), mt + ph + 14, 100 * f);
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#000\" stroke-dasharray=\"2,2\"/>\n",
                     x_of(1.0), mt, mt + ph);
    if (auto b = opt.budget.find(kind); b != opt.budget.end())
      s += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#c00\"/><text x=\"{0:.1f}\" y=\"{3}\" "
          "fill=\"#c00\" text-anchor=\"middle\">budget {4:.0f}%</text>\n",
          x_of(b->second), mt, mt + ph, mt - 4, 100 * b->second);
    if (k == 0)
      for (double d = lo; d <= hi * 1.0001; d *= 10)
        s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.0e}</text>\n", x0 - 4, y_of(d) + 4, d);
    for (size_t i = 0; i < r.points.size(); ++i) {
      const Evaluated& p = r.points[i];
      if (!p.verified() || p.available(kind) <= 0) continue;
      const bool on_front = std::find(r.front.begin(), r.front.end(), i) != r.front.end();
      const double x = x_of(p.used(kind) / p.available(kind)), y = y_of(p.cycles());
      if (p.reference)
        s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"9\" height=\"9\" fill=\"#f80\"><title>{} (the board's "
                         "configuration)</title></rect>\n",
                         x - 4.5, y - 4.5, p.name());
      else
        s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"><title>{}: {:.0f} cycles</title></circle>\n", x,
                         y, on_front ? 5 : 3, on_front ? "#06c" : "#aaa", p.name(), p.cycles());
    }
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\">blue: the front (RTL-verified, Yosys-fitted); grey: other verified points; "
                   "orange square: the board's configuration; red: the budget</text>\n",
                   ml, height - 8);
  return s + "</svg>\n";
}

std::vector<std::filesystem::path> write_front_configs(const ExploreResult& r, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::filesystem::path> out;
  const Evaluated* ref = r.reference ? &r.points[*r.reference] : nullptr;
  for (size_t i : r.front) {
    const Evaluated& p = r.points[i];
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(p.config.to_json(false));
    std::string figures = fmt::format("kiln explore ({} search) front point: {:.0f} cycles on the RTL", r.search, p.cycles());
    if (ref && ref->verified()) figures += fmt::format(" ({:.2f}x fewer than {})", ref->cycles() / p.cycles(), ref->name());
    for (const std::string& k : boards::kResourceKinds)
      if (p.available(k) > 0) figures += fmt::format(", {} {:g}/{:g}", k, p.used(k), p.available(k));
    if (auto f = p.fmax_mhz()) figures += fmt::format(", fmax {:.2f} MHz", *f);
    j["description"] = figures;
    const std::filesystem::path path = dir / (p.name() + ".json");
    std::ofstream f(path);
    if (!(f << j.dump(2) << "\n")) throw hw::Error("cannot write " + path.string());
    out.push_back(path);
  }
  return out;
}

}  // namespace kiln::explore
