#include "explore/resource_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "hw/spec/error.h"

namespace kiln::explore {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kFamilies = {"ice40", "xc7", "xcup"};

bool is_xilinx(const std::string& family) { return family != "ice40"; }

// kiln_top is the out-of-order accelerator (the GEMM core whole); any other top is a
// board top built on the in-order core (kiln_uart_top), which walks a row lane by lane.
bool is_inorder(const std::string& top) { return top != "kiln_top"; }

struct Memory {
  int width;
  int depth;
};

// The scratchpads (kiln_sram instances) of the top: kiln_top banks ACC in two halves
// (kiln_compute.sv) so that compute and store read it in the same cycle.
std::vector<Memory> scratchpads(const std::string& top, const hw::Config& cfg) {
  const int acc_bits = cfg.acc_elem_bytes() * 8;
  std::vector<Memory> m = {{cfg.uop_elem_bytes() * 8, static_cast<int>(cfg.uop_depth())},
                           {cfg.inp_elem_bytes() * 8, static_cast<int>(cfg.inp_depth())},
                           {cfg.wgt_elem_bytes() * 8, static_cast<int>(cfg.wgt_depth())}};
  const int acc_depth = static_cast<int>(cfg.acc_depth());
  if (!is_inorder(top) && cfg.log_acc_depth() >= 2) {
    m.push_back({acc_bits, acc_depth / 2});
    m.push_back({acc_bits, acc_depth / 2});
  } else {
    m.push_back({acc_bits, acc_depth});
  }
  return m;
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Yosys maps a Xilinx memory of at most 64 words to LUT RAM (lutrams_xc5v/xcu.txt is
// cheaper there than a RAMB18); its registered read port stays in FFs.
constexpr int kXilinxLutramMaxDepth = 64;

// LUTs of a Xilinx LUT RAM: UltraScale's RAM64M8/RAM32M16 hold 7/14 bits in 8 LUTs,
// 7-series' RAM64M/RAM32M 3/6 bits in 4 (synth.cc counts them so).
double lutram_luts(const std::string& family, const Memory& m) {
  const bool shallow = m.depth <= 32;
  if (family == "xcup") return 8.0 * ceil_div(m.width, shallow ? 14 : 7);
  return 4.0 * ceil_div(m.width, shallow ? 6 : 3);
}

// The DSP48 or SB_MAC16 count of the GEMM and the ALU. The Xilinx flow pairs two int8
// products per DSP48 (synth.cc's GEMM_PAIR_PRODUCTS) when BLOCK_OUT is even; the ALU's
// 32 x 32 multiply (low 32 bits) takes three 16/18-bit-wide multipliers on every family.
double derived_dsp(const std::string& family, const std::string& top, const hw::Config& cfg) {
  constexpr double kAluMulDsps = 3;
  if (is_inorder(top)) return cfg.block_in() + kAluMulDsps;  // one lane: BLOCK_IN products
  const double products = static_cast<double>(cfg.batch()) * cfg.block_in() * cfg.block_out();
  const bool paired = is_xilinx(family) && cfg.block_out() % 2 == 0;
  return (paired ? products / 2 : products) + kAluMulDsps * cfg.batch() * cfg.block_out();
}

double derived_bram(const std::string& family, const std::string& top, const hw::Config& cfg) {
  double units = 0;
  for (const Memory& m : scratchpads(top, cfg)) units += bram_units(family, m.width, m.depth);
  return units;
}

double derived_lut(const std::string& family, const std::string& top, const hw::Config& cfg) {
  if (!is_xilinx(family)) return 0;
  double luts = 0;
  for (const Memory& m : scratchpads(top, cfg))
    if (m.depth <= kXilinxLutramMaxDepth) luts += lutram_luts(family, m);
  return luts;
}

double derived_ff(const std::string& family, const std::string& top, const hw::Config& cfg) {
  if (!is_xilinx(family)) return 0;
  double ffs = 0;
  for (const Memory& m : scratchpads(top, cfg))
    if (m.depth <= kXilinxLutramMaxDepth) ffs += m.width;
  return ffs;
}

// The error of a prediction relative to the measured count (or to 1 below 1).
double relative_error(double predicted, double measured) {
  return std::abs(predicted - measured) / std::max(std::abs(measured), 1.0);
}

// Solves the square system m x = v by Gaussian elimination with partial pivoting;
// false if it is singular.
bool solve(std::vector<std::vector<double>> m, std::vector<double> v, std::vector<double>& x) {
  const size_t n = v.size();
  for (size_t c = 0; c < n; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::abs(m[r][c]) > std::abs(m[piv][c])) piv = r;
    if (std::abs(m[piv][c]) < 1e-12) return false;
    std::swap(m[c], m[piv]);
    std::swap(v[c], v[piv]);
    for (size_t r = c + 1; r < n; ++r) {
      double f = m[r][c] / m[c][c];
      for (size_t k = c; k < n; ++k) m[r][k] -= f * m[c][k];
      v[r] -= f * v[c];
    }
  }
  x.assign(n, 0);
  for (size_t c = n; c-- > 0;) {
    double s = v[c];
    for (size_t k = c + 1; k < n; ++k) s -= m[c][k] * x[k];
    x[c] = s / m[c][c];
  }
  return true;
}

// Least squares on the columns in `cols` (unit-norm scaled, with a tiny ridge so that
// collinear or underdetermined columns still give the smallest solution).
std::vector<double> least_squares(const std::vector<std::vector<double>>& a,
                                  const std::vector<double>& b, const std::vector<size_t>& cols,
                                  const std::vector<double>& scale) {
  const size_t k = cols.size();
  std::vector<std::vector<double>> ata(k, std::vector<double>(k, 0));
  std::vector<double> atb(k, 0);
  for (size_t r = 0; r < a.size(); ++r) {
    for (size_t i = 0; i < k; ++i) {
      double ai = a[r][cols[i]] / scale[cols[i]];
      atb[i] += ai * b[r];
      for (size_t j = 0; j < k; ++j) ata[i][j] += ai * a[r][cols[j]] / scale[cols[j]];
    }
  }
  for (size_t i = 0; i < k; ++i) ata[i][i] += 1e-9;
  std::vector<double> x;
  if (!solve(ata, atb, x)) return {};
  for (size_t i = 0; i < k; ++i) x[i] /= scale[cols[i]];
  return x;
}

const nlohmann::json& field(const nlohmann::json& j, const std::string& key,
                            const std::string& where, const fs::path& file) {
  if (!j.is_object() || !j.contains(key))
    throw hw::Error(fmt::format("{}: {} has no field '{}'", file.string(), where, key));
  return j.at(key);
}

}  // namespace

std::vector<double> fit_nonnegative(const std::vector<std::vector<double>>& a,
                                    const std::vector<double>& b) {
  const size_t n = a.empty() ? 0 : a[0].size();
  if (n > 12)
    throw hw::Error(fmt::format("fit_nonnegative: {} columns is too many to enumerate", n));
  std::vector<double> scale(n, 0);
  for (const auto& row : a)
    for (size_t c = 0; c < n; ++c) scale[c] += row[c] * row[c];
  for (double& s : scale) s = s > 0 ? std::sqrt(s) : 1;
  auto residual = [&](const std::vector<double>& x) {
    double r2 = 0;
    for (size_t r = 0; r < a.size(); ++r) {
      double p = 0;
      for (size_t c = 0; c < n; ++c) p += a[r][c] * x[c];
      r2 += (p - b[r]) * (p - b[r]);
    }
    return r2;
  };
  // The nonnegative optimum is the unconstrained optimum on its active set: try every
  // set, keep the best feasible one (the fewest columns among equals).
  std::vector<double> best(n, 0);
  double best_r2 = residual(best);
  size_t best_cols = 0;
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    std::vector<size_t> cols;
    for (size_t c = 0; c < n; ++c)
      if (mask & (1u << c)) cols.push_back(c);
    std::vector<double> xs = least_squares(a, b, cols, scale);
    if (xs.empty() || *std::min_element(xs.begin(), xs.end()) < 0) continue;
    std::vector<double> x(n, 0);
    for (size_t i = 0; i < cols.size(); ++i) x[cols[i]] = xs[i];
    double r2 = residual(x);
    const double tol = 1e-9 * std::max(best_r2, 1.0);
    if (r2 < best_r2 - tol || (r2 <= best_r2 + tol && cols.size() < best_cols)) {
      best = x, best_r2 = r2, best_cols = cols.size();
    }
  }
  return best;
}

