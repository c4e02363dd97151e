// build_rtl_model (hw/sim/rtl/model_builder.h): a configuration this build does not
// Verilate, built at run time into a temporary cache, runs random programs bit for bit
// like fsim through the rtl device; a second build comes from the cache, also in a fresh
// process; tiny built at run time counts the cycles of the built-in tiny; a missing
// source tree and a timeout are errors that say so. Each model is built once per run of
// this binary, which CTest runs as one test for that reason.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hw/driver/fsim_device.h"
#include "hw/driver/rtl/rtl_device.h"
#include "hw/sim/rtl/model_builder.h"
#include "hw/sim/rtl/rtl_sim.h"
#include "hw/sim/testing/random_program.h"
#include "hw/spec/error.h"
#include "hw/spec/regs.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using sim::testing::RandomProgram;

// Set in the child process of CacheServesAFreshProcess: the cache it reads.
constexpr const char* kChildCacheEnv = "KILN_TEST_MODEL_BUILDER_CHILD_CACHE";

hw::Config config_named(const std::string& name) {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  std::filesystem::path root = src ? src : ".";
  return hw::Config::from_file(root / "hw" / "config" / (name + ".json"));
}

// tiny with twice the micro-op buffer: a configuration no build Verilates.
hw::Config unbuilt_config() {
  hw::ConfigParams p = config_named("tiny").params();
  p.log_uop_buff_size = 11;
  return hw::Config::from_params(p, "tiny_uop11");
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The models of this binary, built once into a temporary cache removed at the end.
class ModelBuilder : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string tmpl = (fs::temp_directory_path() / "kiln-model-cache-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    cache_ = tmpl;
  }
  static void TearDownTestSuite() { fs::remove_all(cache_); }

  static sim::ModelBuildOptions options() {
    sim::ModelBuildOptions opt;
    opt.cache_dir = cache_;
    opt.jobs = 2;
    return opt;
  }
  static const sim::RtlModelInfo& unbuilt() { return built(unbuilt_, unbuilt_config()); }
  static const sim::RtlModelInfo& tiny() { return built(tiny_, config_named("tiny")); }

  static fs::path cache_;

 private:
  static const sim::RtlModelInfo& built(std::optional<sim::RtlModelInfo>& slot,
                                        const hw::Config& cfg) {
    if (!slot) {
      Clock::time_point start = Clock::now();
      slot = sim::build_rtl_model(cfg, options());
      std::printf("%s: %.1f s\n", cfg.name().c_str(), seconds_since(start));
    }
    return *slot;
  }
  static std::optional<sim::RtlModelInfo> unbuilt_, tiny_;
};
fs::path ModelBuilder::cache_;
std::optional<sim::RtlModelInfo> ModelBuilder::unbuilt_, ModelBuilder::tiny_;

// Runs random_program(cfg, seed) on the rtl device (which picks the model by
// fingerprint) and on fsim; returns "" or what differs. Adds the rtl's cycles to `cycles`.
std::string run_like_fsim(const hw::Config& cfg, uint64_t seed, uint64_t& cycles) {
  RandomProgram p = sim::testing::random_program(cfg, seed);
  driver::DeviceOptions opts;
  opts.dram_bytes = (p.dram.size() + 4095) / 4096 * 4096;
  driver::FsimDevice fsim(cfg, opts);
  driver::RtlDevice rtl(cfg, opts);
  std::vector<uint8_t> a(opts.dram_bytes), b(opts.dram_bytes);
  for (driver::Device* d : std::initializer_list<driver::Device*>{&fsim, &rtl}) {
    d->write(0, p.dram);
    try {
      d->run(p.insn_addr, p.insn_count);
    } catch (const hw::Error& e) {
      return fmt::format("seed {}: {} failed: {}", seed, d->kind(), e.what());
    }
  }
  fsim.read(0, a);
  rtl.read(0, b);
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i])
      return fmt::format("seed {}: DRAM byte 0x{:x} is 0x{:02x} on fsim, 0x{:02x} on rtl", seed,
                         i, a[i], b[i]);
  cycles += rtl.counters()[hw::regs::Counter::kCycles];
  return "";
}

// The build log of the cached model whose directory name starts with `prefix`.
fs::path build_log(const fs::path& cache, const std::string& prefix) {
  for (const auto& entry : fs::directory_iterator(cache))
    if (entry.is_directory() && entry.path().filename().string().starts_with(prefix))
      return entry.path() / "build.log";
  return {};
}

