#include "examples/runtime/kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "hw/driver/runtime/device_buffer.h"
#include "hw/spec/error.h"
#include "support/integer.h"

namespace kiln::examples {

using runtime::CommandStream;
using runtime::DeviceBuffer;
using runtime::Pad;
using hw::Module;
using runtime::UopKernel;
using runtime::UopKernelBuilder;

int8_t requantize(int32_t acc, int shift) {
  return static_cast<int8_t>(std::clamp(acc >> shift, -128, 127));
}

// ---------------------------------------------------------------------------------
// Packing

namespace {

void check_multiple(const char* what, int value, int block, const char* block_name) {
  if (value <= 0 || value % block != 0)
    throw hw::Error(fmt::format("{} = {} is not a positive multiple of {} ({})", what, value,
                                block_name, block));
}

size_t packed_act_index(int n, int c, int y, int x, int C, int H, int W, const hw::Config& cfg) {
  int B = cfg.batch(), BI = cfg.block_in(), Cb = C / BI;
  return ((((static_cast<size_t>(n / B) * Cb + c / BI) * H + y) * W + x) * B + n % B) * BI +
         c % BI;
}

}  // namespace

std::vector<int8_t> pack_activations(std::span<const int8_t> nchw, int n, int c, int h, int w,
                                     const hw::Config& cfg) {
  check_multiple("N", n, cfg.batch(), "BATCH");
  check_multiple("C", c, cfg.block_in(), "BLOCK_IN");
  std::vector<int8_t> out(nchw.size());
  for (int in = 0; in < n; ++in)
    for (int ic = 0; ic < c; ++ic)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          out[packed_act_index(in, ic, y, x, c, h, w, cfg)] =
              nchw[((static_cast<size_t>(in) * c + ic) * h + y) * w + x];
  return out;
}

std::vector<int8_t> unpack_activations(std::span<const int8_t> packed, int n, int c, int h, int w,
                                       const hw::Config& cfg) {
  std::vector<int8_t> out(packed.size());
  for (int in = 0; in < n; ++in)
    for (int ic = 0; ic < c; ++ic)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          out[((static_cast<size_t>(in) * c + ic) * h + y) * w + x] =
              packed[packed_act_index(in, ic, y, x, c, h, w, cfg)];
  return out;
}

std::vector<int8_t> pack_weights(std::span<const int8_t> oihw, int o, int i, int kh, int kw,
                                 const hw::Config& cfg) {
  check_multiple("O", o, cfg.block_out(), "BLOCK_OUT");
  check_multiple("I", i, cfg.block_in(), "BLOCK_IN");
  int BO = cfg.block_out(), BI = cfg.block_in(), Ib = i / BI;
  std::vector<int8_t> out(oihw.size());
  for (int oo = 0; oo < o; ++oo)
    for (int ii = 0; ii < i; ++ii)
      for (int y = 0; y < kh; ++y)
        for (int x = 0; x < kw; ++x) {
          size_t packed =
              ((((static_cast<size_t>(oo / BO) * Ib + ii / BI) * kh + y) * kw + x) * BO + oo % BO) *
                  BI +
              ii % BI;
          out[packed] = oihw[((static_cast<size_t>(oo) * i + ii) * kh + y) * kw + x];
        }
  return out;
}

// ---------------------------------------------------------------------------------
// References

std::vector<int8_t> gemm_reference(std::span<const int8_t> a, std::span<const int8_t> b,
                                   GemmShape s, int shift) {
  std::vector<int8_t> c(static_cast<size_t>(s.m) * s.n);
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n; ++j) {
      int32_t acc = 0;
      for (int k = 0; k < s.k; ++k)
        acc += int32_t{a[static_cast<size_t>(i) * s.k + k]} * b[static_cast<size_t>(j) * s.k + k];
      c[static_cast<size_t>(i) * s.n + j] = requantize(acc, shift);
    }
  return c;
}

