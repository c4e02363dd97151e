#pragma once
// int8 operators written by hand against the runtime, as the VTA backend will emit
// them, with plain C++ references. Generic over the configuration: block sizes and
// tile shapes come from the Config of the stream.
//
// Layouts in device DRAM (VTA's packing):
//   activations N/B C/BI H W B BI   (one INP / OUT element = B x BI)
//   weights     O/BO I/BI KH KW BO BI (one WGT element = BO x BI)
// A matrix A (M x K) is the activation with N=M, C=K, H=W=1; B (N x K) the weight
// with O=N, I=K, KH=KW=1.

#include <cstdint>
#include <span>
#include <vector>

#include "hw/driver/runtime/command_stream.h"

namespace kiln::examples {

// Requantization on the ALU: out = clip(acc >> shift, -128, 127).
int8_t requantize(int32_t acc, int shift);

struct GemmShape {
  int m = 0, n = 0, k = 0;
};

// C = requantize(A x B^T): A row-major M x K, B row-major N x K, C row-major M x N.
std::vector<int8_t> gemm_reference(std::span<const int8_t> a, std::span<const int8_t> b,
                                   GemmShape shape, int shift);
// The same on the device: M a multiple of BATCH, N of BLOCK_OUT, K of BLOCK_IN.
std::vector<int8_t> gemm_on_device(runtime::CommandStream& stream, std::span<const int8_t> a,
                                   std::span<const int8_t> b, GemmShape shape, int shift);

struct Conv2dShape {
  int n = 1, c = 16, h = 14, w = 14;  // input NCHW
  int o = 16, kh = 3, kw = 3;         // weight OIHW (I = c)
  int pad = 1;                        // stride 1
  int out_h() const { return h + 2 * pad - kh + 1; }
  int out_w() const { return w + 2 * pad - kw + 1; }
};

// out (N O OH OW) = requantize(conv2d(in (N C H W), weight (O C KH KW))).
std::vector<int8_t> conv2d_reference(std::span<const int8_t> in, std::span<const int8_t> weight,
                                     const Conv2dShape& shape, int shift);
// The same on the device: N a multiple of BATCH, C of BLOCK_IN, O of BLOCK_OUT, pad
// within a LOAD pad field and smaller than the kernel.
std::vector<int8_t> conv2d_on_device(runtime::CommandStream& stream, std::span<const int8_t> in,
                                     std::span<const int8_t> weight, const Conv2dShape& shape,
                                     int shift);

// Packing between plain NCHW / OIHW and the layouts above.
std::vector<int8_t> pack_activations(std::span<const int8_t> nchw, int n, int c, int h, int w,
                                     const hw::Config& cfg);
std::vector<int8_t> unpack_activations(std::span<const int8_t> packed, int n, int c, int h, int w,
                                       const hw::Config& cfg);
std::vector<int8_t> pack_weights(std::span<const int8_t> oihw, int o, int i, int kh, int kw,
                                 const hw::Config& cfg);

}  // namespace kiln::examples
