#include "hw/sim/rtl/model_builder.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "hw/spec/error.h"
#include "hw/spec/rtl_params.h"

// What hw/sim/rtl/CMakeLists.txt passes in: CMake owns the flags, sources and tools.
// Lists are '|'-separated; source files are relative to the source tree.
#if !defined(KILN_SOURCE_TREE) || !defined(KILN_RTL_SOURCE_FILES) ||                      \
    !defined(KILN_RTL_INORDER_AXI_SOURCE_FILES) || !defined(KILN_RTL_TOP_MODULE) ||       \
    !defined(KILN_VERILATOR_EXE) || !defined(KILN_VERILATOR_INCLUDE) ||                   \
    !defined(KILN_VERILATOR_BUILD_ARGS) || !defined(KILN_MODEL_DEFINES) ||         \
    !defined(KILN_MODEL_CXX) || !defined(KILN_MODEL_INCLUDES) || !defined(KILN_RTL_AXI_BITS)
#error "model_builder.cc is compiled by hw/sim/rtl/CMakeLists.txt, which defines its settings"
#endif

namespace kiln::sim {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The plugin's entry point: a new model (the caller owns it) recording waves to a
// non-empty wave_file.
constexpr const char* kEntry = "kiln_new_rtl_model";
using EntryFn = RtlModel* (*)(const char* wave_file);
// Written last into a model's directory: without it the directory is a failed or
// interrupted build, and is built again.
constexpr const char* kCompleteMarker = "complete";
constexpr const char* kLogFile = "build.log";
constexpr const char* kPluginFile = "model.so";

// What the plugin is compiled against besides the RTL (model.cc.in and every Kiln header
// it includes): a change to any of these makes another model (the cache key hashes their
// contents), so that no plugin meets an executable built from other headers.
constexpr const char* kHarnessFiles[] = {
    "hw/sim/rtl/model.cc.in", "hw/sim/rtl/verilated_model.h", "hw/sim/rtl/verilated_harness.h",
    "hw/sim/rtl/rtl_model.h", "hw/spec/bus_ports.h",           "hw/spec/debug_ports.h",
    "hw/spec/isa.h",          "hw/spec/config.h",              "hw/spec/error.h",
    "hw/spec/rtl_params.h",   "support/error.h"};

std::vector<std::string> split_list(std::string_view list) {
  std::vector<std::string> out;
  std::stringstream in{std::string(list)};
  for (std::string item; std::getline(in, item, '|');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

fs::path source_tree() {
  const char* env = std::getenv("KILN_SOURCE_DIR");
  return (env != nullptr && *env != '\0') ? fs::path(env) : fs::path(KILN_SOURCE_TREE);
}

fs::path default_cache_dir() {
  if (const char* dir = std::getenv("KILN_RTL_MODEL_CACHE"); dir != nullptr && *dir != '\0')
    return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return fs::path(xdg) / "kiln" / "rtl-models";
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0')
    throw hw::Error("rtl model builder: no cache directory: set KILN_RTL_MODEL_CACHE (or HOME)");
  return fs::path(home) / ".cache" / "kiln" / "rtl-models";
}

// One model to build: everything the key, the tools and the plugin need.
struct Plan {
  std::string what;  // "configuration 'x' (core decoupled)", for messages
  std::string top;
  std::vector<std::string> params;  // Verilator -G options
  std::vector<fs::path> rtl;        // the package first, then the sources
  fs::path src;                     // the source tree
  std::string key;                  // 16 hex digits
  std::string id;                   // Vkiln_<id>: unique per key, so that no two models'
                                    // symbols meet in the process
  fs::path dir;
  fs::path lock;
  Clock::time_point deadline;
};

// The files of the source tree the model is made of; hw::Error names the first missing.
std::vector<fs::path> source_files(const fs::path& src, const std::string& core) {
  std::vector<fs::path> out;
  std::string_view list = core == "inorder" ? KILN_RTL_INORDER_AXI_SOURCE_FILES
                                            : KILN_RTL_SOURCE_FILES;
  for (const std::string& f : split_list(list)) out.push_back(src / f);
  for (const char* f : kHarnessFiles) out.push_back(src / f);
  for (const fs::path& p : out) {
    if (!fs::is_regular_file(p)) {
      throw hw::Error(fmt::format(
          "rtl model builder: {} is missing: the source tree {} is not Kiln's (set "
          "KILN_SOURCE_DIR to Kiln's source tree)",
          p.string(), src.string()));
    }
  }
  return out;
}

// `verilator --version`, which the key covers: another Verilator makes another model.
std::string verilator_version() {
  static const std::string version = [] {
    std::string cmd = fmt::format("'{}' --version 2>&1", KILN_VERILATOR_EXE);
    FILE* pipe = popen(cmd.c_str(), "r");
    std::string out;
    char buf[256];
    while (pipe != nullptr && fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
    if (pipe == nullptr || pclose(pipe) != 0 || out.empty())
      throw hw::Error(fmt::format("rtl model builder: cannot run {} --version: {}",
                                  KILN_VERILATOR_EXE, out.empty() ? "no output" : out));
    return out;
  }();
  return version;
}

std::string cache_key(const hw::Config& cfg, const ModelBuildOptions& opt,
                      const std::vector<fs::path>& files) {
  std::string text = fmt::format("kiln-rtl-model-v1\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n",
                                 cfg.canonical(), opt.core, opt.paired_products, KILN_RTL_AXI_BITS,
                                 verilator_version(), KILN_VERILATOR_BUILD_ARGS,
                                 KILN_MODEL_DEFINES, KILN_MODEL_CXX);
  for (const fs::path& f : files) text += f.filename().string() + "\n" + slurp(f) + "\n";
  return fmt::format("{:016x}", fnv1a64(text));
}

std::string dir_name(const hw::Config& cfg, const ModelBuildOptions& opt, const std::string& key) {
  std::string name = cfg.name();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return fmt::format("{}-{}{}-{}", name, opt.core, opt.paired_products ? "-paired" : "", key);
}

Plan make_plan(const hw::Config& cfg, const ModelBuildOptions& opt) {
  if (opt.core != "decoupled" && opt.core != "inorder")
    throw hw::Error(fmt::format("rtl model builder: unknown core '{}'; the RTL has 'decoupled' "
                                "(kiln_top) and 'inorder' (kiln_inorder_axi)",
                                opt.core));
  if (opt.core == "inorder" && opt.paired_products)
    throw hw::Error("rtl model builder: paired GEMM products are kiln_top's (core decoupled)");
  if (opt.core == "inorder" && KILN_RTL_AXI_BITS != 64)
    throw hw::Error("rtl model builder: the in-order core's AXI wrapper has 64-bit data words "
                    "only; this build's are " + std::to_string(KILN_RTL_AXI_BITS));
  Plan p;
  p.what = fmt::format("configuration '{}' (core {}{})", cfg.name(), opt.core,
                       opt.paired_products ? ", paired GEMM products" : "");
  p.top = opt.core == "inorder" ? "kiln_inorder_axi" : KILN_RTL_TOP_MODULE;
  if (opt.paired_products) p.params.push_back("-GGEMM_PAIR_PRODUCTS=1");
  // The rtl device checks a parity bit per scratchpad word, as the built-in models do.
  p.params.push_back("-GPARITY=1");
  p.src = source_tree();
  std::vector<fs::path> files = source_files(p.src, opt.core);
  p.key = cache_key(cfg, opt, files);
  p.id = "m" + p.key;
  fs::path cache = opt.cache_dir.empty() ? default_cache_dir() : opt.cache_dir;
  std::string name = dir_name(cfg, opt, p.key);
  p.dir = fs::absolute(cache / name);
  p.lock = fs::absolute(cache / (name + ".lock"));
  p.rtl.push_back(p.dir / hw::kRtlParamsFile);
  for (const fs::path& f : files)
    if (f.extension() == ".sv") p.rtl.push_back(f);
  return p;
}

// An exclusive flock on a file, held while alive. Per open file, so that threads of one
// process exclude each other as processes do; close-on-exec, so that a tool left
// running cannot hold it.
class FileLock {
 public:
  explicit FileLock(const fs::path& path)
      : fd_(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0)
      throw hw::Error(
          fmt::format("rtl model builder: cannot open the lock file {}", path.string()));
    while (flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        close(fd_);
        throw hw::Error(fmt::format("rtl model builder: cannot lock {}", path.string()));
      }
    }
  }
  ~FileLock() { close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// The log's lines that say what failed (at most a few), for the error message.
std::string log_excerpt(const fs::path& log) {
  std::stringstream lines(slurp(log));
  std::vector<std::string> found;
  for (std::string line; std::getline(lines, line);)
    if (line.find("rror") != std::string::npos || line.find("undefined") != std::string::npos)
      found.push_back(line);
  if (found.size() > 5) found.erase(found.begin(), found.end() - 5);
  std::string out;
  for (const std::string& l : found) out += "\n  " + l;
  return out;
}

// Runs argv in plan.dir in its own process group, its output appended to the log; kills
// the group at the deadline. `step` names the tool in errors.
void run_step(const Plan& plan, const std::string& step, const std::vector<std::string>& argv) {
  const fs::path log = plan.dir / kLogFile;
  {
    std::ofstream out(log, std::ios::app);
    for (const std::string& a : argv) out << a << ' ';
    out << '\n';
  }
  // Everything the child touches is prepared before fork: the parent may have threads.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string log_s = log.string(), dir_s = plan.dir.string();
  pid_t pid = fork();
  if (pid < 0) throw hw::Error(fmt::format("rtl model builder: cannot fork for {}", step));
  if (pid == 0) {
    setpgid(0, 0);
    int fd = open(log_s.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    int null = open("/dev/null", O_RDONLY);
    if (fd < 0 || null < 0 || chdir(dir_s.c_str()) != 0) _exit(127);
    dup2(null, 0), dup2(fd, 1), dup2(fd, 2);
    execv(args[0], args.data());
    const char msg[] = "exec failed: the program is missing or not executable\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  setpgid(pid, pid);  // on both sides, so that the group exists whoever runs first
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR)
      throw hw::Error(fmt::format("rtl model builder: lost {} (waitpid)", step));
    if (Clock::now() >= plan.deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      throw hw::Error(fmt::format(
          "rtl model builder: {}: {} timed out (ModelBuildOptions::timeout_s); its process "
          "group was killed; see {}",
          plan.what, step, log.string()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::string how = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                      : fmt::format("signal {}", WTERMSIG(status));
  throw hw::Error(fmt::format("rtl model builder: {}: {} failed ({}); see {}{}", plan.what, step,
                              how, log.string(), log_excerpt(log)));
}

void write_file(const Plan& plan, const fs::path& path, const std::string& text,
                const std::string& step) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out)
    throw hw::Error(fmt::format("rtl model builder: {}: {}: cannot write {}", plan.what, step,
                                path.string()));
}

std::vector<std::string> verilator_args(const Plan& plan, const ModelBuildOptions& opt) {
  std::vector<std::string> a = {
      KILN_VERILATOR_EXE, "--cc", "--build", "-j", std::to_string(std::max(1, opt.jobs)),
      "--trace-fst", "--x-assign", "fast", "--x-initial", "fast", "-Wno-fatal",
      "--prefix", "Vkiln_" + plan.id, "--Mdir", (plan.dir / "obj").string(),
      "--top-module", plan.top};
  a.insert(a.end(), plan.params.begin(), plan.params.end());
  for (const std::string& arg : split_list(KILN_VERILATOR_BUILD_ARGS)) a.push_back(arg);
  for (const fs::path& f : plan.rtl) a.push_back(f.string());
  return a;
}

// model.cc.in as CMake configures it for a built-in model, plus the plugin's entry point.
std::string plugin_source(const Plan& plan) {
  std::string text = slurp(plan.src / "hw/sim/rtl/model.cc.in");
  auto replace_all = [&](std::string_view from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  };
  replace_all("@KILN_CFG@", plan.id);
  replace_all("@KILN_RTL_AXI_DATA_BITS@", std::to_string(KILN_RTL_AXI_BITS));
  text += fmt::format(
      "\n// The entry point that hw/sim/rtl/model_builder.cc looks up.\n"
      "extern \"C\" kiln::sim::RtlModel* {}(const char* wave_file) {{\n"
      "  return kiln::sim::make_rtl_model_{}(wave_file).release();\n}}\n",
      kEntry, plan.id);
  return text;
}

// Compiles the plugin and links it with the Verilated archive, leaving the runtime's
// symbols to the executable.
std::vector<std::string> compiler_args(const Plan& plan) {
  std::vector<std::string> a = {KILN_MODEL_CXX, "-std=c++20", "-O2", "-fPIC", "-shared"};
  for (const std::string& d : split_list(KILN_MODEL_DEFINES)) a.push_back("-D" + d);
  a.push_back("-I" + plan.src.string());
  a.push_back("-I" + (plan.dir / "obj").string());
  for (const std::string& inc : {std::string(KILN_VERILATOR_INCLUDE),
                                 std::string(KILN_VERILATOR_INCLUDE) + "/vltstd"}) {
    a.push_back("-isystem");
    a.push_back(inc);
  }
  // -I, not -isystem: the compiler ignores an -I of its own system directories, which
  // -isystem would reorder (breaking libstdc++'s #include_next).
  for (const std::string& inc : split_list(KILN_MODEL_INCLUDES)) a.push_back("-I" + inc);
  a.push_back("plugin.cc");
  a.push_back((plan.dir / "obj" / ("Vkiln_" + plan.id + "__ALL.a")).string());
  a.push_back("-o");
  a.push_back(kPluginFile);
  return a;
}

// Package, Verilator, compiler, then the marker. Runs under the key's lock.
void build(const Plan& plan, const hw::Config& cfg, const ModelBuildOptions& opt) {
  fs::remove_all(plan.dir);  // an interrupted build's leftovers
  fs::create_directories(plan.dir);
  std::string pkg;
  try {
    pkg = hw::rtl_params_package(cfg, KILN_RTL_AXI_BITS);
  } catch (const hw::Error& e) {
    throw hw::Error(fmt::format("rtl model builder: {}: package generation failed: {}", plan.what,
                                e.what()));
  }
  write_file(plan, plan.rtl.front(), pkg, "package generation");
  fmt::print(stderr, "Verilating {} into {}; this takes a few minutes\n", plan.what,
             plan.dir.string());
  const Clock::time_point start = Clock::now();
  run_step(plan, "verilator", verilator_args(plan, opt));
  write_file(plan, plan.dir / "plugin.cc", plugin_source(plan), "the plugin's source");
  run_step(plan, "the compiler (" + std::string(KILN_MODEL_CXX) + ")", compiler_args(plan));
  write_file(plan, plan.dir / kCompleteMarker, "", "the marker");
  fmt::print(stderr, "Verilated {} in {:.0f} s\n", plan.what,
             std::chrono::duration<double>(Clock::now() - start).count());
}

// dlopen()s the model's plugin; the handle stays open for the process's life (the
// models it makes run its code).
RtlModelInfo load(const Plan& plan, const hw::Config& cfg, const ModelBuildOptions& opt) {
  const fs::path so = plan.dir / kPluginFile;
  // RTLD_NOW: a symbol the executable does not export is an error here, not a crash later.
  void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::string why = dlerror();
    bool undefined = why.find("undefined symbol") != std::string::npos;
    throw hw::Error(fmt::format(
        "rtl model builder: {}: dlopen of {} failed: {}{}", plan.what, so.string(), why,
        undefined ? ". The executable must link kiln_rtl_sim and export its symbols (CMake "
                    "ENABLE_EXPORTS ON; hw/sim/rtl/model_builder.h)"
                  : ""));
  }
  auto entry = reinterpret_cast<EntryFn>(dlsym(handle, kEntry));
  if (entry == nullptr)
    throw hw::Error(fmt::format("rtl model builder: {}: {} has no function {}", plan.what,
                                so.string(), kEntry));
  RtlModelInfo info;
  info.name = cfg.name();
  info.config_json = cfg.to_json(false);
  info.axi_data_bits = KILN_RTL_AXI_BITS;
  info.make = [entry](const std::string& wave_file) {
    return std::unique_ptr<RtlModel>(entry(wave_file.c_str()));
  };
  info.core = opt.core;
  return info;
}

}  // namespace

RtlModelInfo build_rtl_model(const hw::Config& cfg, const ModelBuildOptions& opt) {
  // The models this process registered, by key and name: a second call returns the same.
  static std::mutex mutex;
  static std::map<std::string, RtlModelInfo> registered;
  Plan plan = make_plan(cfg, opt);
  try {
    fs::create_directories(plan.dir.parent_path());
  } catch (const fs::filesystem_error& e) {
    throw hw::Error(fmt::format("rtl model builder: cache directory: {}", e.what()));
  }
  FileLock lock(plan.lock);
  if (!fs::exists(plan.dir / kCompleteMarker)) {
    // Clamped: a duration of "forever" would overflow the clock.
    plan.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(std::min(opt.timeout_s, 1e9)));
    try {
      build(plan, cfg, opt);
    } catch (const fs::filesystem_error& e) {
      throw hw::Error(fmt::format("rtl model builder: {}: {}", plan.what, e.what()));
    }
  }
  std::lock_guard guard(mutex);
  const std::string id = plan.key + "/" + cfg.name();
  if (auto it = registered.find(id); it != registered.end()) return it->second;
  RtlModelInfo info = load(plan, cfg, opt);
  register_rtl_model(info);
  registered.emplace(id, info);
  return info;
}

}  // namespace kiln::sim