std::vector<int8_t> conv2d_reference(std::span<const int8_t> in, std::span<const int8_t> weight,
                                     const Conv2dShape& s, int shift) {
  int OH = s.out_h(), OW = s.out_w();
  std::vector<int8_t> out(static_cast<size_t>(s.n) * s.o * OH * OW);
  for (int n = 0; n < s.n; ++n)
    for (int o = 0; o < s.o; ++o)
      for (int y = 0; y < OH; ++y)
        for (int x = 0; x < OW; ++x) {
          int32_t acc = 0;
          for (int c = 0; c < s.c; ++c)
            for (int ky = 0; ky < s.kh; ++ky)
              for (int kx = 0; kx < s.kw; ++kx) {
                int iy = y + ky - s.pad, ix = x + kx - s.pad;
                if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
                acc += int32_t{in[((static_cast<size_t>(n) * s.c + c) * s.h + iy) * s.w + ix]} *
                       weight[((static_cast<size_t>(o) * s.c + c) * s.kh + ky) * s.kw + kx];
              }
          out[((static_cast<size_t>(n) * s.o + o) * OH + y) * OW + x] = requantize(acc, shift);
        }
  return out;
}

// ---------------------------------------------------------------------------------
// On the device

namespace {

// VTA-style latency hiding: two input buffers (load runs ahead of compute) and two
// accumulator regions (compute runs ahead of store), handed over by tokens.
class Pipeline {
 public:
  explicit Pipeline(CommandStream& s) : s_(s) {
    for (int i = 0; i < 2; ++i) s_.dep_push(Module::kCompute, Module::kLoad);
    for (int i = 0; i < 2; ++i) s_.dep_push(Module::kStore, Module::kCompute);
  }
  // Load module: wait for a free input buffer; returns its index.
  int begin_load() {
    s_.dep_pop(Module::kCompute, Module::kLoad);
    return loads_++ % 2;
  }
  void end_load() { s_.dep_push(Module::kLoad, Module::kCompute); }
  // Compute module: wait for the loaded buffer; returns its index.
  int begin_step() {
    s_.dep_pop(Module::kLoad, Module::kCompute);
    return steps_++ % 2;
  }
  void end_step() { s_.dep_push(Module::kCompute, Module::kLoad); }
  // Compute module: wait until the store has drained an accumulator region.
  int begin_output() {
    s_.dep_pop(Module::kStore, Module::kCompute);
    return outputs_++ % 2;
  }
  void end_output() { s_.dep_push(Module::kCompute, Module::kStore); }
  void begin_store() { s_.dep_pop(Module::kCompute, Module::kStore); }
  void end_store() { s_.dep_push(Module::kStore, Module::kCompute); }
  // Takes back the initial tokens so that every queue ends empty.
  void finish() {
    for (int i = 0; i < 2; ++i) s_.dep_pop(Module::kCompute, Module::kLoad);
    for (int i = 0; i < 2; ++i) s_.dep_pop(Module::kStore, Module::kCompute);
  }

 private:
  CommandStream& s_;
  int loads_ = 0, steps_ = 0, outputs_ = 0;
};

// acc[base .. base + rows*cols) = clip(acc >> shift, -128, 127), on the ALU.
void push_requantize(CommandStream& s, uint32_t base, uint32_t rows, uint32_t cols, int shift) {
  auto build = [&](const char* name, hw::AluOp op, int32_t imm) {
    return UopKernelBuilder::alu_imm(name, op, imm)
        .loop_begin(rows, cols, cols)
        .loop_begin(cols, 1, 1)
        .push(base, base)
        .loop_end()
        .loop_end()
        .finish();
  };
  s.push_alu(build("requantize.shr", hw::AluOp::kShr, shift));
  s.push_alu(build("requantize.min", hw::AluOp::kMin, 127));
  s.push_alu(build("requantize.max", hw::AluOp::kMax, -128));
}

UopKernel reset_kernel(uint32_t base, uint32_t rows, uint32_t cols) {
  return UopKernelBuilder::gemm("reset", /*reset=*/true)
      .loop_begin(rows, cols, 0, 0)
      .loop_begin(cols, 1, 0, 0)
      .push(base, 0, 0)
      .loop_end()
      .loop_end()
      .finish();
}

template <typename T>
DeviceBuffer upload(driver::Device& dev, std::span<const T> data) {
  DeviceBuffer buf(dev, data.size_bytes());
  buf.write_elems(data);
  return buf;
}

// GEMM tiles, in elements: tm rows of BATCH, tn blocks of BLOCK_OUT, tk of BLOCK_IN.
struct GemmTiles {
  int tm = 0, tn = 0, tk = 0;
};

GemmTiles choose_gemm_tiles(int mb, int nb, int kb, const CommandStream& s) {
  const hw::Config& cfg = s.config();
  const int64_t max_iter = std::min(s.field_max(hw::Opcode::kGemm, hw::Field::kIterOut),
                                    s.field_max(hw::Opcode::kGemm, hw::Field::kIterIn));
  GemmTiles best;
  double best_cost = std::numeric_limits<double>::max();
  for (int tm : divisors(mb))
    for (int tn : divisors(nb))
      for (int tk : divisors(kb)) {
        if (2u * tm * tk > cfg.inp_depth() || 2u * tn * tk > cfg.wgt_depth() ||
            2u * tm * tn > cfg.acc_depth() || static_cast<uint32_t>(tk) > cfg.uop_depth() ||
            tm > max_iter || tn > max_iter)
          continue;
        double steps = double(mb / tm) * (nb / tn) * (kb / tk);
        double outputs = double(mb / tm) * (nb / tn);
        double bytes = steps * (double(tm) * tk * cfg.inp_elem_bytes() +
                                double(tn) * tk * cfg.wgt_elem_bytes());
        // Four GEMM kernels of tk micro-ops stay cached when they fit; else reloads.
        if (4u * tk + 8 > cfg.uop_depth()) bytes += steps * tk * 4;
        double cost = bytes + 256 * (3 * steps + 7 * outputs);
        if (cost < best_cost) {
          best_cost = cost;
          best = {tm, tn, tk};
        }
      }
  if (best.tm == 0)
    throw hw::Error(fmt::format("gemm: no tiling fits the buffers of configuration '{}'",
                                cfg.name()));
  return best;
}

}  // namespace

