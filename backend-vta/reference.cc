#include "backend-vta/reference.h"

#include <algorithm>
#include <random>

namespace kiln::vta {

std::vector<int8_t> pack_data(const Env& env, const Conv2DWorkload& wl, const std::vector<int8_t>& x) {
  int b = env.batch(), bi = env.block_in(), C = wl.in_channels, H = wl.height, W = wl.width;
  std::vector<int8_t> out(x.size());
  size_t o = 0;
  for (int n0 = 0; n0 < wl.batch / b; ++n0)
    for (int c0 = 0; c0 < C / bi; ++c0)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w)
          for (int n1 = 0; n1 < b; ++n1)
            for (int c1 = 0; c1 < bi; ++c1)
              out[o++] = x[((size_t(n0 * b + n1) * C + size_t(c0 * bi + c1)) * H + h) * W + w];
  return out;
}

std::vector<int8_t> pack_kernel(const Env& env, const Conv2DWorkload& wl, const std::vector<int8_t>& k) {
  int bo = env.block_out(), bi = env.block_in(), C = wl.in_channels, O = wl.out_channels;
  int KH = wl.kernel_h, KW = wl.kernel_w;
  std::vector<int8_t> out(k.size());
  size_t o = 0;
  for (int o0 = 0; o0 < O / bo; ++o0)
    for (int c0 = 0; c0 < C / bi; ++c0)
      for (int y = 0; y < KH; ++y)
        for (int x = 0; x < KW; ++x)
          for (int o1 = 0; o1 < bo; ++o1)
            for (int c1 = 0; c1 < bi; ++c1)
              out[o++] = k[((size_t(o0 * bo + o1) * C + size_t(c0 * bi + c1)) * KH + y) * KW + x];
  return out;
}

std::vector<int32_t> pack_bias(const Env& env, const Conv2DWorkload& wl, const std::vector<int32_t>& bias) {
  int b = env.batch(), bo = env.block_out();
  std::vector<int32_t> out;
  for (int o0 = 0; o0 < wl.out_channels / bo; ++o0)
    for (int n1 = 0; n1 < b; ++n1)
      for (int o1 = 0; o1 < bo; ++o1) out.push_back(bias[size_t(o0 * bo + o1)]);
  return out;
}

std::vector<int8_t> unpack_out(const Env& env, const Conv2DWorkload& wl, const std::vector<int8_t>& p) {
  int b = env.batch(), bo = env.block_out(), O = wl.out_channels, OH = wl.out_height(), OW = wl.out_width();
  std::vector<int8_t> out(p.size());
  size_t i = 0;
  for (int n0 = 0; n0 < wl.batch / b; ++n0)
    for (int o0 = 0; o0 < O / bo; ++o0)
      for (int h = 0; h < OH; ++h)
        for (int w = 0; w < OW; ++w)
          for (int n1 = 0; n1 < b; ++n1)
            for (int o1 = 0; o1 < bo; ++o1)
              out[((size_t(n0 * b + n1) * O + size_t(o0 * bo + o1)) * OH + h) * OW + w] = p[i++];
  return out;
}

Conv2DTensors random_conv2d_tensors(const Conv2DWorkload& wl, uint32_t seed, int bias_range) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d8(-128, 127), db(-bias_range, bias_range);
  Conv2DTensors t;
  t.data.resize(size_t(wl.batch) * wl.in_channels * wl.height * wl.width);
  t.kernel.resize(size_t(wl.out_channels) * wl.in_channels * wl.kernel_h * wl.kernel_w);
  t.bias.resize(size_t(wl.out_channels));
  for (auto& x : t.data) x = static_cast<int8_t>(d8(rng));
  for (auto& x : t.kernel) x = static_cast<int8_t>(d8(rng));
  for (auto& x : t.bias) x = db(rng);
  return t;
}

std::vector<int8_t> reference_conv2d(const Conv2DWorkload& wl, const Requant& rq, const std::vector<int8_t>& data,
                                     const std::vector<int8_t>& kernel, const std::vector<int32_t>& bias) {
  int N = wl.batch, C = wl.in_channels, H = wl.height, W = wl.width, O = wl.out_channels;
  int KH = wl.kernel_h, KW = wl.kernel_w, OH = wl.out_height(), OW = wl.out_width();
  std::vector<int8_t> out(size_t(N) * O * OH * OW);
  std::vector<int32_t> acc(size_t(OH) * OW);
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o) {
      std::fill(acc.begin(), acc.end(), rq.bias ? bias[size_t(o)] : 0);
      for (int c = 0; c < C; ++c)
        for (int ky = 0; ky < KH; ++ky)
          for (int kx = 0; kx < KW; ++kx) {
            int32_t wv = kernel[((size_t(o) * C + c) * KH + ky) * KW + kx];
            for (int y = 0; y < OH; ++y) {
              int iy = y * wl.stride_h + ky - wl.pad_h;
              if (iy < 0 || iy >= H) continue;
              const int8_t* row = &data[((size_t(n) * C + c) * H + iy) * W];
              int32_t* arow = &acc[size_t(y) * OW];
              for (int x = 0; x < OW; ++x) {
                int ix = x * wl.stride_w + kx - wl.pad_w;
                if (ix >= 0 && ix < W) arow[x] += int32_t{row[ix]} * wv;
              }
            }
          }
      for (int i = 0; i < OH * OW; ++i) {
        int32_t v = acc[size_t(i)] >> rq.shift;
        v = std::min(v, 127);
        v = std::max(v, rq.relu ? 0 : -128);
        out[(size_t(n) * O + o) * OH * OW + size_t(i)] = static_cast<int8_t>(v);
      }
    }
  return out;
}

}  // namespace kiln::vta
