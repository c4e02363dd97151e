#include <gtest/gtest.h>

#include <random>

#include "hw/spec/config.h"
#include "hw/spec/error.h"
#include "hw/spec/isa.h"

namespace kiln::hw {
namespace {

// The expected words were computed by hand from the bit ranges in shared/ISA.md.

TEST(Isa, LoadMatchesIsaBits) {
  InsnLayout layout(Config::vta_default());
  Insn i{.opcode = Opcode::kLoad, .pop_next_dep = true, .push_next_dep = true,
         .memory_type = MemType::kInp, .sram_base = 0x123, .dram_base = 0xABCDE, .y_size = 7,
         .x_size = 9, .x_stride = 33, .y_pad_0 = 1, .y_pad_1 = 2, .x_pad_0 = 3, .x_pad_1 = 4};
  InsnBits bits = layout.encode(i);
  EXPECT_EQ(bits[0], 0x2af378048d50ull);
  EXPECT_EQ(bits[1], 0x4321002100090007ull);
  EXPECT_EQ(layout.decode(bits), i);
}

TEST(Isa, StoreMatchesIsaBits) {
  InsnLayout layout(Config::vta_default());
  Insn i{.opcode = Opcode::kStore, .pop_prev_dep = true, .push_prev_dep = true,
         .memory_type = MemType::kOut, .sram_base = 10, .dram_base = 100, .y_size = 1,
         .x_size = 16, .x_stride = 16};
  InsnBits bits = layout.encode(i);
  EXPECT_EQ(bits[0], 0x190002a29ull);
  EXPECT_EQ(bits[1], 0x1000100001ull);
  EXPECT_EQ(layout.decode(bits), i);
}

TEST(Isa, GemmMatchesIsaBits) {
  InsnLayout layout(Config::vta_default());
  Insn i{.opcode = Opcode::kGemm, .pop_prev_dep = true, .push_next_dep = true, .reset = true,
         .uop_bgn = 5, .uop_end = 77, .iter_out = 3, .iter_in = 4, .dst_factor_out = 16,
         .dst_factor_in = 1, .src_factor_out = 2, .src_factor_in = 3, .wgt_factor_out = 9,
         .wgt_factor_in = 1023};
  InsnBits bits = layout.encode(i);
  EXPECT_EQ(bits[0], 0x8001809a005caull);
  EXPECT_EQ(bits[1], 0xffc0900600800810ull);
  EXPECT_EQ(layout.decode(bits), i);
}

TEST(Isa, AluMatchesIsaBits) {
  InsnLayout layout(Config::vta_default());
  Insn i{.opcode = Opcode::kAlu, .uop_bgn = 1, .uop_end = 2, .iter_out = 1, .iter_in = 8,
         .dst_factor_in = 1, .src_factor_in = 1, .alu_opcode = AluOp::kShr, .use_imm = true,
         .imm = -3};
  InsnBits bits = layout.encode(i);
  EXPECT_EQ(bits[0], 0x10000800400104ull);
  EXPECT_EQ(bits[1], 0xfffdb00200000800ull);
  EXPECT_EQ(layout.decode(bits), i);
}

TEST(Isa, FinishAndUop) {
  InsnLayout layout(Config::vta_default());
  Insn fin{.opcode = Opcode::kFinish};
  EXPECT_EQ(layout.encode(fin), (InsnBits{3, 0}));
  EXPECT_EQ(layout.decode({3, 0}), fin);
  Uop u{.dst_idx = 5, .src_idx = 7, .wgt_idx = 9};
  EXPECT_EQ(layout.encode_uop(u), 0x2403805u);
  EXPECT_EQ(layout.decode_uop(0x2403805u), u);
}

TEST(Isa, DefaultFieldPositionsAreThoseOfIsaMd) {
  InsnLayout layout(Config::vta_default());
  auto lsb = [&](Opcode op, std::string_view name) {
    for (const FieldSpec& f : layout.fields(op))
      if (f.name == name) return f.lsb;
    return -1;
  };
  EXPECT_EQ(lsb(Opcode::kLoad, "dram_base"), 26);
  EXPECT_EQ(lsb(Opcode::kLoad, "y_size"), 64);
  EXPECT_EQ(lsb(Opcode::kLoad, "x_pad_1"), 124);
  EXPECT_EQ(lsb(Opcode::kGemm, "iter_in"), 49);
  EXPECT_EQ(lsb(Opcode::kGemm, "wgt_factor_in"), 118);
  EXPECT_EQ(lsb(Opcode::kAlu, "alu_opcode"), 108);
  EXPECT_EQ(lsb(Opcode::kAlu, "imm"), 112);
}

TEST(Isa, OutOfRangeFieldIsNamed) {
  InsnLayout layout(Config::vta_default());
  Insn i{.opcode = Opcode::kGemm, .uop_end = 1u << 14};
  try {
    layout.encode(i);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("uop_end"), std::string::npos) << e.what();
  }
  Insn a{.opcode = Opcode::kAlu, .imm = 40000};
  EXPECT_THROW(layout.encode(a), Error);
  EXPECT_THROW(layout.encode_uop({.dst_idx = 2048}), Error);
}

TEST(Isa, DecodeRejectsUnknownOpcodesAndStrayBits) {
  InsnLayout layout(Config::vta_default());
  EXPECT_THROW(layout.decode({5, 0}), Error);
  EXPECT_THROW(layout.decode({7, 0}), Error);
  EXPECT_THROW(layout.decode({3 | (1ull << 20), 0}), Error);     // FINISH with a GEMM field set
  EXPECT_THROW(layout.decode({0 | (1ull << 60), 0}), Error);     // LOAD's zero bits [63:58]
  EXPECT_THROW(layout.decode({0 | (5ull << 7), 0}), Error);      // memory_type 5
  EXPECT_THROW(layout.decode({4, 5ull << (108 - 64)}), Error);   // alu_opcode 5
  EXPECT_THROW(decode_program(layout, std::vector<uint8_t>(17)), Error);
}

// Every configuration's layout round-trips random instructions through bytes.
TEST(Isa, RandomRoundTripOnEveryConfiguration) {
  for (int log_block : {1, 2, 3, 4}) {
    ConfigParams p;
    p.log_block = log_block;
    // Depths of 2^11 inputs, 2^10 weights and 2^11 accumulators, as in the default.
    p.log_inp_buff_size = 11 + log_block;
    p.log_wgt_buff_size = 10 + 2 * log_block;
    p.log_acc_buff_size = 13 + log_block;
    Config cfg = Config::from_params(p);
    InsnLayout layout(cfg);
    std::mt19937_64 rng(log_block);
    std::vector<Insn> insns;
    for (int n = 0; n < 500; ++n) {
      Insn insn;
      insn.opcode = static_cast<Opcode>(rng() % 5);
      for (const FieldSpec& f : layout.fields(insn.opcode)) {
        if (f.field == Field::kOpcode) continue;
        int64_t span = f.max() - f.min() + 1;
        int64_t v = f.min() + static_cast<int64_t>(rng() % static_cast<uint64_t>(span));
        if (f.field == Field::kMemoryType) v %= 5;
        if (f.field == Field::kAluOpcode) v %= 5;
        set_field(insn, f.field, v);
      }
      insns.push_back(insn);
    }
    SCOPED_TRACE(cfg.canonical());
    EXPECT_EQ(decode_program(layout, encode_program(layout, insns)), insns);
  }
}

}  // namespace
}  // namespace kiln::hw
