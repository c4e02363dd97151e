#pragma once
// Host-side helpers for the packed layouts of strategy.h, and the CPU int8 reference
// convolution every VTA result is checked against (plain loops over NCHW / OIHW).
#include <cstdint>
#include <vector>

#include "backend-vta/env.h"
#include "backend-vta/strategy.h"

namespace kiln::vta {

// NCHW int8 -> [N/b, C/bi, H, W, b, bi].
std::vector<int8_t> pack_data(const Env& env, const Conv2DWorkload& wl, const std::vector<int8_t>& nchw);
// OIHW int8 -> [O/bo, C/bi, KH, KW, bo, bi].
std::vector<int8_t> pack_kernel(const Env& env, const Conv2DWorkload& wl, const std::vector<int8_t>& oihw);
// [O] int32 -> [1, O/bo, 1, 1, b, bo] (the value repeated in every batch lane).
std::vector<int32_t> pack_bias(const Env& env, const Conv2DWorkload& wl, const std::vector<int32_t>& bias);
// [N/b, O/bo, OH, OW, b, bo] -> NCHW.
std::vector<int8_t> unpack_out(const Env& env, const Conv2DWorkload& wl, const std::vector<int8_t>& packed);

// Random NCHW data, OIHW weights (uniform int8) and biases (uniform in +-bias_range)
// of a workload, from a seed: test and benchmark inputs.
struct Conv2DTensors {
  std::vector<int8_t> data, kernel;
  std::vector<int32_t> bias;
};
Conv2DTensors random_conv2d_tensors(const Conv2DWorkload& wl, uint32_t seed, int bias_range = 4096);

// out = clip(((conv(data, kernel) + bias) >> shift), relu ? 0 : -128, 127), NCHW.
std::vector<int8_t> reference_conv2d(const Conv2DWorkload& wl, const Requant& rq, const std::vector<int8_t>& data,
                                     const std::vector<int8_t>& kernel, const std::vector<int32_t>& bias);

}  // namespace kiln::vta
