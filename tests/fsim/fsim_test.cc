// fsim against shared/ISA.md: every instruction kind, padding, arithmetic edge cases,
// GEMM/ALU against a plain reference, tokens, errors and counters.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>

#include <fmt/format.h>

#include "hw/spec/error.h"
#include "tests/fsim/bench.h"

namespace kiln::sim::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Counter = hw::regs::Counter;

// Runs `insns` and expects hw::Error with every substring in `parts`.
void expect_error(Bench& b, const std::vector<Insn>& insns, std::vector<std::string> parts) {
  try {
    b.run(insns);
    ADD_FAILURE() << "no error; expected one containing '" << parts.front() << "'";
  } catch (const hw::Error& e) {
    for (const std::string& p : parts) EXPECT_THAT(e.what(), HasSubstr(p));
  }
}

struct BufferInfo {
  MemType type;
  int elem_bytes, width, vals;
  uint32_t depth;
};
BufferInfo info(const hw::Config& c, MemType m) {
  switch (m) {
    case MemType::kInp: return {m, c.inp_elem_bytes(), c.inp_width(), inp_vals(c), c.inp_depth()};
    case MemType::kWgt: return {m, c.wgt_elem_bytes(), c.wgt_width(), wgt_vals(c), c.wgt_depth()};
    default: return {m, c.acc_elem_bytes(), c.acc_width(), acc_vals(c), c.acc_depth()};
  }
}
std::span<const int64_t> view(const Fsim& f, MemType m, uint32_t i) {
  return m == MemType::kInp ? f.inp(i) : m == MemType::kWgt ? f.wgt(i) : f.acc(i);
}

std::vector<int64_t> random_values(std::mt19937_64& rng, size_t n, int width) {
  std::vector<int64_t> v(n);
  for (int64_t& x : v) x = sext(rng(), width);
  return v;
}

class FsimConfigTest : public ::testing::TestWithParam<std::string> {
 protected:
  hw::Config cfg_ = test_config(GetParam());
};

INSTANTIATE_TEST_SUITE_P(Configs, FsimConfigTest,
                         ::testing::Values("default", "tiny", "small", "wide", "narrow"));

TEST_P(FsimConfigTest, LoadsPlaceRowsAtTheTopOfEveryBuffer) {
  Bench b(cfg_);
  std::mt19937_64 rng(1);
  for (MemType m : {MemType::kInp, MemType::kWgt, MemType::kAcc}) {
    SCOPED_TRACE(std::string(hw::mem_type_name(m)));
    BufferInfo bi = info(cfg_, m);
    const uint32_t y = 3, x = 4, stride = 6, dram_base = 10;
    const uint32_t sram = bi.depth - y * x;  // ends exactly at the last element
    std::vector<int64_t> vals = random_values(rng, ((y - 1) * stride + x) * bi.vals, bi.width);
    b.put(uint64_t{dram_base} * bi.elem_bytes, vals, bi.width);
    b.run(serialize({load(m, sram, dram_base, y, x, stride)}));
    for (uint32_t r = 0; r < y; ++r) {
      for (uint32_t c = 0; c < x; ++c) {
        auto got = view(b.fsim, m, sram + r * x + c);
        for (int v = 0; v < bi.vals; ++v)
          ASSERT_EQ(got[v], vals[(r * stride + c) * bi.vals + v]) << r << "," << c << "," << v;
      }
    }
  }
}

TEST_P(FsimConfigTest, PaddedLoadsZeroEverySide) {
  Bench b(cfg_);
  std::mt19937_64 rng(2);
  const std::vector<std::array<uint32_t, 4>> pads = {
      {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}, {2, 3, 1, 4}, {15, 15, 15, 15}};
  for (MemType m : {MemType::kInp, MemType::kWgt, MemType::kAcc}) {
    BufferInfo bi = info(cfg_, m);
    for (const auto& pad : pads) {
      SCOPED_TRACE(fmt::format("{} pad y {} {} x {} {}", hw::mem_type_name(m), pad[0], pad[1],
                               pad[2], pad[3]));
      const uint32_t y = 2, x = 3, stride = 5;
      uint32_t rows = pad[0] + y + pad[1], cols = pad[2] + x + pad[3];
      if (rows * cols > bi.depth) continue;
      uint32_t sram = bi.depth - rows * cols;
      // Fill the target with ones first, so that the pads must overwrite them.
      std::vector<int64_t> ones(rows * cols * bi.vals, 1);
      b.put(0, ones, bi.width);
      std::vector<int64_t> vals = random_values(rng, ((y - 1) * stride + x) * bi.vals, bi.width);
      const uint32_t dram_base = 4096 / bi.elem_bytes + 1;
      b.put(uint64_t{dram_base} * bi.elem_bytes, vals, bi.width);
      b.run(serialize({load(m, sram, 0, 1, rows * cols),
                       load(m, sram, dram_base, y, x, stride, pad)}));
      for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t c = 0; c < cols; ++c) {
          bool is_pad = r < pad[0] || r >= pad[0] + y || c < pad[2] || c >= pad[2] + x;
          auto got = view(b.fsim, m, sram + r * cols + c);
          for (int v = 0; v < bi.vals; ++v) {
            int64_t want =
                is_pad ? 0 : vals[((r - pad[0]) * stride + (c - pad[2])) * bi.vals + v];
            ASSERT_EQ(got[v], want) << "row " << r << " col " << c << " value " << v;
          }
        }
      }
      // Pads are not read from DRAM.
      EXPECT_EQ(b.counter(Counter::kLoadInpBytes) + b.counter(Counter::kLoadWgtBytes) +
                    b.counter(Counter::kLoadAccBytes),
                uint64_t{rows * cols + y * x} * bi.elem_bytes);
    }
  }
}

TEST_P(FsimConfigTest, UopLoadsDecodeMicroOps) {
  Bench b(cfg_);
  std::mt19937_64 rng(3);
  std::vector<Uop> uops(10);
  for (Uop& u : uops) {
    u.dst_idx = static_cast<uint32_t>(rng() % cfg_.acc_depth());
    u.src_idx = static_cast<uint32_t>(rng() % std::max(cfg_.inp_depth(), cfg_.acc_depth()));
    u.wgt_idx = static_cast<uint32_t>(rng() % cfg_.wgt_depth());
  }
  b.put_uops(40, uops);
  const uint32_t top = cfg_.uop_depth() - 8;
  b.run(serialize({load(MemType::kUop, top, 10, 2, 4, 6)}));  // uops 0-3 and 6-9
  for (uint32_t k = 0; k < 4; ++k) {
    EXPECT_EQ(b.fsim.uop(top + k), uops[k]);
    EXPECT_EQ(b.fsim.uop(top + 4 + k), uops[6 + k]);
  }
  EXPECT_EQ(b.counter(Counter::kLoadUopBytes), 32u);
}

