// The code generator's passes one by one (backend-vta/passes/passes.h), on instruction
// IR made by hand, and the pipeline's debug log.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "backend-vta/ops.h"
#include "backend-vta/passes/passes.h"
#include "compiler/support/error.h"

namespace kiln {
namespace {

using vta::Insn;
using vta::InsnFunc;
using vta::SpadEvent;
using vta::Tup;
using hw::Module;

hw::Config config(const std::string& name) {
  return hw::Config::from_file(std::filesystem::path(KILN_SOURCE_DIR) / "hw/config" / (name + ".json"));
}

// A function with one int8 argument of `elems` INP elements and the given tensors.
InsnFunc func(const vta::Env& env, std::vector<vta::SpadTensor> tensors, int64_t elems = 4096) {
  InsnFunc fn;
  fn.name = "my_conv";
  fn.program = vta::Program(fn.name, env.config());
  fn.program.add_arg(vta::ProgramArg{"x", {elems * env.elem_scalars(hw::MemType::kInp)}, 8});
  fn.tensors = std::move(tensors);
  return fn;
}

vta::SpadTensor tensor(std::string name, hw::MemType mem, int64_t elems) {
  vta::SpadTensor t;
  t.name = std::move(name);
  t.mem = mem;
  t.elems = elems;
  return t;
}

// A load of `rows` x `cols` elements from rows `stride` apart, with `pad` zero columns
// on the left of each row.
Insn load(int t, int64_t rows, int64_t cols, int64_t stride, int64_t pad) {
  Insn x;
  x.kind = Insn::Kind::kLoad;
  x.stage = Module::kLoad;
  x.tensor = t;
  x.mem = hw::MemType::kInp;
  x.arg = 0;
  for (int64_t y = 0; y < rows; ++y)
    for (int64_t c = 0; c < pad + cols; ++c)
      x.elems.push_back(vta::DmaElem{y * (pad + cols) + c, c < pad ? 0 : y * stride + (c - pad), c < pad});
  x.split.begin = 0;
  x.split.end = x.elems.size();
  return x;
}

// ---------------------------------------------------------------- match_dma

TEST(VtaPassMatchDma, PaddedRowsBecomeOne2DLoad) {
  vta::Env env(config("default"));
  InsnFunc fn = func(env, {tensor("x.inp", hw::MemType::kInp, 64)});
  fn.insns.push_back(load(0, 3, 5, 100, 2));
  vta::passes::match_dma(env, fn);
  ASSERT_EQ(fn.insns.size(), 1u);
  const vta::ProgramOp& op = fn.insns[0].op;
  EXPECT_EQ(op.kind, vta::ProgramOp::Kind::kLoad);
  EXPECT_EQ(op.y_size, 3u);
  EXPECT_EQ(op.x_size, 5u);
  EXPECT_EQ(op.x_stride, 100u);
  EXPECT_EQ(op.pad.left, 2u);
  EXPECT_EQ(op.pad.right, 0u);
  EXPECT_EQ(fn.insns[0].dma_elems, 21);
}

TEST(VtaPassMatchDma, SplitsOverTheRegionsLoopWhenOneTransferCannotExpressIt) {
  vta::Env env(config("default"));
  InsnFunc fn = func(env, {tensor("x.inp", hw::MemType::kInp, 64)});
  // Two rows whose DRAM starts are not a stride apart from one another's row length:
  // row 0 at 0..3, row 1 at 10..13 but row 1 is 3 elements long.
  Insn x;
  x.kind = Insn::Kind::kLoad;
  x.tensor = 0;
  x.arg = 0;
  x.mem = hw::MemType::kInp;
  for (int64_t i = 0; i < 4; ++i) x.elems.push_back({i, i, false});
  for (int64_t i = 0; i < 3; ++i) x.elems.push_back({4 + i, 10 + i, false});
  x.split = {0, 7, true, {}, {{0, 4, false, {}, {}}, {4, 7, false, {}, {}}}};
  fn.insns.push_back(x);
  vta::passes::match_dma(env, fn);
  ASSERT_EQ(fn.insns.size(), 2u);
  EXPECT_EQ(fn.insns[0].op.x_size, 4u);
  EXPECT_EQ(fn.insns[1].op.x_size, 3u);
  EXPECT_EQ(fn.insns[1].op.dram_elem, 10u);
  EXPECT_EQ(fn.insns[1].op.sram, 4u);  // relative to the tensor until it is placed
}

TEST(VtaPassMatchDma, AnUnsplittableCopyNamesTheOperatorAndTheTensor) {
  vta::Env env(config("default"));
  InsnFunc fn = func(env, {tensor("x.inp", hw::MemType::kInp, 64)});
  Insn x = load(0, 1, 2, 2, 0);
  std::swap(x.elems[0].dram, x.elems[1].dram);  // backwards in DRAM
  fn.insns.push_back(x);
  try {
    vta::passes::match_dma(env, fn);
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("'my_conv'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'x.inp'"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- plan_scratchpad

TEST(VtaPassPlanScratchpad, FreedRangesAreReusedAndAccIsCentred) {
  vta::Env env(config("default"));
  const int64_t acc_depth = env.depth(hw::MemType::kAcc);
  InsnFunc fn = func(env, {tensor("a", hw::MemType::kInp, 100), tensor("b", hw::MemType::kInp, 50),
                           tensor("c", hw::MemType::kInp, 80), tensor("acc", hw::MemType::kAcc, 64)});
  fn.events = {{SpadEvent::Kind::kPlace, 0, {}}, {SpadEvent::Kind::kPlace, 1, {}}, {SpadEvent::Kind::kFree, 0, {}},
               {SpadEvent::Kind::kPlace, 2, {}}, {SpadEvent::Kind::kPlace, 3, {}}};
  vta::passes::plan_scratchpad(env, fn);
  EXPECT_EQ(fn.tensors[0].base, 0);
  EXPECT_EQ(fn.tensors[1].base, 100);
  EXPECT_EQ(fn.tensors[2].base, 0);  // first fit, in a's range
  EXPECT_EQ(fn.tensors[3].base, acc_depth / 2 - 32);
}

TEST(VtaPassPlanScratchpad, CentringThatLeavesNoRoomFallsBackToFirstFit) {
  vta::Env env(config("default"));
  const int64_t depth = env.depth(hw::MemType::kAcc);
  InsnFunc fn = func(env, {tensor("t0", hw::MemType::kAcc, depth / 4), tensor("t1", hw::MemType::kAcc, depth * 3 / 4)});
  fn.events = {{SpadEvent::Kind::kPlace, 0, {}}, {SpadEvent::Kind::kPlace, 1, {}}};
  vta::passes::plan_scratchpad(env, fn);
  EXPECT_EQ(fn.tensors[0].base, 0);
  EXPECT_EQ(fn.tensors[1].base, depth / 4);
}

TEST(VtaPassPlanScratchpad, AluResultsShareTheirOperandsRangeAndMicroOpsBecomeAbsolute) {
  vta::Env env(config("default"));
  InsnFunc fn = func(env, {tensor("conv", hw::MemType::kAcc, 8), tensor("shifted", hw::MemType::kAcc, 8)});
  fn.events = {{SpadEvent::Kind::kPlace, 0, {}}, {SpadEvent::Kind::kAlias, 1, {0, 0}}};
  Insn x;
  x.kind = Insn::Kind::kAlu;
  x.stage = Module::kCompute;
  x.tensor = 1;
  x.alias_event = 1;
  x.use_imm = true;
  for (int64_t i = 0; i < 8; ++i) x.uops.push_back({{1, i}, {0, i}, {}});
  fn.insns.push_back(x);
  vta::passes::plan_scratchpad(env, fn);
  EXPECT_EQ(fn.tensors[1].base, fn.tensors[0].base);
  EXPECT_EQ(fn.tensors[1].alias_of, 0);
  ASSERT_EQ(fn.insns[0].placed.size(), 8u);
  EXPECT_EQ(fn.insns[0].placed[3].d, fn.tensors[0].base + 3);
  ASSERT_EQ(fn.insns[0].accesses.size(), 1u);  // an immediate: no source range
  EXPECT_EQ(fn.insns[0].accesses[0].hi - fn.insns[0].accesses[0].lo, 8);
}

TEST(VtaPassPlanScratchpad, ATensorThatDoesNotFitNamesTheOperatorAndTheTensor) {
  vta::Env env(config("default"));
  InsnFunc fn = func(env, {tensor("weights.wgt", hw::MemType::kWgt, env.depth(hw::MemType::kWgt) + 1)});
  fn.events = {{SpadEvent::Kind::kPlace, 0, {}}};
  try {
    vta::passes::plan_scratchpad(env, fn);
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("'my_conv'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'weights.wgt'"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- fold_uops

TEST(VtaPassFoldUops, TwoLoopsOfMicroOpsFoldToTheirBody) {
  // 3 x 4 repetitions of a 2-micro-op body, factors (10, 1, 0) and (2, 0, 1).
  std::vector<Tup> t;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 2; ++k) t.push_back(Tup{i * 10 + j * 2 + k, i + 5 * k, j});
  vta::passes::UopFit fit = vta::passes::fit_uops(t, {1000, 1000, 1000}, 1000);
  EXPECT_EQ(fit.e_out, 3);
  EXPECT_EQ(fit.e_in, 4);
  ASSERT_EQ(fit.uops.size(), 2u);
  EXPECT_EQ(fit.f_out, (Tup{10, 1, 0}));
  EXPECT_EQ(fit.f_in, (Tup{2, 0, 1}));
}

TEST(VtaPassFoldUops, FactorsTheFieldsCannotHoldAreNotUsed) {
  std::vector<Tup> t;
  for (int64_t i = 0; i < 4; ++i) t.push_back(Tup{i * 50, 0, 0});
  EXPECT_EQ(vta::passes::fit_uops(t, {100, 100, 100}, 100).uops.size(), 1u);
  EXPECT_EQ(vta::passes::fit_uops(t, {49, 100, 100}, 100).uops.size(), 4u);
  // A negative step never folds.
  std::reverse(t.begin(), t.end());
  EXPECT_EQ(vta::passes::fit_uops(t, {100, 100, 100}, 100).uops.size(), 4u);
}

TEST(VtaPassFoldUops, EqualListsShareOneKernel) {
  vta::Env env(config("default"));
  InsnFunc fn = func(env, {tensor("acc", hw::MemType::kAcc, 16)});
  for (int r = 0; r < 3; ++r) {
    Insn x;
    x.kind = Insn::Kind::kGemm;
    x.tensor = 0;
    for (int64_t i = 0; i < 16; ++i) x.placed.push_back(Tup{r == 2 ? 15 - i : i, i, 0});
    fn.insns.push_back(x);
  }
  vta::passes::fold_uops(env, fn);
  EXPECT_EQ(fn.insns[0].op.kernel, fn.insns[1].op.kernel);
  EXPECT_NE(fn.insns[0].op.kernel, fn.insns[2].op.kernel);
  EXPECT_EQ(fn.program.kernels().size(), 2u);
  EXPECT_EQ(fn.program.kernels()[0].uops().size(), 1u);  // folded into a loop
}

// ---------------------------------------------------------------- order_queues, insert_tokens

Insn with_access(Insn::Kind kind, Module stage, hw::MemType mem, int64_t lo, int64_t hi, bool write) {
  Insn x;
  x.kind = kind;
  x.stage = stage;
  x.accesses.push_back(vta::Access{mem, lo, hi, write});
  x.op.kind = kind == Insn::Kind::kLoad ? vta::ProgramOp::Kind::kLoad
              : kind == Insn::Kind::kStore ? vta::ProgramOp::Kind::kStore
                                           : vta::ProgramOp::Kind::kGemm;
  return x;
}

TEST(VtaPassOrderQueues, LoadsAreIssuedInTheOrderComputeNeedsThem) {
  vta::Env env(config("default"));
  InsnFunc fn = func(env, {});
  using K = Insn::Kind;
  fn.insns = {with_access(K::kLoad, Module::kLoad, hw::MemType::kInp, 0, 4, true),    // inp t0
              with_access(K::kLoad, Module::kLoad, hw::MemType::kInp, 4, 8, true),    // inp t1
              with_access(K::kLoad, Module::kLoad, hw::MemType::kWgt, 0, 4, true),    // wgt t0
              with_access(K::kGemm, Module::kCompute, hw::MemType::kWgt, 0, 4, false),  // gemm t0
              with_access(K::kGemm, Module::kCompute, hw::MemType::kInp, 4, 8, false)};  // gemm t1
  fn.insns[3].accesses.push_back(vta::Access{hw::MemType::kInp, 0, 4, false});
  vta::passes::order_queues(env, fn);
  EXPECT_EQ(fn.insns[0].accesses[0].mem, hw::MemType::kInp);
  EXPECT_EQ(fn.insns[0].accesses[0].lo, 0);
  EXPECT_EQ(fn.insns[1].accesses[0].mem, hw::MemType::kWgt);  // wgt t0 before inp t1
  EXPECT_EQ(fn.insns[2].accesses[0].lo, 4);
}

TEST(VtaPassInsertTokens, ModulesWaitOnlyWhereTheirRangesConflict) {
  vta::Env env(config("default"));
  InsnFunc fn = func(env, {});
  using K = Insn::Kind;
  fn.insns = {with_access(K::kLoad, Module::kLoad, hw::MemType::kInp, 0, 4, true),
              with_access(K::kGemm, Module::kCompute, hw::MemType::kInp, 0, 4, false),
              with_access(K::kLoad, Module::kLoad, hw::MemType::kInp, 4, 8, true),   // no conflict
              with_access(K::kLoad, Module::kLoad, hw::MemType::kInp, 0, 4, true)};  // overwrites what gemm read
  vta::passes::insert_tokens(env, fn);
  using P = vta::ProgramOp::Kind;
  std::vector<P> kinds;
  for (const vta::ProgramOp& op : fn.program.ops()) kinds.push_back(op.kind);
  // load, push L->C | pop L->C, gemm, push C->L | load | pop C->L, load
  EXPECT_EQ(kinds, (std::vector<P>{P::kLoad, P::kDepPush, P::kDepPop, P::kGemm, P::kDepPush, P::kLoad, P::kDepPop,
                                   P::kLoad}));
}

// ---------------------------------------------------------------- the pipeline

TEST(VtaCodegenPipeline, KilnDebugLogsEveryPass) {
  vta::Env env(config("default"));
  vta::Conv2DWorkload wl = vta::dense_workload(1, 32, 32, "my_dense");
  vta::Requant rq;
  ::setenv("KILN_DEBUG", "vta", 1);
  testing::internal::CaptureStderr();
  vta::build_conv2d(env, wl, rq, vta::default_conv2d_knobs(env, wl, rq));
  std::string log = testing::internal::GetCapturedStderr();
  ::unsetenv("KILN_DEBUG");
  for (const char* pass : {"extract_regions", "match_dma", "match_alu", "plan_scratchpad", "fold_uops", "order_queues",
                           "insert_tokens"})
    EXPECT_NE(log.find(std::string("'my_dense' after ") + pass + ":"), std::string::npos) << pass << " in\n" << log;
  EXPECT_EQ(log.find("tensor %0"), std::string::npos);  // the dump is vta-ir's
}

}  // namespace
}  // namespace kiln
