#include "explore/space.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "hw/spec/error.h"

namespace kiln::explore {

namespace {

// Ranges per FPGA family, inclusive: a GEMM core and buffers from a quarter of the
// board configuration's to what could fit the part's DSPs and block RAM at all. The
// search learns what fits; these only keep it away from sizes no such part holds.
using Ranges = std::vector<std::pair<std::string, std::pair<int, int>>>;

const std::map<std::string, Ranges>& family_ranges() {
  // The Zynq-7000 and ZynqMP parts of the boards here have DSPs and block RAM of the same
  // order, so one range serves both.
  static const Ranges zynq = {{"LOG_BLOCK", {3, 5}},
                              {"LOG_INP_BUFF_SIZE", {13, 16}},
                              {"LOG_WGT_BUFF_SIZE", {15, 19}},
                              {"LOG_ACC_BUFF_SIZE", {14, 18}},
                              {"LOG_UOP_BUFF_SIZE", {13, 15}}};
  static const std::map<std::string, Ranges> ranges = {
      {"xc7", zynq},
      {"xcup", zynq},
      {"ice40",
       {{"LOG_BLOCK", {1, 3}},
        {"LOG_INP_BUFF_SIZE", {9, 11}},
        {"LOG_WGT_BUFF_SIZE", {10, 13}},
        {"LOG_ACC_BUFF_SIZE", {10, 13}},
        {"LOG_UOP_BUFF_SIZE", {9, 11}}}},
  };
  return ranges;
}

const hw::ConfigKey& config_key(const std::string& name, const std::string& where) {
  for (const hw::ConfigKey& k : hw::config_keys())
    if (k.name == name) return k;
  throw hw::Error(fmt::format("{}: '{}' is not a configuration key (shared/ISA.md)", where, name));
}

ParamRange make_range(const std::string& key, int lo, int hi, const std::string& where) {
  const hw::ConfigKey& k = config_key(key, where);
  if (lo > hi || lo < k.min || hi > k.max)
    throw hw::Error(fmt::format("{}: {} range [{}, {}] is not within [{}, {}]", where, key, lo, hi, k.min, k.max));
  ParamRange r{key, {}};
  for (int v = lo; v <= hi; ++v) r.values.push_back(v);
  return r;
}

}  // namespace

HwSpace HwSpace::for_board(const boards::Board& board, const hw::Config& base) {
  HwSpace s;
  s.base_ = base;
  s.timing_.core = board.json.value("core", "decoupled");
  if (board.top_rtl == "uart_top") s.timing_.mem_latency = 0;  // kiln_devmem on the board top
  const std::string where = (board.dir / "board.json").string();
  if (board.json.contains("explore")) {
    const nlohmann::json& e = board.json.at("explore");
    if (!e.is_object()) throw hw::Error(where + ": explore: expected an object {\"KEY\": [min, max], ...}");
    for (const auto& [key, range] : e.items()) {
      if (!range.is_array() || range.size() != 2 || !range[0].is_number_integer() || !range[1].is_number_integer())
        throw hw::Error(fmt::format("{}: explore.{}: expected [min, max] (integers)", where, key));
      s.params_.push_back(make_range(key, range[0].get<int>(), range[1].get<int>(), where + ": explore"));
    }
  } else {
    auto it = family_ranges().find(board.family);
    if (it == family_ranges().end())
      throw hw::Error(fmt::format("{}: family '{}' has no explore ranges; add an \"explore\" object", where, board.family));
    for (const auto& [key, lohi] : it->second) s.params_.push_back(make_range(key, lohi.first, lohi.second, where));
  }
  if (s.params_.empty()) throw hw::Error(where + ": explore: no parameters to search");
  return s;
}

int64_t HwSpace::size() const {
  int64_t n = 1;
  for (const ParamRange& p : params_) n *= static_cast<int64_t>(p.values.size());
  return n;
}

int HwSpace::max_block() const {
  int log_block = base_.params().log_block;
  for (const ParamRange& p : params_)
    if (p.key == "LOG_BLOCK") log_block = *std::max_element(p.values.begin(), p.values.end());
  return 1 << log_block;
}

tuner::ConfigSpace HwSpace::knobs() const {
  tuner::ConfigSpace s;
  for (const ParamRange& p : params_) {
    std::vector<std::string> choices;
    for (int v : p.values) choices.push_back(std::to_string(v));
    s.define_knob(p.key, choices);
  }
  return s;
}

HwSpace::Point HwSpace::at(int64_t index) const {
  if (index < 0 || index >= size()) throw hw::Error(fmt::format("configuration {} is outside the space of {}", index, size()));
  hw::ConfigParams p = base_.params();
  int64_t rest = index;
  for (const ParamRange& r : params_) {  // knob 0 is the least significant digit (tuner/space.h)
    const int64_t n = static_cast<int64_t>(r.values.size());
    p.*config_key(r.key, "explore").member = r.values[static_cast<size_t>(rest % n)];
    rest /= n;
  }
  Point pt;
  try {
    hw::Config cfg = hw::Config::from_params(p, "explore");
    pt.config = hw::Config::from_params(p, short_name(cfg));
  } catch (const hw::Error& e) {
    pt.invalid = e.what();
  }
  return pt;
}

std::optional<int64_t> HwSpace::index_of(const hw::Config& cfg) const {
  int64_t index = 0, radix = 1;
  for (const ParamRange& r : params_) {
    const int v = cfg.params().*config_key(r.key, "explore").member;
    auto it = std::find(r.values.begin(), r.values.end(), v);
    if (it == r.values.end()) return std::nullopt;
    index += radix * (it - r.values.begin());
    radix *= static_cast<int64_t>(r.values.size());
  }
  // The keys outside the space must be the base's.
  hw::ConfigParams p = base_.params();
  for (const ParamRange& r : params_) p.*config_key(r.key, "explore").member = cfg.params().*config_key(r.key, "explore").member;
  if (!(p == cfg.params())) return std::nullopt;
  return index;
}

std::string HwSpace::short_name(const hw::Config& cfg) {
  auto kib = [](int log_bytes) {
    return log_bytes >= 10 ? fmt::format("{}k", 1 << (log_bytes - 10)) : fmt::format("{}b", 1 << log_bytes);
  };
  const hw::ConfigParams& p = cfg.params();
  return fmt::format("{}x{}x{}-i{}-w{}-a{}-u{}", cfg.batch(), cfg.block_in(), cfg.block_out(), kib(p.log_inp_buff_size),
                     kib(p.log_wgt_buff_size), kib(p.log_acc_buff_size), kib(p.log_uop_buff_size));
}

}  // namespace kiln::explore
