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

class ThreadPool {
 public:
  explicit ThreadPool(int32_t size) { start(size); }
  ~ThreadPool() { stop(); }

  int32_t size() const { return size_; }

  void resize(int32_t size) {
    std::lock_guard<std::mutex> launch(launch_mu_);
    if (size == size_) return;
    stop();
    start(size);
  }

  int32_t launch(kiln_parallel_task fn, void* closure, int32_t num_tasks) {
    std::lock_guard<std::mutex> launch(launch_mu_);
    fn_ = fn;
    closure_ = closure;
    num_tasks_ = num_tasks;
    error_.store(0, std::memory_order_relaxed);
    int32_t helpers = std::min(size_, num_tasks) - 1;  // workers that have a task
    pending_.store(helpers, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lk(mu_);
      active_helpers_ = helpers;
      generation_.fetch_add(1, std::memory_order_release);
    }
    if (helpers > 0) wake_.notify_all();
    in_parallel_region = true;
    run_tasks(0);
    in_parallel_region = false;
    // Spin briefly (the tasks are usually balanced), then sleep.
    for (int spin = 0; spin < (1 << 16) && pending_.load(std::memory_order_acquire) > 0; ++spin) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    if (pending_.load(std::memory_order_acquire) > 0) {
      std::unique_lock<std::mutex> lk(mu_);
      done_.wait(lk, [&] { return pending_.load(std::memory_order_acquire) == 0; });
    }
    return error_.load(std::memory_order_acquire);
  }

 private:
  void start(int32_t size) {
    size_ = std::max<int32_t>(1, size);
    quit_ = false;
    // Workers start from the current generation: a launch right after start() is seen
    // even by a thread that begins running only after it.
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int32_t w = 1; w < size_; ++w) workers_.emplace_back([this, w, gen] { worker_loop(w, gen); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      quit_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

  void run_tasks(int32_t first) {
    for (int32_t t = first; t < num_tasks_; t += size_) {
      int32_t rc = fn_(t, num_tasks_, closure_);
      if (rc != 0) {
        int32_t zero = 0;
        error_.compare_exchange_strong(zero, rc);
      }
    }
  }

  void worker_loop(int32_t w, uint64_t seen) {
    in_parallel_region = true;
    for (;;) {
      // Spin a little for the next launch before sleeping.
      for (int spin = 0; spin < (1 << 14) && generation_.load(std::memory_order_acquire) == seen; ++spin) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
      }
      {
        std::unique_lock<std::mutex> lk(mu_);
        wake_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        seen = generation_.load(std::memory_order_acquire);
        if (quit_) return;
        if (w > active_helpers_) continue;
      }
      run_tasks(w);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
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
  std::atomic<int32_t> pending_{0};
  std::atomic<int32_t> error_{0};
  int32_t active_helpers_ = 0;
  bool quit_ = false;
  kiln_parallel_task fn_ = nullptr;
  void* closure_ = nullptr;
  int32_t num_tasks_ = 0;
};

std::mutex pool_mu;
int32_t requested_threads = 0;  // 0: the default

ThreadPool& pool() {
  // Never destroyed: workers may still be asleep when the process exits.
  static ThreadPool* p = new ThreadPool(default_num_threads());
  return *p;
}

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
