#pragma once
// The synthesis flow of a board: the accelerator top (kiln_top) of the board's
// configuration through Yosys for the board's FPGA family, and the resources it uses
// against those the part has.
//
//   ice40: synth_ice40 -dsp -spram (multipliers on SB_MAC16, memories in EBR/SPRAM)
//   xc7:   synth_xilinx -family xc7  (Zynq-7000: LUT6, FDRE, DSP48E1, RAMB36E1/18E1)
//   xcup:  synth_xilinx -family xcup (ZynqMP:    LUT6, FDRE, DSP48E2, RAMB36E2/18E2)
//
// These are Yosys's counts before placement: estimates for the Xilinx parts (Vivado
// packs and optimizes differently), no fmax. A board with its own top (board.json
// top_module: the iCEBreaker's) goes on through place and route (nextpnr-ice40, whose
// report gives fmax) and icepack to a bitstream.

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "boards/flow/board.h"
#include "hw/spec/config.h"

namespace kiln::boards {

struct Resource {
  std::string kind;  // LUT, FF, DSP, BRAM, SPRAM
  double used = 0;   // BRAM may be fractional: a RAMB18 is half a RAMB36
  int64_t available = 0;
  double percent() const { return available > 0 ? 100.0 * used / available : 0.0; }
};

struct SynthReport {
  std::string board;
  std::string config;
  std::string part;
  std::string flow;                     // the Yosys command that ran
  std::vector<Resource> resources;      // one per kResourceKinds, in that order
  std::map<std::string, int64_t> cells;  // the netlist's cells by type
  std::optional<double> fmax_mhz;       // known only after place and route
  std::optional<std::filesystem::path> bitstream;
  std::filesystem::path out_dir;        // logs, netlist, reports
  double seconds = 0;                   // wall time of the flow
  std::vector<std::string> notes;       // what does not fit, what was not run
  int check_problems = -1;              // Yosys `check` after synthesis (-1: not read)

  const Resource& resource(const std::string& kind) const;
  bool fits() const;
  // {board, config, part, flow, resources: {KIND: {used, available, percent}},
  //  fmax_mhz (null if unknown), bitstream (null if none), notes, out_dir, check_problems}
  nlohmann::json to_json() const;
};

struct SynthOptions {
  std::filesystem::path rtl_dir;          // hw/rtl
  std::vector<std::string> rtl_sources;   // file names under rtl_dir, in compile order
  std::string top = "kiln_top";
  // The RTL under a board top of top_rtl "uart_top" (hw/rtl/kiln_uart_top.cmake).
  std::vector<std::string> uart_top_sources;
  std::filesystem::path out_dir;          // created if missing
  std::string yosys = "yosys";
  std::string nextpnr = "nextpnr-ice40";
  std::string icepack = "icepack";
  std::vector<int> seeds;                 // nextpnr's placement seeds (empty: the board's)
  int axi_data_bits = 64;
};

// The boards folder and hw/rtl of this source tree (KILN_SOURCE_DIR overrides where
// the tree is), and options naming the RTL sources of hw/rtl/kiln_rtl.cmake.
std::filesystem::path boards_dir();
SynthOptions default_synth_options(const std::filesystem::path& out_dir);
// A configuration given as a file or as a name in hw/config ("tiny", "default").
hw::Config load_config(const std::string& name_or_path);

// Runs the board's flow on configuration `cfg`; throws hw::Error if a tool fails
// (naming the tool and its log file).
SynthReport run_synth(const Board& board, const hw::Config& cfg, const SynthOptions& opt);

// Parsing and counting, separate so that they are tested without running Yosys.
// Cells by type of the design in the output of Yosys's `stat -json`.
std::map<std::string, int64_t> parse_yosys_stat_json(const std::string& text);
// The lowest fmax over the clocks of a nextpnr `--report` JSON file's text, in MHz.
double parse_nextpnr_fmax(const std::string& text);
// Resource use of a mapped netlist of `family` (see the table in synth.cc).
std::vector<Resource> count_resources(const std::string& family,
                                      const std::map<std::string, int64_t>& cells,
                                      const std::map<std::string, int64_t>& available);

}  // namespace kiln::boards
