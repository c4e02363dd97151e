#pragma once
// A test bench for fsim: a DRAM image, an Fsim on it, and builders for instructions
// and streams.

#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "hw/sim/fsim/fsim.h"
#include "hw/spec/config.h"
#include "hw/spec/isa.h"

namespace kiln::sim::test {

using hw::AluOp;
using hw::Insn;
using hw::MemType;
using hw::Opcode;
using hw::Uop;

// "default", "tiny", "small" from hw/config/, and two made here that stress widths:
// "wide" (16-bit inputs and weights, 64-bit accumulators, batch 2) and "narrow"
// (16-bit accumulators).
inline hw::Config test_config(const std::string& name) {
  if (name == "wide") {
    hw::ConfigParams p;
    p.log_inp_width = 4, p.log_wgt_width = 4, p.log_acc_width = 6, p.log_batch = 1;
    p.log_block = 2, p.log_uop_buff_size = 10, p.log_inp_buff_size = 12;
    p.log_wgt_buff_size = 13, p.log_acc_buff_size = 14;
    return hw::Config::from_params(p, "wide");
  }
  if (name == "narrow") {
    hw::ConfigParams p;
    p.log_inp_width = 3, p.log_wgt_width = 3, p.log_acc_width = 4, p.log_batch = 0;
    p.log_block = 3, p.log_uop_buff_size = 11, p.log_inp_buff_size = 11;
    p.log_wgt_buff_size = 13, p.log_acc_buff_size = 12;
    return hw::Config::from_params(p, "narrow");
  }
  return hw::Config::from_file(std::string(std::getenv("KILN_SOURCE_DIR")) + "/hw/config/" +
                               name + ".json");
}

// The low `width` bits of v, sign-extended (the test's own, written independently).
inline int64_t sext(uint64_t v, int width) {
  if (width == 64) return static_cast<int64_t>(v);
  uint64_t mask = (uint64_t{1} << width) - 1;
  v &= mask;
  return v >> (width - 1) ? static_cast<int64_t>(v) - static_cast<int64_t>(mask) - 1
                          : static_cast<int64_t>(v);
}

inline Insn load(MemType m, uint32_t sram, uint32_t dram, uint32_t y, uint32_t x,
                 uint32_t stride = 0, std::array<uint32_t, 4> pad = {}) {
  Insn in;
  in.opcode = Opcode::kLoad;
  in.memory_type = m;
  in.sram_base = sram;
  in.dram_base = dram;
  in.y_size = y;
  in.x_size = x;
  in.x_stride = stride ? stride : x;
  in.y_pad_0 = pad[0], in.y_pad_1 = pad[1], in.x_pad_0 = pad[2], in.x_pad_1 = pad[3];
  return in;
}

inline Insn store(uint32_t sram, uint32_t dram, uint32_t y, uint32_t x, uint32_t stride = 0) {
  Insn in = load(MemType::kOut, sram, dram, y, x, stride);
  in.opcode = Opcode::kStore;
  return in;
}

struct LoopSpec {
  uint32_t bgn = 0, end = 1, iter_out = 1, iter_in = 1;
  uint32_t dst_out = 0, dst_in = 0, src_out = 0, src_in = 0, wgt_out = 0, wgt_in = 0;
};

inline Insn gemm(const LoopSpec& l, bool reset = false) {
  Insn in;
  in.opcode = Opcode::kGemm;
  in.reset = reset;
  in.uop_bgn = l.bgn, in.uop_end = l.end, in.iter_out = l.iter_out, in.iter_in = l.iter_in;
  in.dst_factor_out = l.dst_out, in.dst_factor_in = l.dst_in;
  in.src_factor_out = l.src_out, in.src_factor_in = l.src_in;
  in.wgt_factor_out = l.wgt_out, in.wgt_factor_in = l.wgt_in;
  return in;
}

inline Insn alu(AluOp op, const LoopSpec& l, bool use_imm, int32_t imm = 0, bool reset = false) {
  Insn in = gemm(l, reset);
  in.opcode = Opcode::kAlu;
  in.wgt_factor_out = in.wgt_factor_in = 0;
  in.alu_opcode = op;
  in.use_imm = use_imm;
  in.imm = imm;
  return in;
}

inline Insn finish() { return Insn{}; }

using Mod = hw::Module;  // module_of: hw::module_of, found by argument lookup

// Adds the tokens that make `insns` run strictly in the given order (a compute no-op
// between load and store), and a FINISH after everything.
inline std::vector<Insn> serialize(std::vector<Insn> insns) {
  auto link = [](Insn& a, Insn& b) {
    Mod ma = module_of(a), mb = module_of(b);
    if (ma == Mod::kLoad || (ma == Mod::kCompute && mb == Mod::kStore)) {
      a.push_next_dep = true;
      b.pop_prev_dep = true;
    } else {
      a.push_prev_dep = true;
      b.pop_next_dep = true;
    }
  };
  auto noop = [] { return load(MemType::kUop, 0, 0, 0, 0); };
  std::vector<Insn> out;
  for (Insn in : insns) {
    if (!out.empty() && module_of(out.back()) != module_of(in)) {
      if (module_of(in) != Mod::kCompute && module_of(out.back()) != Mod::kCompute) {
        Insn n = noop();
        link(out.back(), n);
        out.push_back(n);
      }
      link(out.back(), in);
    }
    out.push_back(in);
  }
  if (!out.empty() && module_of(out.back()) != Mod::kCompute) {
    Insn n = noop();
    link(out.back(), n);
    out.push_back(n);
  }
  out.push_back(finish());
  return out;
}

class Bench {
 public:
  explicit Bench(const hw::Config& c, size_t dram_bytes = size_t{4} << 20)
      : cfg(c), layout(c), dram(dram_bytes, 0), fsim(c, dram) {}
  Bench(const Bench&) = delete;

