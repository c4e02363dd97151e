/* A program without LLVM that loads a Kiln-exported shared library with dlopen and
 * calls it through the generated header's prototypes. Built and run by aot_test.cc:
 *   cc -I<dir of kiln_aot.h> aot_loader.c -ldl -o loader && ./loader <dir>/kiln_aot.so
 * The library computes C[i][j] = A[i][j] * 2 + B[i][j] over float32[64][256]. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln_aot.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s library.so\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  __typeof__(&aot_saxpy) saxpy = (__typeof__(&aot_saxpy))dlsym(lib, "aot_saxpy");
  __typeof__(&aot_saxpy_packed) packed = (__typeof__(&aot_saxpy_packed))dlsym(lib, "aot_saxpy_packed");
  __typeof__(&kiln_set_num_threads) set_threads = (__typeof__(&kiln_set_num_threads))dlsym(lib, "kiln_set_num_threads");
  __typeof__(&kiln_get_num_threads) get_threads = (__typeof__(&kiln_get_num_threads))dlsym(lib, "kiln_get_num_threads");
  if (!saxpy || !packed || !set_threads || !get_threads) {
    fprintf(stderr, "dlsym: missing entry points\n");
    return 1;
  }
  enum { N = 64 * 256 };
  float* a = aligned_alloc(64, N * sizeof(float));
  float* b = aligned_alloc(64, N * sizeof(float));
  float* c = aligned_alloc(64, N * sizeof(float));
  for (int i = 0; i < N; ++i) {
    a[i] = (float)(i % 97) * 0.5f;
    b[i] = (float)(i % 13) - 6.0f;
    c[i] = -1.0f;
  }
  printf("threads=%d\n", get_threads()); /* KILN_NUM_THREADS, else the hardware's */
  set_threads(2);
  if (saxpy(a, b, c) != 0) return 1;
  for (int i = 0; i < N; ++i) {
    if (fabsf(c[i] - (a[i] * 2.0f + b[i])) > 0.0f) {
      fprintf(stderr, "mismatch at %d: %f\n", i, c[i]);
      return 1;
    }
  }
  void* args[3] = {b, a, c};
  if (packed(args, 3) != 0) return 1;
  if (c[100] != b[100] * 2.0f + a[100]) return 1;
  if (packed(args, 2) == 0) return 1; /* wrong argument count is refused */
  printf("ok\n");
  dlclose(lib);
  free(a);
  free(b);
  free(c);
  return 0;
}
