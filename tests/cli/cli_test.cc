#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <sys/wait.h>

#include "tests/support/command.h"
#include "hw/spec/assembly.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

using Result = test::CommandResult;

Result kiln(const std::string& args) { return test::run_command(std::string(KILN_BIN) + " " + args); }

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kiln_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
  }
  std::vector<uint8_t> read(const std::string& name) const {
    std::ifstream in(path(name), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  fs::path dir_;
};

TEST_F(Cli, HelpListsEveryCommand) {
  Result r = kiln("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* cmd : {"hw", "asm", "disasm", "sim"})
    EXPECT_NE(r.output.find(cmd), std::string::npos) << cmd;
  Result s = kiln("sim --help");
  EXPECT_EQ(s.status, 0);
  EXPECT_NE(s.output.find("--dram-out"), std::string::npos);
}

TEST_F(Cli, HwShowPrintsDerivedJson) {
  Result r = kiln("hw show --config tiny --json");
  ASSERT_EQ(r.status, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["name"], "tiny");
  EXPECT_EQ(j["derived"]["BLOCK_IN"], 4);
  EXPECT_EQ(j["derived"]["ACC_DEPTH"], 256);
  Result bad = kiln("hw show --config " + std::string(std::getenv("KILN_SOURCE_DIR")) +
                    "/CMakeLists.txt");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("not valid JSON"), std::string::npos) << bad.output;
}

// Random instruction streams survive `kiln asm` then `kiln disasm` byte for byte.
TEST_F(Cli, RandomStreamsRoundTripThroughAsmAndDisasm) {
  for (const char* cfg_name : {"default", "tiny"}) {
    hw::Config cfg = hw::Config::from_file(std::string(std::getenv("KILN_SOURCE_DIR")) +
                                           "/hw/config/" + cfg_name + ".json");
    hw::InsnLayout layout(cfg);
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      SCOPED_TRACE(::testing::Message() << cfg_name << " seed " << seed);
      std::mt19937_64 rng(seed * 7919);
      std::vector<hw::Insn> insns;
      for (int n = 0; n < 200; ++n) {
        hw::Insn insn;
        insn.opcode = static_cast<hw::Opcode>(rng() % 5);
        for (const hw::FieldSpec& f : layout.fields(insn.opcode)) {
          if (f.field == hw::Field::kOpcode) continue;
          int64_t v = f.min() + static_cast<int64_t>(rng() % static_cast<uint64_t>(f.max() - f.min() + 1));
          if (f.field == hw::Field::kMemoryType || f.field == hw::Field::kAluOpcode) v %= 5;
          hw::set_field(insn, f.field, v);
        }
        insns.push_back(insn);
      }
      std::string text = hw::disassemble(insns, cfg);
      write("in.s", text);
      Result a = kiln(std::string("asm ") + path("in.s") + " -o " + path("p.bin") + " --config " +
                      cfg_name);
      ASSERT_EQ(a.status, 0) << a.output;
      EXPECT_EQ(read("p.bin"), hw::encode_program(layout, insns));
      Result d = kiln(std::string("disasm ") + path("p.bin") + " --config " + cfg_name);
      ASSERT_EQ(d.status, 0) << d.output;
      EXPECT_EQ(d.output, text);
    }
  }
}

