#include "backend-vta/ops.h"

#include <fmt/format.h>

#include <algorithm>

#include "backend-vta/codegen.h"
#include "compiler/schedule/lower.h"
#include "hw/driver/runtime/device_buffer.h"
#include "hw/spec/error.h"

namespace kiln::vta {

Program build_conv2d(const Env& env, const Conv2DWorkload& wl, const Requant& rq, const Conv2DKnobs& knobs) {
  Conv2DOp op = conv2d_packed(env, wl, rq);
  schedule::Schedule s = schedule_conv2d(env, op, knobs);
  return codegen(env, schedule::lower(s, op.args(), wl.name));
}

driver::DeviceOptions default_device_options() {
  driver::DeviceOptions o;
  o.dram_bytes = uint64_t{256} << 20;
  return o;
}

Conv2DResult run_conv2d(driver::Device& dev, const Program& p, const std::vector<int8_t>& data,
                        const std::vector<int8_t>& kernel, const std::vector<int32_t>& bias,
                        runtime::StreamOptions opts) {
  const std::vector<ProgramArg>& args = p.args();
  bool has_bias = args.size() == 4;
  if (args.size() != 3 && args.size() != 4) throw hw::Error("program '" + p.name() + "' is not a conv2d program");
  auto check = [&](size_t i, size_t bytes) {
    if (args[i].bytes() != bytes)
      throw hw::Error(fmt::format("'{}' needs {} bytes, {} given", args[i].name, args[i].bytes(), bytes));
  };
  check(0, data.size());
  check(1, kernel.size());
  if (has_bias) check(2, bias.size() * sizeof(int32_t));
  std::vector<runtime::DeviceBuffer> bufs;
  for (const ProgramArg& a : args) bufs.emplace_back(dev, a.bytes());
  bufs[0].write_elems<int8_t>(data);
  bufs[1].write_elems<int8_t>(kernel);
  if (has_bias) bufs[2].write_elems<int32_t>(bias);
  std::vector<driver::DevAddr> addrs;
  for (const auto& b : bufs) addrs.push_back(b.address());
  Conv2DResult r;
  r.counters = p.run(dev, addrs, opts);
  r.out = bufs.back().read_elems<int8_t>(args.back().bytes());
  return r;
}

Program build_add(const Env& env, const AddWorkload& wl, const Requant& rq, const AddKnobs& knobs) {
  AddOp op = add_packed(env, wl, rq);
  schedule::Schedule s = schedule_add(env, op, knobs);
  return codegen(env, schedule::lower(s, op.args(), wl.name));
}

std::vector<int8_t> run_add(driver::Device& dev, const Program& p, const std::vector<int8_t>& a,
                            const std::vector<int8_t>& b, runtime::StreamOptions opts) {
  const std::vector<ProgramArg>& args = p.args();
  if (args.size() != 4) throw hw::Error("program '" + p.name() + "' is not an add program");
  if (args[0].bytes() != a.size() || args[1].bytes() != b.size())
    throw hw::Error(fmt::format("'{}' adds two tensors of {} bytes; {} and {} given", p.name(), args[0].bytes(), a.size(),
                                b.size()));
  std::vector<runtime::DeviceBuffer> bufs;
  for (const ProgramArg& arg : args) bufs.emplace_back(dev, arg.bytes());
  bufs[0].write_elems<int8_t>(a);
  bufs[1].write_elems<int8_t>(b);
  bufs[2].write_elems<int8_t>(identity_block(Env(p.config())));
  std::vector<driver::DevAddr> addrs;
  for (const auto& buf : bufs) addrs.push_back(buf.address());
  p.run(dev, addrs, opts);
  return bufs[3].read_elems<int8_t>(args[3].bytes());
}

std::vector<int8_t> reference_add(const Requant& rq, const std::vector<int8_t>& a, const std::vector<int8_t>& b) {
  std::vector<int8_t> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    int32_t v = (int32_t{a[i]} + int32_t{b[i]}) >> rq.shift;
    v = std::min(v, 127);
    v = std::max(v, rq.relu ? 0 : -128);
    out[i] = static_cast<int8_t>(v);
  }
  return out;
}

Program build_max_pool2d(const Env& env, const PoolWorkload& wl, const PoolKnobs& knobs) {
  PoolOp op = max_pool2d_packed(env, wl);
  schedule::Schedule s = schedule_max_pool2d(env, op, knobs);
  return codegen(env, schedule::lower(s, op.args(), wl.name));
}

std::vector<int8_t> run_max_pool2d(driver::Device& dev, const Program& p, const std::vector<int8_t>& data,
                                   runtime::StreamOptions opts) {
  const std::vector<ProgramArg>& args = p.args();
  if (args.size() != 3) throw hw::Error("program '" + p.name() + "' is not a max_pool2d program");
  if (args[0].bytes() != data.size())
    throw hw::Error(fmt::format("'{}' pools {} bytes; {} given", p.name(), args[0].bytes(), data.size()));
  std::vector<runtime::DeviceBuffer> bufs;
  for (const ProgramArg& arg : args) bufs.emplace_back(dev, arg.bytes());
  bufs[0].write_elems<int8_t>(data);
  bufs[1].write_elems<int8_t>(identity_block(Env(p.config())));
  std::vector<driver::DevAddr> addrs;
  for (const auto& buf : bufs) addrs.push_back(buf.address());
  p.run(dev, addrs, opts);
  return bufs[2].read_elems<int8_t>(args[2].bytes());
}

std::vector<int8_t> reference_max_pool2d(const Env& env, const PoolWorkload& wl, const std::vector<int8_t>& data) {
  const int64_t b = env.batch(), c = env.block_out(), nb = wl.batch / b, cb = wl.channels / c;
  const int64_t h = wl.height, w = wl.width, oh = wl.out_height(), ow = wl.out_width();
  if (static_cast<int64_t>(data.size()) != nb * cb * h * w * b * c)
    throw hw::Error(fmt::format("'{}' pools {} elements; {} given", wl.name, nb * cb * h * w * b * c, data.size()));
  std::vector<int8_t> out(static_cast<size_t>(nb * cb * oh * ow * b * c));
  for (int64_t n = 0; n < nb; ++n)
    for (int64_t ch = 0; ch < cb; ++ch)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          for (int64_t l = 0; l < b * c; ++l) {
            int v = INT8_MIN;
            for (int64_t ky = 0; ky < wl.kernel_h; ++ky)
              for (int64_t kx = 0; kx < wl.kernel_w; ++kx) {
                int64_t iy = y * wl.stride_h + ky - wl.pad_h, ix = x * wl.stride_w + kx - wl.pad_w;
                bool in = iy >= 0 && iy < h && ix >= 0 && ix < w;
                v = std::max(v, in ? int{data[static_cast<size_t>((((n * cb + ch) * h + iy) * w + ix) * b * c + l)]} : 0);
              }
            out[static_cast<size_t>((((n * cb + ch) * oh + y) * ow + x) * b * c + l)] = static_cast<int8_t>(v);
          }
  return out;
}

}  // namespace kiln::vta
