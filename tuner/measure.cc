#include "tuner/measure.h"

#include <csignal>

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "compiler/ir/node.h"
#include "compiler/target/backend.h"

namespace kiln::tuner {

namespace {

using Clock = std::chrono::steady_clock;

std::map<std::string, MeasureFn>& measure_fns() {
  static std::map<std::string, MeasureFn> m = {{"cpu", measure_cpu}, {"opencl", measure_gpu}, {"cuda", measure_gpu}};
  return m;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Test-only fault injection: "crash:3,hang:5".
void maybe_inject(int64_t config) {
  const char* spec = std::getenv("KILN_TUNER_INJECT");
  if (!spec) return;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto colon = item.find(':');
    if (colon == std::string::npos) continue;
    if (std::atoll(item.c_str() + colon + 1) != config) continue;
    std::string what = item.substr(0, colon);
    if (what == "crash") {
      // A real SIGSEGV, as a broken candidate would die of; raised with the default
      // action so that a sanitizer's handler cannot turn it into an exit status.
      std::signal(SIGSEGV, SIG_DFL);
      std::raise(SIGSEGV);
    }
    if (what == "hang")
      for (;;) pause();
    if (what == "fail") throw std::runtime_error("injected failure");
  }
}

// In a worker: its end of the pipe to the parent, for the lock reports below.
int g_report_fd = -1;

// Bytes a worker sends its parent, besides its one JSON line, when it starts to wait
// for the host lock and when it holds it, so that the parent does not count the
// waiting against the candidate's timeout. JSON escapes control characters, so the
// result line never holds them.
constexpr char kLockWaiting = '\x01', kLockHeld = '\x02';

void report(char c) {
  if (g_report_fd < 0) return;
  ssize_t n = write(g_report_fd, &c, 1);
  (void)n;  // a parent that is gone kills the worker anyway (PR_SET_PDEATHSIG)
}

// The host lock (host_lock_path()): held shared while a worker builds a candidate and
// exclusively while it times one, so that a timing never shares the machine with
// another worker's build: on a machine with few cores a build running beside a
// multi-threaded kernel takes a core from it and halves its speed.
class HostLock {
 public:
  explicit HostLock(bool exclusive) {
    fd_ = open(host_lock_path().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) return;
    report(kLockWaiting);
    flock(fd_, exclusive ? LOCK_EX : LOCK_SH);
    report(kLockHeld);
  }
  ~HostLock() {
    if (fd_ >= 0) close(fd_);
  }
  HostLock(const HostLock&) = delete;
  HostLock& operator=(const HostLock&) = delete;

