// Random differential tests: random legal schedules (splits, fuses, reorders,
// annotations, compute_at, inline, cache_read/cache_write) over matmul, conv2d and
// elementwise chains must give results bit-identical to the unscheduled program.
// A failure prints its seed; KILN_SEED=<seed> replays just that case and prints
// its schedule and IR; KILN_RANDOM_CASES=<n> runs n cases per program.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <unordered_set>

#include "compiler/ir/functor.h"
#include "compiler/te/ops.h"
#include "tests/compiler/random_program.h"
#include "test_util.h"

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


// KILN_RANDOM_CASES=<n> runs n cases per program instead (a longer soak).
int case_count(int fallback) {
  const char* env = std::getenv("KILN_RANDOM_CASES");
  return env ? std::atoi(env) : fallback;
}

void run_cases(const char* name, int count, uint64_t base, Program (*make)(Rng&)) {
  uint64_t only = replay_seed();
  count = case_count(count);
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
      if (only != 0) std::cout << "schedule:" << log << "\n" << schedule::lower(s, prog.args).body;
      ASSERT_TRUE(test::same_as_unscheduled(s, prog.args, seed)) << "schedule:" << log;
    } catch (const std::exception& e) {
      FAIL() << "exception: " << e.what() << "\nschedule:" << log;
    }
  }
}

TEST(RandomSchedule, Matmul) { run_cases("matmul", 150, 1000, random_matmul); }
TEST(RandomSchedule, Conv2d) { run_cases("conv2d", 80, 2000, random_conv); }
TEST(RandomSchedule, ElementwiseChain) { run_cases("chain", 150, 3000, random_chain); }

}  // namespace
}  // namespace kiln
