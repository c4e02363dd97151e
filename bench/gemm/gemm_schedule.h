#pragma once
// Kiln's GEMM schedules for the CPU backend (shared by the bench and its smoke test).
#include "backend-cpu/module.h"

namespace kiln::bench {

// C[M, N] = A[M, K] x B[K, N], float32, function "sgemm"(A, B, C). B is packed into
// panels of NR columns; the C tile of MR x NR lives in registers (cache_write local,
// rows unrolled, columns vectorized) while k runs; column panels are split across
// threads. KILN_GEMM_MR / _NR / _KU override the tile for experiments, and
// KILN_GEMM_PACK_A=1 packs A in panels of MR rows too (slower here).
cpu::Module build_sgemm(int m, int n, int k, const cpu::Target& target);

// C[M, N] (int32) = A[M, K] (uint8) x B[K, N] (int8): function "gemm_u8s8s32"(A, B, C).
// With AVX-512 VNNI the inner 16x4 block is tensorized onto vpdpbusd.
cpu::Module build_gemm_u8s8s32(int m, int n, int k, const cpu::Target& target);

}  // namespace kiln::bench
