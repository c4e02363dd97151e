#include "backend-vta/strategy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "backend-vta/intrin.h"
#include "compiler/ir/op.h"
#include "compiler/support/error.h"
#include "compiler/support/parse.h"
#include "compiler/te/ops.h"
#include "support/integer.h"

namespace kiln::vta {

int64_t Conv2DWorkload::macs() const {
  return int64_t{batch} * out_channels * out_height() * out_width() * in_channels * kernel_h * kernel_w;
}

std::string Conv2DWorkload::to_string() const {
  return fmt::format("{}: batch {} {}x{}x{} -> {} kernel {}x{} pad {},{} stride {},{}", name, batch, in_channels, height,
                     width, out_channels, kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w);
}

std::vector<Conv2DWorkload> resnet18_conv_workloads(int batch) {
  struct Row {
    const char* name;
    int hw, ic, oc, k, s;
  };
  const Row rows[] = {{"C2", 56, 64, 64, 3, 1},    {"C3", 56, 64, 64, 1, 1},    {"C4", 56, 64, 128, 3, 2},
                      {"C5", 56, 64, 128, 1, 2},   {"C6", 28, 128, 128, 3, 1},  {"C7", 28, 128, 256, 3, 2},
                      {"C8", 28, 128, 256, 1, 2},  {"C9", 14, 256, 256, 3, 1},  {"C10", 14, 256, 512, 3, 2},
                      {"C11", 14, 256, 512, 1, 2}, {"C12", 7, 512, 512, 3, 1}};
  std::vector<Conv2DWorkload> out;
  for (const Row& r : rows) {
    Conv2DWorkload wl;
    wl.name = r.name;
    wl.batch = batch;
    wl.height = wl.width = r.hw;
    wl.in_channels = r.ic;
    wl.out_channels = r.oc;
    wl.kernel_h = wl.kernel_w = r.k;
    wl.pad_h = wl.pad_w = r.k / 2;
    wl.stride_h = wl.stride_w = r.s;
    out.push_back(wl);
  }
  return out;
}

Conv2DWorkload dense_workload(int batch, int in_features, int out_features, std::string name) {
  Conv2DWorkload wl;
  wl.name = std::move(name);
  wl.batch = batch;
  wl.in_channels = in_features;
  wl.out_channels = out_features;
  return wl;
}

std::string Conv2DKnobs::to_string() const {
  return fmt::format("tile_b={} tile_h={} tile_w={} tile_oc={} tile_ic={} h_threads={} oc_threads={}{}", tile_b, tile_h,
                     tile_w, tile_oc, tile_ic, h_threads, oc_threads, double_buffer ? " double_buffer" : "");
}

std::vector<te::Tensor> Conv2DOp::args() const {
  std::vector<te::Tensor> a{data, kernel};
  if (bias.defined()) a.push_back(bias);
  a.push_back(out);
  return a;
}

namespace {

void check_workload(const Env& env, const Conv2DWorkload& wl) {
  auto fail = [&](const std::string& why) { throw CompileError("vta conv2d '" + wl.name + "': " + why); };
  if (wl.batch <= 0 || wl.height <= 0 || wl.width <= 0 || wl.in_channels <= 0 || wl.out_channels <= 0 ||
      wl.kernel_h <= 0 || wl.kernel_w <= 0 || wl.stride_h <= 0 || wl.stride_w <= 0 || wl.pad_h < 0 || wl.pad_w < 0)
    fail("every size must be positive (padding non-negative)");
  if (wl.batch % env.batch() != 0)
    fail(fmt::format("batch {} is not a multiple of the configuration's BATCH {}", wl.batch, env.batch()));
  if (wl.in_channels % env.block_in() != 0)
    fail(fmt::format("{} input channels are not a multiple of BLOCK_IN {}", wl.in_channels, env.block_in()));
  if (wl.out_channels % env.block_out() != 0)
    fail(fmt::format("{} output channels are not a multiple of BLOCK_OUT {}", wl.out_channels, env.block_out()));
  if (wl.out_height() <= 0 || wl.out_width() <= 0) fail("the output would be empty");
}

// A 1x1 convolution with a vertical stride and no padding loads only the rows it uses.
bool skips_rows(const Conv2DWorkload& wl) {
  return wl.kernel_h == 1 && wl.stride_h > 1 && wl.pad_h == 0 && wl.pad_w == 0;
}

// The data in INP for `reader`: its padding stage where it has one, else a copy.
te::Tensor data_in_inp(schedule::Schedule& s, const te::Tensor& padded, const te::Tensor& data, const te::Tensor& reader) {
  if (!padded.defined()) return s.cache_read(data, kInpScope, {reader});
  s[padded].set_scope(kInpScope);
  return padded;
}

struct Dims {
  int nb, cb, ob, oh, ow;
};
Dims dims(const Env& env, const Conv2DWorkload& wl) {
  return {wl.batch / env.batch(), wl.in_channels / env.block_in(), wl.out_channels / env.block_out(), wl.out_height(),
          wl.out_width()};
}

// Micro-ops of the GEMM kernel once its two largest loops are folded into the
// instruction's loops (what the code generator does).
int64_t gemm_kernel_uops(const Conv2DWorkload& wl, const Conv2DKnobs& k) {
  std::vector<int64_t> ext{k.tile_ic, k.tile_w, wl.kernel_w, wl.kernel_h, k.tile_oc, k.tile_h, k.tile_b};
  std::sort(ext.rbegin(), ext.rend());
  int64_t uops = 1;
  for (size_t i = 2; i < ext.size(); ++i) uops *= ext[i];
  return uops;
}

int num_alu_stages(const Requant& rq) { return (rq.bias ? 1 : 0) + (rq.shift != 0 ? 1 : 0) + (rq.relu ? 1 : 0) + (rq.relu ? 1 : 2); }

}  // namespace

Conv2DOp conv2d_packed(const Env& env, const Conv2DWorkload& wl, const Requant& rq) {
  check_workload(env, wl);
  // The ALU's shift amount is the low LOG_ACC_WIDTH bits of the operand, signed.
  if (rq.shift < 0 || rq.shift >= env.config().acc_width() / 2)
    throw CompileError(fmt::format("vta conv2d '{}': shift {} is outside the ALU's [0, {})", wl.name, rq.shift,
                                   env.config().acc_width() / 2));
  Dims d = dims(env, wl);
  int b = env.batch(), bi = env.block_in(), bo = env.block_out();
  Conv2DOp op;
  op.workload = wl;
  op.requant = rq;
  op.data = te::placeholder({d.nb, d.cb, wl.height, wl.width, b, bi}, env.inp_dtype(), wl.name + ".data");
  op.kernel = te::placeholder({d.ob, d.cb, wl.kernel_h, wl.kernel_w, bo, bi}, env.wgt_dtype(), wl.name + ".kernel");
  te::Tensor in = op.data;
  bool rows = skips_rows(wl);
  if (rows) {
    // A strided 1x1 convolution reads every stride_h-th row only: the INP stage takes
    // just those rows (a load whose row stride skips the others).
    op.padded = te::compute(
        {d.nb, d.cb, d.oh, wl.width, b, bi},
        [&](const std::vector<ir::Var>& i) { return op.data({i[0], i[1], i[2] * wl.stride_h, i[3], i[4], i[5]}); },
        wl.name + ".rows", "injective");
    in = op.padded;
  } else if (wl.pad_h != 0 || wl.pad_w != 0) {
    op.padded = te::pad(op.data, {0, 0, wl.pad_h, wl.pad_w, 0, 0}, {0, 0, wl.pad_h, wl.pad_w, 0, 0}, ir::Expr(),
                        wl.name + ".pad");
    in = op.padded;
  }
  ir::IterVar ric = te::reduce_axis(d.cb, "ic");
  ir::IterVar rkh = te::reduce_axis(wl.kernel_h, "kh");
  ir::IterVar rkw = te::reduce_axis(wl.kernel_w, "kw");
  ir::IterVar rii = te::reduce_axis(bi, "ic_tns");
  ir::DataType acc = env.acc_dtype();
  std::vector<ir::Expr> out_shape{d.nb, d.ob, d.oh, d.ow, b, bo};
  op.conv = te::compute(
      out_shape,
      [&](const std::vector<ir::Var>& i) {
        ir::Expr y = rows ? i[2] + rkh->var : i[2] * wl.stride_h + rkh->var;
        ir::Expr x = i[3] * wl.stride_w + rkw->var;
        return te::sum(ir::cast(acc, in({i[0], ric->var, y, x, i[4], rii->var})) *
                           ir::cast(acc, op.kernel({i[1], ric->var, rkh->var, rkw->var, i[5], rii->var})),
                       {ric, rkh, rkw, rii});
      },
      wl.name + ".conv", "conv2d", {"n", "oc", "y", "x", "b", "o"});
  te::Tensor cur = op.conv;
  auto alu_stage = [&](const std::string& what, const std::function<ir::Expr(const std::vector<ir::Var>&)>& f) {
    cur = te::compute(out_shape, f, wl.name + "." + what, "elemwise", {"n", "oc", "y", "x", "b", "o"});
    op.alu.push_back(cur);
  };
  if (rq.bias) {
    op.bias = te::placeholder({1, d.ob, 1, 1, b, bo}, acc, wl.name + ".bias");
    te::Tensor prev = cur;
    alu_stage("bias", [&](const std::vector<ir::Var>& i) {
      return prev({i[0], i[1], i[2], i[3], i[4], i[5]}) + op.bias({0, i[1], 0, 0, i[4], i[5]});
    });
  }
  if (rq.shift != 0) {
    te::Tensor prev = cur;
    alu_stage("shr", [&](const std::vector<ir::Var>& i) {
      return ir::shift_right(prev({i[0], i[1], i[2], i[3], i[4], i[5]}), ir::make_int(rq.shift, acc));
    });
  }
  int lo = rq.relu ? 0 : -(1 << (env.config().out_width() - 1));
  int hi = (1 << (env.config().out_width() - 1)) - 1;
  {
    te::Tensor prev = cur;
    alu_stage("clip_hi", [&](const std::vector<ir::Var>& i) {
      return ir::min(prev({i[0], i[1], i[2], i[3], i[4], i[5]}), ir::make_int(hi, acc));
    });
  }
  {
    te::Tensor prev = cur;
    alu_stage(rq.relu ? "relu" : "clip_lo", [&](const std::vector<ir::Var>& i) {
      return ir::max(prev({i[0], i[1], i[2], i[3], i[4], i[5]}), ir::make_int(lo, acc));
    });
  }
  te::Tensor last = cur;
  op.out = te::compute(
      out_shape,
      [&](const std::vector<ir::Var>& i) {
        return ir::cast(env.out_dtype(), last({i[0], i[1], i[2], i[3], i[4], i[5]}));
      },
      wl.name + ".out", "elemwise", {"n", "oc", "y", "x", "b", "o"});
  return op;
}

BufferUse conv2d_buffer_use(const Env& env, const Conv2DWorkload& wl, const Requant& rq, const Conv2DKnobs& k) {
  (void)env;
  int64_t threads = int64_t{k.h_threads} * k.oc_threads;
  int64_t in_rows = skips_rows(wl) ? k.tile_h : int64_t{k.tile_h - 1} * wl.stride_h + wl.kernel_h;
  int64_t in_cols = int64_t{k.tile_w - 1} * wl.stride_w + wl.kernel_w;
  BufferUse u;
  int64_t halves = k.double_buffer ? 2 : 1;
  u.inp = halves * threads * k.tile_b * k.tile_ic * in_rows * in_cols;
  u.wgt = halves * threads * k.tile_oc * k.tile_ic * wl.kernel_h * wl.kernel_w;
  u.acc = threads * (int64_t{k.tile_b} * k.tile_oc * k.tile_h * k.tile_w + (rq.bias ? k.tile_oc : 0));
  return u;
}

namespace {

// Why a tiling is illegal ("" when it is legal).
std::string knob_problem(const Env& env, const Conv2DWorkload& wl, const Requant& rq, const Conv2DKnobs& k) {
  Dims d = dims(env, wl);
  auto divides = [&](const char* knob, int v, int n, const char* what) -> std::string {
    if (v <= 0 || n % v != 0) return fmt::format("{}={} does not divide the {} {}", knob, v, n, what);
    return "";
  };
  for (std::string why : {divides("tile_b", k.tile_b, d.nb, "batch blocks"), divides("tile_h", k.tile_h, d.oh, "output rows"),
                          divides("tile_w", k.tile_w, d.ow, "output columns"),
                          divides("tile_oc", k.tile_oc, d.ob, "output-channel blocks"),
                          divides("tile_ic", k.tile_ic, d.cb, "input-channel blocks")})
    if (!why.empty()) return why;
  if (k.h_threads < 1 || (d.oh / k.tile_h) % k.h_threads != 0)
    return fmt::format("h_threads={} does not divide the {} row tiles", k.h_threads, d.oh / k.tile_h);
  if (k.oc_threads < 1 || (d.ob / k.tile_oc) % k.oc_threads != 0)
    return fmt::format("oc_threads={} does not divide the {} output-channel tiles", k.oc_threads, d.ob / k.tile_oc);
  BufferUse u = conv2d_buffer_use(env, wl, rq, k);
  for (auto [name, need, m] : {std::tuple{"INP", u.inp, hw::MemType::kInp}, std::tuple{"WGT", u.wgt, hw::MemType::kWgt},
                               std::tuple{"ACC", u.acc, hw::MemType::kAcc}})
    if (need > env.depth(m))
      return fmt::format("needs {} {} elements, the {} configuration has {}", need, name, env.config().name(), env.depth(m));
  int64_t uops = gemm_kernel_uops(wl, k);
  if (uops > env.depth(hw::MemType::kUop) / 4)
    return fmt::format("its GEMM kernel has {} micro-ops, more than a quarter of the {}-deep uop buffer", uops,
                       env.depth(hw::MemType::kUop));
  return "";
}

}  // namespace

void check_conv2d_knobs(const Env& env, const Conv2DWorkload& wl, const Requant& rq, const Conv2DKnobs& k) {
  check_workload(env, wl);
  if (wl.pad_h > 15 || wl.pad_w > 15)
    throw CompileError("vta conv2d '" + wl.name + "': padding above 15 does not fit a load's pad fields");
  std::string why = knob_problem(env, wl, rq, k);
  if (!why.empty()) throw CompileError("vta conv2d '" + wl.name + "' schedule (" + k.to_string() + "): " + why);
}

std::vector<Conv2DKnobs> conv2d_knob_space(const Env& env, const Conv2DWorkload& wl, const Requant& rq) {
  check_workload(env, wl);
  if (wl.pad_h > 15 || wl.pad_w > 15)
    throw CompileError("vta conv2d '" + wl.name + "': padding above 15 does not fit a load's pad fields");
  Dims d = dims(env, wl);
  std::vector<Conv2DKnobs> out;
  for (int tb : divisors(d.nb))
    for (int th : divisors(d.oh))
      for (int tw : divisors(d.ow))
        for (int toc : divisors(d.ob))
          for (int tic : divisors(d.cb))
            for (int threads : {1, 2, 3})  // 1, 2 over rows, 2 over output channels
              for (bool db : {false, true}) {
                Conv2DKnobs k{tb, th, tw, toc, tic, threads == 2 ? 2 : 1, threads == 3 ? 2 : 1, db};
                if (knob_problem(env, wl, rq, k).empty()) out.push_back(k);
              }
  return out;
}

std::vector<std::pair<std::string, std::vector<std::string>>> conv2d_knob_choices(const Env& env, const Conv2DWorkload& wl) {
  check_workload(env, wl);
  Dims d = dims(env, wl);
  auto names = [](int n) {
    std::vector<std::string> out;
    for (int i : divisors(n)) out.push_back(std::to_string(i));
    return out;
  };
  return {{"tile_h", names(d.oh)},
          {"tile_w", names(d.ow)},
          {"tile_oc", names(d.ob)},
          {"tile_ic", names(d.cb)},
          {"threads", {"1", "h2", "oc2"}},
          {"double_buffer", {"off", "on"}}};
}

Conv2DKnobs conv2d_knobs_from_words(const std::map<std::string, std::string>& words) {
  auto word = [&](const std::string& key) -> const std::string& {
    auto it = words.find(key);
    if (it == words.end()) throw CompileError("vta conv2d knobs: '" + key + "' is missing");
    return it->second;
  };
  auto count = [&](const std::string& key) {
    const std::string& v = word(key);
    int64_t n = parse_int(v).value_or(0);
    if (n < 1 || n > (1 << 30)) throw CompileError("vta conv2d knobs: " + key + "='" + v + "' is not a positive integer");
    return static_cast<int>(n);
  };
  Conv2DKnobs k;
  k.tile_h = count("tile_h");
  k.tile_w = count("tile_w");
  k.tile_oc = count("tile_oc");
  k.tile_ic = count("tile_ic");
  const std::string& t = word("threads");
  if (t != "1" && t != "h2" && t != "oc2") throw CompileError("vta conv2d knobs: threads='" + t + "' is not 1, h2 or oc2");
  k.h_threads = t == "h2" ? 2 : 1;
  k.oc_threads = t == "oc2" ? 2 : 1;
  const std::string& db = word("double_buffer");
  if (db != "off" && db != "on") throw CompileError("vta conv2d knobs: double_buffer='" + db + "' is not off or on");
  k.double_buffer = db == "on";
  return k;
}

Conv2DEstimate estimate_conv2d(const Env& env, const Conv2DWorkload& wl, const Requant& rq, const Conv2DKnobs& k,
                               double bw) {
  const hw::Config& c = env.config();
  Dims d = dims(env, wl);
  double tiles = double(d.nb / k.tile_b) * (d.oh / k.tile_h) * (d.ow / k.tile_w) * (d.ob / k.tile_oc);
  double steps = d.cb / k.tile_ic;
  int64_t threads = int64_t{k.h_threads} * k.oc_threads;
  BufferUse u = conv2d_buffer_use(env, wl, rq, k);
  // Per thread and reduction step: one INP and one WGT transfer against the GEMM
  // micro-ops that use them.
  const double kDmaOverhead = 20;  // cycles a transfer costs beyond its bytes
  int64_t copies = threads * (k.double_buffer ? 2 : 1);
  double step_bytes = double(u.inp / copies) * c.inp_elem_bytes() + double(u.wgt / copies) * c.wgt_elem_bytes();
  double step_load = step_bytes / bw + 2 * kDmaOverhead;
  double step_uops = double(k.tile_b) * k.tile_oc * k.tile_h * k.tile_w * k.tile_ic * wl.kernel_h * wl.kernel_w;
  // Per tile: the accumulator reset, the ALU stages (a tensor operand halves the
  // rate), the bias transfer and the store.
  double acc_tile = double(k.tile_b) * k.tile_oc * k.tile_h * k.tile_w;
  double epilogue = acc_tile * (1 + num_alu_stages(rq) + (rq.bias ? 1 : 0)) +
                    (rq.bias ? k.tile_oc * c.acc_elem_bytes() / bw + kDmaOverhead : 0);
  double store = acc_tile * c.out_elem_bytes() / bw + kDmaOverhead;
  Conv2DEstimate e;
  e.gemm_uops = wl.macs() / (int64_t{c.batch()} * c.block_in() * c.block_out());
  e.dram_bytes = int64_t(tiles * steps * step_bytes + tiles * acc_tile * c.out_elem_bytes());
  // Reduction steps overlap their loads with the GEMMs of another thread or of the
  // previous step (double buffering); a tile's store overlaps only another thread's work.
  // Overlap is never perfect: a smooth maximum (a 4-norm) charges for loads that come
  // close to the GEMM time they hide behind.
  bool overlap = threads > 1 || k.double_buffer;
  double hidden = std::pow(std::pow(step_uops, 8) + std::pow(step_load, 8), 1.0 / 8);
  double per_tile = (overlap ? steps * hidden : steps * (step_uops + step_load)) + epilogue;
  if (threads == 1) per_tile += store;
  e.cycles = tiles * per_tile + (overlap ? step_load + store : 0);
  return e;
}

Conv2DKnobs default_conv2d_knobs(const Env& env, const Conv2DWorkload& wl, const Requant& rq, bool latency_hiding) {
  Conv2DKnobs best;
  double best_cycles = std::numeric_limits<double>::infinity();
  bool found = false;
  for (const Conv2DKnobs& k : conv2d_knob_space(env, wl, rq)) {
    if (!latency_hiding && (k.h_threads > 1 || k.oc_threads > 1 || k.double_buffer)) continue;
    double cyc = estimate_conv2d(env, wl, rq, k).cycles;
    // Within half a percent, the larger tile wins (fewer instructions, fewer reloads).
    auto tile = [](const Conv2DKnobs& x) { return int64_t{x.tile_b} * x.tile_h * x.tile_w * x.tile_oc * x.tile_ic; };
    if (cyc < best_cycles * 0.995 || (cyc < best_cycles * 1.005 && tile(k) > tile(best))) {
      best_cycles = cyc;
      best = k;
      found = true;
    }
  }
  if (!found) {
    throw CompileError("vta conv2d '" + wl.name + "': no tiling fits the buffers of the " + env.config().name() +
                       " configuration");
  }
  return best;
}

schedule::Schedule schedule_conv2d(const Env& env, const Conv2DOp& op, const Conv2DKnobs& k) {
  check_conv2d_knobs(env, op.workload, op.requant, k);
  schedule::Schedule s = schedule::create_schedule({op.out});
  // Scratchpads: the (padded) data into INP, the kernel into WGT, the accumulation and
  // every ALU stage in ACC; the output stage is the store.
  te::Tensor cdata = data_in_inp(s, op.padded, op.data, op.conv);
  te::Tensor ckernel = s.cache_read(op.kernel, kWgtScope, {op.conv});
  s[op.conv].set_scope(kAccScope);
  for (const te::Tensor& t : op.alu) s[t].set_scope(kAccScope);
  te::Tensor cbias;
  if (op.bias.defined()) cbias = s.cache_read(op.bias, kAccScope, {op.alu.front()});

  schedule::Stage out = s[op.out];
  const auto& ax = op.out->axis;
  auto [n_o, n_i] = out.split(ax[0], k.tile_b);
  auto [oc_o, oc_i] = out.split(ax[1], k.tile_oc);
  auto [y_o, y_i] = out.split(ax[2], k.tile_h);
  auto [x_o, x_i] = out.split(ax[3], k.tile_w);
  std::vector<ir::IterVar> order{n_o, y_o, oc_o, x_o, n_i, oc_i, y_i, x_i, ax[4], ax[5]};
  out.reorder(order);
  std::vector<ir::IterVar> threads;
  if (k.oc_threads > 1) {
    auto [rest, v] = out.split(oc_o, k.oc_threads);
    oc_o = rest;
    threads.push_back(v);
  }
  if (k.h_threads > 1) {
    auto [rest, v] = out.split(y_o, k.h_threads);
    y_o = rest;
    threads.push_back(v);
  }
  if (!threads.empty()) {
    std::vector<ir::IterVar> o2 = threads;
    for (const ir::IterVar& iv : {n_o, y_o, oc_o, x_o}) o2.push_back(iv);
    out.reorder(o2);
    for (const ir::IterVar& v : threads) out.bind(v, "vthread");
  }
  out.pragma(n_i, kDmaCopy);

  schedule::Stage conv = s[op.conv];
  conv.compute_at(out, x_o);
  for (const te::Tensor& t : op.alu) {
    s[t].compute_at(out, x_o);
    s[t].pragma(s[t]->leaf_iter_vars[0], kAlu);
  }
  if (cbias.defined()) {
    s[cbias].compute_at(out, x_o);
    s[cbias].pragma(s[cbias]->leaf_iter_vars[0], kDmaCopy);
  }
  const auto& cax = op.conv->axis;
  const auto& rax = op.conv->reduce_axis;  // ic, kh, kw, ic_tns
  auto [ic_o, ic_i] = conv.split(rax[0], k.tile_ic);
  conv.reorder({cax[0], ic_o, ic_i, cax[3], rax[2], rax[1], cax[1], cax[2], cax[4], cax[5], rax[3]});
  s[cdata].compute_at(conv, ic_o);
  s[ckernel].compute_at(conv, ic_o);
  s[cdata].pragma(s[cdata]->leaf_iter_vars[0], kDmaCopy);
  s[ckernel].pragma(s[ckernel]->leaf_iter_vars[0], kDmaCopy);
  if (k.double_buffer) {
    s[cdata].double_buffer();
    s[ckernel].double_buffer();
  }
  conv.tensorize(cax[4], gemm_intrin(env));
  conv.pragma(ic_i, kUopScope);
  return s;
}

}  // namespace kiln::vta

