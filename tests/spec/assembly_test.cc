#include <gtest/gtest.h>

#include <random>

#include "hw/spec/assembly.h"
#include "hw/spec/error.h"

namespace kiln::hw {
namespace {

void expect_error(std::string_view text, std::initializer_list<std::string> fragments) {
  try {
    assemble(text, Config::vta_default(), "prog.s");
    FAIL() << "accepted: " << text;
  } catch (const Error& e) {
    for (const auto& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos)
          << "message '" << e.what() << "' lacks '" << f << "'";
  }
}

TEST(Assembly, ParsesEveryKindWithCommentsAndNames) {
  const char* text = R"(# a small program
    load memory_type=uop sram_base=0 dram_base=64 y_size=1 x_size=2 x_stride=2
    LOAD memory_type=inp sram_base=0 dram_base=0x10 y_size=2 x_size=3 x_stride=3 y_pad_0=1 x_pad_1=15 push_next_dep
    gemm reset=1 uop_bgn=0 uop_end=1 iter_out=1 iter_in=1 pop_prev_dep   # trailing comment
    alu alu_opcode=shr use_imm=1 imm=-32768 uop_bgn=1 uop_end=2 iter_out=4 iter_in=1 dst_factor_out=1 push_next_dep=1
    store memory_type=out dram_base=7 y_size=1 x_size=1 x_stride=1 pop_prev_dep
    finish
    uop dst_idx=1 src_idx=2 wgt_idx=3
  )";
  AsmProgram p = assemble(text, Config::vta_default());
  ASSERT_EQ(p.insns.size(), 6u);
  ASSERT_EQ(p.uops.size(), 1u);
  EXPECT_EQ(p.insns[1].opcode, Opcode::kLoad);
  EXPECT_EQ(p.insns[1].memory_type, MemType::kInp);
  EXPECT_EQ(p.insns[1].dram_base, 16u);
  EXPECT_EQ(p.insns[1].x_pad_1, 15u);
  EXPECT_TRUE(p.insns[1].push_next_dep);
  EXPECT_TRUE(p.insns[2].reset);
  EXPECT_EQ(p.insns[3].alu_opcode, AluOp::kShr);
  EXPECT_EQ(p.insns[3].imm, -32768);
  EXPECT_TRUE(p.insns[3].push_next_dep);
  EXPECT_EQ(p.insns[5].opcode, Opcode::kFinish);
  EXPECT_EQ(p.uops[0], (Uop{1, 2, 3}));
}

TEST(Assembly, ErrorsNameLineAndField) {
  expect_error("finish\nload x_size=70000", {"prog.s:2", "x_size", "70000", "0 to 65535"});
  expect_error("alu imm=32768", {"prog.s:1", "imm", "-32768 to 32767"});
  expect_error("gemm imm=1", {"'imm' is not a field of gemm", "wgt_factor_in"});
  expect_error("gemm uop_end=16384", {"uop_end", "14 bits"});
  expect_error("jump 4", {"unknown mnemonic 'jump'"});
  expect_error("load y_size", {"y_size needs a value"});
  expect_error("load y_size=abc", {"'abc' is not a number"});
  expect_error("load y_size=1 y_size=2", {"given twice"});
  expect_error("load memory_type=7", {"memory_type must be"});
  expect_error("alu alu_opcode=div", {"alu_opcode", "not a number"});
  expect_error("\n\nuop dst_idx=2048", {"prog.s:3", "dst_idx", "11 bits"});
}

// Random instructions with every field at a random legal value survive text and back.
TEST(Assembly, RandomStreamsRoundTrip) {
  for (const char* cfg_name : {"default", "tiny", "small"}) {
    Config cfg = Config::from_file(std::string(std::getenv("KILN_SOURCE_DIR")) + "/hw/config/" +
                                   cfg_name + ".json");
    InsnLayout layout(cfg);
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      SCOPED_TRACE(testing::Message() << cfg_name << " seed " << seed);
      std::mt19937_64 rng(seed);
      std::vector<Insn> insns;
      for (int n = 0; n < 100; ++n) {
        Insn insn;
        insn.opcode = static_cast<Opcode>(rng() % 5);
        for (const FieldSpec& f : layout.fields(insn.opcode)) {
          if (f.field == Field::kOpcode) continue;
          int64_t v = f.min() + static_cast<int64_t>(rng() % static_cast<uint64_t>(f.max() - f.min() + 1));
          if (f.field == Field::kMemoryType || f.field == Field::kAluOpcode) v %= 5;
          set_field(insn, f.field, v);
        }
        insns.push_back(insn);
      }
      std::vector<Uop> uops;
      for (int n = 0; n < 10; ++n)
        uops.push_back(layout.decode_uop(static_cast<uint32_t>(rng()) &
                                         ((1ull << (layout.uop_dst_width() + layout.uop_src_width() +
                                                    layout.uop_wgt_width())) - 1)));
      std::string text = disassemble(insns, cfg) + disassemble_uops(uops);
      AsmProgram back = assemble(text, cfg);
      EXPECT_EQ(back.insns, insns);
      EXPECT_EQ(back.uops, uops);
      EXPECT_EQ(disassemble(back.insns, cfg), disassemble(insns, cfg));
    }
  }
}

}  // namespace
}  // namespace kiln::hw