TEST_F(ModelBuilder, ConcurrentBuildersBuildOnce) {
  // Another thread builds the same model at the same time: one builds, the other waits
  // on the lock and loads the result.
  std::optional<sim::RtlModelInfo> other;
  std::thread builder([&] {
    try {
      other = sim::build_rtl_model(unbuilt_config(), options());
    } catch (const hw::Error& e) {
      ADD_FAILURE() << e.what();
    }
  });
  std::string name;
  try {
    name = unbuilt().name;
  } catch (const hw::Error& e) {
    ADD_FAILURE() << e.what();
  }
  builder.join();
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->name, name);
  std::ifstream in(build_log(cache_, "tiny_uop11-decoupled-"));
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t runs = 0;
  for (size_t at = log.find(" --cc --build "); at != std::string::npos;
       at = log.find(" --cc --build ", at + 1))
    ++runs;
  EXPECT_EQ(runs, 1u) << log;
}

TEST_F(ModelBuilder, UnbuiltConfigurationRunsLikeFsim) {
  const sim::RtlModelInfo& info = unbuilt();
  EXPECT_EQ(info.name, "tiny_uop11");
  EXPECT_EQ(info.core, "decoupled");
  EXPECT_EQ(hw::Config::from_json(info.config_json).fingerprint(), unbuilt_config().fingerprint());
  std::vector<std::string> names = sim::rtl_model_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "tiny_uop11"), names.end());
  uint64_t cycles = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed)
    ASSERT_EQ(run_like_fsim(unbuilt_config(), seed, cycles), "");
  EXPECT_GT(cycles, 0u);
}

TEST_F(ModelBuilder, SecondBuildComesFromTheCache) {
  unbuilt();
  fs::path log = build_log(cache_, "tiny_uop11-decoupled-");
  ASSERT_TRUE(fs::exists(log)) << "no build.log of tiny_uop11 in " << cache_;
  const fs::file_time_type before = fs::last_write_time(log);
  Clock::time_point start = Clock::now();
  sim::RtlModelInfo again = sim::build_rtl_model(unbuilt_config(), options());
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(fs::last_write_time(log), before) << "the cached model was built again";
  EXPECT_EQ(again.name, "tiny_uop11");
}

// The child half of CacheServesAFreshProcess, which runs it in a process of its own
// (disabled otherwise): loads the model from the cache with dlopen (nothing of it is in
// this process yet) and runs a program on it.
TEST(ModelBuilderChild, DISABLED_LoadsFromTheCache) {
  const char* cache = std::getenv(kChildCacheEnv);
  ASSERT_NE(cache, nullptr) << "run by ModelBuilder.CacheServesAFreshProcess, which sets " << kChildCacheEnv;
  sim::ModelBuildOptions opt;
  opt.cache_dir = cache;
  opt.timeout_s = 0.01;  // a build would time out: the model must come from the cache
  Clock::time_point start = Clock::now();
  sim::build_rtl_model(unbuilt_config(), opt);
  EXPECT_LT(seconds_since(start), 5.0);
  uint64_t cycles = 0;
  ASSERT_EQ(run_like_fsim(unbuilt_config(), 7, cycles), "");
  EXPECT_GT(cycles, 0u);
}

// The child half of TheDeviceBuildsAMissingModelWithItsFlag: in a process that has no
// model of the configuration, the rtl device refuses it and names --build-model; with
// build_model it takes the model from $KILN_RTL_MODEL_CACHE (built there by the parent)
// and runs a program as fsim does.
TEST(ModelBuilderChild, DISABLED_TheDeviceBuildsWhatItLacks) {
  const char* cache = std::getenv(kChildCacheEnv);
  ASSERT_NE(cache, nullptr) << "run by ModelBuilder.TheDeviceBuildsAMissingModelWithItsFlag, which sets "
                            << kChildCacheEnv;
  setenv("KILN_RTL_MODEL_CACHE", cache, 1);
  driver::DeviceOptions opts;
  try {
    driver::RtlDevice refused(unbuilt_config(), opts);
    FAIL() << "the rtl device ran a configuration it has no model of";
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--build-model"), std::string::npos) << e.what();
  }
  opts.build_model = true;
  Clock::time_point start = Clock::now();
  driver::RtlDevice dev(unbuilt_config(), opts);
  EXPECT_LT(seconds_since(start), 5.0) << "the model was built again instead of taken from the cache";
  uint64_t cycles = 0;
  ASSERT_EQ(run_like_fsim(unbuilt_config(), 11, cycles), "");
  EXPECT_GT(cycles, 0u);
}

