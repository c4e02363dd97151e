// Boards and the synthesis report, without running Yosys: every board.json loads and
// names a configuration that exists; Yosys's stat output is parsed and counted.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "boards/flow/board.h"
#include "boards/flow/synth.h"
#include "hw/spec/error.h"

namespace kiln::boards {
namespace {

namespace fs = std::filesystem;

TEST(Boards, EveryBoardLoadsWithItsConfiguration) {
  std::vector<std::string> names = board_names(boards_dir());
  for (const char* required : {"icebreaker", "pynq-z1", "ultra96"})
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  for (const std::string& n : names) {
    Board b = load_board(n, boards_dir());
    EXPECT_EQ(b.name, n);
    EXPECT_GT(b.available.at("LUT"), 0) << n;
    EXPECT_GT(b.available.at("BRAM"), 0) << n;
    EXPECT_NO_THROW(load_config(b.config)) << n;
    EXPECT_TRUE(b.json.contains("host_link")) << n;
    EXPECT_TRUE(b.json.contains("device_memory")) << n;
  }
  Board ice = load_board("icebreaker", boards_dir());
  EXPECT_EQ(ice.family, "ice40");
  EXPECT_EQ(ice.config, "tiny");
  EXPECT_EQ(ice.available.at("SPRAM"), 4);
  EXPECT_TRUE(fs::is_regular_file(ice.dir / ice.constraints));
  EXPECT_EQ(ice.top_module, "kiln_icebreaker");
  EXPECT_EQ(ice.top_rtl, "uart_top");
  EXPECT_FALSE(ice.pnr_seeds.empty());
  ASSERT_EQ(ice.top_sources.size(), 1u);
  EXPECT_TRUE(fs::is_regular_file(ice.dir / ice.top_sources[0]));
  // The PLL makes the target: 12 MHz * (PLL_DIVF + 1) / 32.
  EXPECT_EQ(ice.clock_mhz * (ice.pll_divf + 1) / 32, ice.target_mhz);
  EXPECT_EQ(load_board("pynq-z1", boards_dir()).part, "xc7z020clg400-1");
  EXPECT_EQ(load_board("ultra96", boards_dir()).family, "xcup");
}

TEST(Boards, UnknownBoardAndBadKeysAreNamed) {
  try {
    load_board("no-such-board", boards_dir());
    FAIL();
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("pynq-z1"), std::string::npos) << e.what();
  }
  fs::path dir = fs::temp_directory_path() / "kiln_boards_test_bad";
  fs::create_directories(dir);
  std::ofstream(dir / "board.json") << R"({"name": "x", "family": "ecp5", "part": "p",
      "package": "q", "target_mhz": 10, "config": "tiny", "resources": {"LUT": 1}})";
  try {
    load_board(dir.string(), boards_dir());
    FAIL();
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("family 'ecp5'"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "board.json") << R"({"name": "x", "family": "ice40", "part": "p",
      "package": "q", "target_mhz": 10, "config": "tiny", "resources": {"LUTS": 1}})";
  try {
    load_board(dir.string(), boards_dir());
    FAIL();
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("resources.LUTS"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "board.json") << R"({"name": "x", "family": "ice40", "part": "p",
      "package": "q", "target_mhz": 10, "config": "tiny", "resources": {"LUT": 1},
      "top_module": "t", "top_sources": ["missing.sv"], "top_rtl": "uart_top"})";
  try {
    load_board(dir.string(), boards_dir());
    FAIL();
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("top source"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("missing.sv"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "board.json") << R"({"name": "x", "family": "ice40", "part": "p",
      "package": "q", "target_mhz": 10, "config": "tiny", "resources": {"LUT": 1},
      "pnr_seeds": []})";
  try {
    load_board(dir.string(), boards_dir());
    FAIL();
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("pnr_seeds is empty"), std::string::npos) << e.what();
  }
  // A board top's PLL cannot make 31 MHz from 12 (12 * n / 32 for a whole n).
  std::ofstream(dir / "ice.sv") << "module t; endmodule\n";
  std::ofstream(dir / "board.json") << R"({"name": "x", "family": "ice40", "part": "p",
      "package": "q", "clock_mhz": 12, "target_mhz": 31, "config": "tiny",
      "resources": {"LUT": 1}, "top_module": "t", "top_sources": ["ice.sv"],
      "top_rtl": "uart_top"})";
  try {
    load_board(dir.string(), boards_dir());
    FAIL();
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("target_mhz 31"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(SynthReport, ParsesNextpnrFmax) {
  // The shape of nextpnr-ice40's --report: the lowest achieved fmax over the clocks.
  EXPECT_DOUBLE_EQ(parse_nextpnr_fmax(R"({"fmax": {"clk": {"achieved": 41.5, "constraint": 30.0},
      "clk2": {"achieved": 33.25, "constraint": 30.0}}, "utilization": {}})"), 33.25);
  for (const char* bad : {"", "{}", R"({"fmax": {}})", R"({"fmax": {"clk": {"constraint": 30}}})"}) {
    try {
      parse_nextpnr_fmax(bad);
      FAIL() << bad;
    } catch (const hw::Error& e) {
      EXPECT_NE(std::string(e.what()).find("nextpnr"), std::string::npos) << e.what();
    }
  }
}

TEST(SynthReport, ParsesStatJsonAndCountsXilinxCells) {
  // The shape of Yosys 0.23 `stat -json` on a flattened netlist.
  const char* stat = R"({"creator": "Yosys 0.23", "modules": {"\\kiln_top": {
      "num_cells": 10, "num_cells_by_type": {"LUT6": 10, "LUT2": 5, "RAM64M": 2,
      "FDRE": 7, "DSP48E1": 3, "RAMB36E1": 4, "RAMB18E1": 3, "CARRY4": 9}}},
      "design": {"num_cells": 10, "num_cells_by_type": {"LUT6": 10, "LUT2": 5, "RAM64M": 2,
      "FDRE": 7, "DSP48E1": 3, "RAMB36E1": 4, "RAMB18E1": 3, "CARRY4": 9}}})";
  auto cells = parse_yosys_stat_json(stat);
  EXPECT_EQ(cells.at("LUT6"), 10);
  auto res = count_resources("xc7", cells, {{"LUT", 100}, {"FF", 200}, {"DSP", 10}, {"BRAM", 10}});
  ASSERT_EQ(res.size(), kResourceKinds.size());
  EXPECT_EQ(res[0].kind, "LUT");
  EXPECT_DOUBLE_EQ(res[0].used, 10 + 5 + 2 * 4);  // RAM64M: four LUTs
  EXPECT_DOUBLE_EQ(res[0].percent(), 23.0);
  EXPECT_DOUBLE_EQ(res[1].used, 7);
  EXPECT_DOUBLE_EQ(res[2].used, 3);
  EXPECT_DOUBLE_EQ(res[3].used, 5.5);  // a RAMB18 is half a block
  EXPECT_DOUBLE_EQ(res[4].used, 0);
  EXPECT_DOUBLE_EQ(res[4].percent(), 0);  // none available: no division by zero
}