// A plain model of ISA.md's semantics for GEMM and ALU, independent of fsim's loops.
struct Reference {
  const hw::Config& c;
  std::vector<std::vector<int64_t>> inp, wgt, acc;
  std::vector<Uop> uops;

  void apply(const Insn& in) {
    for (uint32_t i = 0; i < in.iter_out; ++i)
      for (uint32_t j = 0; j < in.iter_in; ++j)
        for (uint32_t k = in.uop_bgn; k < in.uop_end; ++k) {
          const Uop& u = uops[k];
          uint32_t d = u.dst_idx + i * in.dst_factor_out + j * in.dst_factor_in;
          uint32_t s = u.src_idx + i * in.src_factor_out + j * in.src_factor_in;
          uint32_t w = u.wgt_idx + i * in.wgt_factor_out + j * in.wgt_factor_in;
          for (int bb = 0; bb < c.batch(); ++bb)
            for (int o = 0; o < c.block_out(); ++o) {
              int64_t& a = acc[d][bb * c.block_out() + o];
              if (in.reset) {
                a = 0;
              } else if (in.opcode == Opcode::kGemm) {
                int64_t sum = 0;
                for (int t = 0; t < c.block_in(); ++t)
                  sum += inp[s][bb * c.block_in() + t] * wgt[w][o * c.block_in() + t];
                a = sext(static_cast<uint64_t>(a) + static_cast<uint64_t>(sum), c.acc_width());
              } else {
                int64_t x = in.use_imm ? in.imm : acc[s][bb * c.block_out() + o];
                a = alu_op(in.alu_opcode, a, x);
              }
            }
        }
  }

  int64_t alu_op(AluOp op, int64_t a, int64_t x) const {
    const int w = c.acc_width();
    switch (op) {
      case AluOp::kMin: return std::min(a, x);
      case AluOp::kMax: return std::max(a, x);
      case AluOp::kAdd: return sext(static_cast<uint64_t>(a) + static_cast<uint64_t>(x), w);
      case AluOp::kMul: return sext(static_cast<uint64_t>(a) * static_cast<uint64_t>(x), w);
      case AluOp::kShr: {
        int64_t sh = sext(static_cast<uint64_t>(x), c.params().log_acc_width);
        if (sh >= 0) return a >> sh;
        return sext(static_cast<uint64_t>(a) << -sh, w);
      }
    }
    return 0;
  }
};

// Random GEMM and ALU sequences on the first 32 elements of every buffer, checked
// against Reference element by element, then stored and checked in DRAM.
void random_loops(const hw::Config& cfg, bool gemm_only, bool alu_only, uint64_t seed) {
  Bench b(cfg);
  std::mt19937_64 rng(seed);
  const uint32_t n = 32;
  Reference ref{cfg, {}, {}, {}, {}};
  auto fill = [&](MemType m, std::vector<std::vector<int64_t>>& dst, uint64_t addr) {
    BufferInfo bi = info(cfg, m);
    std::vector<int64_t> vals = random_values(rng, size_t{n} * bi.vals, bi.width);
    // Make a third of the values small so that MIN/MAX/SHR see interesting operands.
    for (int64_t& v : vals)
      if (rng() % 3 == 0) v = static_cast<int64_t>(rng() % 64) - 32;
    b.put(addr, vals, bi.width);
    dst.assign(n, {});
    for (uint32_t e = 0; e < n; ++e)
      dst[e].assign(vals.begin() + e * bi.vals, vals.begin() + (e + 1) * bi.vals);
    return static_cast<uint32_t>(addr / bi.elem_bytes);
  };
  std::vector<Insn> prog = {load(MemType::kInp, 0, fill(MemType::kInp, ref.inp, 0), 1, n),
                            load(MemType::kWgt, 0, fill(MemType::kWgt, ref.wgt, 1 << 16), 1, n),
                            load(MemType::kAcc, 0, fill(MemType::kAcc, ref.acc, 1 << 18), 1, n)};
  ref.uops.resize(cfg.uop_depth());
  std::vector<Insn> loops;
  uint64_t uop_addr = 3 << 18;
  for (int step = 0; step < 12; ++step) {
    bool is_gemm = alu_only ? false : gemm_only ? true : rng() % 2 == 0;
    LoopSpec l;
    l.iter_out = 1 + rng() % 3, l.iter_in = 1 + rng() % 3;
    l.dst_out = rng() % 4, l.dst_in = rng() % 4, l.src_out = rng() % 4, l.src_in = rng() % 4;
    if (is_gemm) l.wgt_out = rng() % 4, l.wgt_in = rng() % 4;
    std::vector<Uop> uops(1 + rng() % 3);
    for (Uop& u : uops) {  // max index: 15 + 2*3 + 2*3 < 32
      u.dst_idx = rng() % 16, u.src_idx = rng() % 16, u.wgt_idx = is_gemm ? rng() % 16 : 0;
    }
    uint32_t pos = static_cast<uint32_t>(rng() % 8);
    b.put_uops(uop_addr, uops);
    prog.push_back(load(MemType::kUop, pos, static_cast<uint32_t>(uop_addr / 4), 1,
                        static_cast<uint32_t>(uops.size())));
    uop_addr += 64;
    std::copy(uops.begin(), uops.end(), ref.uops.begin() + pos);
    l.bgn = pos, l.end = pos + static_cast<uint32_t>(uops.size());
    bool reset = rng() % 6 == 0;
    if (is_gemm) {
      prog.push_back(::kiln::sim::test::gemm(l, reset));
    } else {
      static constexpr int32_t kImm[] = {-32768, 32767, -1, 0, 1, 5, -7, 31, -16, 15};
      auto op = static_cast<AluOp>(rng() % 5);
      bool use_imm = rng() % 2 == 0;
      prog.push_back(alu(op, l, use_imm, kImm[rng() % 10], reset));
    }
    ref.apply(prog.back());
  }
  prog.push_back(store(0, (1 << 20) / cfg.out_elem_bytes(), 1, n));
  b.run(serialize(prog));
  for (uint32_t e = 0; e < n; ++e) {
    auto acc = b.fsim.acc(e);
    // OUT is ACC's low output-width bits, also for the rows no loop wrote.
    std::vector<int64_t> want_out(ref.acc[e].size());
    for (size_t v = 0; v < want_out.size(); ++v)
      want_out[v] = sext(static_cast<uint64_t>(ref.acc[e][v]), cfg.out_width());
    ASSERT_EQ(std::vector<int64_t>(acc.begin(), acc.end()), ref.acc[e]) << "acc " << e;
    ASSERT_EQ(b.fsim.out(e), want_out) << "out " << e;
    std::vector<int64_t> stored =
        b.get((1 << 20) + uint64_t{e} * cfg.out_elem_bytes(), acc_vals(cfg), cfg.out_width());
    ASSERT_EQ(stored, want_out) << "stored out " << e;
  }
}