std::vector<int8_t> gemm_on_device(CommandStream& s, std::span<const int8_t> a,
                                   std::span<const int8_t> b, GemmShape shape, int shift) {
  const hw::Config& cfg = s.config();
  driver::Device& dev = s.device();
  check_multiple("M", shape.m, cfg.batch(), "BATCH");
  check_multiple("N", shape.n, cfg.block_out(), "BLOCK_OUT");
  check_multiple("K", shape.k, cfg.block_in(), "BLOCK_IN");
  const int mb = shape.m / cfg.batch(), nb = shape.n / cfg.block_out(),
            kb = shape.k / cfg.block_in();
  const GemmTiles t = choose_gemm_tiles(mb, nb, kb, s);

  DeviceBuffer a_dev = upload<int8_t>(dev, pack_activations(a, shape.m, shape.k, 1, 1, cfg));
  DeviceBuffer b_dev = upload<int8_t>(dev, pack_weights(b, shape.n, shape.k, 1, 1, cfg));
  DeviceBuffer c_dev(dev, static_cast<uint64_t>(shape.m) * shape.n);

  const uint32_t inp_half = t.tm * t.tk, wgt_half = t.tn * t.tk, acc_half = t.tm * t.tn;
  // The GEMM of one step, for input buffer `buf` and accumulator region `region`:
  // acc[i][j] += sum_k inp[i][k] . wgt[j][k] over the tile.
  std::map<std::pair<int, int>, UopKernel> gemm_kernels;
  auto gemm_kernel = [&](int buf, int region) -> const UopKernel& {
    auto [it, fresh] = gemm_kernels.try_emplace({buf, region});
    if (fresh) {
      auto kb_ = UopKernelBuilder::gemm("gemm.tile");
      kb_.loop_begin(t.tm, t.tn, t.tk, 0).loop_begin(t.tn, 1, 0, t.tk);
      for (int k = 0; k < t.tk; ++k)
        kb_.push(region * acc_half, buf * inp_half + k, buf * wgt_half + k);
      it->second = kb_.loop_end().loop_end().finish();
    }
    return it->second;
  };

  Pipeline p(s);
  for (int mo = 0; mo < mb / t.tm; ++mo)
    for (int no = 0; no < nb / t.tn; ++no) {
      int region = p.begin_output();
      uint32_t acc_base = region * acc_half;
      s.push_gemm(reset_kernel(acc_base, t.tm, t.tn));
      for (int ko = 0; ko < kb / t.tk; ++ko) {
        int buf = p.begin_load();
        s.load_2d(hw::MemType::kInp, buf * inp_half,
                  a_dev.address() + (uint64_t(mo) * t.tm * kb + ko * t.tk) * cfg.inp_elem_bytes(),
                  t.tm, t.tk, kb);
        s.load_2d(hw::MemType::kWgt, buf * wgt_half,
                  b_dev.address() + (uint64_t(no) * t.tn * kb + ko * t.tk) * cfg.wgt_elem_bytes(),
                  t.tn, t.tk, kb);
        p.end_load();
        buf = p.begin_step();
        s.push_gemm(gemm_kernel(buf, region));
        p.end_step();
      }
      push_requantize(s, acc_base, t.tm, t.tn, shift);
      p.end_output();
      p.begin_store();
      s.store_2d(acc_base,
                 c_dev.address() + (uint64_t(mo) * t.tm * nb + no * t.tn) * cfg.out_elem_bytes(),
                 t.tm, t.tn, nb);
      p.end_store();
    }
  p.finish();
  s.synchronize();
  return unpack_activations(c_dev.read_elems<int8_t>(c_dev.size()), shape.m, shape.n, 1, 1, cfg);
}

