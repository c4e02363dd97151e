#pragma once
// The operator library built on tensor expressions: elementwise and broadcast ops,
// matmul/dense, conv2d (NCHW), pooling, padding, reshape and transpose. Every op
// returns a tensor whose stages a schedule can transform.
#include <array>

#include "compiler/te/tensor.h"

namespace kiln::te {

// Shape of numpy-style broadcasting of a and b (right-aligned, 1 stretches).
std::vector<Expr> broadcast_shape(const std::vector<Expr>& a, const std::vector<Expr>& b);

using BinaryFn = std::function<Expr(Expr, Expr)>;
using UnaryFn = std::function<Expr(Expr)>;

Tensor elementwise(const Tensor& x, const UnaryFn& f, std::string name);
Tensor broadcast_binary(const Tensor& a, const Tensor& b, const BinaryFn& f, std::string name);

Tensor add(const Tensor& a, const Tensor& b);
Tensor subtract(const Tensor& a, const Tensor& b);
Tensor multiply(const Tensor& a, const Tensor& b);
Tensor divide(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor relu(const Tensor& x);
Tensor negative(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor cast(const Tensor& x, DataType t);

// C(i, j) = sum_k A(i, k) * B(k, j); A [M, K], B [K, N].
Tensor matmul(const Tensor& a, const Tensor& b, std::string name = "matmul");
// Y(i, j) = sum_k X(i, k) * W(j, k) (+ bias(j)); X [N, K], W [M, K].
Tensor dense(const Tensor& x, const Tensor& w, const Tensor& bias = Tensor(), std::string name = "dense");

// Constant padding of each dimension by before[d] and after[d] elements. `split_border`:
// the tests of the border are `likely`, so that loop partitioning (passes.h) takes the
// border's iterations apart from the interior's, which then load without a test or a
// clamp; more code, for a pad that runs over a large image.
Tensor pad(const Tensor& x, std::vector<Expr> before, std::vector<Expr> after, Expr value = Expr(),
           std::string name = "pad", bool split_border = false);

struct Conv2DParams {
  std::array<int, 2> stride{1, 1};
  std::array<int, 2> padding{0, 0};  // top/bottom, left/right
  std::array<int, 2> dilation{1, 1};
  int groups = 1;
};
// NCHW data [N, C, H, W], OIHW kernel [O, C/groups, KH, KW].
Tensor conv2d_nchw(const Tensor& data, const Tensor& kernel, const Conv2DParams& p = {}, std::string name = "conv2d");

enum class PoolKind { Max, Avg };
struct Pool2DParams {
  std::array<int, 2> kernel{2, 2};
  std::array<int, 2> stride{2, 2};
  std::array<int, 2> padding{0, 0};
};
// NCHW pooling; average pooling divides by the number of in-bounds elements.
Tensor pool2d(const Tensor& data, PoolKind kind, const Pool2DParams& p = {}, std::string name = "pool");

Tensor reshape(const Tensor& x, std::vector<Expr> shape, std::string name = "reshape");
Tensor transpose(const Tensor& x, std::vector<int> axes, std::string name = "transpose");

}  // namespace kiln::te
