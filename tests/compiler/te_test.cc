// Tensor expressions and the op library, checked against plain C++ loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compiler/support/error.h"
#include "compiler/te/ops.h"
#include "test_util.h"

namespace kiln {
namespace {

using ir::DataType;
using te::Tensor;

// Lowers the unscheduled program and runs it on random inputs.
std::vector<interp::HostBuffer> eval(const std::vector<Tensor>& args, uint64_t seed = 7) {
  auto s = schedule::create_schedule({args.back()});
  return test::run(schedule::lower(s, args), args, seed);
}

TEST(TensorExpr, ComputeAnyRank) {
  auto a = te::placeholder({2, 3, 4}, DataType::Int(32), "A");
  auto b = te::compute({2, 3, 4}, [&](const std::vector<ir::Var>& i) { return a(i[0], i[1], i[2]) * 10 + i[2]; }, "B");
  EXPECT_EQ(b->axis.size(), 3u);
  EXPECT_EQ(b->axis[2]->var.name(), "k");
  auto out = eval({a, b});
  for (int i = 0; i < 24; ++i) EXPECT_EQ(out[1].get_int(i), out[0].get_int(i) * 10 + i % 4);
  auto scalar = te::compute({}, [&](const std::vector<ir::Var>&) { return a(1, 2, 3) + 1; }, "S");
  auto so = eval({a, scalar});
  EXPECT_EQ(so[1].get_int(0), so[0].get_int(23) + 1);
}

TEST(TensorExpr, Reductions) {
  auto a = te::placeholder({5, 6}, DataType::Int(32), "A");
  auto k = te::reduce_axis(6, "k");
  auto s = te::compute({5}, [&](ir::Var i) { return te::sum(a(i, k->var), {k}); }, "S");
  auto k2 = te::reduce_axis(6, "k2");
  auto mx = te::compute({5}, [&](ir::Var i) { return te::max_reduce(a(i, k2->var), {k2}); }, "M");
  auto k3 = te::reduce_axis(6, "k3");
  auto mn = te::compute({5}, [&](ir::Var i) { return te::min_reduce(a(i, k3->var), {k3}, k3->var < 3); }, "N");
  auto r1 = eval({a, s});
  auto r2 = eval({a, mx});
  auto r3 = eval({a, mn});
  for (int i = 0; i < 5; ++i) {
    int64_t sum = 0, big = INT64_MIN, small = INT64_MAX;
    for (int j = 0; j < 6; ++j) {
      sum += r1[0].get_int(i * 6 + j);
      big = std::max(big, r2[0].get_int(i * 6 + j));
      if (j < 3) small = std::min(small, r3[0].get_int(i * 6 + j));
    }
    EXPECT_EQ(r1[1].get_int(i), sum);
    EXPECT_EQ(r2[1].get_int(i), big);
    EXPECT_EQ(r3[1].get_int(i), small);
  }
  EXPECT_EQ(ir::to_string(ir::reduce_identity(ir::Combiner::Max, DataType::Int(8))), "int8(-128)");
  EXPECT_EQ(ir::to_string(ir::reduce_identity(ir::Combiner::Min, DataType::Float(32))), "inff");
}

TEST(TensorExpr, ReductionToAScalarUnderASchedule) {
  auto a = te::placeholder({7, 5}, DataType::Int(32), "A");
  auto r = te::reduce_axis(7, "r");
  auto c = te::reduce_axis(5, "c");
  auto total = te::compute({}, [&](const std::vector<ir::Var>&) { return te::sum(a(r->var, c->var), {r, c}); }, "Total");
  auto s = schedule::create_schedule({total});
  auto [ro, ri] = s[total].split(r, 3);
  s[total].reorder({c, ro, ri});
  EXPECT_TRUE(test::same_as_unscheduled(s, {a, total}));
  auto out = eval({a, total});
  int64_t want = 0;
  for (int i = 0; i < 35; ++i) want += out[0].get_int(i);
  EXPECT_EQ(out[1].get_int(0), want);
}

TEST(TensorExpr, BadExpressionsAreErrors) {
  auto a = te::placeholder({4, 4}, DataType::Float(32), "A");
  EXPECT_THROW(a(1), CompileError);  // wrong rank
  auto k = te::reduce_axis(4);
  EXPECT_THROW(te::compute({4}, [&](ir::Var i) { return te::sum(a(i, k->var), {k}) + 1.0f; }, "X"), CompileError);
  EXPECT_THROW(te::matmul(a, te::placeholder({3, 4}, DataType::Float(32), "B")), CompileError);
}

TEST(Ops, ElementwiseAndBroadcast) {
  auto a = te::placeholder({3, 4}, DataType::Float(32), "A");
  auto b = te::placeholder({4}, DataType::Float(32), "B");
  auto c = te::add(a, b);
  auto out = eval({a, b, c});
  for (int i = 0; i < 12; ++i) EXPECT_EQ(out[2].get(i), out[0].get(i) + out[1].get(i % 4));
  auto col = te::placeholder({3, 1}, DataType::Float(32), "Col");
  auto m = te::maximum(a, col);
  auto mo = eval({a, col, m});
  for (int i = 0; i < 12; ++i) EXPECT_EQ(mo[2].get(i), std::max(mo[0].get(i), mo[1].get(i / 4)));
  auto r = te::relu(te::subtract(a, b));
  auto ro = eval({a, b, r});
  for (int i = 0; i < 12; ++i) EXPECT_EQ(ro[2].get(i), std::max(0.0, ro[0].get(i) - ro[1].get(i % 4)));
  auto e = te::exp(te::negative(a));
  auto eo = eval({a, e});
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(eo[1].get(i), std::exp(-eo[0].get(i)));
  auto ci = te::cast(a, DataType::Int(8));
  EXPECT_EQ(ci->dtype, DataType::Int(8));
  EXPECT_THROW(te::add(a, te::placeholder({3}, DataType::Float(32), "Bad")), CompileError);
}

TEST(Ops, MatmulAndDense) {
  auto a = te::placeholder({5, 7}, DataType::Int(32), "A");
  auto b = te::placeholder({7, 3}, DataType::Int(32), "B");
  auto c = te::matmul(a, b);
  auto out = eval({a, b, c});
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 3; ++j) {
      int64_t want = 0;
      for (int k = 0; k < 7; ++k) want += out[0].get_int(i * 7 + k) * out[1].get_int(k * 3 + j);
      EXPECT_EQ(out[2].get_int(i * 3 + j), want);
    }
  }
  auto w = te::placeholder({4, 7}, DataType::Int(32), "W");
  auto bias = te::placeholder({4}, DataType::Int(32), "Bias");
  auto d = te::dense(a, w, bias);
  auto dout = eval({a, w, bias, d});
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 4; ++j) {
      int64_t want = dout[2].get_int(j);
      for (int k = 0; k < 7; ++k) want += dout[0].get_int(i * 7 + k) * dout[1].get_int(j * 7 + k);
      EXPECT_EQ(dout[3].get_int(i * 4 + j), want);
    }
  }
}

