#pragma once
// The CPU runtime's parallel loops: one thread pool per process (per loaded AOT
// library), sized by KILN_NUM_THREADS or the number of hardware threads. Generated
// code calls kiln_parallel_launch with an outlined loop body; the caller takes part as
// task 0. This header is plain C so that an AOT library's users need no C++.
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// One task of a parallel launch: returns 0, or an error code that the launch returns.
typedef int32_t (*kiln_parallel_task)(int32_t task, int32_t num_tasks, void* closure);

// Runs fn(t, n, closure) for t in [0, n) on the pool; n = the pool size when
// num_tasks <= 0. A launch from inside a task runs its tasks on the calling thread.
// Returns the first non-zero task result, else 0.
int32_t kiln_parallel_launch(kiln_parallel_task fn, void* closure, int32_t num_tasks);

// The pool size: KILN_NUM_THREADS, else the hardware threads. Setting it (>= 1)
// resizes the pool before the next launch.
int32_t kiln_get_num_threads(void);
void kiln_set_num_threads(int32_t n);

#ifdef __cplusplus
}
#endif