double bram_units(const std::string& family, int width, int depth) {
  if (width <= 0 || depth <= 0) return 0;
  if (family == "ice40") {
    // SB_RAM40_4K: 256 x 16, 512 x 8, 1024 x 4 or 2048 x 2, all of one cost (brams.txt).
    int best = std::numeric_limits<int>::max();
    for (int w = 16, d = 256; w >= 2; w /= 2, d *= 2)
      best = std::min(best, ceil_div(width, w) * ceil_div(depth, d));
    return best;
  }
  if (depth <= kXilinxLutramMaxDepth) return 0;
  // brams_xc4v.txt's SDP block: RAMB18 ("HALF", cost 129) is 2^14 bits as 1..36 wide,
  // RAMB36 ("FULL", cost 257) 2^15 bits as 1..72 wide; memory_libmap takes the
  // cheapest tiling, so RAMB36 wins a tie of two RAMB18 against one RAMB36.
  static const int kWidths[] = {1, 2, 4, 9, 18, 36, 72};
  double best_cost = std::numeric_limits<double>::max(), best_units = 0;
  for (int full = 0; full < 2; ++full) {
    const int abits = full ? 15 : 14, options = full ? 7 : 6;
    for (int i = 0; i < options; ++i) {
      const int words = 1 << (abits - i);  // 36 bits: 512 words of a RAMB18
      const double n = static_cast<double>(ceil_div(width, kWidths[i])) * ceil_div(depth, words);
      const double cost = n * (full ? 257 : 129);
      if (cost < best_cost) best_cost = cost, best_units = n * (full ? 1.0 : 0.5);
    }
  }
  return best_units;
}