// Runs the ModelBuilderChild test `name` in a process of its own, reading this suite's
// cache; returns whether it passed.
bool child_passes(const std::string& name, const fs::path& cache) {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    setenv(kChildCacheEnv, cache.c_str(), 1);
    const std::string filter = "--gtest_filter=ModelBuilderChild." + name;
    const char* argv[] = {"model_builder_tests", filter.c_str(), "--gtest_also_run_disabled_tests", nullptr};
    execv("/proc/self/exe", const_cast<char**>(argv));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST_F(ModelBuilder, TheDeviceBuildsAMissingModelWithItsFlag) {
  unbuilt();
  EXPECT_TRUE(child_passes("DISABLED_TheDeviceBuildsWhatItLacks", cache_));
}

TEST_F(ModelBuilder, CacheServesAFreshProcess) {
  unbuilt();
  EXPECT_TRUE(child_passes("DISABLED_LoadsFromTheCache", cache_));
}

// Runs random_program(tiny, seed) on `model` through RtlSim; returns its cycle count.
uint64_t cycles_on(const sim::RtlModelInfo& model, uint64_t seed, std::vector<uint8_t>& dram) {
  namespace r = hw::regs;
  RandomProgram p = sim::testing::random_program(config_named("tiny"), seed);
  dram.assign((p.dram.size() + 4095) / 4096 * 4096, 0);
  std::copy(p.dram.begin(), p.dram.end(), dram.begin());
  sim::RtlSim rtl(model, dram, {});
  rtl.write_reg(r::kInsnAddrLo, static_cast<uint32_t>(p.insn_addr));
  rtl.write_reg(r::kInsnAddrHi, 0);
  rtl.write_reg(r::kInsnCount, p.insn_count);
  rtl.write_reg(r::kCtrl, r::kCtrlStart);
  uint32_t status = rtl.run_until_done();
  EXPECT_EQ(status & r::kStatusError, 0u) << model.name << ", seed " << seed << ": " << rtl.error();
  return rtl.cycle();
}

TEST_F(ModelBuilder, RuntimeTinyCountsTheCyclesOfTheBuiltInTiny) {
  const sim::RtlModelInfo* builtin = nullptr;
  for (const sim::RtlModelInfo& m : sim::rtl_models())
    if (m.name == "tiny" && m.core == "decoupled") builtin = &m;
  ASSERT_NE(builtin, nullptr) << "the build Verilates tiny.json by default (KILN_RTL_CONFIGS); this test compares against it";
  const sim::RtlModelInfo& runtime = tiny();
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    std::vector<uint8_t> a, b;
    EXPECT_EQ(cycles_on(*builtin, seed, a), cycles_on(runtime, seed, b)) << "seed " << seed;
    EXPECT_TRUE(a == b) << "seed " << seed;
  }
}

// The hw::Error of building tiny_uop11 with `opt`, with KILN_SOURCE_DIR at `tree` if
// given ("" if none).
std::string build_error(const sim::ModelBuildOptions& opt, const fs::path& tree = {}) {
  const hw::Config cfg = unbuilt_config();  // read from the real tree, before the change
  const char* env = std::getenv("KILN_SOURCE_DIR");
  const std::string saved = env ? env : "";
  if (!tree.empty()) setenv("KILN_SOURCE_DIR", tree.c_str(), 1);
  std::string msg;
  try {
    sim::build_rtl_model(cfg, opt);
  } catch (const hw::Error& e) {
    msg = e.what();
  }
  if (saved.empty()) unsetenv("KILN_SOURCE_DIR");
  else setenv("KILN_SOURCE_DIR", saved.c_str(), 1);
  return msg;
}

TEST_F(ModelBuilder, NamesAMissingSourceTree) {
  fs::path empty = cache_ / "empty-source-tree";
  fs::create_directories(empty);
  std::string msg = build_error(options(), empty);
  EXPECT_NE(msg.find((empty / "hw/rtl").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("is missing"), std::string::npos) << msg;
  EXPECT_NE(msg.find("KILN_SOURCE_DIR"), std::string::npos) << msg;
}

TEST_F(ModelBuilder, VerilatorErrorNamesTheLog) {
  // A copy of the source tree whose kiln_top.sv does not parse.
  ASSERT_NE(std::getenv("KILN_SOURCE_DIR"), nullptr) << "run by CTest, which sets it";
  const fs::path src = std::getenv("KILN_SOURCE_DIR"), tree = cache_ / "broken-source-tree";
  for (const char* dir : {"hw/rtl", "hw/sim/rtl", "hw/spec", "support"}) {
    fs::create_directories(tree / dir);
    fs::copy(src / dir, tree / dir, fs::copy_options::recursive);
  }
  std::ofstream(tree / "hw/rtl/kiln_top.sv", std::ios::app) << "\nthis is not SystemVerilog\n";
  std::string msg = build_error(options(), tree);
  EXPECT_NE(msg.find("verilator failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("build.log"), std::string::npos) << msg;
  EXPECT_NE(msg.find("%Error"), std::string::npos) << msg;
}

TEST_F(ModelBuilder, TimeoutKillsTheBuild) {
  sim::ModelBuildOptions opt = options();
  opt.paired_products = true;  // a model no other case builds
  opt.timeout_s = 0.01;
  Clock::time_point start = Clock::now();
  std::string msg = build_error(opt);
  EXPECT_NE(msg.find("verilator timed out"), std::string::npos) << msg;
  EXPECT_NE(msg.find("build.log"), std::string::npos) << msg;
  EXPECT_LT(seconds_since(start), 10.0);
}

}  // namespace
}  // namespace kiln