namespace kiln::vta {

std::string AddWorkload::to_string() const {
  return fmt::format("{}: batch {} {}x{}x{}", name, batch, channels, height, width);
}

std::string AddKnobs::to_string() const {
  return fmt::format("tile_h={} tile_w={} tile_c={} h_threads={}", tile_h, tile_w, tile_c, h_threads);
}

namespace {

void check_add(const Env& env, const AddWorkload& wl) {
  auto fail = [&](const std::string& why) { throw CompileError("vta add '" + wl.name + "': " + why); };
  if (env.block_in() != env.block_out()) fail("needs BLOCK_IN == BLOCK_OUT for the identity block");
  if (wl.batch <= 0 || wl.channels <= 0 || wl.height <= 0 || wl.width <= 0) fail("every size must be positive");
  if (wl.batch % env.batch() != 0) fail(fmt::format("batch {} is not a multiple of BATCH {}", wl.batch, env.batch()));
  if (wl.channels % env.block_out() != 0)
    fail(fmt::format("{} channels are not a multiple of the block {}", wl.channels, env.block_out()));
}

std::string add_knob_problem(const Env& env, const AddWorkload& wl, const AddKnobs& k) {
  int cb = wl.channels / env.block_out();
  if (k.tile_h <= 0 || wl.height % k.tile_h) return fmt::format("tile_h={} does not divide the {} rows", k.tile_h, wl.height);
  if (k.tile_w <= 0 || wl.width % k.tile_w) return fmt::format("tile_w={} does not divide the {} columns", k.tile_w, wl.width);
  if (k.tile_c <= 0 || cb % k.tile_c) return fmt::format("tile_c={} does not divide the {} channel blocks", k.tile_c, cb);
  if (k.h_threads < 1 || (wl.height / k.tile_h) % k.h_threads)
    return fmt::format("h_threads={} does not divide the {} row tiles", k.h_threads, wl.height / k.tile_h);
  int64_t tile = int64_t{wl.batch / env.batch()} * k.tile_c * k.tile_h * k.tile_w * k.h_threads;
  if (2 * tile > env.depth(hw::MemType::kInp))
    return fmt::format("needs {} INP elements, the {} configuration has {}", 2 * tile, env.config().name(),
                       env.depth(hw::MemType::kInp));
  if (2 * tile > env.depth(hw::MemType::kAcc))
    return fmt::format("needs {} ACC elements, the {} configuration has {}", 2 * tile, env.config().name(),
                       env.depth(hw::MemType::kAcc));
  if (tile > env.depth(hw::MemType::kUop) / 4) return "its kernels would not fit the uop buffer";
  return "";
}

}  // namespace

std::vector<int8_t> identity_block(const Env& env) {
  std::vector<int8_t> id(size_t(env.block_out()) * env.block_in(), 0);
  for (int i = 0; i < env.block_out(); ++i) id[size_t(i) * env.block_in() + i] = 1;
  return id;
}

AddOp add_packed(const Env& env, const AddWorkload& wl, const Requant& rq, const AddScales& sc) {
  check_add(env, wl);
  int max_shift = env.config().acc_width() / 2;
  if (rq.shift < 0 || rq.shift >= max_shift)
    throw CompileError(fmt::format("vta add '{}': shift {} is outside the ALU's [0, {})", wl.name, rq.shift, max_shift));
  for (int s : {sc.shift_a, sc.shift_b})
    if (s <= -max_shift || s >= max_shift)
      throw CompileError(fmt::format("vta add '{}': operand shift {} is outside the ALU's ({}, {})", wl.name, s, -max_shift,
                                     max_shift));
  if (sc.round < -32768 || sc.round > 32767)
    throw CompileError(fmt::format("vta add '{}': rounding term {} does not fit the ALU's int16 immediate", wl.name, sc.round));
  int b = env.batch(), bo = env.block_out();
  std::vector<ir::Expr> shape{wl.batch / b, wl.channels / bo, wl.height, wl.width, b, bo};
  std::vector<std::string> names{"n", "c", "y", "x", "b", "o"};
  AddOp op;
  op.workload = wl;
  op.requant = rq;
  op.a = te::placeholder(shape, env.inp_dtype(), wl.name + ".a");
  op.b = te::placeholder(shape, env.inp_dtype(), wl.name + ".b");
  op.identity = te::placeholder({bo, env.block_in()}, env.wgt_dtype(), wl.name + ".identity");
  ir::DataType acc = env.acc_dtype();
  auto widen = [&](const te::Tensor& x, const std::string& n) {
    ir::IterVar k = te::reduce_axis(env.block_in(), "k");
    return te::compute(
        shape,
        [&](const std::vector<ir::Var>& i) {
          return te::sum(ir::cast(acc, x({i[0], i[1], i[2], i[3], i[4], k->var})) *
                             ir::cast(acc, op.identity({i[5], k->var})),
                         {k});
        },
        wl.name + "." + n, "injective", names);
  };
  op.a_acc = widen(op.a, "a_acc");
  op.b_acc = widen(op.b, "b_acc");
  te::Tensor cur;
  auto alu_stage = [&](const std::string& what, const std::function<ir::Expr(const std::vector<ir::Var>&)>& f) {
    cur = te::compute(shape, f, wl.name + "." + what, "elemwise", names);
    op.alu.push_back(cur);
  };
  auto at = [](const te::Tensor& t, const std::vector<ir::Var>& i) { return t({i[0], i[1], i[2], i[3], i[4], i[5]}); };
  // x >> s (x << -s for a negative s) as one ALU stage, or x itself.
  auto shifted = [&](const te::Tensor& x, int s, const std::string& what) {
    if (s == 0) return x;
    alu_stage(what, [&](const std::vector<ir::Var>& i) { return ir::shift_right(at(x, i), ir::make_int(s, acc)); });
    return cur;
  };
  te::Tensor a_in = shifted(op.a_acc, sc.shift_a, "a_shr");
  te::Tensor b_in = shifted(op.b_acc, sc.shift_b, "b_shr");
  alu_stage("sum", [&](const std::vector<ir::Var>& i) { return at(a_in, i) + at(b_in, i); });
  if (sc.round != 0) {
    te::Tensor prev = cur;
    alu_stage("round", [&](const std::vector<ir::Var>& i) { return at(prev, i) + ir::make_int(sc.round, acc); });
  }
  if (rq.shift != 0) {
    te::Tensor prev = cur;
    alu_stage("shr", [&](const std::vector<ir::Var>& i) { return ir::shift_right(at(prev, i), ir::make_int(rq.shift, acc)); });
  }
  int lo = rq.relu ? 0 : -(1 << (env.config().out_width() - 1));
  int hi = (1 << (env.config().out_width() - 1)) - 1;
  {
    te::Tensor prev = cur;
    alu_stage("clip_hi", [&](const std::vector<ir::Var>& i) { return ir::min(at(prev, i), ir::make_int(hi, acc)); });
  }
  {
    te::Tensor prev = cur;
    alu_stage(rq.relu ? "relu" : "clip_lo", [&](const std::vector<ir::Var>& i) { return ir::max(at(prev, i), ir::make_int(lo, acc)); });
  }
  te::Tensor last = cur;
  op.out = te::compute(shape, [&](const std::vector<ir::Var>& i) { return ir::cast(env.out_dtype(), at(last, i)); },
                       wl.name + ".out", "elemwise", names);
  return op;
}

AddKnobs default_add_knobs(const Env& env, const AddWorkload& wl) {
  check_add(env, wl);
  // The largest tile that fits, with two threads over rows where the rows allow.
  AddKnobs best;
  int64_t best_size = 0;
  int cb = wl.channels / env.block_out();
  for (int th : divisors(wl.height))
    for (int tw : divisors(wl.width))
      for (int tc : divisors(cb))
        for (int threads : {1, 2}) {
          AddKnobs k{th, tw, tc, threads};
          if (!add_knob_problem(env, wl, k).empty()) continue;
          int64_t size = int64_t{th} * tw * tc * (threads == 2 ? 3 : 2);  // prefer overlap
          if (size > best_size) best = k, best_size = size;
        }
  if (best_size == 0) throw CompileError("vta add '" + wl.name + "': no tiling fits the buffers");
  return best;
}

schedule::Schedule schedule_add(const Env& env, const AddOp& op, const AddKnobs& k) {
  std::string why = add_knob_problem(env, op.workload, k);
  if (!why.empty()) throw CompileError("vta add '" + op.workload.name + "' schedule (" + k.to_string() + "): " + why);
  schedule::Schedule s = schedule::create_schedule({op.out});
  te::Tensor ca = s.cache_read(op.a, kInpScope, {op.a_acc});
  te::Tensor cb = s.cache_read(op.b, kInpScope, {op.b_acc});
  te::Tensor ci = s.cache_read(op.identity, kWgtScope, {op.a_acc, op.b_acc});
  s[op.a_acc].set_scope(kAccScope);
  s[op.b_acc].set_scope(kAccScope);
  for (const te::Tensor& t : op.alu) s[t].set_scope(kAccScope);
  schedule::Stage out = s[op.out];
  const auto& ax = op.out->axis;
  auto [c_o, c_i] = out.split(ax[1], k.tile_c);
  auto [y_o, y_i] = out.split(ax[2], k.tile_h);
  auto [x_o, x_i] = out.split(ax[3], k.tile_w);
  out.reorder({ax[0], y_o, c_o, x_o, c_i, y_i, x_i, ax[4], ax[5]});
  if (k.h_threads > 1) {
    auto [rest, v] = out.split(y_o, k.h_threads);
    out.reorder({v, ax[0], rest, c_o, x_o});
    out.bind(v, "vthread");
  }
  out.pragma(c_i, kDmaCopy);
  s[ci].compute_at(out, x_o);
  s[ci].pragma(s[ci]->leaf_iter_vars[0], kDmaCopy);
  for (const auto& [cache, wide] : {std::pair{ca, op.a_acc}, std::pair{cb, op.b_acc}}) {
    s[wide].compute_at(out, x_o);
    s[cache].compute_at(out, x_o);
    s[cache].pragma(s[cache]->leaf_iter_vars[0], kDmaCopy);
    const auto& wax = wide->axis;
    s[wide].tensorize(wax[4], gemm_intrin(env));
    s[wide].pragma(wax[0], kUopScope);
  }
  for (const te::Tensor& t : op.alu) {
    s[t].compute_at(out, x_o);
    s[t].pragma(s[t]->leaf_iter_vars[0], kAlu);
  }
  return s;
}

}  // namespace kiln::vta