ResourceModel::ResourceModel(std::string family, std::string top)
    : family_(std::move(family)), top_(std::move(top)) {
  if (std::find(kFamilies.begin(), kFamilies.end(), family_) == kFamilies.end())
    throw hw::Error(fmt::format("resource model: unknown FPGA family '{}' (ice40, xc7, xcup)",
                                family_));
}

const std::vector<std::string>& ResourceModel::feature_names(const std::string& kind) {
  // LUT and FF grow with the GEMM (its adder tree and operand rows), with the ALU
  // lanes (32-bit ops and row registers) and with the scratchpads' address widths
  // (counters and address registers in every module); the rest is the fixed part.
  static const std::vector<std::string> kLogic = {"const", "gemm_products", "alu_lanes",
                                                  "address_bits"};
  static const std::vector<std::string> kFixed = {"const"};
  return (kind == "LUT" || kind == "FF") ? kLogic : kFixed;
}

std::vector<double> ResourceModel::features(const std::string& kind, const hw::Config& cfg) const {
  if (kind != "LUT" && kind != "FF") return {1.0};
  double address_bits = 0;
  for (const Memory& m : scratchpads(top_, cfg)) address_bits += std::log2(m.depth);
  return {1.0, static_cast<double>(cfg.batch()) * cfg.block_in() * cfg.block_out(),
          static_cast<double>(cfg.batch()) * cfg.block_out(), address_bits};
}

double ResourceModel::derived(const std::string& kind, const hw::Config& cfg) const {
  if (kind == "DSP") return derived_dsp(family_, top_, cfg);
  if (kind == "BRAM") return derived_bram(family_, top_, cfg);
  if (kind == "LUT") return derived_lut(family_, top_, cfg);
  if (kind == "FF") return derived_ff(family_, top_, cfg);
  return 0;  // SPRAM: only a board top's device memory, all fixed
}

