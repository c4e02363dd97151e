// ResNet-18's convolutions (the C1..C12 layers of the TVM paper, batch 1, float32):
// Kiln's CPU backend against oneDNN, in one process, with the ratio per layer.
//
//   conv2d_bench [--json] [--threads N] [--min-time 0.2] [--layers 1,2,...]
//
// Both sides get their weights in their own prepared layout (Kiln: OIHW packed to
// [O/ob, C, KH, KW, ob]; oneDNN: the blocked format it asks for), done once outside
// the timing, as a graph compiler would do for constant weights. Kiln reads NCHW data
// and writes NCHW output inside the timed call; oneDNN uses its preferred layouts.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend-cpu/module.h"
#include "backend-cpu/runtime/parallel.h"
#include "bench/support/parse_list.h"
#include "bench/support/time_best.h"
#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/schedule/lower.h"
#include "compiler/schedule/schedule.h"
#include "compiler/te/ops.h"
#include "support/debug.h"
#include "support/integer.h"

namespace {

using kiln::bench_support::parse_list;
using kiln::bench_support::time_best;

using kiln::cpu::NDArray;
using kiln::ir::DataType;
using kiln::ir::Var;
namespace te = kiln::te;

struct Layer {
  const char* name;
  int hw, ic, oc, k, stride;
  int pad() const { return k / 2; }
  int out() const { return (hw + 2 * pad() - k) / stride + 1; }
  double flops() const { return 2.0 * oc * out() * out() * ic * k * k; }
};

// The TVM paper's ResNet-18 conv2d workloads (Chen et al., OSDI'18, table 2).
const Layer kLayers[] = {
    {"C1", 224, 3, 64, 7, 2},    {"C2", 56, 64, 64, 3, 1},    {"C3", 56, 64, 64, 1, 1},    {"C4", 56, 64, 128, 3, 2},
    {"C5", 56, 64, 128, 1, 2},   {"C6", 28, 128, 128, 3, 1},  {"C7", 28, 128, 256, 3, 2},  {"C8", 28, 128, 256, 1, 2},
    {"C9", 14, 256, 256, 3, 1},  {"C10", 14, 256, 512, 3, 2}, {"C11", 14, 256, 512, 1, 2}, {"C12", 7, 512, 512, 3, 1},
};

// The largest divisor of n that is <= want.
int fit(int n, int want) { return kiln::largest_divisor_at_most(n, want); }

// Direct convolution, output channels in blocks of `ob` (vector lanes) and output
// columns in blocks of `wb`: a wb x ob tile of accumulators stays in registers while
// (c, ky, kx) run. Computed in the blocked layout one output row at a time, and that
// row written out as NCHW.
kiln::cpu::Module build_conv(const Layer& l, int ob, const kiln::cpu::Target& target) {
  int oh = l.out(), ow = l.out(), p = l.pad(), s = l.stride, k = l.k;
  int wb = fit(ow, 8);
  auto data = te::placeholder({1, l.ic, l.hw, l.hw}, DataType::Float(32), "data");
  auto kp = te::placeholder({l.oc / ob, l.ic, k, k, ob}, DataType::Float(32), "kernel_packed");
  te::Tensor padded = p > 0 ? te::pad(data, {0, 0, p, p}, {0, 0, p, p}, kiln::ir::Expr(), "padded") : data;
  auto rc = te::reduce_axis(l.ic, "rc");
  auto ry = te::reduce_axis(k, "ry");
  auto rx = te::reduce_axis(k, "rx");
  auto blocked = te::compute(
      {l.oc / ob, oh, ow, ob},
      [&](const std::vector<Var>& v) {
        Var oo = v[0], y = v[1], x = v[2], oi = v[3];
        return te::sum(padded(0, rc->var, y * s + ry->var, x * s + rx->var) * kp(oo, rc->var, ry->var, rx->var, oi),
                       {rc, ry, rx});
      },
      "conv_blocked");
  auto out = te::compute(
      {1, l.oc, oh, ow}, [&](Var, Var o, Var y, Var x) { return blocked(o / ob, y, x, o % ob); }, "conv");
  auto sch = kiln::schedule::create_schedule({out});
  auto local = sch.cache_write(blocked, "local");
  // NCHW output by (channel block, row), in parallel; each row's blocked results are
  // computed just before they are written out (a row of ob channels stays in cache).
  auto [oo, oi] = sch[out].split(out->axis[1], ob);
  sch[out].reorder({out->axis[0], oo, out->axis[2], oi, out->axis[3]});
  auto fused = sch[out].fuse(oo, out->axis[2]);
  sch[out].parallel(fused);
  sch[blocked].compute_at(sch[out], fused);
  // blocked: x in tiles of wb; a wb x ob tile accumulates in registers.
  auto [xo, xi] = sch[blocked].split(blocked->axis[2], wb);
  sch[blocked].reorder({blocked->axis[0], blocked->axis[1], xo, xi, blocked->axis[3]});
  sch[blocked].vectorize(blocked->axis[3]);
  sch[local].compute_at(sch[blocked], xo);
  const auto& la = local->axis;  // oo, y, x, oi
  const auto& lr = local->reduce_axis;  // rc, ry, rx
  sch[local].reorder({lr[0], lr[1], lr[2], la[0], la[1], la[2], la[3]});
  sch[local].unroll(la[2]);
  sch[local].vectorize(la[3]);
  if (p > 0) sch[padded].parallel(padded->axis[1]);
  auto f = kiln::schedule::lower(sch, {data, kp, out}, "conv");
  if (kiln::debug_enabled("conv")) std::cerr << f.body;
  return kiln::cpu::build({f}, target);
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  int threads = 1;
  double min_time = 0.2;
  std::vector<int> which;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json") json = true;
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--min-time" && i + 1 < argc) min_time = std::atof(argv[++i]);
    else if (a == "--layers" && i + 1 < argc) which = parse_list(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--json] [--threads N] [--min-time s] [--layers 1,2,...]\n", argv[0]);
      return 2;
    }
  }
  kiln::cpu::Target target = kiln::cpu::Target::host();
  int ob = std::max(16, 2 * target.vector_bits() / 32);
  kiln_set_num_threads(threads);
  omp_set_num_threads(threads);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  if (!json) {
    std::printf("target: %s, threads %d, peer oneDNN %d.%d\n", target.to_string().c_str(), threads, dnnl_version()->major,
                dnnl_version()->minor);
    std::printf("%-5s %-26s %11s %11s %7s %9s\n", "layer", "shape (HW,IC,OC,K,S)", "kiln GF/s", "peer GF/s", "ratio", "max err");
  }
  std::string rows;
  double log_sum = 0;
  int count = 0;
  for (int li = 0; li < 12; ++li) {
    if (!which.empty() && std::find(which.begin(), which.end(), li + 1) == which.end()) continue;
    const Layer& l = kLayers[li];
    int o = l.out(), p = l.pad();
    // Inputs in NCHW / OIHW.
    std::vector<float> x(static_cast<size_t>(l.ic) * l.hw * l.hw), w(static_cast<size_t>(l.oc) * l.ic * l.k * l.k);
    for (float& v : x) v = dist(rng);
    for (float& v : w) v = dist(rng);

    // Kiln.
    kiln::cpu::Module mod = build_conv(l, ob, target);
    NDArray xa = NDArray::empty({1, l.ic, l.hw, l.hw}, DataType::Float(32));
    xa.copy_from_bytes(x.data(), static_cast<int64_t>(x.size() * 4));
    NDArray wp = NDArray::empty({l.oc / ob, l.ic, l.k, l.k, ob}, DataType::Float(32));
    for (int oc = 0; oc < l.oc; ++oc)
      for (int c = 0; c < l.ic; ++c)
        for (int ky = 0; ky < l.k; ++ky)
          for (int kx = 0; kx < l.k; ++kx)
            wp.data_as<float>()[((((oc / ob) * l.ic + c) * l.k + ky) * l.k + kx) * ob + oc % ob] =
                w[((static_cast<size_t>(oc) * l.ic + c) * l.k + ky) * l.k + kx];
    NDArray ya = NDArray::zeros({1, l.oc, o, o}, DataType::Float(32));
    void* args[3] = {xa.data(), wp.data(), ya.data()};
    double tk = time_best([&] { mod.call_packed("conv", args); }, min_time);

    // oneDNN with the layouts it prefers; reorders outside the timing.
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::memory::dims src_dims{1, l.ic, l.hw, l.hw}, w_dims{l.oc, l.ic, l.k, l.k}, dst_dims{1, l.oc, o, o};
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      dnnl::memory::desc(src_dims, dt::f32, tag::any),
                                      dnnl::memory::desc(w_dims, dt::f32, tag::any),
                                      dnnl::memory::desc(dst_dims, dt::f32, tag::any), {l.stride, l.stride}, {p, p}, {p, p});
    dnnl::convolution_forward::primitive_desc pd(d, eng);
    dnnl::memory src_user({src_dims, dt::f32, tag::nchw}, eng, x.data());
    dnnl::memory w_user({w_dims, dt::f32, tag::oihw}, eng, w.data());
    dnnl::memory src(pd.src_desc(), eng), wts(pd.weights_desc(), eng), dst(pd.dst_desc(), eng);
    dnnl::reorder(src_user, src).execute(strm, src_user, src);
    dnnl::reorder(w_user, wts).execute(strm, w_user, wts);
    dnnl::convolution_forward conv(pd);
    double tp = time_best([&] {
      conv.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_DST, dst}});
      strm.wait();
    }, min_time);
    std::vector<float> ref(static_cast<size_t>(l.oc) * o * o);
    dnnl::memory dst_user({dst_dims, dt::f32, tag::nchw}, eng, ref.data());
    dnnl::reorder(dst, dst_user).execute(strm, dst, dst_user);
    strm.wait();
    double err = 0;
    for (size_t i = 0; i < ref.size(); ++i) err = std::max(err, static_cast<double>(std::fabs(ref[i] - ya.data_as<float>()[i])));

    double gk = l.flops() / tk * 1e-9, gp = l.flops() / tp * 1e-9;
    log_sum += std::log(gk / gp);
    ++count;
    char shape[64];
    std::snprintf(shape, sizeof shape, "%d,%d,%d,%d,%d", l.hw, l.ic, l.oc, l.k, l.stride);
    if (!json) {
      std::printf("%-5s %-26s %11.1f %11.1f %7.2f %9.2e\n", l.name, shape, gk, gp, gk / gp, err);
      std::fflush(stdout);
    }
    char row[320];
    std::snprintf(row, sizeof row,
                  "%s\n  {\"layer\": \"%s\", \"hw\": %d, \"ic\": %d, \"oc\": %d, \"k\": %d, \"stride\": %d, \"threads\": %d, "
                  "\"kiln_gflops\": %.2f, \"peer_gflops\": %.2f, \"ratio\": %.3f, \"max_abs_err\": %.3g}",
                  rows.empty() ? "" : ",", l.name, l.hw, l.ic, l.oc, l.k, l.stride, threads, gk, gp, gk / gp, err);
    rows += row;
  }
  double geo = count ? std::exp(log_sum / count) : 0;
  if (json) {
    std::printf("{\"target\": \"%s\", \"peer\": \"oneDNN\", \"geomean_ratio\": %.3f, \"rows\": [%s\n]}\n", target.to_string().c_str(),
                geo, rows.c_str());
  } else {
    std::printf("geometric mean ratio: %.2f\n", geo);
  }
  return 0;
}
