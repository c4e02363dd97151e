#pragma once
// A board (boards/<name>/board.json): the FPGA part, its clock, the accelerator
// configuration it carries, how the host reaches it, its device memory, and the
// resources the part has, which synthesis reports are measured against.

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln::boards {

// Resource kinds reported for every board; a part without one has 0 available.
inline const std::vector<std::string> kResourceKinds = {"LUT", "FF", "DSP", "BRAM", "SPRAM"};

struct Board {
  std::string name;
  std::string description;
  std::string family;  // the synthesis flow: "ice40", "xc7" (Zynq-7000), "xcup" (ZynqMP)
  std::string part;    // e.g. "up5k", "xc7z020clg400-1"
  std::string package;
  double target_mhz = 0;  // the clock the design is placed and routed for
  std::string config;     // hw/config name or a path
  std::filesystem::path dir;
  std::string constraints;                   // file in dir; empty when the board has none
  // The board's own top, when it has one that place and route can take to a bitstream:
  // its module, its files in dir, and the RTL it is built on ("uart_top": the in-order
  // core with device memory and the UART host link, hw/rtl/kiln_uart_top.cmake). Without
  // one, the flow synthesizes the accelerator (kiln_top) alone, as an estimate.
  std::string top_module;
  std::vector<std::string> top_sources;
  std::string top_rtl;
  // A board top's iCE40 PLL (SB_PLL40 with DIVR 0 and DIVQ 5, as kiln_icebreaker has it):
  // the flow sets the top's PLL_DIVF parameter so that clock_mhz * (PLL_DIVF + 1) / 32
  // is target_mhz; -1 when the board top has no PLL (board.json "pll": false).
  double clock_mhz = 0;
  int pll_divf = -1;
  // Placement seeds nextpnr tries in turn until the design meets target_mhz (iCE40
  // timing on a full part moves by +-10% with the seed); the best is kept if none does.
  std::vector<int> pnr_seeds = {1};
  std::map<std::string, int64_t> available;  // kind -> units the part has
  nlohmann::json json;                       // the whole board.json
};

// Reads boards/<name>/board.json (or a board.json path, or a board folder) and checks
// the keys; throws hw::Error naming the file and the key.
Board load_board(const std::string& name_or_path, const std::filesystem::path& boards_dir);

// Names of the folders under boards_dir that hold a board.json.
std::vector<std::string> board_names(const std::filesystem::path& boards_dir);

}  // namespace kiln::boards