  // Encodes the stream at the top of DRAM and runs it.
  void run(const std::vector<Insn>& insns) {
    std::vector<uint8_t> code = hw::encode_program(layout, insns);
    uint64_t addr = (dram.size() - code.size()) / 64 * 64;
    std::copy(code.begin(), code.end(), dram.begin() + static_cast<std::ptrdiff_t>(addr));
    fsim.run(addr, static_cast<uint32_t>(insns.size()));
  }

  // Values of `width` bits, little-endian, from byte address `addr`.
  void put(uint64_t addr, const std::vector<int64_t>& values, int width) {
    for (size_t k = 0; k < values.size(); ++k)
      for (int b = 0; b < width / 8; ++b)
        dram[addr + k * (width / 8) + b] = static_cast<uint8_t>(static_cast<uint64_t>(values[k]) >> (8 * b));
  }
  std::vector<int64_t> get(uint64_t addr, size_t count, int width) const {
    std::vector<int64_t> v(count);
    for (size_t k = 0; k < count; ++k) {
      uint64_t raw = 0;
      for (int b = 0; b < width / 8; ++b) raw |= uint64_t{dram[addr + k * (width / 8) + b]} << (8 * b);
      v[k] = sext(raw, width);
    }
    return v;
  }
  void put_uops(uint64_t addr, const std::vector<Uop>& uops) {
    std::vector<uint8_t> bytes = hw::encode_uops(layout, uops);
    std::copy(bytes.begin(), bytes.end(), dram.begin() + static_cast<std::ptrdiff_t>(addr));
  }

  uint64_t counter(hw::regs::Counter c) const { return fsim.counter(c); }

  hw::Config cfg;
  hw::InsnLayout layout;
  std::vector<uint8_t> dram;
  Fsim fsim;
};

// Values per buffer element.
inline int inp_vals(const hw::Config& c) { return c.batch() * c.block_in(); }
inline int wgt_vals(const hw::Config& c) { return c.block_out() * c.block_in(); }
inline int acc_vals(const hw::Config& c) { return c.batch() * c.block_out(); }

}  // namespace kiln::sim::test
