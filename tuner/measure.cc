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
  static std::map<std::string, MeasureFn> m = {{"cpu", measure_cpu}};
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

// An exclusive lock on a host-wide file while a candidate is timed.
class TimingLock {
 public:
  TimingLock() {
    std::string path = fmt::format("/tmp/kiln-tune-timing-{}.lock", getuid());
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~TimingLock() {
    if (fd_ >= 0) close(fd_);
  }

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
  return Child{pid, p[0], slot, Clock::now(), ""};
}

// Collects a finished (or killed) child's result.
MeasureResult reap(Child& c, bool timed_out, double timeout_s) {
  close(c.fd);
  int status = 0;
  waitpid(c.pid, &status, 0);
  MeasureResult r;
  r.elapsed_s = seconds_since(c.start);
  if (timed_out) {
    r.error = fmt::format("timeout: killed after {:g} s", timeout_s);
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

std::vector<MeasureResult> run_pool(const std::vector<MeasureInput>& inputs, const MeasureOptions& opt, int jobs) {
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
          c.out.append(buf, static_cast<size_t>(n));
          continue;
        }
        if (n == 0) done = true;  // the worker closed its end: it is exiting
        break;
      }
      bool timed_out = !done && seconds_since(c.start) > opt.timeout_s;
      if (timed_out) kill(c.pid, SIGKILL);
      if (done || timed_out) {
        results[c.slot] = reap(c, timed_out, opt.timeout_s);
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
  return nlohmann::json{{"cost", cost}, {"unit", unit}, {"error", error}, {"elapsed_s", elapsed_s}}.dump();
}

MeasureResult MeasureResult::from_json(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  MeasureResult r;
  r.cost = j.at("cost").get<double>();
  r.unit = j.at("unit").get<std::string>();
  r.error = j.at("error").get<std::string>();
  r.elapsed_s = j.at("elapsed_s").get<double>();
  return r;
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

MeasureResult measure_isolated(const MeasureInput& in, const MeasureOptions& opt) { return run_pool({in}, opt, 1)[0]; }

LocalPool::LocalPool(int jobs, MeasureOptions opt) : jobs_(std::max(1, jobs)), opt_(std::move(opt)) {}

std::vector<MeasureResult> LocalPool::measure(const std::vector<MeasureInput>& inputs) { return run_pool(inputs, opt_, jobs_); }

std::string LocalPool::describe() const { return fmt::format("local pool of {} worker process{}", jobs_, jobs_ == 1 ? "" : "es"); }

MeasureResult measure_cpu(const Template& t, const Workload& w, const Config& c, const MeasureOptions& opt) {
  std::vector<schedule::LoweredFunc> funcs = lower_candidate(t, w, c);
  std::unique_ptr<target::KernelModule> mod = target::make_backend("cpu")->build(funcs, opt.target);
  std::vector<std::unique_ptr<float, void (*)(void*)>> bufs;
  std::vector<void*> args;
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
  auto run_once = [&] { mod->call(0, args.data()); };
  TimingLock lock;
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

}  // namespace kiln::tuner