 private:
  int fd_ = -1;
};

std::string signal_name(int sig) {
  const char* d = strsignal(sig);
  return fmt::format("signal {} ({})", sig, d ? d : "?");
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t slot = 0;
  Clock::time_point start;
  std::string out;
  double waited_s = 0;  // for the host lock, before the current wait
  bool waiting = false;
  Clock::time_point wait_start;

  double waiting_now_s() const { return waiting ? seconds_since(wait_start) : 0; }
  // Time spent building and running: what the timeout limits.
  double busy_s() const { return seconds_since(start) - waited_s - waiting_now_s(); }
  void take(const char* buf, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (buf[i] == kLockWaiting) {
        waiting = true;
        wait_start = Clock::now();
      } else if (buf[i] == kLockHeld) {
        waited_s += waiting_now_s();
        waiting = false;
      } else {
        out.push_back(buf[i]);
      }
    }
  }
};

Child spawn(const MeasureInput& in, const MeasureOptions& opt, size_t slot) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    // The worker: dies with its parent, reports one JSON line, never returns.
    close(p[0]);
    g_report_fd = p[1];
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(3);
    MeasureResult r = measure_here(in, opt);
    std::string s = r.to_json();
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = write(p[1], s.data() + off, s.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(p[1]);
  fcntl(p[0], F_SETFL, O_NONBLOCK);
  Child c;
  c.pid = pid;
  c.fd = p[0];
  c.slot = slot;
  c.start = Clock::now();
  return c;
}

// Collects a finished (or killed) child's result.
MeasureResult reap(Child& c, const std::string& killed_for) {
  close(c.fd);
  int status = 0;
  waitpid(c.pid, &status, 0);
  MeasureResult r;
  r.elapsed_s = seconds_since(c.start);
  if (!killed_for.empty()) {
    r.error = killed_for;
  } else if (WIFSIGNALED(status)) {
    r.error = "crash: worker died of " + signal_name(WTERMSIG(status));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    r.error = fmt::format("crash: worker exited with status {}", WEXITSTATUS(status));
  } else {
    try {
      r = MeasureResult::from_json(c.out);
    } catch (const std::exception&) {
      r.error = "crash: worker sent no result";
    }
  }
  return r;
}

std::vector<MeasureResult> run_pool(const std::vector<MeasureInput>& inputs, const MeasureOptions& opt, int jobs,
                                    const std::function<void(size_t, const MeasureResult&)>& finished) {
  std::vector<MeasureResult> results(inputs.size());
  std::vector<Child> running;
  size_t next = 0;
  while (next < inputs.size() || !running.empty()) {
    while (next < inputs.size() && static_cast<int>(running.size()) < jobs) {
      running.push_back(spawn(inputs[next], opt, next));
      ++next;
    }
    std::vector<pollfd> fds;
    for (const auto& c : running) fds.push_back({c.fd, POLLIN, 0});
    poll(fds.data(), fds.size(), 50);
    for (size_t i = 0; i < running.size();) {
      Child& c = running[i];
      bool done = false;
      char buf[4096];
      for (;;) {
        ssize_t n = read(c.fd, buf, sizeof buf);
        if (n > 0) {
          c.take(buf, static_cast<size_t>(n));
          continue;
        }
        if (n == 0) done = true;  // the worker closed its end: it is exiting
        break;
      }
      std::string killed_for;
      if (!done && c.busy_s() > opt.timeout_s)
        killed_for = fmt::format("timeout: killed after {:g} s", opt.timeout_s);
      else if (!done && c.waiting_now_s() > opt.max_lock_wait_s)
        killed_for = fmt::format("timeout: waited {:g} s for the host lock {}", opt.max_lock_wait_s, host_lock_path());
      if (!killed_for.empty()) kill(c.pid, SIGKILL);
      if (done || !killed_for.empty()) {
        results[c.slot] = reap(c, killed_for);
        finished(c.slot, results[c.slot]);
        running.erase(running.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
  }
  return results;
}

}  // namespace

std::string MeasureResult::to_json() const {
  nlohmann::json j{{"cost", cost}, {"unit", unit}, {"error", error}, {"elapsed_s", elapsed_s}};
  if (!detail.empty()) j["detail"] = detail;
  return j.dump();
}

MeasureResult MeasureResult::from_json(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  MeasureResult r;
  r.cost = j.at("cost").get<double>();
  r.unit = j.at("unit").get<std::string>();
  r.error = j.at("error").get<std::string>();
  r.elapsed_s = j.at("elapsed_s").get<double>();
  if (j.contains("detail")) r.detail = j.at("detail");
  return r;
}

std::string host_lock_path() { return fmt::format("/tmp/kiln-tune-timing-{}.lock", getuid()); }

HostTimingLock::HostTimingLock() {
  fd_ = open(host_lock_path().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ >= 0) flock(fd_, LOCK_EX);
}

HostTimingLock::~HostTimingLock() {
  if (fd_ >= 0) close(fd_);
}

void register_measure(const std::string& target, MeasureFn fn) { measure_fns()[target] = std::move(fn); }

MeasureResult measure_here(const MeasureInput& in, const MeasureOptions& opt) {
  auto t0 = Clock::now();
  MeasureResult r;
  try {
    const Template& t = find_template(in.template_name);
    auto it = measure_fns().find(t.target);
    if (it == measure_fns().end()) throw std::runtime_error("no measure function for target '" + t.target + "'");
    ConfigSpace space = t.space(in.workload);
    Config c = space.get(in.config);
    maybe_inject(in.config);
    r = it->second(t, in.workload, c, opt);
  } catch (const std::exception& e) {
    r.error = std::string("error: ") + e.what();
  }
  r.elapsed_s = seconds_since(t0);
  return r;
}

MeasureResult measure_isolated(const MeasureInput& in, const MeasureOptions& opt) {
  return run_pool({in}, opt, 1, [](size_t, const MeasureResult&) {})[0];
}

LocalPool::LocalPool(int jobs, MeasureOptions opt) : jobs_(std::max(1, jobs)), opt_(std::move(opt)) {}

std::vector<MeasureResult> LocalPool::measure(const std::vector<MeasureInput>& inputs) {
  return run_pool(inputs, opt_, jobs_, [this](size_t i, const MeasureResult& r) { finished(i, r); });
}

std::string LocalPool::describe() const { return fmt::format("local pool of {} worker process{}", jobs_, jobs_ == 1 ? "" : "es"); }

MeasureResult measure_cpu(const Template& t, const Workload& w, const Config& c, const MeasureOptions& opt) {
  std::vector<schedule::LoweredFunc> funcs;
  std::unique_ptr<target::KernelModule> mod;
  std::vector<std::unique_ptr<float, void (*)(void*)>> bufs;
  std::vector<void*> args;
  {
    HostLock preparing(false);
    funcs = lower_candidate(t, w, c, machine_traits(opt.target));
    mod = target::make_backend("cpu")->build(funcs, opt.target);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (const ir::Buffer& b : funcs[0].args) {
      int64_t n = 1;
      for (const ir::Expr& e : b->shape) n *= *ir::as_const_int(e);
      size_t bytes = static_cast<size_t>(n * b->dtype.storage_bytes() + 63) / 64 * 64;
      bufs.emplace_back(static_cast<float*>(std::aligned_alloc(64, bytes)), std::free);
      if (b->dtype == ir::DataType::Float(32))
        for (int64_t i = 0; i < n; ++i) bufs.back().get()[i] = dist(rng);
      else
        std::memset(bufs.back().get(), 0, bytes);
      args.push_back(bufs.back().get());
    }
  }
  auto run_once = [&] { mod->call(0, args.data()); };
  HostLock timing(true);
  auto t0 = Clock::now();
  for (int i = 0; i < std::max(1, opt.warmup); ++i) run_once();
  double one = seconds_since(t0) / std::max(1, opt.warmup);
  int number = std::max(1, static_cast<int>(opt.min_repeat_ms / 1e3 / std::max(one, 1e-9)));
  std::vector<double> times;
  for (int r = 0; r < std::max(1, opt.repeat); ++r) {
    auto s = Clock::now();
    for (int i = 0; i < number; ++i) run_once();
    times.push_back(seconds_since(s) / number);
  }
  MeasureResult res;
  res.cost = *std::min_element(times.begin(), times.end());
  res.unit = "s";
  return res;
}

MeasureResult measure_gpu(const Template& t, const Workload& w, const Config& c, const MeasureOptions& opt) {
  std::vector<schedule::LoweredFunc> funcs;
  std::unique_ptr<target::KernelModule> mod;
  std::vector<std::vector<float>> bufs;
  std::vector<void*> args;
  {
    HostLock preparing(false);
    funcs = lower_candidate(t, w, c, machine_traits(opt.target));
    mod = target::make_backend(t.target)->build(funcs, opt.target);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (const ir::Buffer& b : funcs[0].args) {
      if (b->dtype != ir::DataType::Float(32)) throw std::runtime_error("GPU candidates take float32 arguments");
      int64_t n = 1;
      for (const ir::Expr& e : b->shape) n *= *ir::as_const_int(e);
      bufs.emplace_back(static_cast<size_t>(n));
      for (float& x : bufs.back()) x = dist(rng);
      args.push_back(bufs.back().data());
    }
  }
  HostLock timing(true);
  auto kernels_s = [&] {
    auto t0 = Clock::now();
    mod->call(0, args.data());
    double wall = seconds_since(t0), device = 0;
    bool timed = false;
    for (const target::KernelStats& k : mod->stats())
      if (auto it = k.values.find("ms"); it != k.values.end() && it->second >= 0) {
        device += it->second / 1e3;
        timed = true;
      }
    return timed ? device : wall;
  };
  for (int i = 0; i < std::max(1, opt.warmup); ++i) kernels_s();
  std::vector<double> times;
  for (int r = 0; r < std::max(1, opt.repeat); ++r) times.push_back(kernels_s());
  MeasureResult res;
  res.cost = *std::min_element(times.begin(), times.end());
  res.unit = "s";
  return res;
}

}  // namespace kiln::tuner