TEST_P(FsimConfigTest, GemmMatchesReference) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(seed);
    random_loops(cfg_, true, false, seed);
  }
}

TEST_P(FsimConfigTest, AluMatchesReference) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(seed);
    random_loops(cfg_, false, true, seed);
  }
}

TEST_P(FsimConfigTest, MixedLoopsMatchReference) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(seed);
    random_loops(cfg_, false, false, seed);
  }
}

// acc[0] = a, acc[1] = x; runs `insn` with micro-op {dst 0, src 1} and returns acc[0].
class AluCase {
 public:
  explicit AluCase(const hw::Config& cfg) : b_(cfg) { b_.put_uops(0, {Uop{0, 1, 0}}); }
  int64_t run(AluOp op, int64_t a, int64_t x, bool use_imm = false, int32_t imm = 0) {
    const hw::Config& c = b_.cfg;
    b_.put(1024, std::vector<int64_t>(acc_vals(c), a), c.acc_width());
    b_.put(1024 + c.acc_elem_bytes(), std::vector<int64_t>(acc_vals(c), x), c.acc_width());
    b_.run(serialize({load(MemType::kAcc, 0, 1024 / c.acc_elem_bytes(), 1, 2),
                      load(MemType::kUop, 0, 0, 1, 1), alu(op, LoopSpec{}, use_imm, imm)}));
    int64_t r = b_.fsim.acc(0)[0];
    for (int64_t v : b_.fsim.acc(0)) EXPECT_EQ(v, r);
    for (int64_t v : b_.fsim.out(0)) EXPECT_EQ(v, sext(static_cast<uint64_t>(r), c.out_width()));
    return r;
  }
  Bench& bench() { return b_; }

 private:
  Bench b_;
};

TEST(FsimAlu, ArithmeticOnTheDefaultConfig) {
  AluCase t(hw::Config::vta_default());
  const int64_t kMax = 2147483647, kMin = -2147483648LL;
  EXPECT_EQ(t.run(AluOp::kMin, -5, 3), -5);
  EXPECT_EQ(t.run(AluOp::kMax, -5, 3), 3);
  EXPECT_EQ(t.run(AluOp::kMin, kMin, kMax), kMin);
  EXPECT_EQ(t.run(AluOp::kMax, kMin, kMax), kMax);
  EXPECT_EQ(t.run(AluOp::kMin, 7, 0, true, -32768), -32768);
  EXPECT_EQ(t.run(AluOp::kMax, 7, 0, true, 32767), 32767);
  EXPECT_EQ(t.run(AluOp::kMax, 40000, 0, true, 32767), 40000);
  EXPECT_EQ(t.run(AluOp::kAdd, kMax, 1), kMin);  // wraps
  EXPECT_EQ(t.run(AluOp::kAdd, kMin, 0, true, -32768), 2147450880);
  EXPECT_EQ(t.run(AluOp::kAdd, 100, 0, true, -1), 99);
  EXPECT_EQ(t.run(AluOp::kMul, 65536, 65536), 0);
  EXPECT_EQ(t.run(AluOp::kMul, 65535, 65537), -1);
  EXPECT_EQ(t.run(AluOp::kMul, kMin, -1), kMin);
  EXPECT_EQ(t.run(AluOp::kMul, 3, 0, true, -32768), -98304);
  EXPECT_EQ(t.run(AluOp::kShr, -256, 4), -16);
  EXPECT_EQ(t.run(AluOp::kShr, -256, 15), -1);        // the largest right shift
  EXPECT_EQ(t.run(AluOp::kShr, 1 << 20, 15), 32);
  EXPECT_EQ(t.run(AluOp::kShr, -256, -4), -4096);     // negative: shift left
  EXPECT_EQ(t.run(AluOp::kShr, 1, -16), 65536);       // the largest left shift
  EXPECT_EQ(t.run(AluOp::kShr, 0x8001, -16), -2147418112);  // wraps into the sign
  EXPECT_EQ(t.run(AluOp::kShr, 65536, -16), 0);        // shifted out
  EXPECT_EQ(t.run(AluOp::kShr, 1000, 32), 1000);       // only the low 5 bits count: 0
  EXPECT_EQ(t.run(AluOp::kShr, 1000, 17), 1000 << 15);  // 17 reads as -15
  EXPECT_EQ(t.run(AluOp::kShr, 1000, 0, true, -32768), 1000);  // low bits 0
  EXPECT_EQ(t.run(AluOp::kShr, 1000, 0, true, 32767), 2000);   // low bits 31 = -1
  EXPECT_EQ(t.run(AluOp::kShr, 1000, 0, true, 0), 1000);       // a copy
  EXPECT_EQ(t.run(AluOp::kShr, -1000, 0, true, 3), -125);
  // out is the low 8 bits, sign-extended.
  EXPECT_EQ(t.run(AluOp::kAdd, 200, 0, true, 0), 200);
  EXPECT_EQ(t.bench().fsim.out(0)[0], -56);
}

