// kiln explore as a user runs it, every tier real (Yosys for the PYNQ-Z1's Zynq-7020, the
// Verilated RTL): killed with SIGKILL mid-run and resumed, then the same search on 3 MPI
// ranks, which must finish the same records; the front's outputs; bad arguments.
//
// To stay within CI's time, the space is one configuration (tiny.json; the board's own
// configuration lies outside it, so there is no reference run): one synthesis and one
// RTL evaluation per search, and the MPI search reuses the local one's synthesis.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "hw/spec/config.h"
#include "tests/support/command.h"
#include "tuner/records.h"

namespace kiln::explore {
namespace {

namespace fs = std::filesystem;

test::CommandResult sh(const std::string& cmd) { return test::run_command(cmd); }

// stdout alone (the JSON), stderr into `err`: mpirun forwards the ranks' stdout and
// stderr on channels of their own, so merged they reach the pipe in any order (rank
// 0's last progress line once landed inside its JSON).
test::CommandResult sh_stdout(const std::string& cmd, const fs::path& err) {
  return test::run_command("{ " + cmd + " 2> " + err.string() + "; }");
}

using test::lines_of;

class ExploreCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("kiln-explore-cli-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // A PYNQ-Z1 whose own configuration is tiny.json with a larger micro-op buffer, and
    // whose space holds tiny.json alone.
    nlohmann::json cfg = nlohmann::json::parse(std::ifstream(fs::path(KILN_SOURCE_DIR) / "hw/config/tiny.json"));
    cfg["name"] = "tiny-uop2k";
    cfg["LOG_UOP_BUFF_SIZE"] = 11;
    std::ofstream(dir_ / "base.json") << cfg.dump(2);
    nlohmann::json board = nlohmann::json::parse(std::ifstream(fs::path(KILN_SOURCE_DIR) / "boards/pynq-z1/board.json"));
    board["config"] = (dir_ / "base.json").string();
    board["explore"] = {{"LOG_UOP_BUFF_SIZE", {10, 10}}};
    std::ofstream(dir_ / "board.json") << board.dump(2);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string args(const fs::path& records) {
    // One layer of about four million cycles on the 1x4x4 core: the RTL run lasts
    // seconds, long enough to be killed in.
    return fmt::format("explore --board {} --op conv2d:N=1,C=64,H=56,W=56,O=64,KH=3,KW=3,stride=1,pad=1 -n 1 -r {} --json",
                       (dir_ / "board.json").string(), records.string());
  }

  // (template, configuration) -> cost, of every record.
  static std::map<std::pair<std::string, int64_t>, double> costs(const fs::path& records) {
    std::map<std::pair<std::string, int64_t>, double> out;
    for (const tuner::Record& r : tuner::load_records(records.string())) {
      EXPECT_TRUE(r.ok()) << r.template_name << ": " << r.error;
      EXPECT_TRUE(out.emplace(std::make_pair(r.template_name, r.config), r.cost).second)
          << r.template_name << " configuration " << r.config << " evaluated twice";
    }
    return out;
  }

  static inline fs::path dir_;
};

TEST_F(ExploreCli, KilledThenResumedThenTheSameOnThreeMpiRanks) {
  const fs::path rec = dir_ / "local.jsonl";
  // Killed once the synthesis is recorded, while the RTL runs.
  test::KillOutcome k = test::kill_when(std::string(KILN_BIN) + " " + args(rec), [&] { return !lines_of(rec).empty(); });
  ASSERT_NE(k, test::KillOutcome::kExitedFirst) << "kiln explore ended before recording its synthesis";
  ASSERT_EQ(k, test::KillOutcome::kKilled) << "kiln explore finished before it was killed";
  const std::vector<std::string> before = lines_of(rec);
  ASSERT_EQ(before.size(), 1u);

  test::CommandResult r = sh(std::string(KILN_BIN) + " " + args(rec));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::vector<std::string> after = lines_of(rec);
  ASSERT_EQ(after.size(), 2u) << r.output;
  EXPECT_EQ(after[0], before[0]) << "the finished synthesis was run again";
  const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find("{\n")));
  EXPECT_EQ(j["synth_runs"], 1);
  EXPECT_EQ(j["rtl_runs"], 1);
  EXPECT_EQ(j["synth_new"], 0);
  EXPECT_EQ(j["rtl_new"], 1);
  ASSERT_EQ(j["points"].size(), 1u);
  const nlohmann::json& p = j["points"][0];
  EXPECT_EQ(p["config"], "1x4x4-i1k-w4k-a4k-u1k");
  EXPECT_TRUE(p["rtl"]["bit_exact"].get<bool>());
  EXPECT_GT(p["cycles"].get<double>(), 1e6);
  EXPECT_GT(p["synth"]["resources"]["LUT"]["used"].get<double>(), 1000);
  EXPECT_EQ(p["synth"]["resources"]["LUT"]["available"], 53200);
  // The tier-1 figures came along, and their error is reported.
  EXPECT_GT(p["model_cycles"].get<double>(), 0);
  EXPECT_EQ(j["model_error"]["cycles"]["points"], 1);
  EXPECT_TRUE(j["model_error"]["resources"].contains("LUT"));
  // The front: one configuration, written as a file the toolkit reads back.
  ASSERT_EQ(j["front"].size(), 1u);
  ASSERT_EQ(j["front_configs"].size(), 1u);
  hw::Config front = hw::Config::from_file(j["front_configs"][0].get<std::string>());
  EXPECT_EQ(front.fingerprint(), hw::Config::from_file(fs::path(KILN_SOURCE_DIR) / "hw/config/tiny.json").fingerprint());
  EXPECT_NE(front.description().find("cycles on the RTL"), std::string::npos);
  std::ifstream svg(j["svg"].get<std::string>());
  std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_NE(text.find("LUT used / available"), std::string::npos);

