// The scratchpad range rule (hw/spec/ranges.h): the largest index each instruction
// touches per buffer, the first out-of-range access in the hardware's order (checked
// against a naive loop over random instructions), and the stream check that follows
// the uop buffer through LOAD UOP from stream to stream.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "hw/spec/config.h"
#include "hw/spec/config_files.h"
#include "hw/spec/error.h"
#include "hw/spec/isa.h"
#include "hw/spec/ranges.h"

namespace kiln::hw {
namespace {

using ::testing::HasSubstr;

Insn load(MemType m, uint32_t sram, uint32_t dram, uint32_t y, uint32_t x) {
  Insn in;
  in.opcode = Opcode::kLoad;
  in.memory_type = m;
  in.sram_base = sram;
  in.dram_base = dram;
  in.y_size = y;
  in.x_size = x;
  in.x_stride = x;
  return in;
}

Insn store(uint32_t sram, uint32_t y, uint32_t x) {
  Insn in = load(MemType::kOut, sram, 0, y, x);
  in.opcode = Opcode::kStore;
  return in;
}

// GEMM (or ALU) over [bgn, end) once, unless the caller sets loops.
Insn loop(Opcode op, uint32_t bgn, uint32_t end) {
  Insn in;
  in.opcode = op;
  in.uop_bgn = bgn;
  in.uop_end = end;
  in.iter_out = in.iter_in = 1;
  return in;
}

std::string message(const Config& cfg, const Insn& in, std::span<const Uop> uops = {}) {
  auto v = first_out_of_range(cfg, in, uops);
  return v ? v->message : "";
}

// Default depths: uop 8192, inp 2048, wgt 1024, acc and out 2048.
TEST(Ranges, LoadOfEveryBufferAtAndPastItsDepth) {
  Config cfg = Config::vta_default();
  for (MemType m : {MemType::kInp, MemType::kWgt, MemType::kAcc, MemType::kUop}) {
    SCOPED_TRACE(mem_type_name(m));
    uint32_t depth = mem_depth(cfg, m);
    Insn fits = load(m, depth - 6, 0, 2, 3);
    EXPECT_EQ(footprint(fits, {})[m], depth - 1);
    EXPECT_FALSE(first_out_of_range(cfg, fits, {}));
    Insn past = load(m, depth - 5, 0, 2, 3);
    auto v = first_out_of_range(cfg, past, {});
    ASSERT_TRUE(v);
    EXPECT_EQ(v->buffer, m);
    EXPECT_EQ(v->index, depth);
    EXPECT_EQ(v->depth, depth);
    EXPECT_EQ(v->message, fmt::format("writes {0} elements {1} to {2} (2 x 3 with padding), but "
                                      "index {2} is beyond the {0} buffer's depth {2}",
                                      mem_type_name(m), depth - 5, depth));
  }
  // Padding counts: 2 + 1 + 1 rows of 1 + 2 + 0 columns from 2040 end at 2051.
  Insn padded = load(MemType::kAcc, 2040, 0, 2, 2);
  padded.y_pad_0 = padded.y_pad_1 = 1;
  padded.x_pad_0 = 1;
  EXPECT_EQ(footprint(padded, {})[MemType::kAcc], 2051u);
  EXPECT_THAT(message(cfg, padded), HasSubstr("(4 x 3 with padding), but index 2051"));
}

TEST(Ranges, StoreReadsOut) {
  Config cfg = Config::vta_default();
  EXPECT_EQ(footprint(store(2000, 6, 8), {})[MemType::kOut], 2047u);
  EXPECT_FALSE(first_out_of_range(cfg, store(2000, 6, 8), {}));
  auto v = first_out_of_range(cfg, store(2000, 7, 7), {});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->buffer, MemType::kOut);
  EXPECT_EQ(v->index, 2048u);
  EXPECT_EQ(v->message, "reads out elements 2000 to 2048 (7 x 7), but index 2048 is beyond the "
                        "out buffer's depth 2048");
}

TEST(Ranges, NoOpsAndFinishTouchNothing) {
  Config cfg = Config::vta_default();
  Insn empty_load = load(MemType::kInp, 9999, 0, 0, 5);
  Insn empty_store = store(9999, 3, 0);
  Insn empty_range = loop(Opcode::kGemm, 8000, 8000);
  empty_range.iter_out = 100;
  empty_range.dst_factor_out = 100;
  Insn no_iter = loop(Opcode::kAlu, 0, 9000);
  no_iter.iter_in = 0;
  for (const Insn& in : {empty_load, empty_store, empty_range, no_iter, Insn{}}) {
    Footprint fp = footprint(in, {});
    for (MemType m : kMemTypes) EXPECT_FALSE(fp[m]) << mem_type_name(m);
    EXPECT_FALSE(first_out_of_range(cfg, in, {}));
  }
}

TEST(Ranges, GemmAndAluOperandsPerBuffer) {
  Config cfg = Config::vta_default();
  std::vector<Uop> uops = {Uop{2040, 2040, 1020}, Uop{0, 0, 0}};
  Insn g = loop(Opcode::kGemm, 0, 2);
  g.iter_out = 8;
  g.dst_factor_out = 1;
  g.iter_in = 4;
  g.src_factor_in = 2;
  g.wgt_factor_in = 1;
  Footprint fp = footprint(g, uops);
  EXPECT_EQ(fp[MemType::kUop], 1u);
  EXPECT_EQ(fp[MemType::kAcc], 2047u);
  EXPECT_EQ(fp[MemType::kInp], 2046u);
  EXPECT_EQ(fp[MemType::kWgt], 1023u);
  EXPECT_FALSE(first_out_of_range(cfg, g, uops));

  Insn dst = g;
  dst.iter_out = 9;
  EXPECT_EQ(message(cfg, dst, uops),
            "dst index 2048 (micro-op 2040 + 8*1 + 0*0) is beyond the acc buffer's depth 2048");
  Insn src = g;
  src.src_factor_in = 3;
  auto v = first_out_of_range(cfg, src, uops);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->buffer, MemType::kInp);
  EXPECT_EQ(v->index, 2049u);
  EXPECT_EQ(v->message,
            "src index 2049 (micro-op 2040 + 0*0 + 3*3) is beyond the inp buffer's depth 2048");
  Insn wgt = g;
  wgt.wgt_factor_in = 2;
  EXPECT_EQ(message(cfg, wgt, uops),
            "wgt index 1024 (micro-op 1020 + 0*0 + 2*2) is beyond the wgt buffer's depth 1024");
  Insn range = loop(Opcode::kGemm, 8190, 8193);
  v = first_out_of_range(cfg, range, uops);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->buffer, MemType::kUop);
  EXPECT_EQ(v->index, 8192u);
  EXPECT_EQ(v->message, "micro-op range [8190, 8193) goes beyond the uop buffer's depth 8192 "
                        "(micro-op index 8192)");
  v = first_out_of_range(cfg, loop(Opcode::kAlu, 8200, 8201), uops);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->index, 8200u);

  // A reset writes dst only: INP and WGT are not read.
  Insn reset = src;
  reset.reset = true;
  EXPECT_FALSE(first_out_of_range(cfg, reset, uops));
  EXPECT_FALSE(footprint(reset, uops)[MemType::kInp]);

  // ALU: src is an ACC index; an immediate reads no src.
  Insn alu = loop(Opcode::kAlu, 0, 1);
  alu.iter_in = 9;
  alu.src_factor_in = 1;
  v = first_out_of_range(cfg, alu, uops);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->buffer, MemType::kAcc);
  EXPECT_THAT(v->message, HasSubstr("src index 2048"));
  EXPECT_EQ(footprint(alu, uops)[MemType::kAcc], 2048u);
  alu.use_imm = true;
  EXPECT_FALSE(first_out_of_range(cfg, alu, uops));
  alu.dst_factor_in = 1;
  EXPECT_THAT(message(cfg, alu, uops), HasSubstr("dst index 2048"));
}

