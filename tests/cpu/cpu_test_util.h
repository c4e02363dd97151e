#pragma once
// Helpers of the CPU backend tests: run a lowered function both in the reference
// interpreter and through the LLVM JIT on the same random inputs, and compare.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend-cpu/module.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/printer.h"
#include "compiler/schedule/lower.h"
#include "compiler/te/tensor.h"

namespace kiln::test {

inline std::vector<int64_t> const_shape(const te::Tensor& t) {
  std::vector<int64_t> shape;
  for (const ir::Expr& d : t->shape) shape.push_back(*ir::as_const_int(d));
  return shape;
}

inline cpu::NDArray to_ndarray(const interp::HostBuffer& h) {
  cpu::NDArray a = cpu::NDArray::empty(h.shape(), h.dtype());
  a.copy_from_bytes(h.data(), h.size() * h.dtype().storage_bytes());
  return a;
}

inline interp::HostBuffer to_host(const cpu::NDArray& a) {
  interp::HostBuffer h(a.dtype(), a.shape());
  a.copy_to_bytes(h.data(), h.size() * h.dtype().storage_bytes());
  return h;
}

// Inputs random (seeded), outputs filled with garbage.
inline std::vector<interp::HostBuffer> make_inputs(const std::vector<te::Tensor>& args, uint64_t seed) {
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

// Runs `f` in the interpreter and through the CPU backend for `target`; outputs must
// be equal bit for bit when `exact`, else within `tol` (absolute + relative).
inline ::testing::AssertionResult jit_matches_interpreter(const schedule::LoweredFunc& f,
                                                          const std::vector<te::Tensor>& args, uint64_t seed,
                                                          const std::string& target, bool exact, double tol = 1e-5) {
  std::vector<interp::HostBuffer> want = make_inputs(args, seed);
  std::vector<interp::HostBuffer*> ptrs;
  for (auto& b : want) ptrs.push_back(&b);
  interp::run(f, ptrs);

  std::vector<interp::HostBuffer> init = make_inputs(args, seed);
  std::vector<cpu::NDArray> arrays;
  for (const auto& h : init) arrays.push_back(to_ndarray(h));
  cpu::Module m = cpu::build({f}, target);
  m.call(f.name, arrays);
  for (size_t i = 0; i < args.size(); ++i) {
    interp::HostBuffer got = to_host(arrays[i]);
    if (want[i].bit_equal(got)) continue;
    bool is_float = args[i]->dtype.is_float();
    if (exact || !is_float) {
      return ::testing::AssertionFailure() << "output '" << args[i]->name << "' (" << args[i]->dtype.to_string()
                                           << ") differs: interpreter vs jit " << want[i].first_difference(got)
                                           << "\nIR:\n" << f.body;
    }
    for (int64_t e = 0; e < got.size(); ++e) {
      double a = want[i].get(e), b = got.get(e);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (std::fabs(a - b) > tol * (1 + std::fabs(a))) {
        return ::testing::AssertionFailure() << "output '" << args[i]->name << "' element " << e << ": interpreter " << a
                                             << " vs jit " << b << "\nIR:\n" << f.body;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kiln::test
