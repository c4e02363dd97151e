// The VTA backend end to end: strategy -> schedule -> lower -> codegen -> program ->
// runtime -> device, checked bit for bit against the CPU int8 reference.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <random>
#include <set>

#include "backend-vta/codegen.h"
#include "backend-vta/ops.h"
#include "backend-vta/reference.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/op.h"
#include "compiler/schedule/lower.h"
#include "compiler/te/ops.h"
#include "compiler/te/tensor.h"
#include "compiler/support/error.h"
#include "hw/driver/device.h"
#include "hw/spec/assembly.h"
#include "hw/driver/runtime/device_buffer.h"
#include "hw/spec/error.h"

namespace kiln {
namespace {

#ifdef KILN_HAVE_RTL
constexpr bool KILN_VTA_TEST_HAVE_RTL = true;
#else
constexpr bool KILN_VTA_TEST_HAVE_RTL = false;
#endif

// A copy stage (what a DMA load becomes once scheduled into a scratchpad).
te::Tensor s_copy(const std::vector<ir::Expr>& shape, const te::Tensor& src, const std::string& name) {
  return te::compute(shape, [&](const std::vector<ir::Var>& i) { return src({i[0], i[1], i[2], i[3], i[4], i[5]}); }, name);
}

hw::Config config(const std::string& name) {
  return hw::Config::from_file(std::filesystem::path(KILN_SOURCE_DIR) / "hw/config" / (name + ".json"));
}

using Tensors = vta::Conv2DTensors;

Tensors random_tensors(const vta::Conv2DWorkload& wl, uint32_t seed) { return vta::random_conv2d_tensors(wl, seed, 3000); }

// Builds, runs on `device` and compares; returns the program for further checks.
vta::Program check_conv2d(const std::string& device, const hw::Config& cfg, const vta::Conv2DWorkload& wl,
                          const vta::Requant& rq, const vta::Conv2DKnobs& k, uint32_t seed = 1) {
  SCOPED_TRACE(wl.to_string() + " on " + device + "/" + cfg.name() + " with " + k.to_string());
  vta::Env env(cfg);
  vta::Program p = vta::build_conv2d(env, wl, rq, k);
  Tensors t = random_tensors(wl, seed);
  driver::DeviceOptions opts;
  opts.dram_bytes = uint64_t{128} << 20;
  auto dev = driver::make_device(device, cfg, opts);
  vta::Conv2DResult r = vta::run_conv2d(*dev, p, vta::pack_data(env, wl, t.data), vta::pack_kernel(env, wl, t.kernel),
                                        vta::pack_bias(env, wl, t.bias));
  std::vector<int8_t> got = vta::unpack_out(env, wl, r.out);
  std::vector<int8_t> want = vta::reference_conv2d(wl, rq, t.data, t.kernel, t.bias);
  EXPECT_EQ(got.size(), want.size());
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    if (got[i] != want[i] && bad++ == 0) first = i;
  EXPECT_EQ(bad, 0u) << "first mismatch at " << first << ": " << int(got[first]) << " vs " << int(want[first]);
  // The results are not all clipped to one value (the test would then prove little).
  std::set<int8_t> values(want.begin(), want.end());
  EXPECT_GT(values.size(), 2u);
  return p;
}

vta::Conv2DWorkload layer(const std::string& name, int batch = 1) {
  for (const vta::Conv2DWorkload& wl : vta::resnet18_conv_workloads(batch))
    if (wl.name == name) return wl;
  throw std::runtime_error("no layer " + name);
}

vta::Requant requant_for(const vta::Conv2DWorkload& wl) {
  // A shift that keeps typical sums inside int8 so that clipping does not dominate.
  vta::Requant rq;
  int64_t terms = int64_t{wl.in_channels} * wl.kernel_h * wl.kernel_w;
  int shift = 6;
  while ((int64_t{1} << shift) < terms * 40) ++shift;
  rq.shift = std::min(shift, 15);
  return rq;
}

// ---------------------------------------------------------------- ResNet-18 on fsim

class ResNet18Fsim : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(ResNet18Fsim, MatchesReference) {
  auto [cfg_name, name] = GetParam();
  hw::Config cfg = config(cfg_name);
  vta::Env env(cfg);
  vta::Conv2DWorkload wl = layer(name, cfg.batch());
  vta::Requant rq = requant_for(wl);
  // With latency hiding (the default) and without.
  check_conv2d("fsim", cfg, wl, rq, vta::default_conv2d_knobs(env, wl, rq, true));
  check_conv2d("fsim", cfg, wl, rq, vta::default_conv2d_knobs(env, wl, rq, false), 2);
}

INSTANTIATE_TEST_SUITE_P(Layers, ResNet18Fsim,
                         ::testing::Combine(::testing::Values("default", "tiny"),
                                            ::testing::Values("C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "C10",
                                                              "C11", "C12")),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

// With two virtual threads the codegen centres the ACC tile on the middle of ACC, the
// boundary of the RTL's two ACC banks: one thread's stores read the lower half, the
// other's the upper, so a store never waits for compute on the other thread's bank.
TEST(VtaCodegen, VirtualThreadsStoreFromBothAccBanks) {
  hw::Config cfg = config("default");
  vta::Env env(cfg);
  for (const char* name : {"C2", "C8", "C12"}) {
    vta::Conv2DWorkload wl = layer(name, cfg.batch());
    vta::Requant rq = requant_for(wl);
    vta::Conv2DKnobs k = vta::default_conv2d_knobs(env, wl, rq, true);
    ASSERT_EQ(k.h_threads * k.oc_threads, 2) << name << ": " << k.to_string();
    vta::Program p = vta::build_conv2d(env, wl, rq, k);
    const uint32_t half = cfg.acc_depth() / 2;
    int low = 0, high = 0;
    for (const vta::ProgramOp& op : p.ops()) {
      if (op.kind != vta::ProgramOp::Kind::kStore) continue;
      bool lo = op.sram + op.y_size * op.x_size <= half, hi = op.sram >= half;
      EXPECT_TRUE(lo || hi) << name << ": a store straddles the bank boundary at " << op.sram;
      low += lo;
      high += hi;
    }
    EXPECT_GT(low, 0) << name;
    EXPECT_EQ(low, high) << name;
  }
}

// ---------------------------------------------------------------- random shapes

vta::Conv2DWorkload random_workload(const vta::Env& env, std::mt19937& rng, int kernel) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  vta::Conv2DWorkload wl;
  wl.name = "rand";
  wl.batch = env.batch() * pick(1, 2);
  wl.in_channels = env.block_in() * pick(1, 3);
  wl.out_channels = env.block_out() * pick(1, 3);
  wl.kernel_h = wl.kernel_w = kernel;
  wl.pad_h = pick(0, kernel / 2);
  wl.pad_w = pick(0, kernel / 2);
  wl.stride_h = pick(1, 2);
  wl.stride_w = pick(1, 2);
  wl.height = pick(kernel, kernel + 9);
  wl.width = pick(kernel, kernel + 9);
  return wl;
}

void random_cases(const std::string& cfg_name, int cases, uint32_t seed) {
  hw::Config cfg = config(cfg_name);
  vta::Env env(cfg);
  std::mt19937 rng(seed);
  const int kernels[] = {1, 3, 5, 7};
  for (int c = 0; c < cases; ++c) {
    vta::Conv2DWorkload wl = random_workload(env, rng, kernels[c % 4]);
    vta::Requant rq = requant_for(wl);
    rq.bias = rng() % 2;
    rq.relu = rng() % 2;
    std::vector<vta::Conv2DKnobs> space = vta::conv2d_knob_space(env, wl, rq);
    ASSERT_FALSE(space.empty()) << wl.to_string();
    vta::Conv2DKnobs k = space[rng() % space.size()];
    check_conv2d("fsim", cfg, wl, rq, k, static_cast<uint32_t>(c));
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(VtaRandomShapes, DefaultConfig) { random_cases("default", 24, 11); }
TEST(VtaRandomShapes, TinyConfig) { random_cases("tiny", 24, 12); }
TEST(VtaRandomShapes, SmallConfig) { random_cases("small", 12, 13); }

TEST(VtaDense, MatchesReference) {
  for (const char* name : {"default", "tiny"}) {
    hw::Config cfg = config(name);
    vta::Env env(cfg);
    std::mt19937 rng(5);
    for (int c = 0; c < 4; ++c) {
      int in = env.block_in() * (1 + int(rng() % 32)), out = env.block_out() * (1 + int(rng() % 16));
      vta::Conv2DWorkload wl = vta::dense_workload(env.batch() * (1 + int(rng() % 2)), in, out);
      vta::Requant rq = requant_for(wl);
      check_conv2d("fsim", cfg, wl, rq, vta::default_conv2d_knobs(env, wl, rq), static_cast<uint32_t>(c));
    }
  }
}

// ---------------------------------------------------------------- residual add

void check_add(const std::string& device, const std::string& cfg_name, const vta::AddWorkload& wl,
               const vta::Requant& rq, uint32_t seed) {
  hw::Config cfg = config(cfg_name);
  vta::Env env(cfg);
  vta::AddKnobs k = vta::default_add_knobs(env, wl);
  SCOPED_TRACE(wl.to_string() + " on " + device + "/" + cfg_name + " with " + k.to_string());
  vta::Program p = vta::build_add(env, wl, rq, k);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d8(-128, 127);
  size_t n = size_t(wl.batch) * wl.channels * wl.height * wl.width;
  std::vector<int8_t> a(n), b(n);
  for (auto& x : a) x = static_cast<int8_t>(d8(rng));
  for (auto& x : b) x = static_cast<int8_t>(d8(rng));
  auto dev = driver::make_device(device, cfg);
  EXPECT_EQ(vta::run_add(*dev, p, a, b), vta::reference_add(rq, a, b));
}

TEST(VtaAdd, ResidualAddsMatchReference) {
  // ResNet-18's residual adds (56x56x64 ... 7x7x512) and small odd shapes.
  for (const char* cfg : {"default", "tiny"}) {
    check_add("fsim", cfg, {"res2", 1, 64, 56, 56}, {false, 0, true}, 1);
    check_add("fsim", cfg, {"res5", 1, 512, 7, 7}, {false, 1, false}, 2);
    check_add("fsim", cfg, {"odd", 1, 32, 5, 3}, {false, 0, false}, 3);
  }
}

#ifdef KILN_HAVE_RTL
TEST(VtaRtl, ResidualAdd) {
  for (const char* cfg : {"default", "tiny"}) check_add("rtl", cfg, {"res3", 1, 128, 28, 28}, {false, 0, true}, 4);
}
#endif

// ---------------------------------------------------------------- the RTL

#ifdef KILN_HAVE_RTL
void rtl_layers(const std::string& cfg_name, const std::vector<std::string>& names) {
  hw::Config cfg = config(cfg_name);
  vta::Env env(cfg);
  for (const std::string& name : names) {
    vta::Conv2DWorkload wl = layer(name);
    vta::Requant rq = requant_for(wl);
    check_conv2d("rtl", cfg, wl, rq, vta::default_conv2d_knobs(env, wl, rq));
  }
}

// A strided 3x3, a strided 1x1 and a 3x3 with 512 channels per configuration.
TEST(VtaRtl, ResNet18LayersDefault) { rtl_layers("default", {"C4", "C11", "C12"}); }
TEST(VtaRtl, ResNet18LayersTiny) { rtl_layers("tiny", {"C5", "C10", "C11"}); }

TEST(VtaRtl, SevenBySevenAndDense) {
  for (const char* name : {"default", "tiny"}) {
    hw::Config cfg = config(name);
    vta::Env env(cfg);
    vta::Conv2DWorkload wl;
    wl.name = "c1like";
    wl.height = wl.width = 20;
    wl.in_channels = env.block_in();
    wl.out_channels = 2 * env.block_out();
    wl.kernel_h = wl.kernel_w = 7;
    wl.pad_h = wl.pad_w = 3;
    wl.stride_h = wl.stride_w = 2;
    vta::Requant rq = requant_for(wl);
    check_conv2d("rtl", cfg, wl, rq, vta::default_conv2d_knobs(env, wl, rq));
    vta::Conv2DWorkload d = vta::dense_workload(env.batch(), 512, 256);
    check_conv2d("rtl", cfg, d, requant_for(d), vta::default_conv2d_knobs(env, d, requant_for(d)));
  }
}
#endif

// ---------------------------------------------------------------- every ALU operation

// Two int32 tensors loaded into ACC (one with zero padding), then a chain of ALU
// stages using every operation with an immediate and with a tensor operand, stored as
// int8; compared with the reference interpreter running the same tensor expressions.
TEST(VtaAlu, EveryOperationMatchesTheInterpreter) {
  for (const char* cfg_name : {"default", "tiny"}) {
    SCOPED_TRACE(cfg_name);
    hw::Config cfg = config(cfg_name);
    vta::Env env(cfg);
    int b = env.batch(), bo = env.block_out();
    std::vector<ir::Expr> shape{1, 2, 3, 4, b, bo};
    std::vector<ir::Expr> small{1, 2, 3, 2, b, bo};
    ir::DataType i32 = env.acc_dtype();
    te::Tensor x = te::placeholder(shape, i32, "x");
    te::Tensor y = te::placeholder(small, i32, "y");
    // y padded to x's width: columns 2 and 3 are zero.
    te::Tensor ypad = te::pad(y, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 2, 0, 0}, ir::Expr(), "ypad");
    using V = std::vector<ir::Var>;
    auto at = [](const te::Tensor& t, const V& i) { return t({i[0], i[1], i[2], i[3], i[4], i[5]}); };
    std::vector<te::Tensor> alu;
    auto stage = [&](const std::string& name, const std::function<ir::Expr(const V&)>& f) {
      alu.push_back(te::compute(shape, f, name));
      return alu.back();
    };
    te::Tensor xa = s_copy(shape, x, "xa");
    te::Tensor ya = s_copy(shape, ypad, "ya");
    te::Tensor t1 = stage("mul_imm", [&](const V& i) { return at(xa, i) * ir::make_int(3, i32); });
    te::Tensor t2 = stage("add_imm", [&](const V& i) { return at(t1, i) + ir::make_int(-700, i32); });
    te::Tensor t3 = stage("shl_imm", [&](const V& i) { return ir::shift_left(at(t2, i), ir::make_int(2, i32)); });
    te::Tensor t4 = stage("add", [&](const V& i) { return at(t3, i) + at(ya, i); });
    te::Tensor t5 = stage("mul", [&](const V& i) { return at(t4, i) * at(ya, i); });
    te::Tensor t6 = stage("max", [&](const V& i) { return ir::max(at(t5, i), at(ya, i)); });
    te::Tensor t7 = stage("shr_imm", [&](const V& i) { return ir::shift_right(at(t6, i), ir::make_int(12, i32)); });
    te::Tensor t8 = stage("min_imm", [&](const V& i) { return ir::min(at(t7, i), ir::make_int(127, i32)); });
    te::Tensor t9 = stage("max_imm", [&](const V& i) { return ir::max(at(t8, i), ir::make_int(-128, i32)); });
    te::Tensor out = te::compute(shape, [&](const V& i) { return ir::cast(env.out_dtype(), at(t9, i)); }, "out");
    std::vector<te::Tensor> args{x, y, out};

    // The reference: the default (host) schedule on the interpreter.
    schedule::Schedule host = schedule::create_schedule({out});
    interp::HostBuffer hx(i32, {1, 2, 3, 4, b, bo}), hy(i32, {1, 2, 3, 2, b, bo}), hout(env.out_dtype(), {1, 2, 3, 4, b, bo});
    std::mt19937 rng(9);
    auto* px = reinterpret_cast<int32_t*>(hx.data());
    auto* py = reinterpret_cast<int32_t*>(hy.data());
    size_t nx = size_t(24) * b * bo, ny = size_t(12) * b * bo;
    for (size_t i = 0; i < nx; ++i) px[i] = int32_t(rng() % 401) - 200;
    for (size_t i = 0; i < ny; ++i) py[i] = int32_t(rng() % 401) - 200;
    interp::run(schedule::lower(host, args, "host"), {&hx, &hy, &hout});

    // The accelerator: ACC loads, ALU stages in place, the store.
    schedule::Schedule s = schedule::create_schedule({out});
    s[ypad].compute_inline();
    for (const te::Tensor& t : {xa, ya}) {
      s[t].set_scope(vta::kAccScope);
      s[t].pragma(s[t]->leaf_iter_vars[0], vta::kDmaCopy);
    }
    for (const te::Tensor& t : alu) {
      s[t].set_scope(vta::kAccScope);
      s[t].pragma(s[t]->leaf_iter_vars[0], vta::kAlu);
    }
    s[out].pragma(s[out]->leaf_iter_vars[0], vta::kDmaCopy);
    vta::Program p = vta::codegen(env, schedule::lower(s, args, "alu_chain"));
    EXPECT_EQ(p.stats().alu_insns, alu.size());
    EXPECT_GT(p.stats().alu_tensor_uops, 0u);
    for (const char* device : {"fsim", "rtl"}) {
      if (std::string(device) == "rtl" && !KILN_VTA_TEST_HAVE_RTL) continue;
      SCOPED_TRACE(device);
      auto dev = driver::make_device(device, cfg);
      std::vector<runtime::DeviceBuffer> bufs;
      std::vector<driver::DevAddr> addrs;
      for (const vta::ProgramArg& a : p.args()) {
        bufs.emplace_back(*dev, a.bytes());
        addrs.push_back(bufs.back().address());
      }
      bufs[0].write({hx.data(), nx * 4});
      bufs[1].write({hy.data(), ny * 4});
      p.run(*dev, addrs);
      std::vector<int8_t> got = bufs[2].read_elems<int8_t>(nx);
      std::vector<int8_t> want(reinterpret_cast<int8_t*>(hout.data()), reinterpret_cast<int8_t*>(hout.data()) + nx);
      EXPECT_EQ(got, want);
      EXPECT_GT(std::set<int8_t>(want.begin(), want.end()).size(), 20u);  // not all clipped
    }
  }
}

// ---------------------------------------------------------------- programs

TEST(VtaProgram, SavesLoadsAndRunsTheSame) {
  hw::Config cfg = config("default");
  vta::Env env(cfg);
  vta::Conv2DWorkload wl = layer("C11");
  vta::Requant rq = requant_for(wl);
  vta::Program p = vta::build_conv2d(env, wl, rq, vta::default_conv2d_knobs(env, wl, rq));
  auto path = std::filesystem::temp_directory_path() / ("kiln_vta_program_test_" + std::to_string(::getpid()) + ".json");
  p.save(path);
  vta::Program q = vta::Program::load(path, cfg);
  std::filesystem::remove(path);
  EXPECT_EQ(q.to_json(), p.to_json());
  EXPECT_EQ(q.ops().size(), p.ops().size());
  Tensors t = random_tensors(wl, 3);
  auto dev = driver::make_device("fsim", cfg);
  auto a = vta::run_conv2d(*dev, p, vta::pack_data(env, wl, t.data), vta::pack_kernel(env, wl, t.kernel),
                           vta::pack_bias(env, wl, t.bias));
  auto b = vta::run_conv2d(*dev, q, vta::pack_data(env, wl, t.data), vta::pack_kernel(env, wl, t.kernel),
                           vta::pack_bias(env, wl, t.bias));
  EXPECT_EQ(a.out, b.out);
  // A program is tied to its configuration.
  EXPECT_THROW(vta::Program::from_json(p.to_json(), config("tiny")), hw::Error);
  auto tiny_dev = driver::make_device("fsim", config("tiny"));
  std::vector<driver::DevAddr> addrs(p.args().size(), 0);
  EXPECT_THROW(p.run(*tiny_dev, addrs), hw::Error);
}

TEST(VtaProgram, RejectsBrokenFiles) {
  hw::Config cfg = config("default");
  EXPECT_THROW(vta::Program::from_json("{", cfg), hw::Error);
  EXPECT_THROW(vta::Program::from_json(R"({"format": "something"})", cfg), hw::Error);
  vta::Env env(cfg);
  vta::Conv2DWorkload wl = vta::dense_workload(1, 32, 32);
  vta::Program p = vta::build_conv2d(env, wl, {}, vta::default_conv2d_knobs(env, wl));
  std::string text = p.to_json();
  auto pos = text.find("\"kernel\":0");
  ASSERT_NE(pos, std::string::npos);
  std::string broken = text;
  broken.replace(pos, 10, "\"kernel\":99");
  try {
    vta::Program::from_json(broken, cfg, "broken.json");
    FAIL() << "a kernel index out of range was accepted";
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("broken.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("kernel 99"), std::string::npos) << e.what();
  }
}

// Found by tests/fuzz/vta_program_fuzz: a kernel index of 2.2e119 was converted to int
// (undefined behaviour). Every integer of a program is a JSON integer of its field's
// type, and the error names the file and the field.
TEST(VtaProgram, IntegerFieldsRefuseFloatsAndOutOfRangeValues) {
  hw::Config cfg = config("default");
  vta::Env env(cfg);
  vta::Conv2DWorkload wl = vta::dense_workload(1, 32, 32);
  const std::string text = vta::build_conv2d(env, wl, {}, vta::default_conv2d_knobs(env, wl)).to_json();
  // The message for the program with the first `from` after `after` replaced by `to`.
  auto error = [&](const std::string& after, const std::string& from, const std::string& to) -> std::string {
    size_t at = text.find(from, text.find(after));
    if (text.find(after) == std::string::npos || at == std::string::npos) return "no " + after + " ... " + from;
    try {
      vta::Program::from_json(std::string(text).replace(at, from.size(), to), cfg, "p.json");
    } catch (const hw::Error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string bad = "p.json: not a valid VTA program: ";
  EXPECT_EQ(error("\"ops\"", "\"kernel\":", "\"kernel\":2.2e119,\"x\":"),
            bad + "[json.exception.type_error.302] 'kernel' must be an integer, got 2.2e+119");
  EXPECT_EQ(error("\"ops\"", "\"sram\":", "\"sram\":4294967296,\"x\":"),
            bad + "[json.exception.out_of_range.406] 'sram' is 4294967296, outside 0 to 4294967295");
  EXPECT_EQ(error("\"ops\"", "\"dram\":", "\"dram\":-1,\"x\":"),
            bad + "[json.exception.out_of_range.406] 'dram' is -1, outside 0 to 18446744073709551615");
  EXPECT_EQ(error("\"ops\"", "\"arg\":", "\"arg\":true,\"x\":"),
            bad + "[json.exception.type_error.302] 'arg' must be an integer, got true");
  EXPECT_EQ(error("\"ops\"", "\"shape\":[", "\"shape\":[1.0,"),
            bad + "[json.exception.type_error.302] 'shape[0]' must be an integer, got 1.0");
  EXPECT_EQ(error("\"ops\"", "\"pad\":[", "\"pad\":[-1,"),
            bad + "[json.exception.out_of_range.406] 'pad[0]' is -1, outside 0 to 4294967295");
  EXPECT_EQ(error("\"ops\"", "\"pad\":[", "\"pad\":[0,"),
            bad + "a load's pad is not [top, bottom, left, right]");
  EXPECT_EQ(error("\"kernels\"", "\"uops\":[[", "\"uops\":[[1e10,"),
            bad + "[json.exception.type_error.302] 'uop[0]' must be an integer, got 10000000000.0");
  EXPECT_EQ(error("\"kernels\"", "\"loops\":[[", "\"loops\":[[0.5,"),
            bad + "[json.exception.type_error.302] 'loop[0]' must be an integer, got 0.5");
  EXPECT_EQ(error("\"args\"", "\"bits\":", "\"bits\":8e9,\"x\":"),
            bad + "[json.exception.type_error.302] 'bits' must be an integer, got 8000000000.0");
}

TEST(VtaProgram, AssemblyRoundTrips) {
  hw::Config cfg = config("default");
  vta::Env env(cfg);
  vta::Conv2DWorkload wl = layer("C12");
  vta::Requant rq = requant_for(wl);
  vta::Program p = vta::build_conv2d(env, wl, rq, vta::default_conv2d_knobs(env, wl, rq));
  auto dev = driver::make_device("fsim", cfg);
  std::vector<runtime::DeviceBuffer> bufs;
  std::vector<driver::DevAddr> addrs;
  for (const vta::ProgramArg& a : p.args()) {
    bufs.emplace_back(*dev, a.bytes());
    addrs.push_back(bufs.back().address());
  }
  runtime::CommandStream cs(*dev, cfg);
  p.emit(cs, addrs);
  std::string text = cs.disassemble();
  EXPECT_NE(text.find("gemm"), std::string::npos);
  EXPECT_NE(text.find("alu"), std::string::npos);
  std::vector<hw::Insn> parsed = hw::assemble(text, cfg).insns;
  ASSERT_EQ(parsed.size(), cs.pending().size());
  hw::InsnLayout layout(cfg);
  for (size_t i = 0; i < parsed.size(); ++i) EXPECT_EQ(layout.encode(parsed[i]), layout.encode(cs.pending()[i])) << i;
}

// ---------------------------------------------------------------- bad input

TEST(VtaErrors, IllegalShapesAndSchedulesNameTheProblem) {
  hw::Config cfg = config("default");
  vta::Env env(cfg);
  auto expect_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  vta::Conv2DWorkload wl = layer("C2");
  vta::Conv2DWorkload bad = wl;
  bad.in_channels = 40;
  expect_error([&] { vta::conv2d_packed(env, bad); }, "BLOCK_IN");
  vta::Conv2DKnobs k;
  k.tile_h = 5;
  expect_error([&] { vta::build_conv2d(env, wl, {}, k); }, "tile_h=5");
  k = {};
  k.tile_h = 56;
  k.tile_w = 56;
  k.tile_oc = 4;
  expect_error([&] { vta::build_conv2d(env, wl, {}, k); }, "INP elements");
  k = {};
  k.h_threads = 3;
  expect_error([&] { vta::build_conv2d(env, wl, {}, k); }, "h_threads=3");
  vta::Requant rq;
  rq.shift = 40;
  expect_error([&] { vta::conv2d_packed(env, wl, rq); }, "shift 40");
  // A schedule that leaves a stage on the host cannot become a VTA program.
  vta::Conv2DOp op = vta::conv2d_packed(env, vta::dense_workload(1, 16, 16), {});
  schedule::Schedule s = schedule::create_schedule({op.out});
  expect_error([&] { vta::codegen(env, schedule::lower(s, op.args(), "plain")); }, "scratchpad");
}

}  // namespace
}  // namespace kiln
