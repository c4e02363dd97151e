#pragma once
// Random legal instruction streams for differential testing (fsim against the
// Verilated RTL and the SystemC platform). A stream is legal for every valid
// configuration: every access is in range, every token pushed is popped, FINISH is
// ordered after every load and store, and no two modules race on a buffer or on DRAM,
// so the final DRAM image is the same on every correct device. Every buffer element a
// stream reads was written by it first, so the result does not depend on the state a
// device starts in. Deterministic from the seed.

#include <cstdint>
#include <string>
#include <vector>

#include "hw/spec/config.h"
#include "hw/spec/isa.h"

namespace kiln::sim::testing {

struct RandomProgramOptions {
  int groups = 4;                 // load -> compute -> store rounds
  int max_phase_insns = 6;        // random instructions per module per round (at least 1)
  bool padding = true;            // padded INP/WGT/ACC loads, on every side
  uint32_t max_window = 256;      // elements of each buffer a stream touches (clamped)
  int max_iter = 4;               // iter_out and iter_in are drawn from [0, max_iter]
  int max_uops = 4;               // micro-ops per GEMM/ALU
  bool overlapping_dst = true;    // a GEMM/ALU may update one acc element more than once
  bool multi_tokens = true;       // up to 3 load->compute tokens in flight per round
  // Between rounds, a burst that fills one module's command queue to the RTL's depth:
  // kCmdQueueDepth + 1 no-ops of one module that each wait for a token which only the
  // no-ops of its neighbour after them push (fetch dispatches them only once all of the
  // first fit). One more would deadlock the RTL (fsim refuses that).
  bool queue_limits = false;
};

// A contiguous DRAM range the stream uses.
struct DramRegion {
  std::string name;     // "insns", "uops", "inp3", "out7", ...
  uint64_t addr = 0;    // byte address
  uint64_t bytes = 0;
  bool output = false;  // written by STORE (zero in the initial image)
};

struct RandomProgram {
  std::vector<hw::Insn> insns;   // the stream, FINISH last
  std::vector<hw::Uop> uops;     // the micro-op blob (region "uops")
  std::vector<uint8_t> dram;     // the initial DRAM image: stream, blob, inputs; outputs zero
  uint64_t insn_addr = 0;        // where the encoded stream lies in `dram`
  uint32_t insn_count = 0;
  std::vector<DramRegion> regions;
};

// Throws hw::Error only for options it cannot honour (e.g. groups < 1).
RandomProgram random_program(const hw::Config& cfg, uint64_t seed,
                             const RandomProgramOptions& opts = {});

// One line per instruction, for failure reports.
std::string describe(const hw::Insn& insn);

}  // namespace kiln::sim::testing
