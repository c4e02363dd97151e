#pragma once
// The MXU's code generator: one requantized int8 matrix product, tiled onto the
// scratchpads, becomes a command list (made once, ahead of time, run many times).
//
// Arguments in DRAM, in this order (what the strategy's mxu_matmul node reads/writes):
//   0  A      int8  [m, k] row-major                  (im2col rows of a convolution)
//   1  W      int8  [k/32, n/8, 32, 8]                (the MXU's weight layout: whole tiles)
//   2  bias   int32 [n]
//   3  out    int8  [m, n] row-major = clip((A W + bias) >> shift)
// m, k and n are multiples of the tile (4, 32, 8). The schedule is weight-stationary:
// a block of weight columns is loaded once and every row block of A streams past it.
#include <string>
#include <vector>

#include "examples/matrix-unit/mxu_device.h"

namespace kiln::mxu {

struct MatmulKernel {
  std::string name;
  int64_t m = 0, k = 0, n = 0;
  int shift = 0;
  bool relu = false;
};

// Why `kernel` cannot run on `config` (its shape, its shift), or "".
std::string matmul_problem(const MxuConfig& config, const MatmulKernel& kernel);

// MxuError when matmul_problem() is not empty.
std::vector<Command> matmul_commands(const MxuConfig& config, const MatmulKernel& kernel);

// Multiply-accumulates an ideal run does: one per MAC of the array (m*k*n / tile size).
int64_t ideal_matmuls(const MatmulKernel& kernel);

}  // namespace kiln::mxu