namespace kiln::vta {

std::string PoolWorkload::to_string() const {
  return fmt::format("{}: batch {} {}x{}x{}, window {}x{} stride {}x{} pad {}x{}", name, batch, channels, height, width,
                     kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w);
}

std::string PoolKnobs::to_string() const { return fmt::format("tile_h={} tile_w={} tile_c={}", tile_h, tile_w, tile_c); }

namespace {

void check_pool(const Env& env, const PoolWorkload& wl) {
  auto fail = [&](const std::string& why) { throw CompileError("vta max_pool2d '" + wl.name + "': " + why); };
  if (env.block_in() != env.block_out()) fail("needs BLOCK_IN == BLOCK_OUT for the identity block");
  if (wl.batch <= 0 || wl.channels <= 0 || wl.height <= 0 || wl.width <= 0 || wl.kernel_h <= 0 || wl.kernel_w <= 0 ||
      wl.stride_h <= 0 || wl.stride_w <= 0 || wl.pad_h < 0 || wl.pad_w < 0)
    fail("every size must be positive");
  if (wl.batch % env.batch() != 0) fail(fmt::format("batch {} is not a multiple of BATCH {}", wl.batch, env.batch()));
  if (wl.channels % env.block_out() != 0)
    fail(fmt::format("{} channels are not a multiple of the block {}", wl.channels, env.block_out()));
  if (wl.pad_h >= wl.kernel_h || wl.pad_w >= wl.kernel_w) fail("the padding must be smaller than the window");
  if (wl.out_height() <= 0 || wl.out_width() <= 0) fail("the window is larger than the padded input");
  const hw::InsnLayout layout(env.config());
  int64_t max_pad = layout.field_max(hw::Opcode::kLoad, hw::Field::kYPad0);
  if (wl.pad_h > max_pad || wl.pad_w > max_pad)
    fail(fmt::format("padding {}x{} is wider than a load pads ({})", wl.pad_h, wl.pad_w, max_pad));
}

struct PoolTile {
  int64_t inp = 0, acc = 0;
};

PoolTile pool_tile(const PoolWorkload& wl, const PoolKnobs& k) {
  // A tile is one batch block (the batch loop is outside the tile's).
  int64_t rows = int64_t{k.tile_h - 1} * wl.stride_h + wl.kernel_h;
  int64_t cols = int64_t{k.tile_w - 1} * wl.stride_w + wl.kernel_w;
  return {k.tile_c * rows * cols, int64_t{k.tile_c} * wl.kernel_h * wl.kernel_w * k.tile_h * k.tile_w};
}

std::string pool_knob_problem(const Env& env, const PoolWorkload& wl, const PoolKnobs& k) {
  int cb = wl.channels / env.block_out();
  if (k.tile_h <= 0 || wl.out_height() % k.tile_h)
    return fmt::format("tile_h={} does not divide the {} output rows", k.tile_h, wl.out_height());
  if (k.tile_w <= 0 || wl.out_width() % k.tile_w)
    return fmt::format("tile_w={} does not divide the {} output columns", k.tile_w, wl.out_width());
  if (k.tile_c <= 0 || cb % k.tile_c) return fmt::format("tile_c={} does not divide the {} channel blocks", k.tile_c, cb);
  PoolTile t = pool_tile(wl, k);
  if (t.inp > env.depth(hw::MemType::kInp))
    return fmt::format("needs {} INP elements, the {} configuration has {}", t.inp, env.config().name(),
                       env.depth(hw::MemType::kInp));
  if (t.acc > env.depth(hw::MemType::kAcc))
    return fmt::format("needs {} ACC elements ({}x{} window positions), the {} configuration has {}", t.acc, wl.kernel_h,
                       wl.kernel_w, env.config().name(), env.depth(hw::MemType::kAcc));
  return "";
}

}  // namespace

PoolOp max_pool2d_packed(const Env& env, const PoolWorkload& wl) {
  check_pool(env, wl);
  int b = env.batch(), bo = env.block_out();
  int nb = wl.batch / b, cb = wl.channels / bo, oh = wl.out_height(), ow = wl.out_width();
  PoolOp op;
  op.workload = wl;
  op.data = te::placeholder({nb, cb, wl.height, wl.width, b, env.block_in()}, env.inp_dtype(), wl.name + ".data");
  op.identity = te::placeholder({bo, env.block_in()}, env.wgt_dtype(), wl.name + ".identity");
  te::Tensor in = op.data;
  if (wl.pad_h != 0 || wl.pad_w != 0) {
    op.padded = te::pad(op.data, {0, 0, wl.pad_h, wl.pad_w, 0, 0}, {0, 0, wl.pad_h, wl.pad_w, 0, 0}, ir::Expr(),
                        wl.name + ".pad");
    in = op.padded;
  }
  ir::DataType acc = env.acc_dtype();
  // The window positions come first, so that one position's slice of a tile has the
  // layout of the output's tile and the ALU's maximum can take over its storage.
  op.window = te::compute(
      {wl.kernel_h, wl.kernel_w, nb, cb, oh, ow, b, bo},
      [&](const std::vector<ir::Var>& i) {
        ir::IterVar k = te::reduce_axis(env.block_in(), "k");
        ir::Expr y = i[4] * wl.stride_h + i[0];
        ir::Expr x = i[5] * wl.stride_w + i[1];
        return te::sum(ir::cast(acc, in({i[2], i[3], y, x, i[6], k->var})) * ir::cast(acc, op.identity({i[7], k->var})),
                       {k});
      },
      wl.name + ".window", "injective", {"ky", "kx", "n", "c", "y", "x", "b", "o"});
  std::vector<std::string> names{"n", "c", "y", "x", "b", "o"};
  std::vector<ir::Expr> shape{nb, cb, oh, ow, b, bo};
  auto slice = [&](int ky, int kx, const std::vector<ir::Var>& i) {
    return op.window({ir::Expr(ky), ir::Expr(kx), i[0], i[1], i[2], i[3], i[4], i[5]});
  };
  te::Tensor cur;
  for (int p = 1; p < wl.kernel_h * wl.kernel_w; ++p) {
    te::Tensor prev = cur;
    int ky = p / wl.kernel_w, kx = p % wl.kernel_w;
    cur = te::compute(
        shape,
        [&](const std::vector<ir::Var>& i) {
          ir::Expr run = prev.defined() ? prev({i[0], i[1], i[2], i[3], i[4], i[5]}) : slice(0, 0, i);
          return ir::max(run, slice(ky, kx, i));
        },
        fmt::format("{}.max{}", wl.name, p), "elemwise", names);
    op.alu.push_back(cur);
  }
  op.out = te::compute(
      shape,
      [&](const std::vector<ir::Var>& i) {
        return ir::cast(env.out_dtype(), cur.defined() ? cur({i[0], i[1], i[2], i[3], i[4], i[5]}) : slice(0, 0, i));
      },
      wl.name + ".out", "elemwise", names);
  return op;
}

PoolKnobs default_pool_knobs(const Env& env, const PoolWorkload& wl) {
  check_pool(env, wl);
  PoolKnobs best;
  int64_t best_size = 0;
  for (int th : divisors(wl.out_height()))
    for (int tw : divisors(wl.out_width()))
      for (int tc : divisors(wl.channels / env.block_out())) {
        PoolKnobs k{th, tw, tc};
        if (!pool_knob_problem(env, wl, k).empty()) continue;
        int64_t size = int64_t{th} * tw * tc;
        if (size > best_size) best = k, best_size = size;
      }
  if (best_size == 0) {
    throw CompileError(fmt::format("vta max_pool2d '{}': no tile fits the buffers ({})", wl.name,
                                   pool_knob_problem(env, wl, PoolKnobs{})));
  }
  return best;
}

schedule::Schedule schedule_max_pool2d(const Env& env, const PoolOp& op, const PoolKnobs& k) {
  std::string why = pool_knob_problem(env, op.workload, k);
  if (!why.empty()) throw CompileError("vta max_pool2d '" + op.workload.name + "' schedule (" + k.to_string() + "): " + why);
  schedule::Schedule s = schedule::create_schedule({op.out});
  te::Tensor cdata = data_in_inp(s, op.padded, op.data, op.window);
  te::Tensor ci = s.cache_read(op.identity, kWgtScope, {op.window});
  s[op.window].set_scope(kAccScope);
  for (const te::Tensor& t : op.alu) s[t].set_scope(kAccScope);
  schedule::Stage out = s[op.out];
  const auto& ax = op.out->axis;
  auto [c_o, c_i] = out.split(ax[1], k.tile_c);
  auto [y_o, y_i] = out.split(ax[2], k.tile_h);
  auto [x_o, x_i] = out.split(ax[3], k.tile_w);
  out.reorder({ax[0], y_o, c_o, x_o, c_i, y_i, x_i, ax[4], ax[5]});
  out.pragma(c_i, kDmaCopy);
  for (const te::Tensor& t : {cdata, ci}) {
    s[t].compute_at(out, x_o);
    s[t].pragma(s[t]->leaf_iter_vars[0], kDmaCopy);
  }
  schedule::Stage win = s[op.window];
  win.compute_at(out, x_o);
  const auto& wax = op.window->axis;
  win.tensorize(wax[6], gemm_intrin(env));
  // One GEMM per window position and channel block: its micro-ops (rows x columns of
  // the tile) fold into the instruction's two loops.
  win.pragma(wax[4], kUopScope);
  for (const te::Tensor& t : op.alu) {
    s[t].compute_at(out, x_o);
    s[t].pragma(s[t]->leaf_iter_vars[0], kAlu);
  }
  return s;
}

}  // namespace kiln::vta