  // A second run replays the records: nothing runs again.
  test::CommandResult again = sh(std::string(KILN_BIN) + " " + args(rec));
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_EQ(lines_of(rec).size(), 2u);

  // The same search on 3 MPI ranks (rank 0 searches, 1 and 2 evaluate) finishes the
  // same records: the same configurations, the same LUT share and cycles. It starts from
  // the local search's synthesis record (a second Yosys run of the point would add a
  // minute of CI and nothing new: both tiers go through the same measurer), so the
  // RTL evaluation is what runs on a rank.
  const fs::path mpi = dir_ / "mpi.jsonl";
  std::ofstream(mpi) << before[0] << "\n";
  const fs::path mpi_err = dir_ / "mpi.stderr";
  test::CommandResult m = sh_stdout("mpirun --allow-run-as-root --oversubscribe -np 3 -x ASAN_OPTIONS=detect_leaks=0 " +
                                        std::string(KILN_BIN) + " " + args(mpi),
                                    mpi_err);
  std::ifstream err_file(mpi_err);
  const std::string err((std::istreambuf_iterator<char>(err_file)), std::istreambuf_iterator<char>());
  ASSERT_EQ(m.status, 0) << m.output << err;
  EXPECT_NE(err.find("MPI: 2 measuring ranks"), std::string::npos) << err;
  ASSERT_NE(m.output.find("{\n"), std::string::npos) << m.output << err;
  const nlohmann::json jm = nlohmann::json::parse(m.output.substr(m.output.find("{\n")));
  EXPECT_EQ(jm["synth_new"], 0);
  EXPECT_EQ(jm["rtl_new"], 1);
  EXPECT_EQ(costs(mpi), costs(rec));
}

TEST_F(ExploreCli, BadArgumentsAreNamed) {
  const fs::path rec = dir_ / "bad.jsonl";
  test::CommandResult r = sh(std::string(KILN_BIN) + " " + args(rec) + " --budget lut=120%");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("--budget: lut=120%: the share must be in (0, 100%]"), std::string::npos) << r.output;
  r = sh(std::string(KILN_BIN) + " " + args(rec) + " --budget luts=80%");
  EXPECT_NE(r.output.find("'luts=80%' is not KIND=SHARE"), std::string::npos) << r.output;
  r = sh(std::string(KILN_BIN) + " " + args(rec) + " --layers resnet18");
  EXPECT_NE(r.output.find("give exactly one of --workload"), std::string::npos) << r.output;
  r = sh(std::string(KILN_BIN) + " " + args(rec) + " --search annealing");
  EXPECT_NE(r.output.find("unknown search 'annealing'"), std::string::npos) << r.output;
  r = sh(std::string(KILN_BIN) + " explore --board nosuchboard --layers resnet18 -r " + rec.string());
  EXPECT_NE(r.output.find("unknown board 'nosuchboard'"), std::string::npos) << r.output;
  // 6 channels are not a multiple of the 1x4x4 core's 4.
  r = sh(std::string(KILN_BIN) + " explore --board " + (dir_ / "board.json").string() +
         " --op conv2d:N=1,C=6,H=8,W=8,O=8,KH=3,KW=3,stride=1,pad=1 -r " + rec.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("no configuration of the space can run the workload"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(rec)) << "nothing was evaluated, so nothing was recorded";
}

}  // namespace
}  // namespace kiln::explore
