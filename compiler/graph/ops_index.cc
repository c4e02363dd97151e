// Selection and scatter operators, and einsum.
//
// | op | inputs | attributes | pattern |
// |---|---|---|---|
// | topk_indices | x (rank >= 1) | axis, k, largest | opaque |
// | scatter_elements | data, indices, updates (indices' shape) | axis, reduction (none add mul max min) | opaque |
// | scatter_nd | data, indices [M, q], updates [M, data.shape[q:]...] | reduction (none add mul max min) | opaque |
// | einsum | x... | equation ("ij,jk->ik": letters only, the output explicit) | opaque |
// | det | x [..., n, n] (n <= 5) | - | injective |
//
// topk_indices gives the int64 positions of the k largest (smallest when largest=0)
// elements along the axis, best first, ties by the lower position (as ONNX's TopK).
// Scatters write each update into a copy of data; with reduction none the last of
// duplicate targets wins.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <map>

#include "compiler/graph/op_util.h"
#include "compiler/ir/op.h"

namespace kiln::graph::detail {

using ir::Expr;
using ir::IterVar;
using ir::Var;
using te::Tensor;

namespace {

Expr i32(const Expr& v) { return ir::cast(DataType::Int(32), v); }

// An index read from an indices tensor, negative ones counted from the end of `dim`.
Expr wrap_index(const Expr& k, int64_t dim) {
  Expr v = i32(k);
  return ir::select(v < 0, v + static_cast<int>(dim), v);
}

void register_topk() {
  reg({"topk_indices", OpPattern::Opaque, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         if (in[0].ndim() < 1) fail("topk needs a rank of at least 1");
         int axis = normalize_axis(a.get_int("axis", -1), in[0].ndim());
         int64_t k = a.get_int("k", 0), n = in[0].shape[axis];
         if (k < 1 || k > n) fail(fmt::format("k = {} is not in [1, {}] (the length of axis {})", k, n, axis));
         TensorType out{DataType::Int(64), in[0].shape};
         out.shape[axis] = k;
         return out;
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         TensorType xt = type_of(in[0]);
         int axis = normalize_axis(a.get_int("axis", -1), xt.ndim());
         bool largest = a.get_int("largest", 1) != 0;
         int n = static_cast<int>(xt.shape[axis]);
         // rank[i]: how many elements along the axis come before element i.
         IterVar m = te::reduce_axis(Expr(n), "m");
         Tensor rank = te::compute(
             te_shape(xt),
             [&](const std::vector<Var>& i) {
               std::vector<Expr> at = as_exprs(i), other = at;
               other[axis] = m->var;
               Expr xi = in[0](at), xm = in[0](other);
               Expr better = largest ? xm > xi : xm < xi;
               Expr first = ir::eq(xm, xi) && Expr(m->var) < Expr(i[axis]);
               return te::sum(Expr(1), {m}, better || first);
             },
             "topk.rank", "reduce");
         IterVar j = te::reduce_axis(Expr(n), "j");
         return te::compute(
             te_shape(out),
             [&](const std::vector<Var>& i) {
               std::vector<Expr> at = as_exprs(i);
               at[axis] = j->var;
               return te::sum(ir::cast(DataType::Int(64), j->var), {j}, ir::eq(rank(at), Expr(i[axis])));
             },
             "topk_indices", "reduce");
       }});
}

const char* const kReductions[] = {"none", "add", "mul", "max", "min"};

void check_reduction(const Attrs& a) {
  std::string r = a.get_string("reduction", "none");
  for (const char* k : kReductions)
    if (r == k) return;
  fail("reduction '" + r + "' is not one of none, add, mul, max, min");
}

using MatchFn = std::function<Expr(const std::vector<Var>& i, const Expr& j)>;
using UpdateAtFn = std::function<std::vector<Expr>(const std::vector<Var>& i, const Expr& j)>;

// out[i] = data[i] combined with updates[update_at(i, j)] for every j < count where
// match(i, j).
Tensor scatter(const Tensor& data, const Tensor& updates, int64_t count, const std::string& reduction,
               const MatchFn& match, const UpdateAtFn& update_at, const std::string& name) {
  std::vector<Expr> shape = data->shape;
  IterVar j = te::reduce_axis(Expr(static_cast<int>(count)), "j");
  if (reduction == "none") {
    Tensor last = te::compute(
        shape, [&](const std::vector<Var>& i) { return te::max_reduce(Expr(j->var), {j}, match(i, j->var)); },
        name + ".last", "reduce");
    return te::compute(
        shape,
        [&](const std::vector<Var>& i) {
          Expr l = last(as_exprs(i));
          return ir::select(l >= 0, updates(update_at(i, ir::max(l, 0))), data(as_exprs(i)));
        },
        name, "injective");
  }
  Tensor part = te::compute(
      shape,
      [&](const std::vector<Var>& i) {
        Expr u = updates(update_at(i, j->var)), where = match(i, j->var);
        if (reduction == "add") return te::sum(u, {j}, where);
        if (reduction == "mul") return te::prod(u, {j}, where);
        if (reduction == "max") return te::max_reduce(u, {j}, where);
        return te::min_reduce(u, {j}, where);
      },
      name + "." + reduction, "reduce");
  return te::compute(
      shape,
      [&](const std::vector<Var>& i) {
        Expr d = data(as_exprs(i)), p = part(as_exprs(i));
        if (reduction == "add") return d + p;
        if (reduction == "mul") return d * p;
        if (reduction == "max") return ir::max(d, p);
        return ir::min(d, p);
      },
      name, "injective");
}

void register_scatter_elements() {
  reg({"scatter_elements", OpPattern::Opaque, 3, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         if (in[0].ndim() == 0) fail("scatter_elements needs a rank of at least 1");
         int axis = normalize_axis(a.get_int("axis", 0), in[0].ndim());
         check_reduction(a);
         if (!in[1].dtype.is_integer()) fail("indices must be integers");
         if (in[1].ndim() != in[0].ndim()) fail("data and indices differ in rank");
         if (in[2].shape != in[1].shape || in[2].dtype != in[0].dtype) fail("updates need the indices' shape and the data's type");
         for (int d = 0; d < in[0].ndim(); ++d)
           if (d != axis && in[1].shape[d] > in[0].shape[d])
             fail(fmt::format("indices are longer than data in dimension {} ({} > {})", d, in[1].shape[d], in[0].shape[d]));
         return in[0];
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType&) {
         TensorType dt = type_of(in[0]), it = type_of(in[1]);
         int axis = normalize_axis(a.get_int("axis", 0), dt.ndim());
         // The update at position j along the axis, the other dimensions as i's (clamped:
         // outside the indices' extent nothing matches).
         auto update_at = [&, axis](const std::vector<Var>& i, const Expr& j) {
           std::vector<Expr> p = as_exprs(i);
           for (int d = 0; d < dt.ndim(); ++d)
             p[d] = d == axis ? j : it.shape[d] < dt.shape[d] ? ir::min(p[d], static_cast<int>(it.shape[d] - 1)) : p[d];
           return p;
         };
         auto match = [&, axis](const std::vector<Var>& i, const Expr& j) {
           Expr hit = ir::eq(wrap_index(in[1](update_at(i, j)), dt.shape[axis]), Expr(i[axis]));
           for (int d = 0; d < dt.ndim(); ++d)
             if (d != axis && it.shape[d] < dt.shape[d]) hit = hit && Expr(i[d]) < static_cast<int>(it.shape[d]);
           return hit;
         };
         return scatter(in[0], in[2], it.shape[axis], a.get_string("reduction", "none"), match, update_at,
                        "scatter_elements");
       }});
}