TEST(FsimAlu, ResetZeroesAccAndOutWithoutApplyingTheOp) {
  AluCase t(hw::Config::vta_default());
  for (AluOp op : hw::kAluOps) {
    Bench& b = t.bench();
    b.put(1024, std::vector<int64_t>(16, 77), 32);
    b.run(serialize({load(MemType::kAcc, 0, 1024 / 64, 1, 1), load(MemType::kUop, 0, 0, 1, 1),
                     alu(op, LoopSpec{}, true, 5), alu(op, LoopSpec{}, true, -3, true)}));
    for (int64_t v : b.fsim.acc(0)) EXPECT_EQ(v, 0);
    for (int64_t v : b.fsim.out(0)) EXPECT_EQ(v, 0);
  }
}

TEST_P(FsimConfigTest, AluExtremesOfEveryWidth) {
  AluCase t(cfg_);
  const int w = cfg_.acc_width();
  const int64_t max = w == 64 ? INT64_MAX : (int64_t{1} << (w - 1)) - 1;
  const int64_t min = -max - 1;
  EXPECT_EQ(t.run(AluOp::kAdd, max, 1), min);
  EXPECT_EQ(t.run(AluOp::kAdd, min, -1), max);
  EXPECT_EQ(t.run(AluOp::kMul, min, -1), min);
  EXPECT_EQ(t.run(AluOp::kMul, max, max), 1);
  EXPECT_EQ(t.run(AluOp::kShr, min, w / 2 - 1), min >> (w / 2 - 1));
  EXPECT_EQ(t.run(AluOp::kShr, max, -w / 2), sext(static_cast<uint64_t>(max) << (w / 2), w));
  EXPECT_EQ(t.run(AluOp::kShr, -1, -w / 2), sext(~uint64_t{0} << (w / 2), w));
  EXPECT_EQ(t.run(AluOp::kShr, 12345, w), 12345);  // the amount's low bits are 0
  EXPECT_EQ(t.run(AluOp::kMin, 3, 0, true, -32768), -32768);
  EXPECT_EQ(t.run(AluOp::kMax, -3, 0, true, 32767), 32767);
  EXPECT_EQ(t.run(AluOp::kAdd, max, 0, true, 32767), sext(static_cast<uint64_t>(max) + 32767, w));
}

TEST(FsimGemm, HandComputedProductsAccumulateResetAndWrap) {
  hw::Config cfg = hw::Config::vta_default();
  Bench b(cfg);
  std::vector<int64_t> inp(16), wgt(256);
  for (int i = 0; i < 16; ++i) inp[i] = i - 8;
  for (int o = 0; o < 16; ++o)
    for (int i = 0; i < 16; ++i) wgt[o * 16 + i] = o == 15 ? -128 : (o == i ? 1 : 0);
  b.put(0, inp, 8);
  b.put(256, wgt, 8);
  b.put(32, std::vector<int64_t>(16, -128), 8);  // inp 2
  b.put(1024, std::vector<int64_t>(256, -128), 8);  // wgt 4
  b.put_uops(2048, {Uop{0, 0, 1}, Uop{1, 2, 4}});
  std::vector<Insn> prog = {load(MemType::kInp, 0, 0, 1, 3), load(MemType::kWgt, 1, 1, 1, 4),
                            load(MemType::kUop, 0, 512, 1, 2),
                            gemm({.bgn = 0, .end = 2}, true), gemm({.bgn = 0, .end = 2}),
                            gemm({.bgn = 0, .end = 1})};
  b.run(serialize(prog));
  // acc[0][o] = 2 * sum_i inp[i] * wgt[o][i]: inp[o] for o < 15; -128 * sum(inp) for 15.
  for (int o = 0; o < 15; ++o) EXPECT_EQ(b.fsim.acc(0)[o], 2 * (o - 8)) << o;
  EXPECT_EQ(b.fsim.acc(0)[15], 2 * -128 * -8);
  EXPECT_EQ(b.fsim.out(0)[15], 0);  // 2048 = 0x800: low 8 bits 0
  for (int o = 0; o < 16; ++o) EXPECT_EQ(b.fsim.acc(1)[o], 16 * 128 * 128);
  // Accumulating past INT32_MAX wraps: 2^31 / 2^18 = 8192 more GEMMs, in one loop.
  b.run(serialize({gemm({.bgn = 1, .end = 2, .iter_out = 8192})}));
  for (int o = 0; o < 16; ++o) EXPECT_EQ(b.fsim.acc(1)[o], -2147483648LL + 262144) << o;
  EXPECT_EQ(b.counter(Counter::kGemmUops), 8192u);
}

TEST_P(FsimConfigTest, StoreWritesOutRowsAndLeavesGapsAlone) {
  Bench b(cfg_);
  std::mt19937_64 rng(9);
  BufferInfo acc = info(cfg_, MemType::kAcc);
  std::vector<int64_t> vals = random_values(rng, size_t{6} * acc.vals, acc.width);
  b.put(0, vals, acc.width);
  b.put_uops(8192, {Uop{acc.depth - 6, 0, 0}});
  const int eb = cfg_.out_elem_bytes();
  const uint32_t out_base = 65536 / eb;
  std::fill(b.dram.begin() + 65536, b.dram.begin() + 65536 + 16 * eb, 0xab);
  b.run(serialize({load(MemType::kAcc, acc.depth - 6, 0, 1, 6), load(MemType::kUop, 0, 2048, 1, 1),
                   alu(AluOp::kShr, {.iter_out = 6, .dst_out = 1}, true, 0),
                   store(acc.depth - 6, out_base, 2, 3, 5)}));
  for (uint32_t r = 0; r < 2; ++r) {
    for (uint32_t c = 0; c < 5; ++c) {
      uint64_t addr = 65536 + uint64_t{r * 5 + c} * eb;
      if (c >= 3) {
        EXPECT_EQ(b.dram[addr], 0xab) << "gap at row " << r << " col " << c;
        continue;
      }
      std::vector<int64_t> got = b.get(addr, acc.vals, cfg_.out_width());
      for (int v = 0; v < acc.vals; ++v)
        EXPECT_EQ(got[v], sext(static_cast<uint64_t>(vals[(r * 3 + c) * acc.vals + v]),
                               cfg_.out_width()));
    }
  }
  EXPECT_EQ(b.counter(Counter::kStoreBytes), 6u * eb);
  EXPECT_EQ(b.counter(Counter::kDramWriteBytes), 6u * eb);
}

