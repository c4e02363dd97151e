#pragma once
// The MXU: a weight-stationary int8 matrix unit, the example of an accelerator that is
// not the VTA (examples/matrix-unit/README.md). Its one compute instruction multiplies
// an M x K tile of activations by the K x N weight tile held in the array and adds the
// M x N int32 product into the accumulators: M = 4 rows (output pixels), K = 32, N = 8.
// Three scratchpads of fixed capacity (activations, weights, accumulators) are filled
// and drained by 2-d DMA commands from its DRAM; a store requantizes (arithmetic shift,
// clip to int8 or a ReLU's range) on the way out.
//
// MxuDevice is its functional model: it executes a command list, checks every command
// (opcode, sizes, scratchpad and DRAM bounds), and counts cycles with a simple model:
// a DMA costs the DRAM latency plus its bytes at the DRAM's width, a tile multiply
// streams its M rows through the array, and changing the stationary weight tile costs
// K cycles to fill the array; nothing overlaps.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "support/error.h"

namespace kiln::mxu {

// A bad command, a bad address or a command list that does not fit.
class MxuError : public Error {
 public:
  using Error::Error;
};

struct MxuConfig {
  static constexpr int kTileM = 4, kTileK = 32, kTileN = 8;
  int64_t a_bytes = 32 << 10;    // activation scratchpad (int8)
  int64_t w_bytes = 64 << 10;    // weight scratchpad (int8, whole K x N tiles)
  int64_t acc_bytes = 16 << 10;  // accumulators (int32)
  int64_t dram_bytes = 64 << 20;
  int dram_latency = 32;         // cycles before a DMA's first beat
  int dram_bytes_per_cycle = 16;
};

enum class Opcode : uint8_t {
  kLoadA,     // DRAM -> activations: `rows` rows of `cols` bytes, DRAM row pitch `stride`
  kLoadW,     // DRAM -> weights: the same 2-d copy
  kLoadBias,  // DRAM int32[cols] -> accumulators, broadcast to `rows` rows of pitch `cols`
  kMatmul,    // acc[acc + i*acc_pitch + j] += sum_k A[a + i*a_pitch + k] * W[w + k*N + j]
  kStore,     // accumulators `rows` x `cols` (pitch `cols`) -> requantized int8 in DRAM
};

// One command. DRAM addresses are relocated: argument `arg`'s base plus `dram`, so a
// command list is made ahead of time and run on buffers allocated later.
struct Command {
  Opcode op = Opcode::kLoadA;
  int arg = 0;           // the DRAM argument (loads and stores)
  uint64_t dram = 0;     // byte offset into that argument
  uint32_t sram = 0;     // scratchpad offset: bytes (A, W), int32 elements (accumulators)
  uint32_t rows = 0, cols = 0, stride = 0;
  uint32_t a = 0, a_pitch = 0, w = 0, acc = 0, acc_pitch = 0;  // kMatmul operands
  int shift = 0;         // kStore
  bool relu = false;     // kStore
};

// What one run measured.
struct RunStats {
  int64_t cycles = 0, matmuls = 0, weight_fills = 0, dram_bytes = 0, commands = 0;
};

class MxuDevice {
 public:
  explicit MxuDevice(MxuConfig config = {});
  const MxuConfig& config() const { return config_; }

  // Device memory: a bump allocator over DRAM (64-byte aligned); MxuError when full.
  uint64_t alloc(int64_t bytes);
  void write(uint64_t addr, std::span<const uint8_t> data);
  void read(uint64_t addr, std::span<uint8_t> out) const;

  // Runs `commands` with argument i based at `args[i]` (addresses from alloc()).
  // MxuError naming the command's index and what is wrong.
  RunStats run(const std::vector<Command>& commands, const std::vector<uint64_t>& args);

 private:
  void execute(const Command& c, const std::vector<uint64_t>& args, RunStats& stats);
  uint64_t dram_span(const Command& c, const std::vector<uint64_t>& args, uint64_t rows, uint64_t row_bytes,
                     uint64_t pitch) const;

  MxuConfig config_;
  std::vector<uint8_t> dram_;
  uint64_t next_ = 0;
  std::vector<int8_t> a_, w_;
  std::vector<int32_t> acc_;
  int64_t stationary_ = -1;  // the weight tile in the array, -1 for none
};

const char* opcode_name(Opcode op);

}  // namespace kiln::mxu
