#pragma once
// Helpers shared by the compiler tests: run a lowered function on random inputs and
// compare a scheduled program with the unscheduled one.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/printer.h"
#include "compiler/schedule/lower.h"
#include "compiler/schedule/schedule.h"
#include "compiler/te/tensor.h"

namespace kiln::test {

inline std::vector<int64_t> const_shape(const te::Tensor& t) {
  std::vector<int64_t> shape;
  for (const ir::Expr& d : t->shape) shape.push_back(*ir::as_const_int(d));
  return shape;
}

// Buffers for `args`: placeholders random (seeded), outputs filled with garbage.
inline std::vector<interp::HostBuffer> make_buffers(const std::vector<te::Tensor>& args, uint64_t seed) {
  std::vector<interp::HostBuffer> bufs;
  for (size_t i = 0; i < args.size(); ++i) {
    bufs.emplace_back(args[i]->dtype, const_shape(args[i]));
    if (args[i]->is_placeholder()) {
      bufs.back().fill_random(seed * 1000 + i);
    } else {
      std::memset(bufs.back().data(), 0x5A, static_cast<size_t>(bufs.back().size() * args[i]->dtype.storage_bytes()));
    }
  }
  return bufs;
}

inline std::vector<interp::HostBuffer> run(const schedule::LoweredFunc& f, const std::vector<te::Tensor>& args, uint64_t seed) {
  std::vector<interp::HostBuffer> bufs = make_buffers(args, seed);
  std::vector<interp::HostBuffer*> ptrs;
  for (auto& b : bufs) ptrs.push_back(&b);
  interp::run(f, ptrs);
  return bufs;
}

// The outputs of `s` equal, bit for bit, those of the unscheduled program.
inline ::testing::AssertionResult same_as_unscheduled(const schedule::Schedule& s, const std::vector<te::Tensor>& args,
                                                      uint64_t seed = 1) {
  schedule::LoweredFunc ref = schedule::lower(schedule::create_schedule(s->outputs), args, "reference");
  schedule::LoweredFunc got = schedule::lower(s, args, "scheduled");
  auto want = run(ref, args, seed);
  auto have = run(got, args, seed);
  for (size_t i = 0; i < args.size(); ++i) {
    if (!want[i].bit_equal(have[i])) {
      return ::testing::AssertionFailure() << "output '" << args[i]->name << "' differs: " << want[i].first_difference(have[i])
                                           << "\nscheduled IR:\n" << got.body;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kiln::test