// OUT is ACC read through its low bits: a STORE right after a LOAD into ACC writes the
// loaded values' low bits (VTA's software simulator; its HLS design kept a separate OUT).
TEST(FsimLoad, StoreAfterAccLoadWritesTheLoadedLowBits) {
  hw::Config cfg = hw::Config::vta_default();
  Bench b(cfg);
  std::vector<int64_t> vals(16);
  for (int v = 0; v < 16; ++v) vals[v] = (v % 2 ? -1 : 1) * (0x1234500 + v * 37);
  b.put(0, vals, 32);
  b.run(serialize({load(MemType::kAcc, 3, 0, 1, 1), store(3, 4096 / 16, 1, 1)}));
  std::vector<int64_t> want(16);
  for (int v = 0; v < 16; ++v) want[v] = sext(static_cast<uint64_t>(vals[v]), 8);
  for (int v = 0; v < 16; ++v) EXPECT_EQ(b.fsim.acc(3)[v], vals[v]);
  EXPECT_EQ(b.fsim.out(3), want);
  EXPECT_EQ(b.get(4096, 16, 8), want);
}

TEST(FsimNoOps, EmptyLoopsAndLoadsOnlyMoveTokens) {
  hw::Config cfg = hw::Config::vta_default();
  Bench b(cfg);
  b.put(0, std::vector<int64_t>(16, 9), 32);
  b.put_uops(4096, {Uop{0, 0, 0}});
  b.run(serialize({load(MemType::kAcc, 0, 0, 1, 1), load(MemType::kUop, 0, 1024, 1, 1)}));
  std::vector<Insn> prog = {
      load(MemType::kInp, 0, 0xffffffff, 0, 5),  // y_size 0: DRAM is never read
      load(MemType::kWgt, 0, 0xffffffff, 5, 0),
      gemm({.bgn = 0, .end = 1, .iter_out = 0}, true),
      gemm({.bgn = 0, .end = 1, .iter_in = 0}, true),
      gemm({.bgn = 1, .end = 1}, true),
      gemm({.bgn = 1, .end = 0}, true),
      alu(AluOp::kAdd, {.bgn = 0, .end = 1, .iter_out = 0}, true, 1, true),
      store(0, 0xffffffff, 0, 3)};
  b.run(serialize(prog));
  for (int64_t v : b.fsim.acc(0)) EXPECT_EQ(v, 9);
  EXPECT_EQ(b.counter(Counter::kGemmUops), 0u);
  EXPECT_EQ(b.counter(Counter::kAluUops), 0u);
  EXPECT_EQ(b.counter(Counter::kLoadInsns), 2u);
  EXPECT_EQ(b.counter(Counter::kStoreInsns), 1u);
  EXPECT_EQ(b.counter(Counter::kDramReadBytes), 16u * serialize(prog).size());
}

TEST(FsimTokens, ModulesOverlapAsTheTokensAllow) {
  // Load pushes three tokens ahead; compute pops them one by one.
  hw::Config cfg = hw::Config::vta_default();
  Bench b(cfg);
  b.put(0, std::vector<int64_t>(48, 2), 8);
  std::vector<Insn> prog;
  for (uint32_t k = 0; k < 3; ++k) {
    prog.push_back(load(MemType::kInp, k, k, 1, 1));
    prog.back().push_next_dep = true;
  }
  for (int k = 0; k < 3; ++k) {
    prog.push_back(load(MemType::kUop, 0, 0, 0, 0));
    prog.back().pop_prev_dep = true;
  }
  prog.push_back(finish());
  b.run(prog);
  EXPECT_EQ(b.counter(Counter::kLoadInsns), 3u);
  EXPECT_EQ(b.counter(Counter::kComputeInsns), 4u);
  EXPECT_EQ(b.fsim.inp(2)[0], 2);
}

TEST(FsimCounters, CountEveryModuleAndByte) {
  hw::Config cfg = hw::Config::vta_default();
  Bench b(cfg);
  b.put_uops(0, {Uop{0, 0, 0}, Uop{1, 1, 1}});
  std::vector<Insn> prog = serialize({
      load(MemType::kUop, 0, 0, 1, 2),                           // 8 bytes
      load(MemType::kInp, 0, 64, 2, 3, 4, {1, 1, 1, 1}),         // 6 x 16 bytes
      load(MemType::kWgt, 0, 16, 1, 2),                          // 2 x 256 bytes
      load(MemType::kAcc, 0, 64, 2, 1),                          // 2 x 64 bytes
      gemm({.bgn = 0, .end = 2, .iter_out = 2, .iter_in = 3}),  // 12 micro-ops
      alu(AluOp::kAdd, {.bgn = 0, .end = 1, .iter_out = 5}, true, 1),
      store(0, 1024, 1, 2),                                      // 2 x 16 bytes
  });
  b.run(prog);
  EXPECT_EQ(b.counter(Counter::kLoadInsns), 2u);
  EXPECT_EQ(b.counter(Counter::kComputeInsns), prog.size() - 3);  // FINISH included
  EXPECT_EQ(b.counter(Counter::kStoreInsns), 1u);
  EXPECT_EQ(b.counter(Counter::kGemmUops), 12u);
  EXPECT_EQ(b.counter(Counter::kAluUops), 5u);
  EXPECT_EQ(b.counter(Counter::kLoadUopBytes), 8u);
  EXPECT_EQ(b.counter(Counter::kLoadInpBytes), 96u);
  EXPECT_EQ(b.counter(Counter::kLoadWgtBytes), 512u);
  EXPECT_EQ(b.counter(Counter::kLoadAccBytes), 128u);
  EXPECT_EQ(b.counter(Counter::kStoreBytes), 32u);
  EXPECT_EQ(b.counter(Counter::kDramReadBytes), 16 * prog.size() + 8 + 96 + 512 + 128);
  EXPECT_EQ(b.counter(Counter::kDramWriteBytes), 32u);
  EXPECT_EQ(b.counter(Counter::kCycles), 0u);
  // A second run starts from zero counters but keeps the buffers.
  b.run(serialize({alu(AluOp::kAdd, {.bgn = 0, .end = 1}, true, 1)}));
  EXPECT_EQ(b.counter(Counter::kLoadUopBytes), 0u);
  EXPECT_EQ(b.counter(Counter::kAluUops), 1u);
  EXPECT_EQ(b.counter(Counter::kComputeInsns), 2u);
}

// --- Errors ---------------------------------------------------------------------

