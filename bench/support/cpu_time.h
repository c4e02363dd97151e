#pragma once
// The calling thread's CPU time, for simulation speeds on a shared machine: a run that
// gets a fraction of a core takes longer on the wall clock but not in CPU time, so
// speeds per CPU second compare between runs and between simulators in one run.

#include <time.h>

namespace kiln::bench_support {

inline double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

}  // namespace kiln::bench_support
