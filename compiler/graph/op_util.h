#pragma once
// What the operator library's files share (ops.cc, ops_*.cc): registering an
// operator and the helpers that computes and type inference use. Not for use outside
// compiler/graph.
#include <functional>
#include <string>
#include <vector>

#include "compiler/graph/op.h"

namespace kiln::graph::detail {

[[noreturn]] void fail(const std::string& msg);
void reg(OpDef def);
// Elementwise op f(x) and broadcasting binary op f(a, b) (bool result when to_bool).
void reg_unary_op(const std::string& name, std::function<ir::Expr(ir::Expr, const Attrs&)> f);
void reg_binary_op(const std::string& name, std::function<ir::Expr(ir::Expr, ir::Expr)> f, bool to_bool);

std::vector<ir::Expr> as_exprs(const std::vector<ir::Var>& v);
int normalize_axis(int64_t axis, int rank, const char* what = "axis");
std::vector<int64_t> broadcast_shapes(const std::vector<TensorType>& in);
// The indices into a tensor of graph type `tt` for output element `idx` under broadcasting.
std::vector<ir::Expr> bcast_index(const TensorType& tt, const std::vector<ir::Var>& idx);
// The graph type of a te tensor (from its te shape, or hint[k]).
TensorType type_of(const te::Tensor& t, const std::vector<TensorType>* hint = nullptr, size_t k = 0);
TensorType same_as_first(const std::vector<TensorType>& in, const Attrs&);

// A 2-d window (convolution, pooling): kernel, strides, pads [t, l, b, r], dilations.
struct Window {
  int64_t kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
};
// The attributes' window for `kernel` (kh, kw); fails on malformed strides/pads/dilations.
Window window(const Attrs& a, std::vector<int64_t> kernel);
// Output extent of a window over `in`; fails when the window does not fit.
int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1, int64_t d, bool ceil_mode = false);

// The operator families in their own files.
void register_math_ops();    // ops_math.cc
void register_tensor_ops();  // ops_tensor.cc
void register_image_ops();   // ops_image.cc
void register_int8_ops();    // ops_int8.cc
void register_index_ops();   // ops_index.cc
void register_window_ops();  // ops_window.cc
void register_winograd_ops();  // ops_winograd.cc

}  // namespace kiln::graph::detail