class FsimErrors : public ::testing::Test {
 protected:
  hw::Config cfg_ = hw::Config::vta_default();
  Bench b_{cfg_};
};

TEST_F(FsimErrors, DeadlockNamesTheInstructionAndToken) {
  Insn g = gemm({});
  g.pop_prev_dep = true;
  expect_error(b_, {g, finish()},
               {"deadlock", "compute waits at instruction #0 (gemm)", "load->compute"});
}

TEST_F(FsimErrors, DeadlockNamesEveryBlockedModule) {
  Insn l = load(MemType::kInp, 0, 0, 1, 1);
  l.pop_next_dep = l.push_next_dep = true;
  Insn a = alu(AluOp::kMax, {}, true, 0);
  a.pop_prev_dep = a.push_prev_dep = true;
  Insn s = store(0, 0, 1, 1);
  s.pop_prev_dep = true;
  Insn c = load(MemType::kUop, 0, 0, 0, 0);
  c.pop_next_dep = true;
  expect_error(b_, {l, a, s, c, finish()},
               {"deadlock", "load waits at instruction #0 (load inp) for a compute->load token",
                "compute waits at instruction #1 (alu max) for a load->compute token",
                "store waits at instruction #2 (store) for a compute->store token"});
}

TEST_F(FsimErrors, FinishBeforeAStoreIsDone) {
  Insn s = store(0, 0, 1, 1);
  s.pop_prev_dep = true;
  expect_error(b_, {s, finish()},
               {"FINISH (instruction #1)", "store instruction #0 (store)", "compute->store",
                "does not order it before FINISH"});
}

TEST_F(FsimErrors, FinishBeforeALoadIsDone) {
  Insn l = load(MemType::kWgt, 0, 0, 1, 1);
  l.pop_next_dep = true;
  expect_error(b_, {gemm({}), l, finish()},
               {"FINISH (instruction #2)", "load instruction #1 (load wgt)", "compute->load"});
}

TEST_F(FsimErrors, FinishThatPopsOrPushes) {
  Insn f = finish();
  f.pop_next_dep = true;
  expect_error(b_, {f}, {"instruction #0 (finish)", "must pop no"});
  f = finish();
  f.push_prev_dep = true;
  expect_error(b_, {f}, {"instruction #0 (finish)", "pushes"});
}

TEST_F(FsimErrors, InstructionsAfterFinishAndMissingFinish) {
  expect_error(b_, {finish(), gemm({})}, {"instruction #1 (gemm)", "follows FINISH (instruction #0)"});
  expect_error(b_, {finish(), finish()}, {"instruction #1 (finish)", "follows FINISH"});
  expect_error(b_, {gemm({}), alu(AluOp::kAdd, {}, true)}, {"no FINISH"});
  EXPECT_THROW(b_.fsim.run(0, 0), hw::Error);
}

TEST_F(FsimErrors, IllFormedInstructions) {
  expect_error(b_, {load(MemType::kOut, 0, 0, 1, 1), finish()},
               {"instruction #0 (load out)", "cannot target OUT"});
  expect_error(b_, {load(MemType::kUop, 0, 0, 1, 1, 1, {0, 0, 1, 0}), finish()},
               {"instruction #0 (load uop)", "padding"});
  Insn s = store(0, 0, 1, 1);
  s.y_pad_1 = 2;
  expect_error(b_, {s, finish()}, {"instruction #0 (store)", "padding"});
  s = store(0, 0, 1, 1);
  s.memory_type = MemType::kAcc;
  expect_error(b_, {s, finish()}, {"instruction #0 (store)", "must be out"});
  Insn l = load(MemType::kInp, 0, 0, 1, 1);
  l.pop_prev_dep = true;
  expect_error(b_, {l, finish()}, {"instruction #0 (load inp)", "no prev module"});
  l = load(MemType::kWgt, 0, 0, 1, 1);
  l.push_prev_dep = true;
  expect_error(b_, {l, finish()}, {"instruction #0 (load wgt)", "no prev module"});
  s = store(0, 0, 1, 1);
  s.push_next_dep = true;
  expect_error(b_, {s, finish()}, {"instruction #0 (store)", "no next module"});
}

TEST_F(FsimErrors, UndecodableInstruction) {
  std::vector<uint8_t> code = hw::encode_program(b_.layout, std::vector<Insn>{gemm({}), finish()});
  code[16] = 7;  // opcode 7
  std::copy(code.begin(), code.end(), b_.dram.begin());
  try {
    b_.fsim.run(0, 2);
    ADD_FAILURE();
  } catch (const hw::Error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("fetch"), HasSubstr("instruction 1"),
                                HasSubstr("unknown opcode")));
  }
}

TEST_F(FsimErrors, FetchOutsideDram) {
  try {
    b_.fsim.run(b_.dram.size() - 16, 2);
    ADD_FAILURE();
  } catch (const hw::Error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("fetch of 2 instructions"), HasSubstr("beyond")));
  }
  EXPECT_THROW(b_.fsim.run(uint64_t{1} << 62, 1), hw::Error);
}

TEST_F(FsimErrors, SramRangeOfEveryBuffer) {
  // Default depths: uop 8192, inp 2048, wgt 1024, acc and out 2048.
  expect_error(b_, serialize({load(MemType::kInp, 2047, 0, 1, 2)}),
               {"instruction #0 (load inp)", "index 2048", "inp buffer's depth 2048"});
  expect_error(b_, serialize({load(MemType::kWgt, 1000, 0, 5, 5)}),
               {"instruction #0 (load wgt)", "index 1024", "wgt buffer's depth 1024"});
  expect_error(b_, serialize({load(MemType::kAcc, 2040, 0, 1, 1, 0, {0, 0, 8, 0})}),
               {"instruction #0 (load acc)", "index 2048", "acc buffer's depth 2048"});
  expect_error(b_, serialize({load(MemType::kUop, 8190, 0, 1, 3)}),
               {"instruction #0 (load uop)", "index 8192", "uop buffer's depth 8192"});
  expect_error(b_, serialize({store(2000, 0, 7, 7)}),
               {"(store)", "index 2048", "out buffer's depth 2048"});
}

