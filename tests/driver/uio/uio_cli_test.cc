// `kiln sim --device uio` as a user on the board runs it, against the register-level
// model in this process: the kiln process maps the model's files as it would map
// /dev/uio0 and /dev/udmabuf0, and its results match `kiln sim --device fsim`.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hw/sim/testing/random_program.h"
#include "hw/spec/isa.h"
#include "tests/driver/uio/uio_model.h"
#include "tests/support/command.h"
#include "tests/support/hw_test.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

hw::Config config(std::string_view name) { return test::shipped_config(name); }

class UioCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln-uio-cli-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write(const std::string& name, const std::vector<uint8_t>& bytes) const {
    std::ofstream(path(name), std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  std::vector<uint8_t> read(const std::string& name) const {
    std::ifstream in(path(name), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static test::CommandResult kiln(const std::string& args) {
    return test::run_command(std::string(KILN_BIN) + " " + args);
  }
  static std::string uio_args(const test::UioModel& m) {
    return " --device uio --uio-registers " + m.registers_path() + " --uio-buffer " +
           m.buffer_path() + " --uio-buffer-phys 0x1f000000";
  }
  fs::path dir_;
};

TEST_F(UioCli, SimOnTheBoardMatchesFsim) {
  hw::Config cfg = config("default");
  test::UioModel model(cfg, {});
  ASSERT_EQ(model.bus_base(), 0x1f000000u);
  sim::testing::RandomProgram p = sim::testing::random_program(cfg, 3);
  write("in.bin", p.dram);
  write("prog.bin", hw::encode_program(hw::InsnLayout(cfg), p.insns));
  std::string common = " --config default --program " + path("prog.bin") + " --dram " + path("in.bin") + " --json";
  test::CommandResult f = kiln("sim --device fsim --dram-out " + path("f.bin") + common);
  ASSERT_EQ(f.status, 0) << f.output;
  test::CommandResult u = kiln("sim" + uio_args(model) + " --dram-out " + path("u.bin") + common);
  ASSERT_EQ(u.status, 0) << u.output;
  EXPECT_EQ(model.starts(), 1);
  EXPECT_EQ(read("u.bin"), read("f.bin"));
  auto fj = nlohmann::json::parse(f.output), uj = nlohmann::json::parse(u.output);
  EXPECT_EQ(uj["device"], "uio");
  EXPECT_EQ(uj["counters"]["store_bytes"], fj["counters"]["store_bytes"]);
  EXPECT_EQ(uj["counters"]["gemm_uops"], fj["counters"]["gemm_uops"]);
}

TEST_F(UioCli, SimErrorsNameWhatToFix) {
  hw::Config cfg = config("tiny");
  test::UioModel model(cfg, {});
  // A compute instruction that pops a token nobody pushes: the board never finishes.
  hw::Insn dead;
  dead.opcode = hw::Opcode::kGemm;
  dead.pop_prev_dep = true;
  write("dead.bin", hw::encode_program(hw::InsnLayout(cfg), std::vector<hw::Insn>{dead, hw::Insn{}}));
  std::string prog = " --config tiny --program " + path("dead.bin");
  test::CommandResult r = kiln("sim" + uio_args(model) + " --timeout 0.2" + prog);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("within 0.2 s"), std::string::npos) << r.output;

  r = kiln("sim --device uio --uio-registers /nonexistent/uio9" + prog);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("register file /nonexistent/uio9"), std::string::npos) << r.output;
  r = kiln("sim --device uio --uio-registers /dev/mem@0xzz" + prog);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("PATH@OFFSET"), std::string::npos) << r.output;
  r = kiln("sim --config default --program " + path("dead.bin") + uio_args(model));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("fingerprint"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kiln