std::map<std::string, ResourceModel::Fit> ResourceModel::fit_points(
    const std::vector<size_t>& use) const {
  std::map<std::string, Fit> fits;
  for (const std::string& kind : boards::kResourceKinds) {
    // Weighted by 1 / measured: the fit minimizes relative error, which is what the
    // search's budget check and the error report care about.
    std::vector<std::vector<double>> a;
    std::vector<double> b;
    for (size_t i : use) {
      const double measured = points_[i].used.at(kind);
      const double w = 1.0 / std::max(measured, 1.0);
      std::vector<double> row = features(kind, configs_[i]);
      for (double& v : row) v *= w;
      a.push_back(row);
      b.push_back((measured - derived(kind, configs_[i])) * w);
    }
    fits[kind].coef = fit_nonnegative(a, b);
  }
  return fits;
}

void ResourceModel::refit() {
  std::vector<size_t> all(points_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  fits_ = fit_points(all);
}

double ResourceModel::predict_one(const std::string& kind, const hw::Config& cfg,
                                  const std::map<std::string, Fit>& fits) const {
  double v = derived(kind, cfg);
  const std::vector<double> f = features(kind, cfg);
  const std::vector<double>& c = fits.at(kind).coef;
  for (size_t i = 0; i < f.size(); ++i) v += c[i] * f[i];
  return v;
}

void ResourceModel::add_point(const hw::Config& cfg, const boards::SynthReport& report) {
  std::map<std::string, double> used;
  for (const boards::Resource& r : report.resources) used[r.kind] = r.used;
  add_point(cfg, used);
}

void ResourceModel::add_point(const hw::Config& cfg, const std::map<std::string, double>& used) {
  ResourcePoint p;
  p.config = nlohmann::json::parse(cfg.to_json(/*with_derived=*/false));
  for (const std::string& kind : boards::kResourceKinds) {
    auto it = used.find(kind);
    p.used[kind] = it == used.end() ? 0.0 : it->second;
  }
  points_.push_back(std::move(p));
  configs_.push_back(cfg);
  refit();
}

std::map<std::string, double> ResourceModel::predict(const hw::Config& cfg) const {
  if (points_.empty())
    throw hw::Error(fmt::format("resource model of {} ({}) has no calibration points", family_,
                                top_));
  std::map<std::string, double> out;
  for (const std::string& kind : boards::kResourceKinds) out[kind] = predict_one(kind, cfg, fits_);
  return out;
}

nlohmann::json ResourceModel::error_report() const {
  const size_t n = points_.size();
  std::vector<std::map<std::string, double>> loo(n);
  for (size_t held = 0; n >= 2 && held < n; ++held) {
    std::vector<size_t> rest;
    for (size_t i = 0; i < n; ++i)
      if (i != held) rest.push_back(i);
    auto fits = fit_points(rest);
    for (const std::string& kind : boards::kResourceKinds)
      loo[held][kind] = predict_one(kind, configs_[held], fits);
  }
  nlohmann::json res = nlohmann::json::object();
  for (const std::string& kind : boards::kResourceKinds) {
    double fit_sum = 0, fit_max = 0, loo_sum = 0, loo_max = 0;
    size_t worst = 0;
    for (size_t i = 0; i < n; ++i) {
      const double measured = points_[i].used.at(kind);
      const double e = relative_error(predict_one(kind, configs_[i], fits_), measured);
      fit_sum += e, fit_max = std::max(fit_max, e);
      if (n < 2) continue;
      const double l = relative_error(loo[i][kind], measured);
      loo_sum += l;
      if (l > loo_max) loo_max = l, worst = i;
    }
    nlohmann::json entry;
    entry["fit"] = n == 0 ? nlohmann::json(nullptr)
                          : nlohmann::json{{"mean", fit_sum / n}, {"max", fit_max}};
    // The point the others predict worst: where a new calibration point helps most.
    const nlohmann::json worst_name =
        loo_max > 1e-6 ? nlohmann::json(configs_[worst].name()) : nlohmann::json(nullptr);
    entry["loo"] = n < 2 ? nlohmann::json(nullptr)
                         : nlohmann::json{{"mean", loo_sum / n},
                                          {"max", loo_max},
                                          {"worst", worst_name}};
    res[kind] = entry;
  }
  return {{"family", family_}, {"top", top_}, {"points", n}, {"resources", res}};
}

nlohmann::json ResourceModel::coefficients() const {
  static const std::map<std::string, std::string> kDerived = {
      {"LUT", "LUT RAM of scratchpads of at most 64 words (Xilinx)"},
      {"FF", "read registers of LUT-RAM scratchpads (Xilinx)"},
      {"DSP", "GEMM products (paired on Xilinx) + 3 per ALU lane"},
      {"BRAM", "scratchpad geometry tiled as memory_libmap tiles it"},
      {"SPRAM", "none"}};
  nlohmann::json j = nlohmann::json::object();
  for (const std::string& kind : boards::kResourceKinds) {
    nlohmann::json c = nlohmann::json::object();
    const auto& names = feature_names(kind);
    auto it = fits_.find(kind);
    for (size_t i = 0; i < names.size(); ++i)
      c[names[i]] = it == fits_.end() ? 0.0 : it->second.coef[i];
    j[kind] = {{"derived", kDerived.at(kind)}, {"fitted", c}};
  }
  return j;
}

fs::path ResourceModel::calibration_dir() {
  const char* env = std::getenv("KILN_SOURCE_DIR");
  if (env != nullptr && *env != '\0') return fs::path(env) / "explore" / "calibration";
  return fs::path(KILN_EXPLORE_DIR) / "calibration";
}

ResourceModel ResourceModel::from_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw hw::Error(fmt::format("{}: cannot open the calibration file", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw hw::Error(fmt::format("{}: not valid JSON: {}", path.string(), e.what()));
  }
  const nlohmann::json& family = field(j, "family", "the file", path);
  const nlohmann::json& top = field(j, "top", "the file", path);
  const nlohmann::json& pts = field(j, "points", "the file", path);
  if (!family.is_string() || !top.is_string() || !pts.is_array())
    throw hw::Error(fmt::format("{}: 'family' and 'top' must be strings, 'points' an array",
                                path.string()));
  const std::string fam = family.get<std::string>();
  if (std::find(kFamilies.begin(), kFamilies.end(), fam) == kFamilies.end())
    throw hw::Error(
        fmt::format("{}: family '{}' is not one of ice40, xc7, xcup", path.string(), fam));
  ResourceModel model(fam, top.get<std::string>());
  for (size_t i = 0; i < pts.size(); ++i) {
    const std::string where = fmt::format("points[{}]", i);
    const nlohmann::json& cfg_json = field(pts[i], "config", where, path);
    const nlohmann::json& used_json = field(pts[i], "used", where, path);
    hw::Config cfg =
        hw::Config::from_json(cfg_json.dump(), fmt::format("{}: {}.config", path.string(), where));
    std::map<std::string, double> used;
    for (const std::string& kind : boards::kResourceKinds) {
      const nlohmann::json& v = field(used_json, kind, where + ".used", path);
      if (!v.is_number() || v.get<double>() < 0)
        throw hw::Error(fmt::format("{}: {}.used.{} must be a nonnegative number, got {}",
                                    path.string(), where, kind, v.dump()));
      used[kind] = v.get<double>();
    }
    model.points_.push_back({cfg_json, used});
    model.configs_.push_back(cfg);
  }
  model.refit();
  return model;
}

ResourceModel ResourceModel::for_board(const boards::Board& board) {
  const fs::path file = calibration_dir() / (board.family + ".json");
  if (!fs::is_regular_file(file))
    throw hw::Error(fmt::format("board {}: no resource calibration for family {} ({}); run "
                                "scripts/explore-calibrate.sh {}",
                                board.name, board.family, file.string(), board.family));
  ResourceModel model = from_file(file);
  const std::string top = board.top_module.empty() ? "kiln_top" : board.top_module;
  if (model.top_ != top)
    throw hw::Error(fmt::format("board {}: {} is calibrated for top {}, the board synthesizes {}",
                                board.name, file.string(), model.top_, top));
  if (model.family_ != board.family)
    throw hw::Error(fmt::format("board {}: {} holds family {}, the board is {}", board.name,
                                file.string(), model.family_, board.family));
  return model;
}

}  // namespace kiln::explore
