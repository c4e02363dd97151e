// The benchmark's GEMM schedules compute the right thing (small sizes, no timing):
// the packed register-tiled SGEMM, and the u8 x s8 GEMM whose inner block is
// tensorized onto AVX-512 VNNI (vpdpbusd) where the host has it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "bench/gemm/gemm_schedule.h"

namespace kiln {
namespace {

using cpu::NDArray;
using ir::DataType;

TEST(GemmSchedule, SgemmMatchesNaive) {
  for (int n : {32, 96}) {
    SCOPED_TRACE(n);
    int m = n + 8, k = n / 2 + 4;
    cpu::Module mod = bench::build_sgemm(m, n, k, cpu::Target::host());
    NDArray a = NDArray::empty({m, k}, DataType::Float(32));
    NDArray b = NDArray::empty({k, n}, DataType::Float(32));
    NDArray c = NDArray::zeros({m, n}, DataType::Float(32));
    std::mt19937 rng(1);
    for (int64_t i = 0; i < a.size(); ++i) a.data_as<float>()[i] = static_cast<float>(rng() % 17) / 8.0f - 1.0f;
    for (int64_t i = 0; i < b.size(); ++i) b.data_as<float>()[i] = static_cast<float>(rng() % 17) / 8.0f - 1.0f;
    mod({a, b, c});
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        double want = 0;
        for (int kk = 0; kk < k; ++kk) want += a.data_as<float>()[i * k + kk] * b.data_as<float>()[kk * n + j];
        ASSERT_EQ(c.data_as<float>()[i * n + j], want) << i << "," << j;  // sums of 1/64ths: exact
      }
    }
  }
}

TEST(GemmSchedule, Int8GemmMatchesNaive) {
  cpu::Target host = cpu::Target::host();
  int m = 24, n = 64, k = 40;
  cpu::Module mod = bench::build_gemm_u8s8s32(m, n, k, host);
  if (host.has_feature("avx512vnni")) {
    EXPECT_NE(mod.assembly().find("vpdpbusd"), std::string::npos);
  }
  NDArray a = NDArray::empty({m, k}, DataType::UInt(8));
  NDArray b = NDArray::empty({k, n}, DataType::Int(8));
  NDArray c = NDArray::zeros({m, n}, DataType::Int(32));
  std::mt19937 rng(2);
  for (int64_t i = 0; i < a.size(); ++i) a.data_as<uint8_t>()[i] = static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < b.size(); ++i) b.data_as<int8_t>()[i] = static_cast<int8_t>(rng());
  mod({a, b, c});
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      int32_t want = 0;
      for (int kk = 0; kk < k; ++kk) want += a.data_as<uint8_t>()[i * k + kk] * b.data_as<int8_t>()[kk * n + j];
      ASSERT_EQ(c.data_as<int32_t>()[i * n + j], want) << i << "," << j;
    }
  }
}

}  // namespace
}  // namespace kiln
