// Index-computing operators beyond ops.cc.
//
// | op | inputs | attributes | pattern |
// |---|---|---|---|
// | cumsum | x | axis, exclusive, reverse | opaque |
// | trilu | x (rank >= 2) | upper, k | injective |
// | tile | x | reps (one per dimension) | injective |
// | gather_elements | data, indices (same rank) | axis | injective |
#include <fmt/format.h>

#include "compiler/graph/op_util.h"
#include "compiler/ir/op.h"

namespace kiln::graph::detail {

using ir::Expr;
using ir::Var;
using te::Tensor;

namespace {

void register_cumsum() {
  reg({"cumsum", OpPattern::Opaque, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         normalize_axis(a.get_int("axis", 0), in[0].ndim());
         return in[0];
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         int axis = out.shape.empty() ? 0 : normalize_axis(a.get_int("axis", 0), out.ndim());
         bool exclusive = a.get_int("exclusive", 0) != 0, reverse = a.get_int("reverse", 0) != 0;
         std::vector<Expr> shape = te_shape(out);
         ir::IterVar k = te::reduce_axis(shape[axis], "k");
         return te::compute(shape,
                            [&](const std::vector<Var>& i) {
                              std::vector<Expr> idx = as_exprs(i);
                              idx[axis] = k->var;
                              Expr kv = k->var, iv = i[axis];
                              Expr cond = reverse ? (exclusive ? kv > iv : kv >= iv) : (exclusive ? kv < iv : kv <= iv);
                              return te::sum(in[0](idx), {k}, cond);
                            },
                            "cumsum", "reduce");
       }});
}

void register_trilu() {
  reg({"trilu", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs&) {
         if (in[0].ndim() < 2) fail("trilu needs a rank of at least 2");
         return in[0];
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         bool upper = a.get_int("upper", 1) != 0;
         int k = static_cast<int>(a.get_int("k", 0));
         int n = out.ndim();
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) {
                              Expr d = Expr(i[n - 1]) - Expr(i[n - 2]);  // column - row
                              Expr keep = upper ? d >= k : d <= k;
                              return ir::select(keep, in[0](as_exprs(i)), ir::make_const(out.dtype, 0));
                            },
                            "trilu", "injective");
       }});
}

void register_tile() {
  reg({"tile", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         auto reps = a.get_ints("reps");
         if (static_cast<int>(reps.size()) != in[0].ndim()) fail("repeats need one entry per dimension");
         TensorType out = in[0];
         for (size_t d = 0; d < reps.size(); ++d) {
           if (reps[d] < 1) fail(fmt::format("repeat {} of dimension {} is not positive", reps[d], d));
           out.shape[d] *= reps[d];
         }
         return out;
       },
       [](const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
         TensorType x = type_of(in[0]);
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) {
                              if (x.shape.empty()) return in[0]({Expr(0)});
                              std::vector<Expr> idx;
                              for (size_t d = 0; d < x.shape.size(); ++d)
                                idx.push_back(x.shape[d] == 1 ? Expr(0) : Expr(i[d]) % static_cast<int>(x.shape[d]));
                              return in[0](idx);
                            },
                            "tile", "injective");
       }});
}

void register_gather_elements() {
  reg({"gather_elements", OpPattern::Injective, 2, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         normalize_axis(a.get_int("axis", 0), in[0].ndim());
         if (!in[1].dtype.is_integer()) fail("indices must be integers");
         if (in[1].ndim() != in[0].ndim()) fail("data and indices differ in rank");
         return TensorType{in[0].dtype, in[1].shape};
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         TensorType x = type_of(in[0]);
         int axis = normalize_axis(a.get_int("axis", 0), x.ndim());
         int dim = static_cast<int>(x.shape[axis]);
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) {
                              Expr k = ir::cast(DataType::Int(32), in[1](as_exprs(i)));
                              k = ir::min(ir::max(ir::select(k < 0, k + dim, k), 0), dim - 1);
                              std::vector<Expr> idx = as_exprs(i);
                              idx[axis] = k;
                              return in[0](idx);
                            },
                            "gather_elements", "injective");
       }});
}

}  // namespace

void register_tensor_ops() {
  register_cumsum();
  register_trilu();
  register_tile();
  register_gather_elements();
}

}  // namespace kiln::graph::detail
