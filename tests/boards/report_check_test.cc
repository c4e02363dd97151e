// Sanity of a synthesis report written by `kiln synth --json` (the CTest that runs the
// flow is this test's fixture): the report has the keys; the GEMM's and ALU's
// multipliers sit on DSP blocks where the part has them; the scratchpads sit in block
// RAM, not in LUTs; logic and block RAM fit the part. KILN_BOARD_REPORT names the JSON file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "boards/flow/board.h"
#include "boards/flow/synth.h"

namespace kiln::boards {
namespace {

nlohmann::json report() {
  const char* path = std::getenv("KILN_BOARD_REPORT");
  if (path == nullptr) return nullptr;
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

double used(const nlohmann::json& r, const char* kind) {
  return r["resources"][kind]["used"].get<double>();
}
double available(const nlohmann::json& r, const char* kind) {
  return r["resources"][kind]["available"].get<double>();
}

TEST(BoardReport, IsSane) {
  nlohmann::json r = report();
  ASSERT_FALSE(r.is_null() || r.is_discarded()) << "KILN_BOARD_REPORT unset or not JSON";
  for (const char* k : {"board", "resources", "fmax_mhz", "bitstream"}) ASSERT_TRUE(r.contains(k)) << k;
  Board b = load_board(r["board"].get<std::string>(), boards_dir());
  hw::Config cfg = load_config(r["config"].get<std::string>());

  // Every multiplier (BATCH x BLOCK_IN x BLOCK_OUT products, one per ALU lane) wants a
  // DSP; Yosys may pack or split some, but at least the GEMM's products land on DSPs
  // as far as the part has them.
  if (available(r, "DSP") > 0) {
    double macs = double(cfg.batch()) * cfg.block_in() * cfg.block_out();
    EXPECT_GE(used(r, "DSP"), std::min(macs, available(r, "DSP")) * 0.5) << r.dump(2);
  }
  // The scratchpads' bits fit in the block RAM reported (36 Kb Xilinx blocks, 4 Kb iCE40
  // EBR); a scratchpad mapped to LUTs would leave BRAM short. OUT takes none: it is
  // ACC's low bits (shared/ISA.md, docs/isa.md).
  double sram_bits = 8.0 * (cfg.uop_buff_bytes() + cfg.inp_buff_bytes() + cfg.wgt_buff_bytes() +
                            cfg.acc_buff_bytes());
  double block_bits = b.family == "ice40" ? 4096.0 : 36864.0;
  double spram_bits = b.family == "ice40" ? 262144.0 * used(r, "SPRAM") : 0.0;
  EXPECT_GE(used(r, "BRAM") * block_bits + spram_bits, sram_bits) << r.dump(2);
  // Logic and memory fit the part. DSP blocks are not checked here: Yosys maps every
  // multiplier to a DSP without a budget (Vivado falls back to LUTs), so the report's
  // DSP count may exceed the part; "fits" and the notes say so.
  EXPECT_LE(used(r, "LUT"), available(r, "LUT")) << r.dump(2);
  EXPECT_LE(used(r, "BRAM"), available(r, "BRAM")) << r.dump(2);
  EXPECT_GT(used(r, "LUT"), 0);
  EXPECT_GT(used(r, "FF"), 0);
  // Yosys's `check` on the netlist: no multiple drivers, undriven wires or logic loops
  // (default.json's only synthesis in CI is the PYNQ-Z1's, docs/hardware.md).
  EXPECT_EQ(r["check_problems"].get<int>(), 0) << r.dump(2);

  // A board with its own top is placed, routed and packed: the bitstream exists, the
  // design meets the board's clock target, and the device memory sits in SPRAM.
  if (!b.top_module.empty()) {
    ASSERT_TRUE(r["bitstream"].is_string()) << r.dump(2);
    std::filesystem::path bin = r["bitstream"].get<std::string>();
    ASSERT_TRUE(std::filesystem::is_regular_file(bin)) << bin;
    EXPECT_GT(std::filesystem::file_size(bin), 100000u) << bin;  // a UP5K image is ~104 KB
    ASSERT_TRUE(r["fmax_mhz"].is_number()) << r.dump(2);
    EXPECT_GE(r["fmax_mhz"].get<double>(), b.target_mhz) << r.dump(2);
    EXPECT_LE(used(r, "DSP"), available(r, "DSP")) << r.dump(2);
    int64_t mem = b.json["device_memory"]["bytes"].get<int64_t>();
    if (b.json["device_memory"]["kind"] == "spram") {
      EXPECT_GE(used(r, "SPRAM") * 262144.0 / 8, double(mem)) << r.dump(2);
    }
    EXPECT_TRUE(r["fits"].get<bool>()) << r.dump(2);
  }
}

}  // namespace
}  // namespace kiln::boards
