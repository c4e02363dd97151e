// Random differential tests of the CPU backend: random legal schedules (splits,
// fuses, reorders, vectorize/unroll/parallel, compute_at, inline, cache_read/write)
// over matmul, conv2d and elementwise chains, run by the interpreter and through the
// JIT; results must be bit-identical (FMA contraction off). Programs and schedules come
// from tests/compiler/random_program.h, as in the interpreter's own test. A failure
// prints its seed; KILN_SEED=<seed> replays just that case.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <random>

#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/schedule/schedule.h"
#include "compiler/te/ops.h"
#include "tests/compiler/random_program.h"
#include "cpu_test_util.h"

namespace kiln {
namespace {

using schedule::Schedule;
using test::Program;
using test::Rng;
using test::random_chain;
using test::random_conv;
using test::random_matmul;
using test::random_schedule;
using test::replay_seed;

void run_cases(const char* name, int count, uint64_t base, Program (*make)(Rng&)) {
  uint64_t only = replay_seed();
  for (int c = 0; c < count; ++c) {
    uint64_t seed = base + static_cast<uint64_t>(c);
    if (only != 0 && seed != only) continue;
    SCOPED_TRACE(std::string(name) + " seed=" + std::to_string(seed) + " (replay: KILN_SEED=" + std::to_string(seed) + ")");
    Rng r(seed);
    Program prog = make(r);
    Schedule s = schedule::create_schedule({prog.output()});
    std::string log;
    try {
      log = random_schedule(s, prog, r);
      schedule::LoweredFunc f = schedule::lower(s, prog.args, "random");
      if (only != 0) std::cout << "schedule:" << log << "\n" << f.body;
      // The AVX-512 host and an AVX2 model alternate, so both widths see random code.
      const char* target = seed % 2 ? "llvm -fast-math-contract=0" : "llvm -mcpu=haswell -fast-math-contract=0";
      ASSERT_TRUE(test::jit_matches_interpreter(f, prog.args, seed, target, true)) << "schedule:" << log;
    } catch (const std::exception& e) {
      FAIL() << "exception: " << e.what() << "\nschedule:" << log;
    }
  }
}

TEST(CpuRandomSchedule, Matmul) { run_cases("matmul", 60, 1000, random_matmul); }
TEST(CpuRandomSchedule, Conv2d) { run_cases("conv2d", 30, 2000, random_conv); }
TEST(CpuRandomSchedule, ElementwiseChain) { run_cases("chain", 60, 3000, random_chain); }

}  // namespace
}  // namespace kiln
