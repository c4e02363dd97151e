#include "examples/matrix-unit/mxu_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace kiln::mxu {

namespace {

constexpr int kM = MxuConfig::kTileM, kK = MxuConfig::kTileK, kN = MxuConfig::kTileN;

int64_t dma_cycles(const MxuConfig& c, uint64_t bytes) {
  return c.dram_latency + static_cast<int64_t>((bytes + c.dram_bytes_per_cycle - 1) / c.dram_bytes_per_cycle);
}

// [offset, offset + size) within a scratchpad of `capacity` elements.
void check_sram(const char* what, uint64_t offset, uint64_t size, uint64_t capacity) {
  if (offset > capacity || size > capacity - offset)
    throw MxuError(fmt::format("{} [{}, {}) is outside its {} elements", what, offset, offset + size, capacity));
}

}  // namespace

const char* opcode_name(Opcode op) {
  switch (op) {
    case Opcode::kLoadA: return "load_a";
    case Opcode::kLoadW: return "load_w";
    case Opcode::kLoadBias: return "load_bias";
    case Opcode::kMatmul: return "matmul";
    case Opcode::kStore: return "store";
  }
  return "?";
}

MxuDevice::MxuDevice(MxuConfig config)
    : config_(config),
      dram_(static_cast<size_t>(config.dram_bytes)),
      a_(static_cast<size_t>(config.a_bytes)),
      w_(static_cast<size_t>(config.w_bytes)),
      acc_(static_cast<size_t>(config.acc_bytes / 4)) {
  if (config.a_bytes < kM * kK || config.w_bytes < kK * kN || config.acc_bytes < 4 * kM * kN)
    throw MxuError("MXU scratchpads must hold at least one tile each");
  if (config.dram_bytes_per_cycle <= 0 || config.dram_latency < 0) throw MxuError("MXU DRAM timing must be positive");
}

uint64_t MxuDevice::alloc(int64_t bytes) {
  uint64_t size = static_cast<uint64_t>(std::max<int64_t>(bytes, 1) + 63) / 64 * 64;
  if (bytes < 0 || size > dram_.size() - next_)
    throw MxuError(fmt::format("MXU DRAM is full: {} bytes asked, {} of {} free", bytes, dram_.size() - next_, dram_.size()));
  uint64_t addr = next_;
  next_ += size;
  return addr;
}

void MxuDevice::write(uint64_t addr, std::span<const uint8_t> data) {
  if (addr > dram_.size() || data.size() > dram_.size() - addr)
    throw MxuError(fmt::format("MXU DRAM write of {} bytes at {:#x} is out of range", data.size(), addr));
  std::memcpy(dram_.data() + addr, data.data(), data.size());
}

void MxuDevice::read(uint64_t addr, std::span<uint8_t> out) const {
  if (addr > dram_.size() || out.size() > dram_.size() - addr)
    throw MxuError(fmt::format("MXU DRAM read of {} bytes at {:#x} is out of range", out.size(), addr));
  std::memcpy(out.data(), dram_.data() + addr, out.size());
}

// The DRAM address of a 2-d access, checked: `rows` rows of `row_bytes`, `pitch` apart.
uint64_t MxuDevice::dram_span(const Command& c, const std::vector<uint64_t>& args, uint64_t rows, uint64_t row_bytes,
                              uint64_t pitch) const {
  if (c.arg < 0 || static_cast<size_t>(c.arg) >= args.size())
    throw MxuError(fmt::format("argument {} of {}", c.arg, args.size()));
  if (rows == 0 || row_bytes == 0) throw MxuError("an empty transfer");
  if (rows > 1 && pitch < row_bytes) throw MxuError(fmt::format("row pitch {} is less than a row ({})", pitch, row_bytes));
  uint64_t base = args[static_cast<size_t>(c.arg)] + c.dram;
  uint64_t end = base + (rows - 1) * pitch + row_bytes;
  if (base < c.dram || end > dram_.size() || end < base)
    throw MxuError(fmt::format("DRAM [{:#x}, {:#x}) is outside the {} bytes of DRAM", base, end, dram_.size()));
  return base;
}