void register_scatter_nd() {
  reg({"scatter_nd", OpPattern::Opaque, 3, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         check_reduction(a);
         if (!in[1].dtype.is_integer()) fail("indices must be integers");
         if (in[1].ndim() != 2) fail("scatter_nd takes indices as [updates, index length]");
         int64_t q = in[1].shape[1];
         if (q < 1 || q > in[0].ndim()) fail(fmt::format("an index of length {} does not address data of rank {}", q, in[0].ndim()));
         std::vector<int64_t> want{in[1].shape[0]};
         want.insert(want.end(), in[0].shape.begin() + q, in[0].shape.end());
         if (in[2].shape != want || in[2].dtype != in[0].dtype)
           fail(fmt::format("updates must be {}[{}], not {}", in[0].dtype.to_string(), fmt::join(want, ", "), in[2].to_string()));
         return in[0];
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType&) {
         TensorType dt = type_of(in[0]), it = type_of(in[1]);
         int q = static_cast<int>(it.shape[1]);
         auto update_at = [&, q](const std::vector<Var>& i, const Expr& j) {
           std::vector<Expr> p{j};
           for (int d = q; d < dt.ndim(); ++d) p.push_back(i[d]);
           return p;
         };
         auto match = [&, q](const std::vector<Var>& i, const Expr& j) {
           Expr hit;
           for (int t = 0; t < q; ++t) {
             Expr e = ir::eq(wrap_index(in[1]({j, Expr(t)}), dt.shape[t]), Expr(i[t]));
             hit = hit.defined() ? hit && e : e;
           }
           return hit;
         };
         return scatter(in[0], in[2], it.shape[0], a.get_string("reduction", "none"), match, update_at, "scatter_nd");
       }});
}

// ---------------------------------------------------------------- einsum

struct Equation {
  std::vector<std::string> inputs;
  std::string output;
  std::map<char, int64_t> extent;
};