TEST(SynthReport, CountsIce40CellsAndJsonHasTheIssueKeys) {
  auto res = count_resources("ice40",
                             {{"SB_LUT4", 100}, {"SB_DFFE", 5}, {"SB_DFFSR", 6}, {"SB_CARRY", 9},
                              {"SB_MAC16", 2}, {"SB_RAM40_4K", 3}, {"SB_SPRAM256KA", 4}},
                             {{"LUT", 5280}, {"FF", 5280}, {"DSP", 8}, {"BRAM", 30}, {"SPRAM", 4}});
  SynthReport r;
  r.board = "icebreaker";
  r.resources = res;
  EXPECT_DOUBLE_EQ(r.resource("FF").used, 11);
  EXPECT_DOUBLE_EQ(r.resource("SPRAM").percent(), 100);
  EXPECT_TRUE(r.fits());
  nlohmann::json j = r.to_json();
  EXPECT_EQ(j["board"], "icebreaker");
  EXPECT_TRUE(j["fmax_mhz"].is_null());
  EXPECT_TRUE(j["bitstream"].is_null());
  for (const std::string& k : kResourceKinds) {
    ASSERT_TRUE(j["resources"].contains(k)) << k;
    for (const char* f : {"used", "available", "percent"}) EXPECT_TRUE(j["resources"][k].contains(f));
  }
  EXPECT_DOUBLE_EQ(j["resources"]["LUT"]["used"].get<double>(), 100);
  r.resources[0].used = 6000;
  EXPECT_FALSE(r.fits());
}

TEST(SynthReport, AMissingYosysIsAnErrorNamingTheLog) {
  SynthOptions opt = default_synth_options(fs::temp_directory_path() / "kiln_boards_noyosys");
  opt.yosys = "/nonexistent/yosys";
  Board b = load_board("pynq-z1", boards_dir());
  try {
    run_synth(b, load_config("tiny"), opt);
    FAIL();
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("yosys.log"), std::string::npos) << e.what();
  }
  fs::remove_all(opt.out_dir);
}

}  // namespace
}  // namespace kiln::boards
