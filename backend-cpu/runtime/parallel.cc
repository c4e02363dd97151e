#include "backend-cpu/runtime/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace {

// True on a pool worker and on a caller while it runs a launch: nested launches run
// serially on the calling thread.
thread_local bool in_parallel_region = false;

int32_t default_num_threads() {
  if (const char* env = std::getenv("KILN_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int32_t>(hw);
}

// Tasks are claimed from a shared counter, so a helper that the OS has not scheduled
// yet does not hold a launch up: the caller runs whatever nobody has claimed. The
// caller waits only for helpers that joined the launch.
class ThreadPool {
 public:
  explicit ThreadPool(int32_t size) { start(size); }
  ~ThreadPool() { stop(); }

  int32_t size() const { return size_; }

  void resize(int32_t size) {
    std::lock_guard<std::mutex> launch(launch_mu_);
    if (size == size_ || down_) return;
    stop();
    start(size);
  }

  // Joins the workers for good; a later launch runs on its caller alone.
  void shutdown() {
    std::lock_guard<std::mutex> launch(launch_mu_);
    stop();
    size_ = 1;
    down_ = true;
  }

  int32_t launch(kiln_parallel_task fn, void* closure, int32_t num_tasks) {
    std::lock_guard<std::mutex> launch(launch_mu_);
    fn_ = fn;
    closure_ = closure;
    num_tasks_ = num_tasks;
    error_.store(0, std::memory_order_relaxed);
    next_task_.store(0, std::memory_order_relaxed);
    uint64_t gen;
    {
      std::lock_guard<std::mutex> lk(mu_);
      gen = generation_.fetch_add(1, std::memory_order_seq_cst) + 1;
    }
    wake_.notify_all();
    in_parallel_region = true;
    run_tasks();
    in_parallel_region = false;
    // Close the launch; then wait for the helpers that joined it to finish their tasks.
    closed_.store(gen, std::memory_order_seq_cst);
    for (int spin = 0; spin < (1 << 16) && active_.load(std::memory_order_seq_cst) > 0; ++spin) pause();
    if (active_.load(std::memory_order_seq_cst) > 0) {
      std::unique_lock<std::mutex> lk(mu_);
      done_.wait(lk, [&] { return active_.load(std::memory_order_seq_cst) == 0; });
    }
    return error_.load(std::memory_order_acquire);
  }

 private:
  static void pause() {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }

  void start(int32_t size) {
    size_ = std::max<int32_t>(1, size);
    quit_ = false;
    // Workers start from the current generation: a launch right after start() is seen
    // even by a thread that begins running only after it.
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int32_t w = 1; w < size_; ++w) workers_.emplace_back([this, gen] { worker_loop(gen); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      quit_ = true;
      generation_.fetch_add(1, std::memory_order_seq_cst);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    closed_.store(generation_.load(), std::memory_order_seq_cst);
  }

  void run_tasks() {
    for (;;) {
      int32_t t = next_task_.fetch_add(1, std::memory_order_relaxed);
      if (t >= num_tasks_) return;
      int32_t rc = fn_(t, num_tasks_, closure_);
      if (rc != 0) {
        int32_t zero = 0;
        error_.compare_exchange_strong(zero, rc);
      }
    }
  }

  void worker_loop(uint64_t seen) {
    in_parallel_region = true;
    for (;;) {
      // Spin a little for the next launch before sleeping.
      for (int spin = 0; spin < (1 << 14) && generation_.load(std::memory_order_acquire) == seen; ++spin) pause();
      {
        std::unique_lock<std::mutex> lk(mu_);
        wake_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        seen = generation_.load(std::memory_order_acquire);
        if (quit_) return;
      }
      // Join launch `seen` unless its caller has closed it already.
      active_.fetch_add(1, std::memory_order_seq_cst);
      if (closed_.load(std::memory_order_seq_cst) < seen) run_tasks();
      if (active_.fetch_sub(1, std::memory_order_seq_cst) == 1) {
        std::lock_guard<std::mutex> lk(mu_);
        done_.notify_all();
      }
    }
  }

  int32_t size_ = 1;
  std::vector<std::thread> workers_;
  std::mutex launch_mu_;  // one launch at a time
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> closed_{0};  // the last launch whose caller stopped waiting for helpers
  std::atomic<int32_t> active_{0};   // helpers inside a launch
  std::atomic<int32_t> next_task_{0};
  std::atomic<int32_t> error_{0};
  bool quit_ = false;
  bool down_ = false;  // shut down: no workers again
  kiln_parallel_task fn_ = nullptr;
  void* closure_ = nullptr;
  int32_t num_tasks_ = 0;
};

std::mutex pool_mu;
int32_t requested_threads = 0;  // 0: the default

ThreadPool* pool_instance = nullptr;

ThreadPool& pool() {
  // Never deleted (a static destructor elsewhere may still launch); its workers are
  // joined by PoolReaper below.
  static ThreadPool* p = pool_instance = new ThreadPool(default_num_threads());
  return *p;
}

// Joins the workers when this runtime goes away: at exit, and at dlclose() of an AOT
// library that carries it, which unmaps the code that spinning or sleeping workers would
// otherwise go on running (a crash after the library's last call).
struct PoolReaper {
  ~PoolReaper() {
    if (pool_instance != nullptr) pool_instance->shutdown();
  }
} pool_reaper;

}  // namespace

extern "C" int32_t kiln_parallel_launch(kiln_parallel_task fn, void* closure, int32_t num_tasks) {
  ThreadPool& p = pool();
  {
    std::lock_guard<std::mutex> lk(pool_mu);
    if (requested_threads > 0 && requested_threads != p.size()) p.resize(requested_threads);
  }
  if (num_tasks <= 0) num_tasks = p.size();
  if (in_parallel_region || num_tasks == 1 || p.size() == 1) {
    for (int32_t t = 0; t < num_tasks; ++t) {
      int32_t rc = fn(t, num_tasks, closure);
      if (rc != 0) return rc;
    }
    return 0;
  }
  return p.launch(fn, closure, num_tasks);
}

extern "C" int32_t kiln_get_num_threads(void) {
  std::lock_guard<std::mutex> lk(pool_mu);
  return requested_threads > 0 ? requested_threads : pool().size();
}

extern "C" void kiln_set_num_threads(int32_t n) {
  std::lock_guard<std::mutex> lk(pool_mu);
  requested_threads = n >= 1 ? n : default_num_threads();
}
