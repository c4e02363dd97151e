// The MXU example's functional model and code generator (examples/matrix-unit): random
// matrix products against a plain C++ reference on several scratchpad sizes (the seed is
// printed on failure), the cycle model on a one-tile product, and every command error.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "examples/matrix-unit/mxu_codegen.h"
#include "examples/matrix-unit/mxu_device.h"

namespace kiln::mxu {
namespace {

struct Operands {
  std::vector<int8_t> a, w_tiled;  // A [m, k]; W in the MXU's layout [k/32, n/8, 32, 8]
  std::vector<int32_t> bias;
  std::vector<int8_t> expected;    // clip((A W + bias) >> shift)
};

Operands random_operands(const MatmulKernel& k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> i8(-128, 127), b32(-5000, 5000);
  Operands o;
  o.a.resize(static_cast<size_t>(k.m * k.k));
  for (auto& v : o.a) v = static_cast<int8_t>(i8(rng));
  std::vector<int8_t> w(static_cast<size_t>(k.k * k.n));  // [k, n]
  for (auto& v : w) v = static_cast<int8_t>(i8(rng));
  o.bias.resize(static_cast<size_t>(k.n));
  for (auto& v : o.bias) v = b32(rng);
  o.w_tiled.resize(w.size());
  const int64_t nt = k.n / 8;
  for (int64_t r = 0; r < k.k; ++r)
    for (int64_t c = 0; c < k.n; ++c)
      o.w_tiled[static_cast<size_t>((((r / 32) * nt + c / 8) * 32 + r % 32) * 8 + c % 8)] = w[static_cast<size_t>(r * k.n + c)];
  for (int64_t i = 0; i < k.m; ++i)
    for (int64_t j = 0; j < k.n; ++j) {
      int32_t acc = o.bias[static_cast<size_t>(j)];
      for (int64_t r = 0; r < k.k; ++r) acc += int32_t{o.a[static_cast<size_t>(i * k.k + r)]} * w[static_cast<size_t>(r * k.n + j)];
      o.expected.push_back(static_cast<int8_t>(std::clamp(acc >> k.shift, k.relu ? 0 : -128, 127)));
    }
  return o;
}

// Runs `k` on a fresh device; returns the output and the stats.
std::vector<int8_t> run(const MxuConfig& c, const MatmulKernel& k, const Operands& o, RunStats* stats) {
  MxuDevice dev(c);
  std::vector<uint64_t> args{dev.alloc(k.m * k.k), dev.alloc(k.k * k.n), dev.alloc(4 * k.n), dev.alloc(k.m * k.n)};
  dev.write(args[0], {reinterpret_cast<const uint8_t*>(o.a.data()), o.a.size()});
  dev.write(args[1], {reinterpret_cast<const uint8_t*>(o.w_tiled.data()), o.w_tiled.size()});
  dev.write(args[2], {reinterpret_cast<const uint8_t*>(o.bias.data()), o.bias.size() * 4});
  *stats = dev.run(matmul_commands(c, k), args);
  std::vector<int8_t> out(static_cast<size_t>(k.m * k.n));
  dev.read(args[3], {reinterpret_cast<uint8_t*>(out.data()), out.size()});
  return out;
}

TEST(MxuDevice, RandomProductsMatchTheReference) {
  MxuConfig roomy, tight;
  roomy.dram_bytes = tight.dram_bytes = 1 << 20;
  // Small enough that K is split into chunks, weights reload per row block and the
  // accumulators hold a few row tiles only.
  tight.a_bytes = 512, tight.w_bytes = 1024, tight.acc_bytes = 512;
  std::mt19937 rng(2026);
  for (int round = 0; round < 24; ++round) {
    uint32_t seed = rng();
    std::mt19937 r(seed);
    auto pick = [&](int64_t tile, uint32_t tiles) { return tile * (1 + static_cast<int64_t>(r() % tiles)); };
    MatmulKernel k{"k", pick(4, 20), pick(32, 6), pick(8, 7), static_cast<int>(r() % 12), r() % 2 == 0};
    Operands o = random_operands(k, seed);
    for (const MxuConfig& c : {roomy, tight}) {
      RunStats s;
      EXPECT_EQ(run(c, k, o, &s), o.expected) << "seed " << seed << " " << k.m << "x" << k.k << "x" << k.n << " a_bytes " << c.a_bytes;
      EXPECT_EQ(s.matmuls, ideal_matmuls(k)) << "seed " << seed;
    }
  }
}

TEST(MxuDevice, WeightsStayInTheArrayWhileRowsStreamPast) {
  MatmulKernel k{"k", 64, 64, 16, 3, false};
  Operands o = random_operands(k, 5);
  RunStats s;
  ASSERT_EQ(run(MxuConfig{}, k, o, &s), o.expected);
  // 16 row tiles in one block: each of the 2x2 weight tiles is filled once.
  EXPECT_EQ(s.matmuls, 16 * 2 * 2);
  EXPECT_EQ(s.weight_fills, 4);
}

TEST(MxuDevice, CycleModelOfOneTile) {
  MxuConfig c;
  MatmulKernel k{"k", 4, 32, 8, 0, false};
  RunStats s;
  run(c, k, random_operands(k, 1), &s);
  auto dma = [&](int64_t bytes) { return c.dram_latency + (bytes + c.dram_bytes_per_cycle - 1) / c.dram_bytes_per_cycle; };
  // load_w, load_bias (+ a cycle per row), load_a, the weight fill and 4 rows, store.
  EXPECT_EQ(s.cycles, dma(256) + dma(32) + 4 + dma(128) + 32 + 4 + dma(32));
  EXPECT_EQ(s.commands, 5);
  EXPECT_EQ(s.dram_bytes, 256 + 32 + 128 + 32);
}

void expect_error(const Command& c, const std::string& fragment) {
  MxuDevice dev;
  std::vector<uint64_t> args{dev.alloc(1024), dev.alloc(1024)};
  try {
    dev.run({c}, args);
    ADD_FAILURE() << "no error, expected one containing '" << fragment << "'";
  } catch (const MxuError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("MXU command 0"), std::string::npos) << e.what();
  }
}

TEST(MxuDevice, BadCommandsAreErrors) {
  Command c{Opcode::kLoadA};
  c.rows = 4, c.cols = 32, c.stride = 32;
  c.sram = static_cast<uint32_t>(MxuConfig{}.a_bytes - 64);
  expect_error(c, "outside its");  // past the scratchpad
  c.sram = 0, c.dram = 1 << 30;
  expect_error(c, "outside the");  // past DRAM
  c.dram = 0, c.arg = 5;
  expect_error(c, "argument 5 of 2");
  c.arg = 0, c.stride = 8;
  expect_error(c, "row pitch");
  c.rows = 0;
  expect_error(c, "empty transfer");
  Command m{Opcode::kMatmul};
  m.a_pitch = 32, m.acc_pitch = 4;
  expect_error(m, "less than a tile");
  Command st{Opcode::kStore};
  st.rows = 1, st.cols = 8, st.shift = 40;
  expect_error(st, "shift 40");
  Command bad{static_cast<Opcode>(9)};
  expect_error(bad, "unknown opcode 9");
}

TEST(MxuDevice, MemoryAndShapeErrors) {
  MxuConfig c;
  c.dram_bytes = 4096;
  MxuDevice dev(c);
  dev.alloc(4000);
  EXPECT_THROW(dev.alloc(200), MxuError);
  std::vector<uint8_t> bytes(10);
  EXPECT_THROW(dev.write(4090, bytes), MxuError);
  EXPECT_THROW(dev.read(~uint64_t{0} - 4, bytes), MxuError);
  MxuConfig none;
  none.acc_bytes = 16;
  EXPECT_THROW(MxuDevice{none}, MxuError);
  EXPECT_NE(matmul_problem(c, {"conv", 6, 32, 8, 0, false}).find("conv: 6x32x8 is not a whole number"), std::string::npos);
  EXPECT_NE(matmul_problem(c, {"conv", 4, 32, 8, 33, false}).find("shift 33"), std::string::npos);
  EXPECT_THROW(matmul_commands(c, {"conv", 4, 30, 8, 0, false}), MxuError);
}

}  // namespace
}  // namespace kiln::mxu