namespace {

// conv2d tiles: th output rows, to output-channel blocks, tc input-channel blocks.
struct ConvTiles {
  int th = 0, to = 0, tc = 0;
};

ConvTiles choose_conv_tiles(const Conv2dShape& s, const CommandStream& stream) {
  const hw::Config& cfg = stream.config();
  const int64_t max_iter = std::min(stream.field_max(hw::Opcode::kGemm, hw::Field::kIterOut),
                                    stream.field_max(hw::Opcode::kGemm, hw::Field::kIterIn));
  const int cb = s.c / cfg.block_in(), ob = s.o / cfg.block_out();
  const int kk = s.kh * s.kw, iw = s.w + 2 * s.pad, oh = s.out_h(), ow = s.out_w();
  ConvTiles best;
  double best_cost = std::numeric_limits<double>::max();
  for (int th : divisors(oh))
    for (int to : divisors(ob))
      for (int tc : divisors(cb)) {
        uint64_t inp = uint64_t(tc) * (th + s.kh - 1) * iw;
        uint64_t uops = uint64_t(ow) * tc * kk;
        if (2 * inp > cfg.inp_depth() || 2u * to * tc * kk > cfg.wgt_depth() ||
            2u * to * th * ow > cfg.acc_depth() || uops > cfg.uop_depth() ||
            to * th > max_iter || th > max_iter || ow > max_iter)
          continue;
        double steps = double(s.n / cfg.batch()) * (oh / th) * (ob / to) * (cb / tc);
        double outputs = double(s.n / cfg.batch()) * (oh / th) * (ob / to);
        double bytes = steps * (double(inp) * cfg.inp_elem_bytes() +
                                double(to) * tc * kk * cfg.wgt_elem_bytes());
        if (4 * uops + 8 > cfg.uop_depth()) bytes += steps * uops * 4;
        double cost = bytes + 256 * ((2 + tc) * steps + 7 * outputs);
        if (cost < best_cost) {
          best_cost = cost;
          best = {th, to, tc};
        }
      }
  if (best.th == 0)
    throw hw::Error(fmt::format("conv2d: no tiling of {}x{}x{}x{} fits the buffers of "
                                "configuration '{}'",
                                s.n, s.c, s.h, s.w, cfg.name()));
  return best;
}

}  // namespace

