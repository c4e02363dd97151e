#include "boards/flow/board.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "hw/spec/error.h"

namespace kiln::boards {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kFamilies = {"ice40", "xc7", "xcup"};

fs::path board_file(const std::string& name_or_path, const fs::path& boards_dir) {
  fs::path p(name_or_path);
  if (fs::is_regular_file(p)) return p;
  if (fs::is_directory(p) && fs::is_regular_file(p / "board.json")) return p / "board.json";
  fs::path named = boards_dir / name_or_path / "board.json";
  if (fs::is_regular_file(named)) return named;
  std::string known;
  for (const std::string& n : board_names(boards_dir)) known += (known.empty() ? "" : ", ") + n;
  throw hw::Error(fmt::format("unknown board '{}': no {} (boards: {})", name_or_path,
                              named.string(), known.empty() ? "none" : known));
}

template <typename T>
T get(const nlohmann::json& j, const char* key, const fs::path& file) {
  if (!j.contains(key))
    throw hw::Error(fmt::format("{}: missing key '{}'", file.string(), key));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw hw::Error(fmt::format("{}: key '{}': {}", file.string(), key, e.what()));
  }
}

}  // namespace

std::vector<std::string> board_names(const fs::path& boards_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(boards_dir, ec))
    if (e.is_directory() && fs::is_regular_file(e.path() / "board.json"))
      names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// PLL_DIVF for an SB_PLL40 with DIVR 0 and DIVQ 5 (the output is the VCO / 32): the VCO,
// clock * (DIVF + 1), must lie in 533..1066 MHz and give target_mhz exactly.
int ice40_pll_divf(double clock_mhz, double target_mhz, const fs::path& file) {
  double mult = target_mhz * 32 / clock_mhz;
  int divf = static_cast<int>(std::lround(mult)) - 1;
  double vco = clock_mhz * (divf + 1);
  if (clock_mhz <= 0 || std::abs(mult - (divf + 1)) > 1e-9 || divf < 0 || divf > 127 || vco < 533 ||
      vco > 1066)
    throw hw::Error(fmt::format(
        "{}: the PLL cannot make target_mhz {} from clock_mhz {} (it makes clock_mhz * n / 32 "
        "for a whole n with a VCO of clock_mhz * n in 533..1066 MHz)",
        file.string(), target_mhz, clock_mhz));
  return divf;
}

}  // namespace

Board load_board(const std::string& name_or_path, const fs::path& boards_dir) {
  fs::path file = board_file(name_or_path, boards_dir);
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  Board b;
  try {
    b.json = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw hw::Error(fmt::format("{}: {}", file.string(), e.what()));
  }
  const nlohmann::json& j = b.json;
  b.dir = file.parent_path();
  b.name = get<std::string>(j, "name", file);
  b.description = j.value("description", "");
  b.family = get<std::string>(j, "family", file);
  if (std::find(kFamilies.begin(), kFamilies.end(), b.family) == kFamilies.end())
    throw hw::Error(fmt::format("{}: family '{}' is not one of ice40, xc7, xcup", file.string(),
                                b.family));
  b.part = get<std::string>(j, "part", file);
  b.package = get<std::string>(j, "package", file);
  b.target_mhz = get<double>(j, "target_mhz", file);
  if (b.target_mhz <= 0)
    throw hw::Error(fmt::format("{}: target_mhz must be positive", file.string()));
  b.config = get<std::string>(j, "config", file);
  b.constraints = j.value("constraints", "");
  if (!b.constraints.empty() && !fs::is_regular_file(b.dir / b.constraints))
    throw hw::Error(fmt::format("{}: constraints file {} does not exist", file.string(),
                                (b.dir / b.constraints).string()));
  b.top_module = j.value("top_module", "");
  if (!b.top_module.empty()) {
    b.top_sources = get<std::vector<std::string>>(j, "top_sources", file);
    for (const std::string& src : b.top_sources)
      if (!fs::is_regular_file(b.dir / src))
        throw hw::Error(fmt::format("{}: top source {} does not exist", file.string(),
                                    (b.dir / src).string()));
    b.top_rtl = get<std::string>(j, "top_rtl", file);
    if (b.top_rtl != "uart_top")
      throw hw::Error(fmt::format("{}: top_rtl '{}' is not one of: uart_top", file.string(),
                                  b.top_rtl));
    if (b.family != "ice40")
      throw hw::Error(fmt::format("{}: a board top (top_module) is placed and routed for ice40 "
                                  "only; family is {}",
                                  file.string(), b.family));    b.clock_mhz = get<double>(j, "clock_mhz", file);
    if (j.value("pll", true)) b.pll_divf = ice40_pll_divf(b.clock_mhz, b.target_mhz, file);
  }
  if (j.contains("pnr_seeds")) {
    b.pnr_seeds = get<std::vector<int>>(j, "pnr_seeds", file);
    if (b.pnr_seeds.empty())
      throw hw::Error(fmt::format("{}: pnr_seeds is empty; give at least one seed", file.string()));
  }
  auto res = get<nlohmann::json>(j, "resources", file);
  for (const std::string& kind : kResourceKinds) {
    int64_t n = res.value(kind, int64_t{0});
    if (n < 0) throw hw::Error(fmt::format("{}: resources.{} is negative", file.string(), kind));
    b.available[kind] = n;
  }
  for (const auto& [k, v] : res.items())
    if (std::find(kResourceKinds.begin(), kResourceKinds.end(), k) == kResourceKinds.end())
      throw hw::Error(fmt::format("{}: resources.{}: unknown kind (LUT, FF, DSP, BRAM, SPRAM)",
                                  file.string(), k));
  return b;
}

}  // namespace kiln::boards