// Direct convolution with the same semantics, for the reference.
std::vector<int64_t> conv_ref(const interp::HostBuffer& x, const interp::HostBuffer& w, const te::Conv2DParams& p) {
  int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  int64_t o = w.shape()[0], ci = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
  int64_t oh = (h + 2 * p.padding[0] - p.dilation[0] * (kh - 1) - 1) / p.stride[0] + 1;
  int64_t ow = (wd + 2 * p.padding[1] - p.dilation[1] * (kw - 1) - 1) / p.stride[1] + 1;
  std::vector<int64_t> out;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t f = 0; f < o; ++f)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          int64_t acc = 0;
          int64_t g = f / (o / p.groups);
          for (int64_t rc = 0; rc < ci; ++rc)
            for (int64_t ry = 0; ry < kh; ++ry)
              for (int64_t rx = 0; rx < kw; ++rx) {
                int64_t iy = y * p.stride[0] + ry * p.dilation[0] - p.padding[0];
                int64_t ix = xx * p.stride[1] + rx * p.dilation[1] - p.padding[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                int64_t chan = g * ci + rc;
                acc += x.get_int(((b * c + chan) * h + iy) * wd + ix) * w.get_int(((f * ci + rc) * kh + ry) * kw + rx);
              }
          out.push_back(acc);
        }
  (void)c;
  return out;
}

