// The example every TVM user knows, in C++: C(i, j) = sum_k A(i, k) * B(k, j),
// tiled 32x32, the inner axis vectorized and the outer axis parallel. Prints the
// lowered IR, runs it on the reference interpreter and checks that the result equals
// the unscheduled program's, bit for bit.
//
//   kiln_example_matmul [n]     (n = 1024 by default; n must be a multiple of 32)
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/printer.h"
#include "compiler/schedule/lower.h"
#include "compiler/schedule/schedule.h"
#include "compiler/support/error.h"
#include "compiler/te/tensor.h"

using namespace kiln;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs `f` on fresh buffers with the same random inputs; returns C.
interp::HostBuffer run(const schedule::LoweredFunc& f, int n, const char* what) {
  interp::HostBuffer a(ir::DataType::Float(32), {n, n}), b(ir::DataType::Float(32), {n, n}), c(ir::DataType::Float(32), {n, n});
  a.fill_random(1);
  b.fill_random(2);
  auto t0 = std::chrono::steady_clock::now();
  interp::run(f, {&a, &b, &c});
  std::cout << what << ": " << seconds_since(t0) << " s in the interpreter\n";
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 1024;
  if (n <= 0 || n % 32 != 0) {
    std::cerr << "usage: " << argv[0] << " [n]   (n a positive multiple of 32)\n";
    return 2;
  }
  try {
    // What to compute.
    te::Tensor A = te::placeholder({n, n}, ir::DataType::Float(32), "A");
    te::Tensor B = te::placeholder({n, n}, ir::DataType::Float(32), "B");
    ir::IterVar k = te::reduce_axis(n, "k");
    te::Tensor C = te::compute({n, n}, [&](ir::Var i, ir::Var j) { return te::sum(A(i, k->var) * B(k->var, j), {k}); }, "C");

    // How to compute it.
    schedule::Schedule s = schedule::create_schedule({C});
    schedule::Stage c = s[C];
    std::vector<ir::IterVar> t = c.tile(C->axis[0], C->axis[1], 32, 32);  // i.outer, j.outer, i.inner, j.inner
    auto [ko, ki] = c.split(k, 4);
    c.reorder({t[0], t[1], ko, t[2], ki, t[3]});
    c.vectorize(t[3]);
    c.parallel(t[0]);

    schedule::LoweredFunc tuned = schedule::lower(s, {A, B, C}, "matmul_tiled");
    schedule::LoweredFunc plain = schedule::lower(schedule::create_schedule({C}), {A, B, C}, "matmul_plain");
    std::cout << "// lowered IR of " << tuned.name << " (n = " << n << ")\n" << tuned.body << "\n";

    interp::HostBuffer want = run(plain, n, "unscheduled");
    interp::HostBuffer got = run(tuned, n, "scheduled");
    if (!want.bit_equal(got)) {
      std::cout << "MISMATCH: " << want.first_difference(got) << "\n";
      return 1;
    }
    std::cout << "results are identical (" << n << "x" << n << " elements)\n";
    return 0;
  } catch (const CompileError& e) {
    std::cerr << "compile error: " << e.what() << "\n";
    return 1;
  } catch (const interp::InterpError& e) {
    std::cerr << "runtime error: " << e.what() << "\n";
    return 1;
  }
}
