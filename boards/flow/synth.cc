#include "boards/flow/synth.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "hw/spec/error.h"
#include "hw/spec/rtl_params.h"

namespace kiln::boards {

namespace fs = std::filesystem;

namespace {

// How many units of each resource kind a mapped cell takes. Xilinx distributed RAM
// and shift registers live in SLICEM LUTs (RAM64M: four LUT6, one per port); carry
// chains and wide muxes (CARRY4/8, MUXF7/8) take no LUTs; an INV is a LUT1. BRAM is counted in 36 Kb
// blocks, so a RAMB18 is half a block.
struct CellCost {
  const char* cell;
  const char* kind;
  double units;
};

const std::vector<CellCost> kIce40Costs = {
    {"SB_LUT4", "LUT", 1},        {"SB_DFF", "FF", 1},          {"SB_DFFE", "FF", 1},
    {"SB_DFFSR", "FF", 1},        {"SB_DFFR", "FF", 1},         {"SB_DFFS", "FF", 1},
    {"SB_DFFSS", "FF", 1},        {"SB_DFFSSR", "FF", 1},       {"SB_DFFER", "FF", 1},
    {"SB_DFFES", "FF", 1},        {"SB_DFFESR", "FF", 1},       {"SB_DFFESS", "FF", 1},
    {"SB_DFFN", "FF", 1},         {"SB_DFFNE", "FF", 1},        {"SB_DFFNSR", "FF", 1},
    {"SB_DFFNR", "FF", 1},        {"SB_DFFNS", "FF", 1},        {"SB_DFFNSS", "FF", 1},
    {"SB_DFFNER", "FF", 1},       {"SB_DFFNES", "FF", 1},       {"SB_DFFNESR", "FF", 1},
    {"SB_DFFNESS", "FF", 1},      {"SB_MAC16", "DSP", 1},       {"SB_RAM40_4K", "BRAM", 1},
    {"SB_RAM40_4KNR", "BRAM", 1}, {"SB_RAM40_4KNW", "BRAM", 1}, {"SB_RAM40_4KNRNW", "BRAM", 1},
    {"SB_SPRAM256KA", "SPRAM", 1},
};

const std::vector<CellCost> kXilinxCosts = {
    {"INV", "LUT", 1},       {"LUT1", "LUT", 1},      {"LUT2", "LUT", 1},      {"LUT3", "LUT", 1},
    {"LUT4", "LUT", 1},      {"LUT5", "LUT", 1},      {"LUT6", "LUT", 1},
    {"LUT6_2", "LUT", 1},    {"SRL16E", "LUT", 1},    {"SRLC32E", "LUT", 1},
    {"RAM32X1S", "LUT", 1},  {"RAM64X1S", "LUT", 1},  {"RAM128X1S", "LUT", 2},
    {"RAM256X1S", "LUT", 4}, {"RAM32X1D", "LUT", 2},  {"RAM64X1D", "LUT", 2},
    {"RAM128X1D", "LUT", 4}, {"RAM32M", "LUT", 4},    {"RAM64M", "LUT", 4},
    {"RAM32M16", "LUT", 8},  {"RAM64M8", "LUT", 8},   {"RAM512X1S", "LUT", 8},
    {"FDRE", "FF", 1},       {"FDSE", "FF", 1},       {"FDCE", "FF", 1},
    {"FDPE", "FF", 1},       {"LDCE", "FF", 1},       {"LDPE", "FF", 1},
    {"DSP48E1", "DSP", 1},   {"DSP48E2", "DSP", 1},   {"RAMB36E1", "BRAM", 1},
    {"RAMB36E2", "BRAM", 1}, {"RAMB18E1", "BRAM", 0.5}, {"RAMB18E2", "BRAM", 0.5},
};

std::string quote(const fs::path& p) {
  std::string s = "'";
  for (char c : p.string()) s += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return s + "'";
}

// A path inside a Yosys script: Yosys splits script lines on blanks but keeps
// double-quoted words whole.
std::string ys_quote(const fs::path& p) {
  if (p.string().find('"') != std::string::npos)
    throw hw::Error(fmt::format("path {} has a double quote, which Yosys scripts cannot hold",
                                p.string()));
  return "\"" + p.string() + "\"";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
  if (!out) throw hw::Error(fmt::format("cannot write {}", p.string()));
}

std::string yosys_synth_command(const Board& b) {
  if (b.family == "ice40") return "synth_ice40 -dsp -spram";
  // -noiopad: the accelerator sits inside the Zynq design, its ports are internal.
  // -flatten: optimize across module boundaries as Vivado does; it also keeps Yosys
  // 0.23's `stat -json` valid (on a hierarchy it prints the tree inside the JSON).
  return fmt::format("synth_xilinx -family {} -noiopad -flatten", b.family);
}

std::filesystem::path source_dir() {
  const char* env = std::getenv("KILN_SOURCE_DIR");
  return (env != nullptr && *env != '\0') ? fs::path(env) : fs::path(KILN_SOURCE_TREE);
}

// Runs a tool in out_dir; throws naming its log and the lines that say why.
void run_tool(const std::string& tool, const std::string& args, const fs::path& out_dir,
              const std::string& log_name) {
  std::string cmd = fmt::format("cd {} && {} {} > {} 2>&1", quote(out_dir), tool, args, log_name);
  int rc = std::system(cmd.c_str());
  if (rc == 0) return;
  std::string why, line;
  std::stringstream lines(slurp(out_dir / log_name));
  while (std::getline(lines, line))
    if (line.find("ERROR") != std::string::npos || line.find("not found") != std::string::npos)
      why += (why.empty() ? "" : "; ") + line;
  throw hw::Error(fmt::format("{} failed (exit status {}): {}; see {}", tool, rc,
                              why.empty() ? "no ERROR line" : why,
                              (out_dir / log_name).string()));
}

// nextpnr-ice40 on the netlist for each seed in turn until one meets the target, then
// icepack on the best: fmax and the bitstream. Timing that falls short of the target is
// reported (fmax and a note), not an error: the numbers are the point of the report.
void place_and_route(const Board& board, const SynthOptions& opt, SynthReport& rep) {
  if (board.constraints.empty())
    throw hw::Error(fmt::format("board {} has a top but no constraints (pin) file", board.name));
  const fs::path& out = rep.out_dir;
  const std::vector<int>& seeds = opt.seeds.empty() ? board.pnr_seeds : opt.seeds;
  std::string common = fmt::format("--{} --package {} --json netlist.json --pcf {} --freq {}",
                                   board.part, board.package,
                                   quote(fs::absolute(board.dir / board.constraints)),
                                   board.target_mhz);
  std::optional<int> best_seed;
  double best = 0;
  std::vector<std::string> tried;
  for (int seed : seeds) {
    std::string tag = fmt::format("seed{}", seed);
    run_tool(opt.nextpnr,
             fmt::format("{} --seed {} --asc {}.asc --report {}.json --timing-allow-fail", common,
                         seed, tag, tag),
             out, fmt::format("nextpnr-{}.log", tag));
    double f = parse_nextpnr_fmax(slurp(out / (tag + ".json")));
    tried.push_back(fmt::format("seed {}: {:.1f} MHz", seed, f));
    if (!best_seed || f > best) best_seed = seed, best = f;
    if (f >= board.target_mhz) break;
  }
  std::string tag = fmt::format("seed{}", *best_seed);
  fs::copy_file(out / (tag + ".asc"), out / "kiln.asc", fs::copy_options::overwrite_existing);
  fs::copy_file(out / (tag + ".json"), out / "nextpnr.json", fs::copy_options::overwrite_existing);
  fs::copy_file(out / fmt::format("nextpnr-{}.log", tag), out / "nextpnr.log",
                fs::copy_options::overwrite_existing);
  rep.flow += fmt::format("; {} --{} --package {} --freq {} --seed {}; {} kiln.asc kiln.bin",
                          opt.nextpnr, board.part, board.package, board.target_mhz, *best_seed,
                          opt.icepack);
  rep.fmax_mhz = best;
  run_tool(opt.icepack, "kiln.asc kiln.bin", out, "icepack.log");
  rep.bitstream = out / "kiln.bin";
  if (!fs::is_regular_file(*rep.bitstream) || fs::file_size(*rep.bitstream) == 0)
    throw hw::Error(fmt::format("icepack wrote no bitstream at {}", rep.bitstream->string()));
  std::string runs;
  for (const std::string& t : tried) runs += (runs.empty() ? "" : ", ") + t;
  rep.notes.push_back(fmt::format("{}: fmax {:.1f} MHz with seed {}, target {} MHz (placements: {})",
                                  best >= board.target_mhz ? "placed and routed"
                                                           : "timing not met",
                                  best, *best_seed, board.target_mhz, runs));
}

}  // namespace

fs::path boards_dir() { return source_dir() / "boards"; }

SynthOptions default_synth_options(const fs::path& out_dir) {
  SynthOptions opt;
  opt.rtl_dir = source_dir() / "hw" / "rtl";
  std::stringstream list(KILN_RTL_SOURCE_FILES);
  for (std::string f; std::getline(list, f, ',');) opt.rtl_sources.push_back(f);
  std::stringstream uart(KILN_UART_TOP_SOURCE_FILES);
  for (std::string f; std::getline(uart, f, ',');) opt.uart_top_sources.push_back(f);
  opt.out_dir = out_dir;
  return opt;
}

hw::Config load_config(const std::string& name_or_path) {
  fs::path p(name_or_path);
  if (fs::is_regular_file(p)) return hw::Config::from_file(p);
  fs::path named = source_dir() / "hw" / "config" / (name_or_path + ".json");
  if (fs::is_regular_file(named)) return hw::Config::from_file(named);
  throw hw::Error(fmt::format("configuration '{}' is neither a file nor {}", name_or_path,
                              named.string()));
}

const Resource& SynthReport::resource(const std::string& kind) const {
  for (const Resource& r : resources)
    if (r.kind == kind) return r;
  throw hw::Error(fmt::format("synthesis report has no resource kind '{}'", kind));
}

bool SynthReport::fits() const {
  for (const Resource& r : resources)
    if (r.used > static_cast<double>(r.available)) return false;
  return true;
}

nlohmann::json SynthReport::to_json() const {
  nlohmann::json res = nlohmann::json::object();
  for (const Resource& r : resources)
    res[r.kind] = {{"used", r.used}, {"available", r.available}, {"percent", r.percent()}};
  nlohmann::json j = {{"board", board},     {"config", config},
                      {"part", part},       {"flow", flow},
                      {"resources", res},   {"fits", fits()},
                      {"notes", notes},     {"out_dir", out_dir.string()},
                      {"seconds", seconds}, {"check_problems", check_problems}};
  j["fmax_mhz"] = fmax_mhz ? nlohmann::json(*fmax_mhz) : nlohmann::json(nullptr);
  j["bitstream"] = bitstream ? nlohmann::json(bitstream->string()) : nlohmann::json(nullptr);
  return j;
}

std::map<std::string, int64_t> parse_yosys_stat_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw hw::Error(fmt::format("Yosys stat -json output does not parse: {}", e.what()));
  }
  // "design" sums the hierarchy below the top; a single flat module has no "design".
  const nlohmann::json* design = nullptr;
  if (j.contains("design")) {
    design = &j["design"];
  } else if (j.contains("modules") && j["modules"].size() == 1) {
    design = &j["modules"].begin().value();
  }
  if (design == nullptr || !design->contains("num_cells_by_type"))
    throw hw::Error("Yosys stat -json output has no design cell counts");
  std::map<std::string, int64_t> cells;
  for (const auto& [type, n] : (*design)["num_cells_by_type"].items())
    cells[type] = n.get<int64_t>();
  return cells;
}