TEST(Ops, Conv2dStridePaddingDilationGroups) {
  struct Case {
    te::Conv2DParams p;
    int c, o;
  };
  std::vector<Case> cases = {
      {{{1, 1}, {0, 0}, {1, 1}, 1}, 3, 4},
      {{{2, 1}, {1, 2}, {1, 1}, 1}, 2, 3},
      {{{1, 1}, {2, 2}, {2, 2}, 1}, 2, 2},
      {{{1, 2}, {1, 1}, {1, 1}, 2}, 4, 6},
  };
  for (const Case& cs : cases) {
    auto x = te::placeholder({2, cs.c, 7, 8}, DataType::Int(32), "X");
    auto w = te::placeholder({cs.o, cs.c / cs.p.groups, 3, 3}, DataType::Int(32), "W");
    auto y = te::conv2d_nchw(x, w, cs.p);
    auto out = eval({x, w, y});
    std::vector<int64_t> want = conv_ref(out[0], out[1], cs.p);
    ASSERT_EQ(static_cast<int64_t>(want.size()), out[2].size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(out[2].get_int(static_cast<int64_t>(i)), want[i]) << "element " << i;
  }
}

TEST(Ops, PoolingPadReshapeTranspose) {
  auto x = te::placeholder({1, 2, 5, 5}, DataType::Float(32), "X");
  auto mp = te::pool2d(x, te::PoolKind::Max, {{3, 3}, {2, 2}, {1, 1}});
  auto out = eval({x, mp});
  ASSERT_EQ(out[1].shape(), (std::vector<int64_t>{1, 2, 3, 3}));
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 3; ++y)
      for (int xx = 0; xx < 3; ++xx) {
        double m = -INFINITY;
        for (int dy = 0; dy < 3; ++dy)
          for (int dx = 0; dx < 3; ++dx) {
            int iy = y * 2 + dy - 1, ix = xx * 2 + dx - 1;
            if (iy >= 0 && iy < 5 && ix >= 0 && ix < 5) m = std::max(m, out[0].get((c * 5 + iy) * 5 + ix));
          }
        EXPECT_EQ(out[1].get((c * 3 + y) * 3 + xx), m);
      }
  auto ap = te::pool2d(x, te::PoolKind::Avg, {{2, 2}, {2, 2}, {1, 1}});
  auto ao = eval({x, ap});
  // corner window holds only x[0, 0]
  EXPECT_EQ(ao[1].get(0), ao[0].get(0));
  EXPECT_FLOAT_EQ(ao[1].get(1), (ao[0].get(1) + ao[0].get(2)) / 2);

  auto a = te::placeholder({2, 3}, DataType::Int(32), "A");
  auto p = te::pad(a, {1, 0}, {0, 2}, ir::Expr(-1));
  auto po = eval({a, p});
  ASSERT_EQ(po[1].shape(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(po[1].get_int(0), -1);
  EXPECT_EQ(po[1].get_int(5), po[0].get_int(0));
  EXPECT_EQ(po[1].get_int(9), -1);
  auto r = te::reshape(a, {3, 2});
  auto ro = eval({a, r});
  for (int i = 0; i < 6; ++i) EXPECT_EQ(ro[1].get_int(i), ro[0].get_int(i));
  EXPECT_THROW(te::reshape(a, {4, 2}), CompileError);
  auto t = te::transpose(a, {1, 0});
  auto to = eval({a, t});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(to[1].get_int(j * 2 + i), to[0].get_int(i * 3 + j));
  EXPECT_THROW(te::transpose(a, {0, 0}), CompileError);
}

}  // namespace
}  // namespace kiln
