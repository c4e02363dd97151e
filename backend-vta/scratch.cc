#include <iostream>
#include <random>
#include "backend-vta/ops.h"
#include "backend-vta/reference.h"
#include "compiler/schedule/lower.h"
#include "compiler/ir/printer.h"
#include "hw/driver/device.h"
using namespace kiln;
int main(int argc, char** argv) {
  std::string dev_kind = argc > 1 ? argv[1] : "fsim";
  hw::Config cfg = argc > 2 ? hw::Config::from_file(argv[2]) : hw::Config::vta_default();
  vta::Env env(cfg);
  vta::Conv2DWorkload wl; wl.height = argc > 3 ? atoi(argv[3]) : 8; wl.width = wl.height; wl.in_channels = 32; wl.out_channels = 32; wl.kernel_h = 3; wl.kernel_w = 3; wl.pad_h = 1; wl.pad_w = 1;
  vta::Requant rq;
  vta::Conv2DKnobs k = vta::default_conv2d_knobs(env, wl, rq, argc > 4 ? atoi(argv[4]) : 1);
  std::cout << k.to_string() << "\n";
  auto p = vta::build_conv2d(env, wl, rq, k);
  auto st = p.stats();
  std::cout << "ops " << p.ops().size() << " kernels " << p.kernels().size() << " loads " << st.loads << " gemm " << st.gemm_insns << " uops " << st.gemm_uops << " deps " << st.dep_ops << "\n";
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> d8(-128, 127), db(-2000, 2000);
  std::vector<int8_t> data(size_t(wl.batch) * wl.in_channels * wl.height * wl.width), ker(size_t(wl.out_channels) * wl.in_channels * 9);
  std::vector<int32_t> bias(wl.out_channels);
  for (auto& x : data) x = d8(rng);
  for (auto& x : ker) x = d8(rng);
  for (auto& x : bias) x = db(rng);
  auto dev = driver::make_device(dev_kind, cfg);
  auto r = vta::run_conv2d(*dev, p, vta::pack_data(env, wl, data), vta::pack_kernel(env, wl, ker), vta::pack_bias(env, wl, bias));
  auto got = vta::unpack_out(env, wl, r.out);
  auto want = vta::reference_conv2d(wl, rq, data, ker, bias);
  size_t bad = 0; for (size_t i = 0; i < got.size(); ++i) bad += got[i] != want[i];
  std::cout << "mismatches " << bad << " of " << got.size() << "\n";
  for (auto& [c, v] : r.counters) std::cout << int(c) << "=" << v << " ";
  std::cout << "\n";
}
