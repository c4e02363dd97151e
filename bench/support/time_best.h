#pragma once
// The best wall-clock time of repeated runs of a kernel against a peer library's
// (bench/gemm, bench/conv2d): the best of runs lasting at least `min_time` seconds in
// all (and at least 3). Waits first for the other side's idle threads to stop spinning
// (OpenBLAS's workers spin for tens of milliseconds after a call, OpenMP's too), so
// that they do not take a core away, and runs once to warm up.

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

namespace kiln::bench_support {

inline double time_best(const std::function<void()>& fn, double min_time) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  fn();  // warm up
  double best = 1e30, total = 0;
  int runs = 0;
  while (total < min_time || runs < 3) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
    ++runs;
  }
  return best;
}

}  // namespace kiln::bench_support