double parse_nextpnr_fmax(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("fmax") || !j["fmax"].is_object() || j["fmax"].empty())
    throw hw::Error("nextpnr's report has no fmax");
  double fmax = 0;
  bool first = true;
  for (const auto& [clock, t] : j["fmax"].items()) {
    if (!t.contains("achieved") || !t["achieved"].is_number())
      throw hw::Error(fmt::format("nextpnr's report: clock {} has no achieved fmax", clock));
    double f = t["achieved"].get<double>();
    fmax = first ? f : std::min(fmax, f);
    first = false;
  }
  return fmax;
}

std::vector<Resource> count_resources(const std::string& family,
                                      const std::map<std::string, int64_t>& cells,
                                      const std::map<std::string, int64_t>& available) {
  const std::vector<CellCost>& costs = family == "ice40" ? kIce40Costs : kXilinxCosts;
  std::map<std::string, double> used;
  for (const CellCost& c : costs) {
    auto it = cells.find(c.cell);
    if (it != cells.end()) used[c.kind] += c.units * static_cast<double>(it->second);
  }
  std::vector<Resource> out;
  for (const std::string& kind : kResourceKinds) {
    auto a = available.find(kind);
    out.push_back({kind, used[kind], a == available.end() ? 0 : a->second});
  }
  return out;
}