// Entries past the span are zero micro-ops: the buffer at power-on.
TEST(Ranges, MicroOpsPastTheSpanReadAsZero) {
  Config cfg = Config::vta_default();
  Insn g = loop(Opcode::kGemm, 5, 6);
  g.iter_out = 2049;
  g.dst_factor_out = 1;
  EXPECT_EQ(message(cfg, g),
            "dst index 2048 (micro-op 0 + 2048*1 + 0*0) is beyond the acc buffer's depth 2048");
}

// The first access in fsim's order (i, j, micro-op, dst/src/wgt) and the largest index,
// against a loop that makes every access, for random GEMMs and ALUs on a configuration
// whose buffers all differ in depth.
TEST(Ranges, FirstViolationAndFootprintMatchEveryAccess) {
  ConfigParams p;
  p.log_block = 2;
  p.log_uop_buff_size = 8;   // 64 micro-ops
  p.log_inp_buff_size = 9;   // 128 of 4 bytes
  p.log_wgt_buff_size = 12;  // 256 of 16 bytes
  p.log_acc_buff_size = 10;  // 64 of 16 bytes
  Config cfg = Config::from_params(p);
  ASSERT_EQ(cfg.inp_depth(), 128u);
  ASSERT_EQ(cfg.wgt_depth(), 256u);
  ASSERT_EQ(cfg.acc_depth(), 64u);
  InsnLayout layout(cfg);
  std::mt19937 rng(26);
  auto below = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  int refused = 0;
  for (int t = 0; t < 3000; ++t) {
    std::vector<Uop> uops(cfg.uop_depth());
    for (Uop& u : uops)
      u = {below(1u << layout.uop_dst_width()), below(1u << layout.uop_src_width()),
           below(1u << layout.uop_wgt_width())};
    Insn in = loop(below(2) ? Opcode::kGemm : Opcode::kAlu, below(60), 0);
    in.uop_end = in.uop_bgn + 1 + below(below(4) == 0 ? 10 : 4);  // sometimes past 64
    in.iter_out = 1 + below(5);
    in.iter_in = 1 + below(5);
    in.reset = below(6) == 0;
    in.use_imm = in.opcode == Opcode::kAlu && below(3) == 0;
    for (uint32_t Insn::*f : {&Insn::dst_factor_out, &Insn::dst_factor_in, &Insn::src_factor_out,
                              &Insn::src_factor_in, &Insn::wgt_factor_out, &Insn::wgt_factor_in})
      in.*f = below(4) == 0 ? 0 : below(40);
    if (in.opcode == Opcode::kAlu) in.wgt_factor_out = in.wgt_factor_in = 0;
    SCOPED_TRACE(fmt::format("case {}", t));

    // Every access, in the order fsim makes them.
    std::optional<std::tuple<std::string, uint64_t, MemType>> first;
    std::map<MemType, uint64_t> top;
    bool range_ok = in.uop_end <= cfg.uop_depth();
    if (!range_ok) {
      first = {"micro-op range", std::max(in.uop_bgn, cfg.uop_depth()), MemType::kUop};
    }
    for (uint64_t i = 0; range_ok && i < in.iter_out; ++i)
      for (uint64_t j = 0; j < in.iter_in; ++j)
        for (uint32_t k = in.uop_bgn; k < in.uop_end; ++k) {
          const Uop& u = uops[k];
          auto access = [&](const char* name, uint64_t base, uint64_t fo, uint64_t fi, MemType m) {
            uint64_t idx = base + i * fo + j * fi;
            top[m] = std::max(top[m], idx);
            if (!first && idx >= mem_depth(cfg, m)) first = {name, idx, m};
          };
          access("dst", u.dst_idx, in.dst_factor_out, in.dst_factor_in, MemType::kAcc);
          if (in.reset) continue;
          if (in.opcode == Opcode::kGemm) {
            access("src", u.src_idx, in.src_factor_out, in.src_factor_in, MemType::kInp);
            access("wgt", u.wgt_idx, in.wgt_factor_out, in.wgt_factor_in, MemType::kWgt);
          } else if (!in.use_imm) {
            access("src", u.src_idx, in.src_factor_out, in.src_factor_in, MemType::kAcc);
          }
        }

    auto v = first_out_of_range(cfg, in, uops);
    ASSERT_EQ(v.has_value(), first.has_value()) << (v ? v->message : "");
    if (v) {
      ++refused;
      auto [name, idx, m] = *first;
      EXPECT_EQ(v->buffer, m);
      EXPECT_EQ(v->index, idx);
      EXPECT_EQ(v->depth, mem_depth(cfg, m));
      EXPECT_THAT(v->message, HasSubstr(name));
      EXPECT_THAT(v->message, HasSubstr(fmt::format(" index {}", idx)));
    }
    if (!range_ok) continue;
    Footprint fp = footprint(in, uops);
    EXPECT_EQ(fp[MemType::kUop], in.uop_end - 1u);
    for (MemType m : {MemType::kAcc, MemType::kInp, MemType::kWgt}) {
      if (top.count(m)) {
        EXPECT_EQ(fp[m], top[m]) << mem_type_name(m);
      } else {
        EXPECT_FALSE(fp[m]) << mem_type_name(m);
      }
    }
  }
  // Both outcomes are common enough to be tested.
  EXPECT_GT(refused, 300);
  EXPECT_LT(refused, 2700);
}

