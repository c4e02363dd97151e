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

}  // namespace kiln::vta