SynthReport run_synth(const Board& board, const hw::Config& cfg, const SynthOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  fs::create_directories(opt.out_dir);
  const fs::path out = fs::absolute(opt.out_dir);
  SynthReport rep;
  rep.board = board.name;
  rep.config = cfg.name();
  rep.part = board.part;
  rep.out_dir = out;

  fs::path pkg = out / hw::kRtlParamsFile;
  write_text(pkg, hw::rtl_params_package(cfg, opt.axi_data_bits));
  std::string sources = ys_quote(pkg);
  const bool board_top = !board.top_module.empty();
  std::vector<fs::path> files;
  for (const std::string& s : board_top ? opt.uart_top_sources : opt.rtl_sources)
    files.push_back(opt.rtl_dir / s);
  for (const std::string& s : board.top_sources) files.push_back(board.dir / s);
  for (const fs::path& f : files) {
    fs::path p = fs::absolute(f);
    if (!fs::is_regular_file(p)) throw hw::Error(fmt::format("RTL source {} not found", p.string()));
    sources += " " + ys_quote(p);
  }
  const std::string top = board_top ? board.top_module : opt.top;
  std::string synth = yosys_synth_command(board);
  // Xilinx DSP48s (25 x 18) hold two int8 GEMM products each (kiln_gemm.sv).
  std::string top_params = board.family == "ice40" ? "" : " -chparam GEMM_PAIR_PRODUCTS 1";
  // A board top's PLL makes target_mhz (board.h pll_divf).
  if (board_top && board.pll_divf >= 0) top_params += fmt::format(" -chparam PLL_DIVF {}", board.pll_divf);
  fs::path stat = out / "stat.json";
  fs::path log = out / "yosys.log";
  rep.flow = fmt::format("yosys: {} -top {}{}", synth, top, top_params);
  // Yosys runs in out_dir and writes its reports by bare name: `tee -o` and the
  // backends take a file name verbatim, quotes included.
  std::string script = fmt::format(
      "read_verilog -sv {srcs}\n"
      "{cells}"
      "hierarchy -check -top {top}{params}\n"
      "{synth} -top {top}\n"
      "check\n"
      "tee -q -o stat.json stat -json\n"
      "tee -o stat.txt stat\n"
      "{write_netlist}\n",
      fmt::arg("srcs", sources), fmt::arg("top", top), fmt::arg("params", top_params),
      fmt::arg("synth", synth),
      // A board top instantiates the family's primitives (PLL, SPRAM): their cell library.
      fmt::arg("cells", board.family == "ice40" ? "read_verilog -lib +/ice40/cells_sim.v\n" : ""),
      fmt::arg("write_netlist", board.family == "ice40" ? "write_json netlist.json" : ""));
  fs::path ys = out / "synth.ys";
  write_text(ys, script);
  fs::path err = out / "yosys.stderr";
  std::string cmd = fmt::format("cd {} && {} -q -l yosys.log -s synth.ys > /dev/null 2> yosys.stderr",
                                quote(opt.out_dir), opt.yosys);
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    // Yosys's stderr holds its warnings too; the ERROR line (or the shell's) says why.
    std::string why, line;
    std::stringstream lines(slurp(err));
    while (std::getline(lines, line))
      if (line.rfind("Warning:", 0) != 0) why += (why.empty() ? "" : "; ") + line;
    throw hw::Error(fmt::format("yosys failed for board {} (exit status {}): {}; see {}",
                                board.name, rc, why, log.string()));
  }

  rep.cells = parse_yosys_stat_json(slurp(stat));
  // `check` on the netlist (multiple drivers, undriven wires, combinational loops) logs
  // "Found and reported N problems."; the last one is the netlist's.
  {
    std::string text = slurp(log), key = "Found and reported ";
    size_t at = text.rfind(key);
    if (at != std::string::npos) rep.check_problems = std::atoi(text.c_str() + at + key.size());
    if (rep.check_problems > 0)
      rep.notes.push_back(fmt::format("yosys check: {} problems in the netlist (see {})", rep.check_problems, log.string()));
  }
  rep.resources = count_resources(board.family, rep.cells, board.available);
  for (const Resource& r : rep.resources)
    if (r.used > static_cast<double>(r.available))
      rep.notes.push_back(fmt::format("does not fit: {} {} used, {} available", r.kind, r.used,
                                      r.available));
  if (board_top && rep.fits()) {
    place_and_route(board, opt, rep);
  } else if (board_top) {
    rep.notes.push_back("no place and route: the board top does not fit the part");
  } else {
    rep.notes.push_back(board.family == "ice40"
                            ? "Yosys estimate of the accelerator top (kiln_top) alone; the board "
                              "has no top for place and route, so no fmax and no bitstream"
                            : "Yosys estimate before placement; Vivado (boards/" + board.name +
                                  "/vivado.tcl) builds the bitstream and reports timing");
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace kiln::boards