Equation parse_equation(const std::string& eq, const std::vector<TensorType>& in) {
  Equation e;
  size_t arrow = eq.find("->");
  if (arrow == std::string::npos) fail("einsum equation '" + eq + "' has no '->'");
  e.output = eq.substr(arrow + 2);
  std::string lhs = eq.substr(0, arrow);
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    e.inputs.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (e.inputs.size() != in.size())
    fail(fmt::format("einsum equation '{}' has {} operands, the op {}", eq, e.inputs.size(), in.size()));
  for (size_t k = 0; k < in.size(); ++k) {
    const std::string& t = e.inputs[k];
    if (static_cast<int>(t.size()) != in[k].ndim())
      fail(fmt::format("einsum operand {} ('{}') has rank {}", k, t, in[k].ndim()));
    for (size_t d = 0; d < t.size(); ++d) {
      char c = t[d];
      if (!std::isalpha(static_cast<unsigned char>(c))) fail(fmt::format("einsum subscript '{}' is not a letter", c));
      int64_t n = in[k].shape[d];
      auto [it, fresh] = e.extent.emplace(c, n);
      if (fresh || it->second == n || n == 1) continue;
      if (it->second != 1) fail(fmt::format("einsum subscript '{}' has extents {} and {}", c, it->second, n));
      it->second = n;
    }
  }
  for (char c : e.output)
    if (!e.extent.count(c)) fail(fmt::format("einsum output subscript '{}' is on no operand", c));
  return e;
}

void register_einsum() {
  reg({"einsum", OpPattern::Opaque, -1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         Equation e = parse_equation(a.get_string("equation", ""), in);
         for (const auto& t : in)
           if (t.dtype != in[0].dtype) fail("einsum operands differ in type");
         TensorType out{in[0].dtype, {}};
         for (char c : e.output) out.shape.push_back(e.extent.at(c));
         return out;
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         std::vector<TensorType> types;
         for (const Tensor& t : in) types.push_back(type_of(t));
         Equation e = parse_equation(a.get_string("equation", ""), types);
         std::map<char, IterVar> summed;
         std::vector<IterVar> axes;
         for (const auto& [c, n] : e.extent)
           if (e.output.find(c) == std::string::npos) {
             IterVar iv = te::reduce_axis(Expr(static_cast<int>(n)), std::string(1, c));
             summed.emplace(c, iv);
             axes.push_back(iv);
           }
         return te::compute(
             te_shape(out),
             [&](const std::vector<Var>& i) {
               auto value_of = [&](char c) -> Expr {
                 auto s = summed.find(c);
                 return s != summed.end() ? Expr(s->second->var) : Expr(i[e.output.find(c)]);
               };
               Expr product;
               for (size_t k = 0; k < in.size(); ++k) {
                 std::vector<Expr> idx;
                 for (size_t d = 0; d < e.inputs[k].size(); ++d) {
                   char c = e.inputs[k][d];
                   idx.push_back(types[k].shape[d] == 1 && e.extent.at(c) != 1 ? Expr(0) : value_of(c));
                 }
                 if (idx.empty()) idx.push_back(Expr(0));
                 Expr v = in[k](idx);
                 product = product.defined() ? product * v : v;
               }
               return axes.empty() ? product : te::sum(product, axes);
             },
             "einsum", axes.empty() ? "injective" : "reduce");
       }});
}

// ---------------------------------------------------------------- det

constexpr int64_t kMaxDetOrder = 5;  // Leibniz's sum has n! terms

void register_det() {
  reg({"det", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs&) {
         const TensorType& t = in[0];
         if (t.ndim() < 2 || t.shape[t.ndim() - 1] != t.shape[t.ndim() - 2])
           fail("det takes square matrices [..., n, n], not " + t.to_string());
         if (!t.dtype.is_float()) fail("det takes floating-point matrices, not " + t.dtype.to_string());
         int64_t n = t.shape.back();
         if (n > kMaxDetOrder) fail(fmt::format("det of {}x{} matrices is not supported (at most {}x{})", n, n, kMaxDetOrder, kMaxDetOrder));
         return TensorType{t.dtype, std::vector<int64_t>(t.shape.begin(), t.shape.end() - 2)};
       },
       [](const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
         TensorType t = type_of(in[0]);
         int n = static_cast<int>(t.shape.back()), batch = t.ndim() - 2;
         DataType f = DataType::Float(64);
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) {
                              // The sum over permutations p of sign(p) * prod_r x[r, p[r]], in float64.
                              std::vector<int> p(static_cast<size_t>(n));
                              std::iota(p.begin(), p.end(), 0);
                              Expr det;
                              do {
                                int inversions = 0;
                                for (int a = 0; a < n; ++a)
                                  for (int b = a + 1; b < n; ++b) inversions += p[a] > p[b];
                                Expr term = ir::make_const(f, inversions % 2 ? -1.0 : 1.0);
                                for (int r = 0; r < n; ++r) {
                                  std::vector<Expr> idx(i.begin(), i.begin() + batch);
                                  idx.push_back(Expr(r));
                                  idx.push_back(Expr(p[r]));
                                  term = term * ir::cast(f, in[0](idx));
                                }
                                det = det.defined() ? det + term : term;
                              } while (std::next_permutation(p.begin(), p.end()));
                              return ir::cast(out.dtype, det);
                            },
                            "det", "injective");
       }});
}

}  // namespace

void register_index_ops() {
  register_det();
  register_topk();
  register_scatter_elements();
  register_scatter_nd();
  register_einsum();
}

}  // namespace kiln::graph::detail
