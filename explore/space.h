#pragma once
// The hardware half of the co-design space: accelerator configurations a board can
// carry. Each parameter is a configuration key (shared/ISA.md) with the values the
// search may give it; a point of the space is one value per key, numbered as the
// tuner numbers a template's knobs (tuner/space.h), so that records, resume and MPI
// work as they do for schedules. The other keys (element widths) stay as the board's
// configuration has them. The software half, each layer's schedule, is chosen per
// configuration by the cycle model (tiers.h).
//
// Ranges come from the board's family (space.cc) unless board.json has an "explore"
// object: {"LOG_BLOCK": [3, 5], "LOG_INP_BUFF_SIZE": [13, 17], ...} (inclusive).
#include <optional>
#include <string>
#include <vector>

#include "boards/flow/board.h"
#include "hw/spec/config.h"
#include "tuner/space.h"

namespace kiln::explore {

// How the board's accelerator runs, which tier 1 models and tier 3 simulates: the core
// (board.json "core") and its memory's response latency in cycles: 0 on a board top
// whose device memory is on chip (top_rtl "uart_top": kiln_devmem, the iCEBreaker's
// SPRAM, answers in the next cycle), else -1, the rtl device's AXI DRAM model.
struct CoreTiming {
  std::string core = "decoupled";
  int mem_latency = -1;
};

struct ParamRange {
  std::string key;  // a configuration key, e.g. "LOG_BLOCK"
  std::vector<int> values;
};

class HwSpace {
 public:
  // The space of `board`: its family's ranges (or board.json's "explore"), around the
  // board's own configuration. Throws hw::Error naming the board file and the key.
  static HwSpace for_board(const boards::Board& board, const hw::Config& base);

  const std::vector<ParamRange>& params() const { return params_; }
  const hw::Config& base() const { return base_; }
  const std::string& core() const { return timing_.core; }
  const CoreTiming& timing() const { return timing_; }
  int64_t size() const;
  // The largest BLOCK_IN or BLOCK_OUT of the space: a layer whose channels are multiples
  // of it runs on every configuration.
  int max_block() const;
  // The tuner's view: one categorical knob per parameter, in params() order.
  tuner::ConfigSpace knobs() const;
  // The configuration of point `index`, or the reason it is not one (a derived field
  // that does not fit the instruction format: hw::Config's own message).
  struct Point {
    std::optional<hw::Config> config;
    std::string invalid;
  };
  Point at(int64_t index) const;
  // The index of `cfg` if every one of its parameters is in range.
  std::optional<int64_t> index_of(const hw::Config& cfg) const;
  // A short name of a point's configuration: "1x16x16-i32k-w256k-a128k-u32k".
  static std::string short_name(const hw::Config& cfg);

 private:
  std::vector<ParamRange> params_;
  hw::Config base_ = hw::Config::vta_default();
  CoreTiming timing_;
};

}  // namespace kiln::explore