TEST_F(Cli, AsmErrorsNameLineAndField) {
  write("bad.s", "finish\n\nload memory_type=inp x_size=65536\n");
  Result r = kiln("asm " + path("bad.s") + " -o " + path("x.bin"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("bad.s:3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("x_size"), std::string::npos) << r.output;
  write("odd.bin", std::string(20, '\0'));
  Result d = kiln("disasm " + path("odd.bin"));
  EXPECT_NE(d.status, 0);
  EXPECT_NE(d.output.find("16-byte"), std::string::npos) << d.output;
}

TEST_F(Cli, AsmWritesMicroOpsToTheirOwnBlob) {
  write("u.s", "uop dst_idx=1 src_idx=2 wgt_idx=3\nfinish\n");
  EXPECT_NE(kiln("asm " + path("u.s") + " -o " + path("u.bin")).status, 0);
  Result r = kiln("asm " + path("u.s") + " -o " + path("u.bin") + " --uops " + path("u.uop"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read("u.uop").size(), 4u);
  Result d = kiln("disasm --uops " + path("u.uop"));
  EXPECT_EQ(d.output, "uop dst_idx=1 src_idx=2 wgt_idx=3\n");
}

// One GEMM micro-op through `kiln sim`: out = low byte of inp . wgt^T, as ISA.md says.
TEST_F(Cli, SimRunsAGemmAndWritesDram) {
  const int kBlock = 16;
  std::vector<uint8_t> image(2048, 0);
  image[0] = 0;  // uop 0: dst 0, src 0, wgt 0
  std::vector<int8_t> inp(kBlock), wgt(kBlock * kBlock);
  for (int i = 0; i < kBlock; ++i) inp[i] = static_cast<int8_t>(i * 7 - 50);
  for (int o = 0; o < kBlock; ++o)
    for (int i = 0; i < kBlock; ++i) wgt[o * kBlock + i] = static_cast<int8_t>(o * 3 - i * 5);
  for (int i = 0; i < kBlock; ++i) image[64 + i] = static_cast<uint8_t>(inp[i]);  // inp element 4
  for (int k = 0; k < kBlock * kBlock; ++k) image[256 + k] = static_cast<uint8_t>(wgt[k]);  // wgt element 1
  write("in.bin", std::string(image.begin(), image.end()));
  write("gemm.s", R"(# one 1x16x16 GEMM, twice accumulated
load memory_type=uop sram_base=0 dram_base=0 y_size=1 x_size=1 x_stride=1
load memory_type=wgt sram_base=0 dram_base=1 y_size=1 x_size=1 x_stride=1
load memory_type=inp sram_base=0 dram_base=4 y_size=1 x_size=1 x_stride=1 push_next_dep
gemm reset=1 uop_bgn=0 uop_end=1 iter_out=1 iter_in=1 pop_prev_dep
gemm uop_bgn=0 uop_end=1 iter_out=2 iter_in=1 push_next_dep
store memory_type=out sram_base=0 dram_base=64 y_size=1 x_size=1 x_stride=1 pop_prev_dep push_prev_dep
gemm uop_bgn=0 uop_end=0 iter_out=0 iter_in=0 pop_next_dep
finish
)");
  ASSERT_EQ(kiln("asm " + path("gemm.s") + " -o " + path("gemm.bin")).status, 0);
  Result r = kiln("sim --device fsim --program " + path("gemm.bin") + " --dram " + path("in.bin") +
                  " --dram-out " + path("out.bin") + " --json");
  ASSERT_EQ(r.status, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["instructions"], 8);
  EXPECT_EQ(j["counters"]["gemm_uops"], 3);
  EXPECT_EQ(j["counters"]["store_bytes"], 16);
  std::vector<uint8_t> out = read("out.bin");
  ASSERT_EQ(out.size(), 4096u);
  for (int o = 0; o < kBlock; ++o) {
    int32_t sum = 0;
    for (int i = 0; i < kBlock; ++i) sum += inp[i] * wgt[o * kBlock + i];
    EXPECT_EQ(static_cast<int8_t>(out[1024 + o]), static_cast<int8_t>(2 * sum)) << "o=" << o;
  }
  // The input image is unchanged outside the stored row.
  EXPECT_EQ(out[64], image[64]);
}

TEST_F(Cli, SimReportsDeadlockAndBadInput) {
  write("dead.s", "gemm pop_prev_dep uop_bgn=0 uop_end=0 iter_out=0 iter_in=0\nfinish\n");
  ASSERT_EQ(kiln("asm " + path("dead.s") + " -o " + path("dead.bin")).status, 0);
  Result r = kiln("sim --program " + path("dead.bin"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("deadlock"), std::string::npos) << r.output;
  Result missing = kiln("sim --program " + path("nothing.bin"));
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.output.find("cannot open"), std::string::npos) << missing.output;
  Result dev = kiln("sim --device nosuch --program " + path("dead.bin"));
  EXPECT_NE(dev.status, 0);
  EXPECT_NE(dev.output.find("unknown device"), std::string::npos) << dev.output;
}

}  // namespace
}  // namespace kiln