TEST_F(FsimErrors, DramRangeOfLoadsAndStores) {
  uint64_t size = b_.dram.size();
  expect_error(b_, serialize({load(MemType::kWgt, 0, static_cast<uint32_t>(size / 256), 1, 1)}),
               {"instruction #0 (load wgt)", "beyond the DRAM"});
  expect_error(b_, serialize({load(MemType::kAcc, 0, 0xffffffff, 1, 1)}),
               {"instruction #0 (load acc)", "beyond the DRAM"});
  expect_error(b_, serialize({store(0, static_cast<uint32_t>(size / 16) - 2, 2, 1, 2)}),
               {"(store)", "beyond the DRAM"});
}

TEST_F(FsimErrors, LoopIndicesBeyondTheirBuffers) {
  b_.put_uops(0, {Uop{2040, 2040, 1020}, Uop{0, 0, 0}});
  b_.run(serialize({load(MemType::kUop, 0, 0, 1, 2)}));
  expect_error(b_, serialize({gemm({.bgn = 0, .end = 1, .iter_out = 9, .dst_out = 1})}),
               {"instruction #0 (gemm)", "dst index 2048", "acc buffer's depth 2048"});
  expect_error(b_, serialize({gemm({.bgn = 0, .end = 1, .iter_in = 9, .src_in = 1})}),
               {"instruction #0 (gemm)", "src index 2048", "inp buffer's depth 2048"});
  expect_error(b_, serialize({gemm({.bgn = 0, .end = 1, .iter_in = 5, .wgt_in = 1})}),
               {"instruction #0 (gemm)", "wgt index 1024", "wgt buffer's depth 1024"});
  expect_error(b_, serialize({alu(AluOp::kAdd, {.bgn = 0, .end = 1, .iter_in = 9, .src_in = 1},
                                  false)}),
               {"instruction #0 (alu add)", "src index 2048", "acc buffer's depth 2048"});
  expect_error(b_, serialize({gemm({.bgn = 8190, .end = 8193})}),
               {"instruction #0 (gemm)", "uop buffer's depth 8192"});
  // A reset reads neither INP nor WGT, and an immediate ALU no src.
  b_.run(serialize({gemm({.bgn = 0, .end = 1, .iter_in = 9, .src_in = 1}, true),
                    alu(AluOp::kAdd, {.bgn = 0, .end = 1, .iter_in = 9, .src_in = 1}, true, 1)}));
}

TEST(FsimErrorsTiny, UndecodableMicroOp) {
  hw::Config cfg = test_config("tiny");  // micro-ops use 24 of their 32 bits
  Bench b(cfg);
  b.dram[64 + 3] = 0x80;  // bit 31 of micro-op 16
  expect_error(b, serialize({load(MemType::kUop, 0, 16, 1, 1)}),
               {"instruction #0 (load uop)", "micro-op at DRAM byte 0x40", "belong to no field"});
}

TEST(FsimViews, OutOfRangeViewsThrow) {
  hw::Config cfg = hw::Config::vta_default();
  Bench b(cfg);
  EXPECT_THROW(b.fsim.acc(cfg.acc_depth()), hw::Error);
  EXPECT_THROW(b.fsim.out(cfg.out_depth()), hw::Error);
  EXPECT_THROW(b.fsim.inp(cfg.inp_depth()), hw::Error);
  EXPECT_THROW(b.fsim.wgt(cfg.wgt_depth()), hw::Error);
  EXPECT_THROW(b.fsim.uop(cfg.uop_depth()), hw::Error);
  EXPECT_EQ(b.fsim.acc(cfg.acc_depth() - 1).size(), 16u);
}

// --- A blocked GEMM ----------------------------------------------------------------

// C = A x B^T for 256x256 int8 matrices, blocked as a VTA program: 64 rows of A per
// round (1024 INP elements, 1024 ACC elements), all of B resident in WGT. Its time is
// printed, not asserted (timings belong in bench/: a loaded machine or a sanitizer
// build is slower, not wrong).
TEST(FsimBlockedGemm, Blocked256GemmMatchesTheProduct) {
  hw::Config cfg = hw::Config::vta_default();
  Bench b(cfg, size_t{8} << 20);
  const int n = 256, blk = 16, nb = n / blk;
  std::mt19937_64 rng(5);
  std::vector<int64_t> a(n * n), w(n * n);
  for (int64_t& v : a) v = static_cast<int64_t>(rng() % 256) - 128;
  for (int64_t& v : w) v = static_cast<int64_t>(rng() % 256) - 128;
  // A row-major is already INP-element order: element m*16 + kb = A[m][kb*16..].
  const uint64_t a_addr = 0, w_addr = 1 << 20, c_addr = 2 << 20, uop_addr = 3 << 20;
  b.put(a_addr, a, 8);
  std::vector<int64_t> wblocks(n * n);  // element nb*16 + kb = B[nb*16 + o][kb*16 + i]
  for (int r = 0; r < nb; ++r)
    for (int k = 0; k < nb; ++k)
      for (int o = 0; o < blk; ++o)
        for (int i = 0; i < blk; ++i)
          wblocks[((r * nb + k) * blk + o) * blk + i] = w[(r * blk + o) * n + k * blk + i];
  b.put(w_addr, wblocks, 8);
  std::vector<Uop> uops = {Uop{0, 0, 0}};  // 0: reset; 1..16: one per k block
  for (uint32_t k = 0; k < 16; ++k) uops.push_back(Uop{0, k, k});
  b.put_uops(uop_addr, uops);
  std::vector<Insn> prog = {load(MemType::kWgt, 0, w_addr / 256, 1, 256),
                            load(MemType::kUop, 0, uop_addr / 4, 1, 17)};
  const uint32_t rows = 64;
  for (uint32_t r = 0; r < n / rows; ++r) {
    prog.push_back(load(MemType::kInp, 0, r * rows * nb, 1, rows * nb));
    // i over rows (dst/src +16), j over output blocks (dst +1, wgt +16), k over uops.
    prog.push_back(gemm({.bgn = 0, .end = 1, .iter_out = rows, .iter_in = 16, .dst_out = 16,
                         .dst_in = 1}, true));
    prog.push_back(gemm({.bgn = 1, .end = 17, .iter_out = rows, .iter_in = 16, .dst_out = 16,
                         .dst_in = 1, .src_out = 16, .wgt_in = 16}));
    prog.push_back(store(0, static_cast<uint32_t>(c_addr / 16) + r * rows * nb, 1, rows * nb));
  }
  auto start = std::chrono::steady_clock::now();
  b.run(serialize(prog));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<int64_t> c = b.get(c_addr, n * n, 8);
  for (int m = 0; m < n; ++m)
    for (int o = 0; o < n; ++o) {
      int64_t sum = 0;
      for (int k = 0; k < n; ++k) sum += a[m * n + k] * w[o * n + k];
      ASSERT_EQ(c[m * n + o], sext(static_cast<uint64_t>(sum), 8)) << m << "," << o;
    }
  EXPECT_EQ(b.counter(Counter::kGemmUops), uint64_t{4} * 64 * 16 * 17);
  std::printf("blocked 256x256x256 GEMM: %.3f s\n", seconds);
}

}  // namespace
}  // namespace kiln::sim::test

