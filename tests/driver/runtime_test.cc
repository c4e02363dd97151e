// The runtime on every device: one suite, built once per device of this build, so
// a new device (rtl, systemc) runs exactly these cases. Cases stay small so that they
// are fast on a Verilated RTL too.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "examples/runtime/kernels.h"
#include "hw/driver/device.h"
#include "hw/driver/fsim_device.h"
#include "hw/driver/runtime/command_stream.h"
#include "hw/driver/runtime/device_buffer.h"
#include "hw/driver/runtime/uop_kernel.h"
#include "hw/spec/error.h"
#include "hw/spec/isa.h"
#include "hw/spec/regs.h"
#include "tests/support/hw_test.h"

namespace kiln::runtime {
namespace {

using hw::AluOp;
using hw::Insn;
using hw::MemType;
using hw::Module;
using hw::Opcode;

constexpr const char* kConfigs[] = {"default", "tiny", "small"};

hw::Config config(std::string_view name) { return test::shipped_config(name); }

using test::expect_error;

size_t count_uop_loads(std::span<const Insn> insns) {
  return std::count_if(insns.begin(), insns.end(), [](const Insn& i) {
    return i.opcode == Opcode::kLoad && i.memory_type == MemType::kUop && i.x_size > 0;
  });
}

class RuntimeTest : public ::testing::TestWithParam<std::string> {
 protected:
  static driver::DeviceOptions small_dram() {
    driver::DeviceOptions opts;
#ifdef KILN_TEST_CORE
    opts.core = KILN_TEST_CORE;  // the rtl device's in-order core
#endif
    opts.dram_bytes = 4 << 20;
    return opts;
  }
  // The device for `cfg`. Every device runs every shipped configuration: a build whose
  // rtl device lacks one (KILN_RTL_CONFIGS) fails here with the device's message.
  std::unique_ptr<driver::Device> device(const hw::Config& cfg,
                                         const driver::DeviceOptions& opts = small_dram()) {
    return driver::make_device(GetParam(), cfg, opts);
  }
  std::mt19937 rng{20261129};

