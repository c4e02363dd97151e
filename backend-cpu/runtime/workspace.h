#pragma once
// The heap buffers of generated kernels (those too large for the stack: a padded input,
// a blocked result before its NCHW view, a Winograd convolution's tiles). A kernel
// allocates and frees them on every call; from malloc, buffers past its mmap threshold
// (32 MiB at most) were mapped and faulted in anew each time: a video model's
// convolutions (51 MiB results) spent a third of their time in page faults on this
// guest. Freed buffers are kept (up to 1 GiB in all, the least recently freed given
// back first) and handed out again for requests of up to their
// size. Plain C, in every exported model library with the thread pool.
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// A buffer of at least `bytes` bytes, aligned to 64; NULL when out of memory.
void* kiln_workspace_alloc(int64_t bytes);
// Returns a buffer of kiln_workspace_alloc to the cache.
void kiln_workspace_free(void* p);
// Frees every cached buffer.
void kiln_workspace_release(void);

#ifdef __cplusplus
}
#endif