// --- Queue depths (hw::Config::kCmdQueueDepth, kTokenQueueDepth, as the RTL has them) --

namespace kiln::sim::test {
namespace {

constexpr int kCmdDepth = hw::Config::kCmdQueueDepth;
constexpr int kTokenDepth = hw::Config::kTokenQueueDepth;

Insn plain(Mod m) {
  switch (m) {
    case Mod::kLoad: return load(MemType::kInp, 0, 0, 1, 1);
    case Mod::kStore: return store(0, 0, 1, 1);
    default: return gemm({});
  }
}

// `n` instructions of module `waiter` that each wait for a token, then the `n`
// instructions of `giver` that push those tokens. The waiter's module holds one
// instruction and queues kCmdDepth: past that, fetch cannot reach the givers.
std::vector<Insn> waiters_before_givers(Mod waiter, Mod giver, int n) {
  std::vector<Insn> out;
  for (int i = 0; i < n; ++i) {
    Insn w = plain(waiter);
    (giver == Mod::kLoad || (giver == Mod::kCompute && waiter == Mod::kStore) ? w.pop_prev_dep : w.pop_next_dep) = true;
    out.push_back(w);
  }
  for (int i = 0; i < n; ++i) {
    Insn g = plain(giver);
    (giver == Mod::kLoad || (giver == Mod::kCompute && waiter == Mod::kStore) ? g.push_next_dep : g.push_prev_dep) = true;
    out.push_back(g);
  }
  out.push_back(finish());
  return out;
}

struct CmdQueueCase {
  Mod waiter, giver;
  const char* queue;
  const char* mnemonic;
};

class FsimCmdQueue : public ::testing::TestWithParam<CmdQueueCase> {};

INSTANTIATE_TEST_SUITE_P(Queues, FsimCmdQueue,
                         ::testing::Values(CmdQueueCase{Mod::kLoad, Mod::kCompute, "load", "load inp"},
                                           CmdQueueCase{Mod::kCompute, Mod::kLoad, "compute", "gemm"},
                                           CmdQueueCase{Mod::kStore, Mod::kCompute, "store", "store"}),
                         [](const auto& info) { return std::string(info.param.queue); });

TEST_P(FsimCmdQueue, AStreamThatFitsTheQueueRuns) {
  Bench b(hw::Config::vta_default());
  b.run(waiters_before_givers(GetParam().waiter, GetParam().giver, kCmdDepth + 1));
}

TEST_P(FsimCmdQueue, AStreamOnePastTheQueueIsADeadlockNamingIt) {
  Bench b(hw::Config::vta_default());
  const int n = kCmdDepth + 2;
  expect_error(b, waiters_before_givers(GetParam().waiter, GetParam().giver, n),
               {"deadlock", fmt::format("{} waits at instruction #0 ({})", GetParam().queue, GetParam().mnemonic),
                fmt::format("fetch waits to dispatch instruction #{} ({}) into the {} command queue, which is full",
                            n - 1, GetParam().mnemonic, GetParam().queue),
                fmt::format("{} instructions queued behind instruction #0", kCmdDepth)});
}

struct TokenQueueCase {
  Mod from, to;
  const char* token;
};

class FsimTokenQueue : public ::testing::TestWithParam<TokenQueueCase> {};

INSTANTIATE_TEST_SUITE_P(Queues, FsimTokenQueue,
                         ::testing::Values(TokenQueueCase{Mod::kLoad, Mod::kCompute, "load->compute"},
                                           TokenQueueCase{Mod::kCompute, Mod::kLoad, "compute->load"},
                                           TokenQueueCase{Mod::kCompute, Mod::kStore, "compute->store"},
                                           TokenQueueCase{Mod::kStore, Mod::kCompute, "store->compute"}),
                         [](const auto& info) {
                           std::string s = info.param.token;
                           return s.replace(s.find("->"), 2, "_to_");
                         });

// `pushes` instructions of `from` that push a token to `to`, a full command queue's worth
// more of `from` behind them, then `pushes` instructions of `to` that pop the tokens.
// Past the token queue's depth, `from` holds the last pusher while the poppers are
// behind fetch.
std::vector<Insn> pushes_before_pops(const TokenQueueCase& c, int pushes) {
  bool next = c.from == Mod::kLoad || (c.from == Mod::kCompute && c.to == Mod::kStore);
  std::vector<Insn> out;
  for (int i = 0; i < pushes; ++i) {
    Insn p = plain(c.from);
    (next ? p.push_next_dep : p.push_prev_dep) = true;
    out.push_back(p);
  }
  for (int i = 0; i < kCmdDepth + 1; ++i) out.push_back(plain(c.from));
  for (int i = 0; i < pushes; ++i) {
    Insn q = plain(c.to);
    (next ? q.pop_prev_dep : q.pop_next_dep) = true;
    out.push_back(q);
  }
  out.push_back(finish());
  return out;
}

TEST_P(FsimTokenQueue, AsManyTokensAsTheQueueHoldsRun) {
  Bench b(hw::Config::vta_default(), size_t{8} << 20);
  b.run(pushes_before_pops(GetParam(), kTokenDepth));
}

TEST_P(FsimTokenQueue, OneTokenPastTheQueueIsADeadlockNamingIt) {
  Bench b(hw::Config::vta_default(), size_t{8} << 20);
  expect_error(b, pushes_before_pops(GetParam(), kTokenDepth + 1),
               {"deadlock", fmt::format("holds instruction #{}", kTokenDepth),
                fmt::format("waits to push a {} token, but that token queue is full ({} tokens)", GetParam().token,
                            kTokenDepth),
                "fetch waits to dispatch"});
}

}  // namespace
}  // namespace kiln::sim::test