// --- The stream check --------------------------------------------------------------

// Device DRAM for StreamRangeCheck: micro-op words at a byte address, and a count of reads.
struct FakeDram {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(4096);
  int reads = 0;
  void put_uops(const InsnLayout& layout, uint64_t addr, const std::vector<Uop>& uops) {
    std::vector<uint8_t> b = encode_uops(layout, uops);
    std::copy(b.begin(), b.end(), bytes.begin() + static_cast<std::ptrdiff_t>(addr));
  }
  StreamRangeCheck::DramReader reader() {
    return [this](uint64_t addr, std::span<uint8_t> out) {
      ++reads;
      if (addr > bytes.size() || out.size() > bytes.size() - addr) return false;
      std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(addr), out.size(), out.begin());
      return true;
    };
  }
};

std::string refusal(StreamRangeCheck& check, const std::vector<Insn>& insns, FakeDram& dram) {
  try {
    check.check(insns, dram.reader());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(StreamRangeCheck, FollowsLoadUopWithinAStream) {
  Config cfg = Config::vta_default();
  InsnLayout layout(cfg);
  FakeDram dram;
  dram.put_uops(layout, 64, {Uop{2040, 0, 0}, Uop{7, 8, 9}});
  StreamRangeCheck check(cfg);
  Insn g = loop(Opcode::kGemm, 10, 11);
  g.iter_out = 9;
  g.dst_factor_out = 1;
  // Before the load, micro-op 10 is zero: 0 + 8 is in range.
  std::vector<Insn> ok = {g, load(MemType::kUop, 10, 64 / 4, 1, 2), Insn{}};
  EXPECT_EQ(refusal(check, ok, dram), "");
  EXPECT_EQ(dram.reads, 1);  // one row of one LOAD UOP
  EXPECT_EQ(check.uops()[10], (Uop{2040, 0, 0}));
  EXPECT_EQ(check.uops()[11], (Uop{7, 8, 9}));

  // The same loop over micro-ops the stream loads first reaches 2048; the refusal names
  // the position, the assembly, the index and the buffer.
  g.uop_bgn = 20;
  g.uop_end = 21;
  std::vector<Insn> bad = {load(MemType::kUop, 20, 64 / 4, 1, 2), g, Insn{}};
  std::string what = refusal(check, bad, dram);
  EXPECT_THAT(what, HasSubstr("instruction #1 (gemm "));
  EXPECT_THAT(what, HasSubstr("uop_bgn=20 uop_end=21 iter_out=9"));
  EXPECT_THAT(what, HasSubstr("dst index 2048 (micro-op 2040 + 8*1 + 0*0) is beyond the acc "
                              "buffer's depth 2048"));
  // A refused stream leaves the buffer as it was: its LOAD UOP at 20 never ran.
  EXPECT_EQ(check.uops()[20], Uop{});
}

// The buffer outlives a stream: a later stream's GEMM sees what an earlier one loaded.
TEST(StreamRangeCheck, CarriesTheUopBufferAcrossStreamsUntilForget) {
  Config cfg = Config::vta_default();
  InsnLayout layout(cfg);
  FakeDram dram;
  dram.put_uops(layout, 0, {Uop{0, 2047, 1023}});
  StreamRangeCheck check(cfg);
  EXPECT_EQ(refusal(check, {load(MemType::kUop, 3, 0, 1, 1), Insn{}}, dram), "");
  Insn g = loop(Opcode::kGemm, 3, 4);
  g.iter_in = 2;
  g.wgt_factor_in = 1;
  EXPECT_THAT(refusal(check, {g, Insn{}}, dram),
              HasSubstr("wgt index 1024 (micro-op 1023 + 0*0 + 1*1) is beyond the wgt buffer's "
                        "depth 1024"));
  // After a failed run the buffer is unknown: zero, the least, refuses only certain cases.
  check.forget();
  EXPECT_EQ(refusal(check, {g, Insn{}}, dram), "");
}

TEST(StreamRangeCheck, LoadsAndStoresOfEveryBuffer) {
  Config cfg = Config::vta_default();
  FakeDram dram;
  StreamRangeCheck check(cfg);
  for (MemType m : {MemType::kInp, MemType::kWgt, MemType::kAcc, MemType::kUop}) {
    std::string what = refusal(check, {Insn{}, load(m, mem_depth(cfg, m), 0, 1, 1)}, dram);
    EXPECT_THAT(what, HasSubstr(fmt::format("instruction #1 (load memory_type={} ",
                                            mem_type_name(m))));
    EXPECT_THAT(what, HasSubstr(fmt::format("index {} is beyond the {} buffer's depth {}",
                                            mem_depth(cfg, m), mem_type_name(m),
                                            mem_depth(cfg, m))));
  }
  EXPECT_THAT(refusal(check, {store(2048, 1, 1)}, dram),
              HasSubstr("index 2048 is beyond the out buffer's depth 2048"));
  EXPECT_EQ(dram.reads, 0);  // a refused LOAD UOP is not read
}

// Micro-ops it cannot read (outside DRAM) stay zero, and bits above the fields are
// dropped as the RTL drops them: the device reports both itself when it runs.
TEST(StreamRangeCheck, UnreadableOrOddMicroOps) {
  Config cfg = load_config("tiny");  // micro-ops use 24 of their 32 bits
  FakeDram dram;
  dram.bytes[0] = 5;     // dst_idx 5
  dram.bytes[3] = 0x80;  // bit 31: no field
  StreamRangeCheck check(cfg);
  EXPECT_EQ(refusal(check, {load(MemType::kUop, 0, 0, 1, 1), load(MemType::kUop, 1, 5000, 1, 1),
                            Insn{}},
                    dram),
            "");
  EXPECT_EQ(check.uops()[0], (Uop{5, 0, 0}));
  EXPECT_EQ(check.uops()[1], Uop{});
}

}  // namespace
}  // namespace kiln::hw