void MxuDevice::execute(const Command& c, const std::vector<uint64_t>& args, RunStats& s) {
  switch (c.op) {
    case Opcode::kLoadA:
    case Opcode::kLoadW: {
      bool is_a = c.op == Opcode::kLoadA;
      int8_t* sram = is_a ? a_.data() : w_.data();
      check_sram(is_a ? "activations" : "weights", c.sram, uint64_t{c.rows} * c.cols, is_a ? a_.size() : w_.size());
      uint64_t base = dram_span(c, args, c.rows, c.cols, c.stride);
      for (uint32_t r = 0; r < c.rows; ++r)
        std::memcpy(sram + c.sram + uint64_t{r} * c.cols, dram_.data() + base + uint64_t{r} * c.stride, c.cols);
      // New weights under the array's tile leave the array stale.
      if (!is_a) stationary_ = -1;
      s.dram_bytes += int64_t{c.rows} * c.cols;
      s.cycles += dma_cycles(config_, uint64_t{c.rows} * c.cols);
      return;
    }
    case Opcode::kLoadBias: {
      check_sram("accumulators", c.sram, uint64_t{c.rows} * c.cols, acc_.size());
      uint64_t base = dram_span(c, args, 1, uint64_t{c.cols} * 4, 0);
      std::vector<int32_t> bias(c.cols);
      std::memcpy(bias.data(), dram_.data() + base, bias.size() * 4);
      for (uint32_t r = 0; r < c.rows; ++r) std::copy(bias.begin(), bias.end(), acc_.begin() + c.sram + int64_t{r} * c.cols);
      s.dram_bytes += int64_t{c.cols} * 4;
      s.cycles += dma_cycles(config_, uint64_t{c.cols} * 4) + c.rows;
      return;
    }
    case Opcode::kMatmul: {
      if (c.a_pitch < kK || c.acc_pitch < kN) throw MxuError(fmt::format("pitches {} and {} are less than a tile", c.a_pitch, c.acc_pitch));
      check_sram("activations", c.a, uint64_t{kM - 1} * c.a_pitch + kK, a_.size());
      check_sram("weights", c.w, kK * kN, w_.size());
      check_sram("accumulators", c.acc, uint64_t{kM - 1} * c.acc_pitch + kN, acc_.size());
      if (stationary_ != c.w) {
        stationary_ = c.w;
        ++s.weight_fills;
        s.cycles += kK;
      }
      const int8_t* w = w_.data() + c.w;
      for (int i = 0; i < kM; ++i) {
        const int8_t* a = a_.data() + c.a + int64_t{i} * c.a_pitch;
        int32_t* acc = acc_.data() + c.acc + int64_t{i} * c.acc_pitch;
        for (int k = 0; k < kK; ++k)
          for (int j = 0; j < kN; ++j) acc[j] += int32_t{a[k]} * int32_t{w[k * kN + j]};
      }
      ++s.matmuls;
      s.cycles += kM;
      return;
    }
    case Opcode::kStore: {
      if (c.shift < 0 || c.shift > 31) throw MxuError(fmt::format("store shift {} is outside 0..31", c.shift));
      check_sram("accumulators", c.sram, uint64_t{c.rows} * c.cols, acc_.size());
      uint64_t base = dram_span(c, args, c.rows, c.cols, c.stride);
      int32_t lo = c.relu ? 0 : -128;
      for (uint32_t r = 0; r < c.rows; ++r)
        for (uint32_t j = 0; j < c.cols; ++j) {
          int32_t v = acc_[c.sram + uint64_t{r} * c.cols + j] >> c.shift;
          dram_[base + uint64_t{r} * c.stride + j] = static_cast<uint8_t>(static_cast<int8_t>(std::clamp(v, lo, 127)));
        }
      s.dram_bytes += int64_t{c.rows} * c.cols;
      s.cycles += dma_cycles(config_, uint64_t{c.rows} * c.cols);
      return;
    }
  }
  throw MxuError(fmt::format("unknown opcode {}", static_cast<int>(c.op)));
}

RunStats MxuDevice::run(const std::vector<Command>& commands, const std::vector<uint64_t>& args) {
  RunStats s;
  stationary_ = -1;
  for (size_t k = 0; k < commands.size(); ++k) {
    try {
      execute(commands[k], args, s);
    } catch (const MxuError& e) {
      throw MxuError(fmt::format("MXU command {} ({}): {}", k, opcode_name(commands[k].op), e.what()));
    }
    ++s.commands;
  }
  return s;
}

}  // namespace kiln::mxu