std::vector<int8_t> conv2d_on_device(CommandStream& s, std::span<const int8_t> in,
                                     std::span<const int8_t> weight, const Conv2dShape& shape,
                                     int shift) {
  const hw::Config& cfg = s.config();
  driver::Device& dev = s.device();
  check_multiple("N", shape.n, cfg.batch(), "BATCH");
  check_multiple("C", shape.c, cfg.block_in(), "BLOCK_IN");
  check_multiple("O", shape.o, cfg.block_out(), "BLOCK_OUT");
  const int64_t max_pad = s.field_max(hw::Opcode::kLoad, hw::Field::kYPad0);
  // pad < kernel: every window of kernel rows touches the image, so no load is empty.
  if (shape.pad < 0 || shape.pad > max_pad || shape.pad >= shape.kh || shape.pad >= shape.kw ||
      shape.out_h() <= 0 || shape.out_w() <= 0)
    throw hw::Error(fmt::format("conv2d: padding {} must be 0..{} (a LOAD pad field), smaller "
                                "than the {}x{} kernel, and leave a non-empty output",
                                shape.pad, max_pad, shape.kh, shape.kw));
  const ConvTiles t = choose_conv_tiles(shape, s);
  const int cb = shape.c / cfg.block_in(), ob = shape.o / cfg.block_out();
  const int kk = shape.kh * shape.kw, oh = shape.out_h(), ow = shape.out_w();
  const int ir = t.th + shape.kh - 1, iw = shape.w + 2 * shape.pad;

  DeviceBuffer in_dev =
      upload<int8_t>(dev, pack_activations(in, shape.n, shape.c, shape.h, shape.w, cfg));
  DeviceBuffer wgt_dev =
      upload<int8_t>(dev, pack_weights(weight, shape.o, shape.c, shape.kh, shape.kw, cfg));
  DeviceBuffer out_dev(dev, static_cast<uint64_t>(shape.n) * shape.o * oh * ow);

  const uint32_t inp_half = t.tc * ir * iw, wgt_half = t.to * t.tc * kk,
                 acc_half = t.to * t.th * ow;
  // acc[o][y][x] += sum_{c,ky,kx} inp[c][y+ky][x+kx] . wgt[o][c][ky][kx] over the tile:
  // loops over o and y, micro-ops over x, c, ky, kx.
  std::map<std::pair<int, int>, UopKernel> conv_kernels;
  auto conv_kernel = [&](int buf, int region) -> const UopKernel& {
    auto [it, fresh] = conv_kernels.try_emplace({buf, region});
    if (fresh) {
      auto b = UopKernelBuilder::gemm("conv2d.tile");
      b.loop_begin(t.to, t.th * ow, 0, t.tc * kk).loop_begin(t.th, ow, iw, 0);
      for (int x = 0; x < ow; ++x)
        for (int c = 0; c < t.tc; ++c)
          for (int ky = 0; ky < shape.kh; ++ky)
            for (int kx = 0; kx < shape.kw; ++kx)
              b.push(region * acc_half + x, buf * inp_half + c * ir * iw + ky * iw + x + kx,
                     buf * wgt_half + c * kk + ky * shape.kw + kx);
      it->second = b.loop_end().loop_end().finish();
    }
    return it->second;
  };

  Pipeline p(s);
  for (int n = 0; n < shape.n / cfg.batch(); ++n)
    for (int r0 = 0; r0 < oh; r0 += t.th)
      for (int o0 = 0; o0 < ob; o0 += t.to) {
        int region = p.begin_output();
        uint32_t acc_base = region * acc_half;
        s.push_gemm(reset_kernel(acc_base, t.to * t.th, ow));
        for (int c0 = 0; c0 < cb; c0 += t.tc) {
          int buf = p.begin_load();
          // Input rows [r0 - pad, r0 - pad + ir), zero rows where they leave the image.
          int top = std::max(0, shape.pad - r0);
          int bottom = std::max(0, r0 - shape.pad + ir - shape.h);
          for (int c = 0; c < t.tc; ++c) {
            uint64_t elem = ((uint64_t(n) * cb + c0 + c) * shape.h + (r0 - shape.pad + top)) *
                            shape.w;
            s.load_2d(hw::MemType::kInp, buf * inp_half + c * ir * iw,
                      in_dev.address() + elem * cfg.inp_elem_bytes(), ir - top - bottom,
                      shape.w, shape.w,
                      Pad{uint32_t(top), uint32_t(bottom), uint32_t(shape.pad),
                          uint32_t(shape.pad)});
          }
          s.load_2d(hw::MemType::kWgt, buf * wgt_half,
                    wgt_dev.address() + (uint64_t(o0) * cb + c0) * kk * cfg.wgt_elem_bytes(),
                    t.to, t.tc * kk, cb * kk);
          p.end_load();
          buf = p.begin_step();
          s.push_gemm(conv_kernel(buf, region));
          p.end_step();
        }
        push_requantize(s, acc_base, t.to * t.th, ow, shift);
        p.end_output();
        p.begin_store();
        s.store_2d(acc_base,
                   out_dev.address() +
                       ((uint64_t(n) * ob + o0) * oh + r0) * ow * cfg.out_elem_bytes(),
                   t.to, t.th * ow, oh * ow);
        p.end_store();
      }
  p.finish();
  s.synchronize();
  return unpack_activations(out_dev.read_elems<int8_t>(out_dev.size()), shape.n, shape.o, oh, ow,
                            cfg);
}

}  // namespace kiln::examples