  std::vector<int8_t> random_int8(size_t n) {
    std::uniform_int_distribution<int> d(-128, 127);
    std::vector<int8_t> v(n);
    for (auto& x : v) x = static_cast<int8_t>(d(rng));
    return v;
  }
  std::vector<int32_t> random_int32(size_t n, int32_t lo, int32_t hi) {
    std::uniform_int_distribution<int32_t> d(lo, hi);
    std::vector<int32_t> v(n);
    for (auto& x : v) x = d(rng);
    return v;
  }
};

// ---------------------------------------------------------------------------------
// Device memory and registers

TEST_P(RuntimeTest, DeviceMemoryAllocReadWriteAndRangeErrors) {
  hw::Config cfg = config("default");
  auto dev = device(cfg);
  uint64_t align = tensor_alignment(cfg);
  EXPECT_EQ(align, uint64_t(cfg.wgt_elem_bytes()));
  {
    DeviceBuffer a(*dev, 1000), b(*dev, 300);
    EXPECT_EQ(a.address() % align, 0u);
    EXPECT_EQ(b.address() % align, 0u);
    EXPECT_TRUE(a.address() + a.size() <= b.address() || b.address() + b.size() <= a.address());
    std::vector<int8_t> data = random_int8(1000);
    a.write_elems<int8_t>(data);
    EXPECT_EQ(a.read_elems<int8_t>(1000), data);
    std::vector<int32_t> words = {1, -2, 3, 0x7fffffff};
    b.write_elems<int32_t>(words, 16);
    EXPECT_EQ(b.read_elems<int32_t>(4, 16), words);
    expect_error([&] { a.write_elems<int32_t>(words, 990); }, {"outside", "1000-byte"});
    expect_error([&] { (void)b.read_elems<int8_t>(301); }, {"outside"});
    DeviceBuffer moved = std::move(a);
    EXPECT_EQ(moved.read_elems<int8_t>(1000), data);
  }
  // Freed on destruction: the space is handed out again.
  DeviceBuffer again(*dev, 1000);
  EXPECT_EQ(again.address(), 0u);

  std::vector<uint8_t> bytes(8);
  expect_error([&] { dev->write(dev->dram_bytes() - 4, bytes); }, {"outside"});
  expect_error([&] { dev->read(dev->dram_bytes(), bytes); }, {"outside"});
  expect_error([&] { dev->alloc(dev->dram_bytes() + 1); }, {"out of DRAM"});
  expect_error([&] { dev->free(12345); }, {"not an address"});
}

TEST_P(RuntimeTest, RegisterMapFingerprintAndVersion) {
  for (const char* name : kConfigs) {
    SCOPED_TRACE(name);
    hw::Config cfg = config(name);
    auto dev = device(cfg);
    uint64_t fp = uint64_t{dev->read_reg(hw::regs::kFingerprintHi)} << 32 |
                  dev->read_reg(hw::regs::kFingerprintLo);
    EXPECT_EQ(fp, cfg.fingerprint());
    EXPECT_EQ(dev->read_reg(hw::regs::kVersion), hw::regs::kMapVersion);
    expect_error([&] { dev->write_reg(hw::regs::kFingerprintLo, 1); }, {"not writable"});
    EXPECT_NO_THROW(CommandStream s(*dev));
  }
}

// ---------------------------------------------------------------------------------
// Loads, stores, GEMM and ALU through the runtime

// INP with padding, through an identity GEMM into OUT, stored back: the padded block.
TEST_P(RuntimeTest, LoadStoreRoundTripWithPadding) {
  for (const char* name : kConfigs) {
    SCOPED_TRACE(name);
    hw::Config cfg = config(name);
    auto dev = device(cfg);
    CommandStream s(*dev);
    const int ie = cfg.inp_elem_bytes(), B = cfg.batch(), BI = cfg.block_in();
    const uint32_t y = 3, x = 5, stride = 7;
    const Pad pad{1, 2, 2, 1};
    const uint32_t rows = pad.top + y + pad.bottom, cols = pad.left + x + pad.right;
    const uint32_t inp_base = 4, acc_base = 10;

    std::vector<int8_t> src = random_int8(size_t(y) * stride * ie);
    DeviceBuffer src_dev(*dev, src.size()), dst_dev(*dev, size_t(rows) * cols * ie);
    src_dev.write_elems<int8_t>(src);
    std::vector<int8_t> identity(cfg.wgt_elem_bytes(), 0);
    for (int i = 0; i < BI; ++i) identity[i * BI + i] = 1;
    DeviceBuffer wgt_dev(*dev, identity.size());
    wgt_dev.write_elems<int8_t>(identity);

    s.load_2d(MemType::kInp, inp_base, src_dev.address(), y, x, stride, pad);
    s.load_2d(MemType::kWgt, 0, wgt_dev.address(), 1, 1, 1);
    s.dep_push(Module::kLoad, Module::kCompute);
    s.dep_pop(Module::kLoad, Module::kCompute);
    s.push_gemm(UopKernelBuilder::gemm("copy")
                    .loop_begin(rows * cols, 1, 1, 0)
                    .push(acc_base, inp_base, 0)
                    .loop_end()
                    .finish());
    s.dep_push(Module::kCompute, Module::kStore);
    s.dep_pop(Module::kCompute, Module::kStore);
    s.store_2d(acc_base, dst_dev.address(), rows, cols, cols);
    s.synchronize();

    std::vector<int8_t> expected(size_t(rows) * cols * ie, 0);
    for (uint32_t r = 0; r < y; ++r)
      for (uint32_t c = 0; c < x; ++c)
        for (int b = 0; b < B * BI; ++b)
          expected[((r + pad.top) * cols + c + pad.left) * ie + b] = src[(r * stride + c) * ie + b];
    EXPECT_EQ(dst_dev.read_elems<int8_t>(expected.size()), expected);
  }
}

// ACC with padding, copied to OUT by an ALU shift of 0: the low 8 bits come back.
TEST_P(RuntimeTest, AccLoadWithPaddingThroughAluCopy) {
  hw::Config cfg = config("tiny");
  auto dev = device(cfg);
  CommandStream s(*dev);
  const int lanes = cfg.batch() * cfg.block_out();
  const uint32_t y = 2, x = 3;
  const Pad pad{1, 0, 0, 2};
  const uint32_t rows = 3, cols = 5;
  std::vector<int32_t> acc = random_int32(size_t(y) * x * lanes, -100000, 100000);
  DeviceBuffer acc_dev(*dev, acc.size() * 4), out_dev(*dev, size_t(rows) * cols * lanes);
  acc_dev.write_elems<int32_t>(acc);
  s.load_2d(MemType::kAcc, 0, acc_dev.address(), y, x, x, pad);
  s.push_alu(UopKernelBuilder::alu_imm("copy", AluOp::kShr, 0)
                 .loop_begin(rows * cols, 1, 1)
                 .push(0, 0)
                 .loop_end()
                 .finish());
  s.dep_push(Module::kCompute, Module::kStore);
  s.dep_pop(Module::kCompute, Module::kStore);
  s.store_2d(0, out_dev.address(), 1, rows * cols, rows * cols);
  s.synchronize();
  std::vector<int8_t> expected(size_t(rows) * cols * lanes, 0);
  for (uint32_t r = 0; r < y; ++r)
    for (uint32_t c = 0; c < x; ++c)
      for (int l = 0; l < lanes; ++l)
        expected[((r + pad.top) * cols + c + pad.left) * lanes + l] =
            static_cast<int8_t>(acc[(r * x + c) * lanes + l]);
  EXPECT_EQ(out_dev.read_elems<int8_t>(expected.size()), expected);
}

// OUT is ACC's low bits: a STORE right after a LOAD into ACC (no GEMM or ALU between)
// writes the loaded accumulators' low 8 bits. Rows that an earlier GEMM wrote are
// overwritten by the load, so a device that kept a separate OUT buffer fails here.
TEST_P(RuntimeTest, StoreAfterAccLoadWritesItsLowBits) {
  hw::Config cfg = config("tiny");
  auto dev = device(cfg);
  CommandStream s(*dev);
  const int lanes = cfg.batch() * cfg.block_out();
  const uint32_t n = 6;
  std::vector<int32_t> acc = random_int32(size_t(n) * lanes, -1000000, 1000000);
  DeviceBuffer acc_dev(*dev, acc.size() * 4), out_dev(*dev, size_t(n) * lanes);
  acc_dev.write_elems<int32_t>(acc);
  // First a GEMM with reset zeroes rows 0..n-1, then the load replaces them.
  s.push_gemm(UopKernelBuilder::gemm("zero", /*reset=*/true)
                  .loop_begin(n, 1, 0, 0)
                  .push(0, 0, 0)
                  .loop_end()
                  .finish());
  s.load_2d(MemType::kAcc, 0, acc_dev.address(), 1, n, n, Pad{});
  s.dep_push(Module::kCompute, Module::kStore);
  s.dep_pop(Module::kCompute, Module::kStore);
  s.store_2d(0, out_dev.address(), 1, n, n);
  s.synchronize();
  std::vector<int8_t> expected(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) expected[i] = static_cast<int8_t>(acc[i]);
  EXPECT_EQ(out_dev.read_elems<int8_t>(expected.size()), expected);
}

// A 2x2-block output over 3 K blocks with two loops; checks two bytes of each sum.
TEST_P(RuntimeTest, GemmKernelWithTwoLoops) {
  for (const char* name : kConfigs) {
    SCOPED_TRACE(name);
    hw::Config cfg = config(name);
    auto dev = device(cfg);
    CommandStream s(*dev);
    const int B = cfg.batch(), BI = cfg.block_in(), BO = cfg.block_out();
    const int mb = 2, nb = 2, kb = 3;
    examples::GemmShape shape{mb * B, nb * BO, kb * BI};
    auto a = random_int8(size_t(shape.m) * shape.k), b = random_int8(size_t(shape.n) * shape.k);
    auto pa = examples::pack_activations(a, shape.m, shape.k, 1, 1, cfg);
    auto pb = examples::pack_weights(b, shape.n, shape.k, 1, 1, cfg);
    DeviceBuffer a_dev(*dev, pa.size()), b_dev(*dev, pb.size());
    DeviceBuffer lo_dev(*dev, size_t(shape.m) * shape.n), mid_dev(*dev, size_t(shape.m) * shape.n);
    a_dev.write_elems<int8_t>(pa);
    b_dev.write_elems<int8_t>(pb);

    s.load_2d(MemType::kInp, 0, a_dev.address(), 1, mb * kb, mb * kb);
    s.load_2d(MemType::kWgt, 0, b_dev.address(), 1, nb * kb, nb * kb);
    s.dep_push(Module::kLoad, Module::kCompute);
    s.dep_pop(Module::kLoad, Module::kCompute);
    s.push_gemm(UopKernelBuilder::gemm("reset", true).loop_begin(mb * nb, 1, 0, 0).push(0, 0, 0)
                    .loop_end().finish());
    auto gemm = UopKernelBuilder::gemm("gemm");
    gemm.loop_begin(mb, nb, kb, 0).loop_begin(nb, 1, 0, kb);
    for (int k = 0; k < kb; ++k) gemm.push(0, k, k);
    s.push_gemm(gemm.loop_end().loop_end().finish());
    s.dep_push(Module::kCompute, Module::kStore);
    s.dep_pop(Module::kCompute, Module::kStore);
    s.store_2d(0, lo_dev.address(), 1, mb * nb, mb * nb);
    s.dep_push(Module::kStore, Module::kCompute);
    s.dep_pop(Module::kStore, Module::kCompute);
    s.push_alu(UopKernelBuilder::alu_imm("shr", AluOp::kShr, 12).loop_begin(mb * nb, 1, 1)
                   .push(0, 0).loop_end().finish());
    s.dep_push(Module::kCompute, Module::kStore);
    s.dep_pop(Module::kCompute, Module::kStore);
    s.store_2d(0, mid_dev.address(), 1, mb * nb, mb * nb);
    s.synchronize();

    std::vector<int8_t> lo(size_t(shape.m) * shape.n), mid(lo.size());
    for (int i = 0; i < shape.m; ++i)
      for (int j = 0; j < shape.n; ++j) {
        int32_t acc = 0;
        for (int k = 0; k < shape.k; ++k) acc += int32_t{a[i * shape.k + k]} * b[j * shape.k + k];
        lo[i * shape.n + j] = static_cast<int8_t>(acc);
        mid[i * shape.n + j] = static_cast<int8_t>(acc >> 12);
      }
    auto unpack = [&](const DeviceBuffer& d) {
      return examples::unpack_activations(d.read_elems<int8_t>(lo.size()), shape.m, shape.n, 1, 1,
                                          cfg);
    };
    EXPECT_EQ(unpack(lo_dev), lo);
    EXPECT_EQ(unpack(mid_dev), mid);
  }
}

int32_t alu_reference(AluOp op, int32_t a, int32_t b) {
  auto ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
  switch (op) {
    case AluOp::kMin: return std::min(a, b);
    case AluOp::kMax: return std::max(a, b);
    case AluOp::kAdd: return static_cast<int32_t>(ua + ub);
    case AluOp::kMul: return static_cast<int32_t>(ua * ub);
    case AluOp::kShr: {
      int amount = static_cast<int>(ub & 31);
      if (amount >= 16) amount -= 32;
      return amount >= 0 ? a >> amount : static_cast<int32_t>(ua << -amount);
    }
  }
  return 0;
}

// Every ALU op, with a vector and with an immediate operand; bits 0..7 and 12..19 of the result.
TEST_P(RuntimeTest, EachAluOp) {
  for (const char* name : {"default", "tiny"}) {
    SCOPED_TRACE(name);
    hw::Config cfg = config(name);
    auto dev = device(cfg);
    CommandStream s(*dev);
    const int lanes = cfg.batch() * cfg.block_out();
    const uint32_t n = 4;  // elements per operand
    for (AluOp op : {AluOp::kMin, AluOp::kMax, AluOp::kAdd, AluOp::kShr, AluOp::kMul}) {
      for (bool use_imm : {false, true}) {
        SCOPED_TRACE(std::string(hw::alu_op_name(op)) + (use_imm ? " imm" : ""));
        std::vector<int32_t> acc = random_int32(2 * n * lanes, INT32_MIN, INT32_MAX);
        int32_t imm = random_int32(1, -32768, 32767)[0];
        DeviceBuffer acc_dev(*dev, acc.size() * 4), out_dev(*dev, 2 * n * lanes);
        acc_dev.write_elems<int32_t>(acc);
        s.load_2d(MemType::kAcc, 0, acc_dev.address(), 1, 2 * n, 2 * n);
        auto b = use_imm ? UopKernelBuilder::alu_imm("op", op, imm) : UopKernelBuilder::alu("op", op);
        s.push_alu(b.loop_begin(n, 1, 1).push(0, n).loop_end().finish());
        // Then acc[n..2n) = result >> 12 (zeroed, plus the result, shifted; 15 is the
        // largest right shift): bits 12..19.
        auto upper = [&](UopKernelBuilder kb, uint32_t src) {
          s.push_alu(kb.loop_begin(n, 1, 1).push(n, src).loop_end().finish());
        };
        upper(UopKernelBuilder::alu_imm("zero", AluOp::kMul, 0), n);
        upper(UopKernelBuilder::alu("add", AluOp::kAdd), 0);
        upper(UopKernelBuilder::alu_imm("shr12", AluOp::kShr, 12), n);
        s.dep_push(Module::kCompute, Module::kStore);
        s.dep_pop(Module::kCompute, Module::kStore);
        s.store_2d(0, out_dev.address(), 1, 2 * n, 2 * n);
        s.synchronize();
        std::vector<int8_t> expected(2 * n * lanes);
        for (uint32_t i = 0; i < n * lanes; ++i) {
          int32_t r = alu_reference(op, acc[i], use_imm ? imm : acc[n * lanes + i]);
          expected[i] = static_cast<int8_t>(r);
          expected[n * lanes + i] = static_cast<int8_t>(r >> 12);
        }
        EXPECT_EQ(out_dev.read_elems<int8_t>(expected.size()), expected);
      }
    }
  }
}

// ---------------------------------------------------------------------------------
// Micro-op kernel cache

UopKernel add_imm_kernel(const char* name, uint32_t first, uint32_t count, int32_t imm,
                         uint32_t src_offset = 0) {
  auto b = UopKernelBuilder::alu_imm(name, AluOp::kAdd, imm);
  for (uint32_t i = 0; i < count; ++i) b.push(first + i, first + i + src_offset);
  return b.finish();
}

TEST_P(RuntimeTest, KernelCachedAcrossPushesAndSynchronize) {
  for (const char* name : kConfigs) {
    SCOPED_TRACE(name);
    hw::Config cfg = config(name);
    auto dev = device(cfg);
    CommandStream s(*dev);
    const int lanes = cfg.batch() * cfg.block_out();
    std::vector<int32_t> zeros(4 * lanes, 0);
    DeviceBuffer acc_dev(*dev, zeros.size() * 4), out_dev(*dev, 4 * lanes);
    acc_dev.write_elems<int32_t>(zeros);
    s.load_2d(MemType::kAcc, 0, acc_dev.address(), 1, 4, 4);
    s.push_alu(add_imm_kernel("add", 0, 4, 1));
    s.push_alu(add_imm_kernel("add again", 0, 4, 1));  // equal micro-ops: a hit
    EXPECT_EQ(count_uop_loads(s.pending()), 1u);
    s.synchronize();
    s.push_alu(add_imm_kernel("add", 0, 4, 1));  // still in the device's uop buffer
    EXPECT_EQ(count_uop_loads(s.pending()), 0u);
    EXPECT_EQ(s.uop_cache_stats().loads, 1u);
    EXPECT_EQ(s.uop_cache_stats().hits, 2u);
    s.dep_push(Module::kCompute, Module::kStore);
    s.dep_pop(Module::kCompute, Module::kStore);
    s.store_2d(0, out_dev.address(), 1, 4, 4);
    s.synchronize();
    EXPECT_EQ(out_dev.read_elems<int8_t>(4 * lanes), std::vector<int8_t>(4 * lanes, 3));
  }
}

// tiny's uop buffer holds 256 micro-ops: a ring of 100-op kernels evicts in order.
TEST_P(RuntimeTest, KernelEvictedWhenUopBufferIsFull) {
  hw::Config cfg = config("tiny");
  ASSERT_EQ(cfg.uop_depth(), 256u);
  auto dev = device(cfg);
  CommandStream s(*dev);
  const int lanes = cfg.batch() * cfg.block_out();
  UopKernel k1 = add_imm_kernel("k1", 0, 100, 1), k2 = add_imm_kernel("k2", 100, 100, 2),
            k3 = add_imm_kernel("k3", 0, 100, 4, 1);
  std::vector<int32_t> zeros(200 * lanes, 0);
  DeviceBuffer acc_dev(*dev, zeros.size() * 4), out_dev(*dev, 200 * lanes);
  acc_dev.write_elems<int32_t>(zeros);
  s.load_2d(MemType::kAcc, 0, acc_dev.address(), 1, 200, 200);
  for (const UopKernel* k : {&k1, &k2, &k3, &k2, &k1}) s.push_alu(*k);
  std::vector<uint32_t> bases;
  for (const Insn& i : s.pending())
    if (i.opcode == Opcode::kLoad && i.memory_type == MemType::kUop) bases.push_back(i.sram_base);
  EXPECT_EQ(bases, (std::vector<uint32_t>{0, 100, 0, 100}));  // k1, k2, k3 over k1, k1 over k2
  EXPECT_EQ(s.uop_cache_stats().evictions, 2u);
  EXPECT_EQ(s.uop_cache_stats().hits, 1u);
  s.dep_push(Module::kCompute, Module::kStore);
  s.dep_pop(Module::kCompute, Module::kStore);
  s.store_2d(0, out_dev.address(), 1, 200, 200);
  s.synchronize();
  std::vector<int8_t> expected(200 * lanes, 4);
  std::fill(expected.begin(), expected.begin() + 100 * lanes, 6);
  EXPECT_EQ(out_dev.read_elems<int8_t>(expected.size()), expected);

  UopKernel big = add_imm_kernel("big", 0, 257, 1);
  expect_error([&] { s.push_alu(big); }, {"'big'", "257 micro-ops", "256"});
}

// ---------------------------------------------------------------------------------
// Dependency tokens

TEST_P(RuntimeTest, DependencyPushPopMergedIntoNeighbours) {
  hw::Config cfg = config("default");
  auto dev = device(cfg);
  CommandStream s(*dev);
  DeviceBuffer buf(*dev, 4096);
  auto gemm = UopKernelBuilder::gemm("g").push(0, 0, 0).finish();

  s.load_2d(MemType::kInp, 0, buf.address(), 1, 1, 1);  // #0
  s.dep_pop(Module::kLoad, Module::kCompute);
  s.push_gemm(gemm);                                    // #1 LOAD UOP (pops), #2 GEMM
  s.dep_push(Module::kLoad, Module::kCompute);            // onto #0, not the last insn
  s.dep_push(Module::kCompute, Module::kStore);           // onto #2
  s.dep_push(Module::kCompute, Module::kLoad);            // onto #2 as well
  s.dep_push(Module::kCompute, Module::kStore);           // taken: #3 compute no-op
  s.dep_push(Module::kStore, Module::kCompute);           // no store insn: #4 store no-op
  s.dep_pop(Module::kCompute, Module::kStore);
  s.dep_pop(Module::kCompute, Module::kStore);            // second pop: #5 no-op pops the first
  s.store_2d(0, buf.address(), 1, 1, 1);                // #6 pops the second
  std::span<const Insn> p = s.pending();
  ASSERT_EQ(p.size(), 7u);
  EXPECT_TRUE(p[0].push_next_dep);
  EXPECT_FALSE(p[0].pop_next_dep);
  EXPECT_EQ(p[1].memory_type, MemType::kUop);
  EXPECT_TRUE(p[1].pop_prev_dep);
  EXPECT_FALSE(p[2].pop_prev_dep);
  EXPECT_TRUE(p[2].push_next_dep);
  EXPECT_TRUE(p[2].push_prev_dep);
  EXPECT_EQ(hw::module_of(p[3]), Module::kCompute);
  EXPECT_EQ(p[3].x_size, 0u);
  EXPECT_TRUE(p[3].push_next_dep);
  EXPECT_EQ(p[4].opcode, Opcode::kStore);
  EXPECT_EQ(p[4].x_size, 0u);
  EXPECT_TRUE(p[4].push_prev_dep);
  EXPECT_EQ(p[5].opcode, Opcode::kStore);
  EXPECT_EQ(p[5].x_size, 0u);
  EXPECT_TRUE(p[5].pop_prev_dep);
  EXPECT_TRUE(p[6].pop_prev_dep);
  EXPECT_EQ(p[6].x_size, 1u);
  expect_error([&] { s.dep_push(Module::kLoad, Module::kStore); }, {"neighbouring"});
  expect_error([&] { s.dep_pop(Module::kStore, Module::kLoad); }, {"neighbouring"});
  EXPECT_NE(s.disassemble().find("gemm"), std::string::npos);
}

TEST_P(RuntimeTest, SynchronizeEndsWithVtaFinishProtocol) {
  hw::Config cfg = config("default");
  auto dev = device(cfg);
  CommandStream s(*dev);
  DeviceBuffer buf(*dev, 4096);
  s.load_2d(MemType::kInp, 0, buf.address(), 1, 1, 1);
  s.synchronize();
  std::span<const Insn> p = s.last_program();
  ASSERT_EQ(p.size(), 4u);
  EXPECT_TRUE(p[0].push_next_dep);                 // load hands a token to compute
  EXPECT_EQ(p[1].opcode, Opcode::kStore);          // store no-op hands one too
  EXPECT_TRUE(p[1].push_prev_dep);
  EXPECT_EQ(hw::module_of(p[2]), Module::kCompute);  // compute takes both
  EXPECT_TRUE(p[2].pop_prev_dep && p[2].pop_next_dep);
  EXPECT_EQ(p[3].opcode, Opcode::kFinish);
  EXPECT_FALSE(p[3].pop_prev_dep || p[3].pop_next_dep);
  EXPECT_TRUE(s.pending().empty());
  if (dev->has_counter(hw::regs::Counter::kLoadInpBytes)) {  // the in-order core has fewer
    EXPECT_EQ(s.counters().at(hw::regs::Counter::kLoadInpBytes), uint64_t(cfg.inp_elem_bytes()));
  }
  EXPECT_EQ(s.counters().at(hw::regs::Counter::kLoadInsns), 1u);
}

TEST_P(RuntimeTest, SynchronizeOnEmptyStream) {
  auto dev = device(config("default"));
  CommandStream s(*dev);
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_TRUE(s.last_program().empty());
  EXPECT_TRUE(s.counters().empty());
  // A stream of tokens only still runs.
  s.dep_push(Module::kLoad, Module::kCompute);
  s.dep_pop(Module::kLoad, Module::kCompute);
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(s.last_program().back().opcode, Opcode::kFinish);
  EXPECT_NO_THROW(s.synchronize());
}

// ---------------------------------------------------------------------------------
// Errors

TEST_P(RuntimeTest, WrongConfigProgramRefused) {
  auto dev = device(config("default"));
  CommandStream s(*dev, config("tiny"));
  DeviceBuffer buf(*dev, 4096);
  s.load_2d(MemType::kInp, 0, buf.address(), 1, 1, 1);
  expect_error([&] { s.synchronize(); }, {"'tiny'", "fingerprint"});
}

TEST_P(RuntimeTest, BrokenStreamReportsDeadlock) {
  auto dev = device(config("default"));
  CommandStream s(*dev);
  DeviceBuffer buf(*dev, 4096);
  // The load module waits for a token that compute never pushes.
  s.dep_pop(Module::kCompute, Module::kLoad);
  s.load_2d(MemType::kInp, 0, buf.address(), 1, 1, 1);
  try {
    s.synchronize();
    ADD_FAILURE() << "a stream that can never finish ran";
  } catch (const hw::Error& e) {
    std::string what = e.what();
    // fsim and the decoupled core: a deadlock; the in-order core, which runs the stream
    // in program order, names the token that was never pushed before its pop.
    EXPECT_TRUE(what.find("deadlock") != std::string::npos ||
                what.find("watchdog") != std::string::npos ||
                what.find("no earlier instruction pushed") != std::string::npos)
        << what;
  }
}

// After a device error the same stream and device run a good program: the runtime drops
// its uop cache, the device recovers from the failed run.
TEST_P(RuntimeTest, StreamUsableAfterDeviceError) {
  auto dev = device(config("default"));
  CommandStream s(*dev);
  DeviceBuffer buf(*dev, 4096);
  s.push_alu(add_imm_kernel("add", 0, 1, 1));
  s.dep_pop(Module::kCompute, Module::kLoad);
  s.load_2d(MemType::kInp, 0, buf.address(), 1, 1, 1);
  EXPECT_THROW(s.synchronize(), hw::Error);

  const hw::Config& cfg = dev->config();
  const size_t lanes = cfg.batch() * cfg.block_out();
  buf.write_elems<int32_t>(std::vector<int32_t>(lanes, 41));
  s.load_2d(MemType::kAcc, 0, buf.address(), 1, 1, 1);
  s.push_alu(add_imm_kernel("add", 0, 1, 1));
  EXPECT_EQ(count_uop_loads(s.pending()), 1u);  // the cache was dropped with the failed run
  s.dep_push(Module::kCompute, Module::kStore);
  s.dep_pop(Module::kCompute, Module::kStore);
  s.store_2d(0, buf.address() + 1024, 1, 1, 1);
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(buf.read_elems<int8_t>(lanes, 1024), std::vector<int8_t>(lanes, 42));
}

// Writes a raw stream (the runtime builds none of these: CommandStream checks its own
// ranges) to device DRAM and runs it.
void run_raw(driver::Device& dev, const std::vector<Insn>& insns) {
  std::vector<uint8_t> bytes = hw::encode_program(hw::InsnLayout(dev.config()), insns);
  DeviceBuffer program(dev, bytes.size(), 64);
  program.write(bytes);
  dev.run(program.address(), static_cast<uint32_t>(insns.size()));
}

// A LOAD, STORE, GEMM or ALU index one past its buffer, per buffer: the RTL would keep
// the index's low bits and run to the end with wrong results, so every device refuses
// the stream before launch (Device::check_stream, hw/spec/ranges.h) with the same words,
// and then runs a correct program touching each buffer's last index.
TEST_P(RuntimeTest, OutOfRangeScratchpadIndexRefusedPerBuffer) {
  for (const char* name : kConfigs) {
    SCOPED_TRACE(name);
    hw::Config cfg = config(name);
    auto dev = device(cfg);
    const uint32_t inp = cfg.inp_depth(), wgt = cfg.wgt_depth(), acc = cfg.acc_depth(),
                   uop = cfg.uop_depth();
    DeviceBuffer data(*dev, 4096, 256);
    // Micro-op 0 sits at the last index of every buffer GEMM reads, micro-op 1 at ACC's
    // last for an ALU src.
    std::vector<hw::Uop> uops = {{acc - 1, inp - 1, wgt - 1}, {0, acc - 1, 0}};
    data.write(hw::encode_uops(hw::InsnLayout(cfg), uops));
    auto load = [&](MemType m, uint32_t sram, uint32_t x_size) {
      Insn in;
      in.opcode = Opcode::kLoad;
      in.memory_type = m;
      in.sram_base = sram;
      in.dram_base = static_cast<uint32_t>(data.address() / hw::mem_elem_bytes(cfg, m));
      in.y_size = 1;
      in.x_size = in.x_stride = x_size;
      return in;
    };
    Insn store = load(MemType::kOut, acc - 1, 2);
    store.opcode = Opcode::kStore;
    auto loop = [&](Opcode op, uint32_t bgn, uint32_t end, uint32_t iter_out, uint32_t iter_in) {
      Insn in;
      in.opcode = op;
      in.uop_bgn = bgn;
      in.uop_end = end;
      in.iter_out = iter_out;
      in.iter_in = iter_in;
      return in;
    };
    Insn gemm_dst = loop(Opcode::kGemm, 0, 1, 2, 1);
    gemm_dst.dst_factor_out = 1;
    Insn gemm_src = loop(Opcode::kGemm, 0, 1, 1, 2);
    gemm_src.src_factor_in = 1;
    Insn gemm_wgt = loop(Opcode::kGemm, 0, 1, 1, 2);
    gemm_wgt.wgt_factor_in = 1;
    Insn alu_dst = loop(Opcode::kAlu, 0, 1, 2, 1);
    alu_dst.dst_factor_out = 1;
    alu_dst.use_imm = true;  // micro-op 0's src is INP's last index, maybe past ACC's
    Insn alu_src = loop(Opcode::kAlu, 1, 2, 1, 2);
    alu_src.alu_opcode = AluOp::kAdd;
    alu_src.src_factor_in = 1;
    const Insn finish{};
    const Insn load_uops = load(MemType::kUop, 0, 2);
    struct Case {
      const char* what;
      std::vector<Insn> insns;
      int position;  // of the refused instruction
      const char* buffer;
      uint32_t index;
    };
    const Case cases[] = {
        {"load inp", {load(MemType::kInp, inp - 1, 2), finish}, 0, "inp", inp},
        {"load wgt", {load(MemType::kWgt, wgt - 1, 2), finish}, 0, "wgt", wgt},
        {"load uop", {load(MemType::kUop, uop - 1, 2), finish}, 0, "uop", uop},
        {"load acc", {load(MemType::kAcc, acc - 1, 2), finish}, 0, "acc", acc},
        {"store out", {store, finish}, 0, "out", acc},
        {"gemm dst", {load_uops, gemm_dst, finish}, 1, "acc", acc},
        {"gemm src", {load_uops, gemm_src, finish}, 1, "inp", inp},
        {"gemm wgt", {load_uops, gemm_wgt, finish}, 1, "wgt", wgt},
        {"gemm uop range", {loop(Opcode::kGemm, uop - 1, uop + 1, 1, 1), finish}, 0, "uop", uop},
        {"alu dst", {load_uops, alu_dst, finish}, 1, "acc", acc},
        {"alu src", {load_uops, alu_src, finish}, 1, "acc", acc},
    };
    for (const Case& c : cases) {
      SCOPED_TRACE(c.what);
      expect_error([&] { run_raw(*dev, c.insns); },
                   {"refused before launch", fmt::format("instruction #{} (", c.position),
                    fmt::format("index {}", c.index),
                    fmt::format("beyond the {} buffer's depth {}", c.buffer, c.index)});
    }

    // The uop buffer outlives a run: micro-ops a finished stream loaded are those a later
    // stream's GEMM reads.
    ASSERT_NO_THROW(run_raw(*dev, {load_uops, finish}));
    expect_error([&] { run_raw(*dev, {gemm_dst, finish}); },
                 {"instruction #0 (gemm", fmt::format("dst index {}", acc), "acc buffer"});

    // Correct programs at each buffer's last index: a raw stream whose loads, GEMM and
    // ALU touch them (LOAD UOP puts micro-ops 0 and 1 at the uop buffer's last two), and
    // a runtime stream whose result is checked.
    Insn last_inp = load(MemType::kInp, inp - 1, 1);
    Insn last_wgt = load(MemType::kWgt, wgt - 1, 1);
    last_wgt.push_next_dep = true;
    Insn last_uops = load(MemType::kUop, uop - 2, 2);
    Insn gemm_last = loop(Opcode::kGemm, uop - 2, uop - 1, 1, 1);
    gemm_last.pop_prev_dep = true;
    Insn alu_last = loop(Opcode::kAlu, uop - 1, uop, 1, 1);
    alu_last.alu_opcode = AluOp::kAdd;
    ASSERT_NO_THROW(run_raw(*dev, {last_inp, last_wgt, last_uops, gemm_last, alu_last, finish}));

    const size_t lanes = size_t(cfg.batch()) * cfg.block_out();
    data.write_elems<int32_t>(std::vector<int32_t>(lanes, 41));
    CommandStream s(*dev);
    s.load_2d(MemType::kAcc, acc - 1, data.address(), 1, 1, 1);
    s.push_alu(add_imm_kernel("add", acc - 1, 1, 1));
    s.dep_push(Module::kCompute, Module::kStore);
    s.dep_pop(Module::kCompute, Module::kStore);
    s.store_2d(acc - 1, data.address() + 2048, 1, 1, 1);
    ASSERT_NO_THROW(s.synchronize());
    EXPECT_EQ(data.read_elems<int8_t>(lanes, 2048), std::vector<int8_t>(lanes, 42));
  }
}

TEST_P(RuntimeTest, LimitsOfTheConfigurationChecked) {
  hw::Config cfg = config("tiny");
  auto dev = device(cfg);
  CommandStream s(*dev);
  DeviceBuffer buf(*dev, 4096);
  driver::DevAddr a = buf.address();
  expect_error([&] { s.load_2d(MemType::kInp, 0, a, 1, 1, 70000); }, {"x_stride", "16 bits"});
  expect_error([&] { s.load_2d(MemType::kInp, 0, a, 1, 1, 1, Pad{16, 0, 0, 0}); }, {"y_pad_0"});
  expect_error([&] { s.load_2d(MemType::kInp, 250, a, 2, 4, 4); }, {"inp buffer", "256"});
  expect_error([&] { s.load_2d(MemType::kWgt, 0, a + 1, 1, 1, 1); }, {"aligned"});
  expect_error([&] { s.load_2d(MemType::kInp, 0, dev->dram_bytes() - 4, 1, 2, 2); },
               {"outside"});
  expect_error([&] { s.load_2d(MemType::kUop, 0, a, 1, 1, 1); }, {"UopKernel"});
  expect_error([&] { s.load_2d(MemType::kOut, 0, a, 1, 1, 1); }, {"OUT"});
  expect_error([&] { s.store_2d(255, a, 1, 2, 2); }, {"out buffer"});
  expect_error(
      [&] { s.push_gemm(UopKernelBuilder::gemm("long").loop_begin(16384, 0, 0, 0).push(0, 0, 0)
                            .loop_end().finish()); },
      {"'long'", "iter_out", "14 bits"});
  expect_error(
      [&] { s.push_gemm(UopKernelBuilder::gemm("far").loop_begin(200, 2, 0, 0).push(0, 0, 0)
                            .loop_end().finish()); },
      {"'far'", "dst index reaches 398", "acc buffer"});
  expect_error([&] { s.push_alu(UopKernelBuilder::gemm("g").push(0, 0, 0).finish()); },
               {"push_gemm"});
  EXPECT_TRUE(s.pending().empty());  // nothing half-emitted

  auto b = UopKernelBuilder::gemm("nest");
  b.loop_begin(2, 0, 0, 0).loop_begin(2, 0, 0, 0);
  expect_error([&] { b.loop_begin(2, 0, 0, 0); }, {"'nest'", "more than 2 loops"});
  expect_error([] { UopKernelBuilder::gemm("empty").finish(); }, {"no micro-ops"});
  expect_error([] { UopKernelBuilder::gemm("late").push(0, 0, 0).loop_begin(2, 0, 0, 0); },
               {"loop_begin after a micro-op"});
  expect_error([] { UopKernelBuilder::gemm("open").loop_begin(2, 0, 0, 0).push(0, 0, 0).finish(); },
               {"still open"});
  expect_error([&] { s.push_alu(UopKernelBuilder::alu_imm("imm", AluOp::kAdd, 40000).push(0, 0)
                                    .finish()); },
               {"'imm'", "imm = 40000", "16 bits"});

  // A refused instruction leaves the pending pop to the next one of its module.
  s.dep_pop(Module::kCompute, Module::kLoad);
  expect_error([&] { s.load_2d(MemType::kInp, 0, a, 1, 1, 70000); }, {"x_stride"});
  s.load_2d(MemType::kInp, 0, a, 1, 1, 1);
  ASSERT_EQ(s.pending().size(), 1u);
  EXPECT_TRUE(s.pending()[0].pop_next_dep);
}

TEST_P(RuntimeTest, DebugDumpPrintsTheStreamAsAssembly) {
  auto dev = device(config("default"));
  std::ostringstream dump;
  CommandStream s(*dev, StreamOptions{.dump = true, .dump_to = &dump});
  DeviceBuffer buf(*dev, 4096);
  s.load_2d(MemType::kInp, 3, buf.address(), 1, 1, 1);
  s.synchronize();
  std::string text = dump.str();
  EXPECT_NE(text.find("load"), std::string::npos) << text;
  EXPECT_NE(text.find("finish"), std::string::npos) << text;
}

// ---------------------------------------------------------------------------------
// Hand-written operators, bit-exact against C++

TEST_P(RuntimeTest, BlockedGemmMatchesReference) {
  for (const char* name : kConfigs) {
    SCOPED_TRACE(name);
    hw::Config cfg = config(name);
    auto dev = device(cfg);
    CommandStream s(*dev);
    examples::GemmShape shape{64, 64, 64};
    auto a = random_int8(64 * 64), b = random_int8(64 * 64);
    auto expected = examples::gemm_reference(a, b, shape, 8);
    ASSERT_GT(std::count_if(expected.begin(), expected.end(), [](int8_t v) { return v != 0; }),
              1000);
    EXPECT_EQ(examples::gemm_on_device(s, a, b, shape, 8), expected);
  }
}

TEST_P(RuntimeTest, Conv2dMatchesReference) {
  for (const char* name : kConfigs) {
    SCOPED_TRACE(name);
    hw::Config cfg = config(name);
    auto dev = device(cfg);
    CommandStream s(*dev);
    examples::Conv2dShape shape;  // 1x16x14x14, 16 outputs, 3x3, pad 1
    auto in = random_int8(size_t(shape.n) * shape.c * shape.h * shape.w);
    auto w = random_int8(size_t(shape.o) * shape.c * shape.kh * shape.kw);
    auto expected = examples::conv2d_reference(in, w, shape, 8);
    EXPECT_EQ(examples::conv2d_on_device(s, in, w, shape, 8), expected);
  }
}

// The operators' tokens order every conflicting access: the results hold under random
// module interleavings (fsim's schedule seed) and random DRAM back-pressure (rtl).
TEST_P(RuntimeTest, OperatorsRaceFreeUnderRandomSchedules) {
  hw::Config cfg = config("tiny");  // the most tiles, so both buffers of each pair are used
  examples::GemmShape g{32, 32, 64};
  auto a = random_int8(size_t(g.m) * g.k), b = random_int8(size_t(g.n) * g.k);
  auto gemm_expected = examples::gemm_reference(a, b, g, 8);
  examples::Conv2dShape c;
  c.h = c.w = 8;
  auto in = random_int8(size_t(c.n) * c.c * c.h * c.w);
  auto w = random_int8(size_t(c.o) * c.c * c.kh * c.kw);
  auto conv_expected = examples::conv2d_reference(in, w, c, 8);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("schedule seed " + std::to_string(seed));
    driver::DeviceOptions opts = small_dram();
    opts.dram_backpressure = true;
    opts.seed = seed;
    auto dev = device(cfg, opts);
    if (auto* fsim = dynamic_cast<driver::FsimDevice*>(dev.get()))
      fsim->fsim().set_schedule_seed(seed);
    CommandStream s(*dev);
    EXPECT_EQ(examples::gemm_on_device(s, a, b, g, 8), gemm_expected);
    EXPECT_EQ(examples::conv2d_on_device(s, in, w, c, 8), conv_expected);
  }
}

// Random shapes against the references; the seed is in the trace for a replay.
TEST_P(RuntimeTest, RandomShapesMatchReference) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 pick(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(pick); };
  for (const char* name : kConfigs) {
    SCOPED_TRACE(name);
    hw::Config cfg = config(name);
    auto dev = device(cfg);
    CommandStream s(*dev);
    for (int round = 0; round < 2; ++round) {
      examples::GemmShape g{uniform(1, 6) * cfg.batch(), uniform(1, 5) * cfg.block_out(),
                            uniform(1, 7) * cfg.block_in()};
      int shift = uniform(0, 12);
      SCOPED_TRACE(testing::Message() << "gemm " << g.m << "x" << g.n << "x" << g.k << " >> "
                                      << shift);
      auto a = random_int8(size_t(g.m) * g.k), b = random_int8(size_t(g.n) * g.k);
      EXPECT_EQ(examples::gemm_on_device(s, a, b, g, shift),
                examples::gemm_reference(a, b, g, shift));
    }
    examples::Conv2dShape c;
    c.n = cfg.batch();
    c.c = uniform(1, 2) * cfg.block_in();
    c.o = uniform(1, 2) * cfg.block_out();
    c.h = uniform(3, 9);
    c.w = uniform(3, 9);
    c.kh = c.kw = uniform(0, 1) ? 3 : 1;
    c.pad = uniform(0, c.kh - 1);
    int shift = uniform(0, 10);
    SCOPED_TRACE(testing::Message() << "conv2d c" << c.c << " o" << c.o << " " << c.h << "x"
                                    << c.w << " k" << c.kh << " pad " << c.pad << " >> " << shift);
    auto in = random_int8(size_t(c.n) * c.c * c.h * c.w);
    auto w = random_int8(size_t(c.o) * c.c * c.kh * c.kw);
    EXPECT_EQ(examples::conv2d_on_device(s, in, w, c, shift),
              examples::conv2d_reference(in, w, c, shift));
  }
}

// Built once per device (tests/driver/CMakeLists.txt) so that CTest labels each
// device's cases with its name (a test name has no '-': uart-sim is uart_sim).
INSTANTIATE_TEST_SUITE_P(Devices, RuntimeTest, ::testing::Values(std::string(KILN_TEST_DEVICE)),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
#ifdef KILN_TEST_CORE
                           name += "_" KILN_TEST_CORE;
#endif
                           return name;
                         });

}  // namespace
}  // namespace kiln::runtime
