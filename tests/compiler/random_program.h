#pragma once
// Random programs (matmul, conv2d, elementwise chains) and random legal schedules over
// them, for the differential tests of the interpreter (tests/compiler) and of every
// backend (tests/cpu): the same seed gives the same program and schedule everywhere.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "compiler/schedule/schedule.h"
#include "compiler/te/tensor.h"

namespace kiln::test {

struct Program {
  std::vector<te::Tensor> args;  // inputs then the output
  te::Tensor output() const { return args.back(); }
};

class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(g_) < p; }
  template <typename T>
  const T& pick(const std::vector<T>& v) { return v[static_cast<size_t>(uniform(0, static_cast<int>(v.size()) - 1))]; }
  std::mt19937_64& engine() { return g_; }

 private:
  std::mt19937_64 g_;
};

// ---------------------------------------------------------------- programs


// The programs: inputs then the output in Program::args.
Program random_matmul(Rng& r);
Program random_conv(Rng& r);
Program random_chain(Rng& r);

// Applies random splits, fuses, reorders, annotations, compute_at, inline and
// cache_read/cache_write to `s`; returns a log of what it did, for failure messages.
std::string random_schedule(schedule::Schedule s, const Program& prog, Rng& r);

// KILN_SEED=<seed>: replay only that case (0 when unset).
uint64_t replay_seed();

}  // namespace kiln::test
