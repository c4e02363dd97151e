#include "hw/sim/testing/random_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <random>
#include <set>

#include "hw/spec/error.h"
#include "support/integer.h"

namespace kiln::sim::testing {

namespace {

using hw::AluOp;
using hw::Insn;
using hw::MemType;
using hw::Opcode;
using hw::Uop;

// The part of one buffer a stream touches: [base, base + size).
struct Window {
  uint32_t base = 0;
  uint32_t size = 0;
  uint32_t last() const { return base + size - 1; }
};

// A micro-op range loaded earlier, which a later GEMM/ALU may reuse while the
// buffer still holds it.
struct UopRange {
  uint32_t bgn;
  std::vector<Uop> uops;
  bool gemm;
};

struct Loop {
  uint32_t bgn = 0, end = 0, iter_out = 0, iter_in = 0;
  uint32_t dst_out = 0, dst_in = 0, src_out = 0, src_in = 0, wgt_out = 0, wgt_in = 0;
};

class Generator {
 public:
  Generator(const hw::Config& cfg, uint64_t seed, const RandomProgramOptions& opts)
      : cfg_(cfg), layout_(cfg), rng_(seed), opts_(opts) {
    uint32_t cap = std::clamp<uint32_t>(opts.max_window, 1, 8192);
    auto window = [&](uint32_t depth) {
      Window w;
      w.size = std::min(depth, cap);
      w.base = static_cast<uint32_t>(uniform(0, depth - w.size));
      return w;
    };
    inp_ = window(cfg.inp_depth());
    wgt_ = window(cfg.wgt_depth());
    acc_ = window(cfg.acc_depth());
    uop_ = window(cfg.uop_depth());
    uop_model_.assign(uop_.size, std::nullopt);
    align_ = std::max({cfg.inp_elem_bytes(), cfg.wgt_elem_bytes(), cfg.acc_elem_bytes(),
                       cfg.out_elem_bytes(), cfg.uop_elem_bytes()});
  }

  RandomProgram generate();

 private:
  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  static uint32_t field_max(int width) { return width >= 32 ? ~0u : (1u << width) - 1; }

  uint64_t alloc_data(const std::string& name, uint64_t bytes, bool output, int value_width);
  Insn mem_insn(Opcode op, MemType m) const;
  void queue_burst(std::vector<Insn>& stream);
  Insn random_load(MemType m);
  Insn noop_uop_load() const { return mem_insn(Opcode::kLoad, MemType::kUop); }
  Insn random_store();
  Insn store_window();
  void load_uops(std::vector<Insn>& out, uint32_t pos, const std::vector<Uop>& uops);
  Uop random_uop(bool gemm, uint32_t dst_reserve, uint32_t src_reserve, uint32_t wgt_reserve);
  bool fits(const std::vector<Uop>& uops, bool gemm) const;
  Loop choose_loop(const std::vector<Uop>& uops, bool gemm);
  bool loop_ok(const std::vector<Uop>& uops, const Loop& l, bool gemm, bool use_src) const;
  void loop_insn(std::vector<Insn>& out, bool gemm);
  Insn with_loop(Opcode op, const Loop& l) const;
  void copy_acc_to_out(std::vector<Insn>& out, int shift);

  const hw::Config& cfg_;
  hw::InsnLayout layout_;
  std::mt19937_64 rng_;
  RandomProgramOptions opts_;
  Window inp_, wgt_, acc_, uop_;
  int align_ = 1;
  std::vector<uint8_t> data_;       // the data arena, placed after the micro-op blob
  std::vector<DramRegion> regions_;  // addresses relative to the data arena
  std::vector<Uop> blob_;
  std::vector<std::optional<Uop>> uop_model_;  // what the uop window holds
  std::vector<UopRange> ranges_;
  int counter_ = 0;
};

uint64_t Generator::alloc_data(const std::string& name, uint64_t bytes, bool output,
                               int value_width) {
  uint64_t addr = round_up(data_.size(), align_);
  data_.resize(addr + bytes, 0);
  if (!output) {
    int vb = value_width / 8;
    for (uint64_t p = addr; p + vb <= addr + bytes; p += vb) {
      // Half full-width values, half small ones, so that MIN/MAX/SHR see both.
      uint64_t v = chance(0.5) ? rng_() : static_cast<uint64_t>(uniform(-128, 127));
      for (int b = 0; b < vb; ++b) data_[p + b] = static_cast<uint8_t>(v >> (8 * b));
    }
  }
  regions_.push_back({fmt::format("{}{}", name, counter_++), addr, bytes, output});
  return addr;
}

Insn Generator::mem_insn(Opcode op, MemType m) const {
  Insn in;
  in.opcode = op;
  in.memory_type = m;
  return in;
}

Insn Generator::random_load(MemType m) {
  const Window& w = m == MemType::kInp ? inp_ : m == MemType::kWgt ? wgt_ : acc_;
  int eb = m == MemType::kInp ? cfg_.inp_elem_bytes()
           : m == MemType::kWgt ? cfg_.wgt_elem_bytes()
                                : cfg_.acc_elem_bytes();
  int width = m == MemType::kInp ? cfg_.inp_width()
              : m == MemType::kWgt ? cfg_.wgt_width()
                                   : cfg_.acc_width();
  Insn in = mem_insn(Opcode::kLoad, m);
  bool ok = false;
  for (int attempt = 0; attempt < 20 && !ok; ++attempt) {
    in.y_size = static_cast<uint32_t>(uniform(1, 4));
    in.x_size = static_cast<uint32_t>(uniform(1, 8));
    in.y_pad_0 = in.y_pad_1 = in.x_pad_0 = in.x_pad_1 = 0;
    if (opts_.padding && chance(0.6)) {
      for (uint32_t* pad : {&in.y_pad_0, &in.y_pad_1, &in.x_pad_0, &in.x_pad_1})
        *pad = static_cast<uint32_t>(chance(0.1) ? uniform(0, 15) : uniform(0, 2));
    }
    uint64_t rows = in.y_pad_0 + in.y_size + in.y_pad_1;
    uint64_t cols = in.x_pad_0 + in.x_size + in.x_pad_1;
    ok = rows * cols <= w.size;
  }
  if (!ok) {
    in.y_size = in.x_size = 1;
    in.y_pad_0 = in.y_pad_1 = in.x_pad_0 = in.x_pad_1 = 0;
  }
  uint64_t rows = in.y_pad_0 + in.y_size + in.y_pad_1;
  uint64_t cols = in.x_pad_0 + in.x_size + in.x_pad_1;
  in.sram_base = static_cast<uint32_t>(uniform(w.base, w.base + w.size - rows * cols));
  in.x_stride = static_cast<uint32_t>(chance(0.15) ? uniform(0, in.x_size)
                                                   : in.x_size + uniform(0, 3));
  if (chance(0.06)) {  // a no-op that only moves tokens
    (chance(0.5) ? in.x_size : in.y_size) = 0;
    return in;
  }
  uint64_t elems = uint64_t{in.y_size - 1} * in.x_stride + in.x_size;
  uint64_t addr = alloc_data(std::string(hw::mem_type_name(m)), elems * eb, false, width);
  in.dram_base = static_cast<uint32_t>(addr / eb);
  return in;
}

Insn Generator::random_store() {
  Insn in = mem_insn(Opcode::kStore, MemType::kOut);
  in.y_size = static_cast<uint32_t>(uniform(1, 3));
  in.x_size = static_cast<uint32_t>(uniform(1, 8));
  while (in.y_size * in.x_size > acc_.size) in.x_size = in.y_size = 1;
  in.sram_base =
      static_cast<uint32_t>(uniform(acc_.base, acc_.base + acc_.size - in.y_size * in.x_size));
  in.x_stride = in.x_size + static_cast<uint32_t>(uniform(0, 2));  // rows never overlap
  if (chance(0.05)) {
    in.x_size = 0;
    return in;
  }
  int eb = cfg_.out_elem_bytes();
  uint64_t elems = uint64_t{in.y_size - 1} * in.x_stride + in.x_size;
  in.dram_base = static_cast<uint32_t>(alloc_data("out", elems * eb, true, 8) / eb);
  return in;
}

// Stores the whole OUT window (OUT shares ACC's index space).
Insn Generator::store_window() {
  Insn in = mem_insn(Opcode::kStore, MemType::kOut);
  in.sram_base = acc_.base;
  in.y_size = 1;
  in.x_size = in.x_stride = acc_.size;
  int eb = cfg_.out_elem_bytes();
  in.dram_base = static_cast<uint32_t>(alloc_data("out", uint64_t{acc_.size} * eb, true, 8) / eb);
  return in;
}

// Appends LOAD UOP instructions that put `uops` at `pos` of the uop buffer, sometimes
// as two rows with a gap in DRAM.
void Generator::load_uops(std::vector<Insn>& out, uint32_t pos, const std::vector<Uop>& uops) {
  Insn in = mem_insn(Opcode::kLoad, MemType::kUop);
  in.sram_base = pos;
  uint32_t n = static_cast<uint32_t>(uops.size());
  uint32_t gap = 0;
  if (n % 2 == 0 && chance(0.25)) {
    in.y_size = 2;
    in.x_size = n / 2;
    gap = static_cast<uint32_t>(uniform(0, 3));
  } else {
    in.y_size = 1;
    in.x_size = n;
  }
  in.x_stride = in.x_size + gap;
  in.dram_base = static_cast<uint32_t>(blob_.size());
  for (uint32_t y = 0; y < in.y_size; ++y) {
    for (uint32_t x = 0; x < in.x_size; ++x) blob_.push_back(uops[y * in.x_size + x]);
    if (y + 1 < in.y_size)
      for (uint32_t g = 0; g < gap; ++g) blob_.push_back(random_uop(false, 0, 0, 0));
  }
  for (uint32_t k = 0; k < n; ++k) uop_model_[pos - uop_.base + k] = uops[k];
  out.push_back(in);
}

// A micro-op whose fields lie in their windows, leaving `*_reserve` elements of room
// above for the loop factors. ALU micro-ops index ACC with src and ignore wgt.
Uop Generator::random_uop(bool gemm, uint32_t dst_reserve, uint32_t src_reserve,
                          uint32_t wgt_reserve) {
  const Window& src = gemm ? inp_ : acc_;
  Uop u;
  u.dst_idx = static_cast<uint32_t>(uniform(acc_.base, acc_.last() - dst_reserve));
  u.src_idx = static_cast<uint32_t>(uniform(src.base, src.last() - src_reserve));
  u.wgt_idx = gemm ? static_cast<uint32_t>(uniform(wgt_.base, wgt_.last() - wgt_reserve))
                   : static_cast<uint32_t>(uniform(0, field_max(layout_.uop_wgt_width())));
  return u;
}

bool Generator::fits(const std::vector<Uop>& uops, bool gemm) const {
  const Window& src = gemm ? inp_ : acc_;
  for (const Uop& u : uops) {
    if (u.dst_idx < acc_.base || u.dst_idx > acc_.last()) return false;
    if (u.src_idx < src.base || u.src_idx > src.last()) return false;
    if (gemm && (u.wgt_idx < wgt_.base || u.wgt_idx > wgt_.last())) return false;
  }
  return true;
}

// Loop counts and factors that keep every index of every micro-op in its window.
Loop Generator::choose_loop(const std::vector<Uop>& uops, bool gemm) {
  Loop l;
  auto count = [&] {
    return static_cast<uint32_t>(chance(0.06) ? 0 : uniform(1, std::max(1, opts_.max_iter)));
  };
  l.iter_out = count();
  l.iter_in = count();
  auto factors = [&](uint32_t Uop::*field, const Window& w, int width, uint32_t& fo,
                     uint32_t& fi) {
    uint32_t hi = 0;
    for (const Uop& u : uops) hi = std::max(hi, u.*field);
    uint64_t slack = w.last() - hi;
    uint32_t any = field_max(width);
    if (l.iter_out > 1) {
      fo = static_cast<uint32_t>(uniform(0, static_cast<int64_t>(slack / (l.iter_out - 1))));
      slack -= uint64_t{fo} * (l.iter_out - 1);
    } else {
      fo = static_cast<uint32_t>(uniform(0, any));  // multiplies 0: any value will do
    }
    fi = l.iter_in > 1
             ? static_cast<uint32_t>(uniform(0, static_cast<int64_t>(slack / (l.iter_in - 1))))
             : static_cast<uint32_t>(uniform(0, any));
  };
  factors(&Uop::dst_idx, acc_, cfg_.log_acc_depth(), l.dst_out, l.dst_in);
  factors(&Uop::src_idx, gemm ? inp_ : acc_, gemm ? cfg_.log_inp_depth() : cfg_.log_acc_depth(),
          l.src_out, l.src_in);
  if (gemm) factors(&Uop::wgt_idx, wgt_, cfg_.log_wgt_depth(), l.wgt_out, l.wgt_in);
  return l;
}

// With overlapping_dst off: no acc element is written twice, and no ALU reads an acc
// element that the same instruction wrote before (in-place is fine).
bool Generator::loop_ok(const std::vector<Uop>& uops, const Loop& l, bool gemm,
                        bool use_src) const {
  if (opts_.overlapping_dst) return true;
  std::set<uint64_t> written;
  for (uint64_t i = 0; i < l.iter_out; ++i) {
    for (uint64_t j = 0; j < l.iter_in; ++j) {
      for (const Uop& u : uops) {
        uint64_t d = u.dst_idx + i * l.dst_out + j * l.dst_in;
        uint64_t s = u.src_idx + i * l.src_out + j * l.src_in;
        if (!gemm && use_src && s != d && written.count(s)) return false;
        if (!written.insert(d).second) return false;
      }
    }
  }
  return true;
}

Insn Generator::with_loop(Opcode op, const Loop& l) const {
  Insn in;
  in.opcode = op;
  in.uop_bgn = l.bgn;
  in.uop_end = l.end;
  in.iter_out = l.iter_out;
  in.iter_in = l.iter_in;
  in.dst_factor_out = l.dst_out;
  in.dst_factor_in = l.dst_in;
  in.src_factor_out = l.src_out;
  in.src_factor_in = l.src_in;
  if (op == Opcode::kGemm) {
    in.wgt_factor_out = l.wgt_out;
    in.wgt_factor_in = l.wgt_in;
  }
  return in;
}

// Appends a random GEMM or ALU, preceded by the LOAD UOP it needs unless it reuses
// micro-ops still in the buffer.
void Generator::loop_insn(std::vector<Insn>& out, bool gemm) {
  Insn in;
  in.opcode = gemm ? Opcode::kGemm : Opcode::kAlu;
  in.reset = chance(gemm ? 0.15 : 0.06);
  if (!gemm) {
    in.alu_opcode = static_cast<AluOp>(uniform(0, static_cast<int>(hw::kAluOps.size()) - 1));
    in.use_imm = chance(0.5);
    static constexpr int32_t kEdges[] = {-32768, 32767, 0, 1, -1};
    if (chance(0.3)) {
      in.imm = kEdges[uniform(0, 4)];
    } else if (in.alu_opcode == AluOp::kShr && chance(0.7)) {
      in.imm = static_cast<int32_t>(uniform(-cfg_.acc_width() / 2, cfg_.acc_width() / 2 - 1));
    } else {
      in.imm = static_cast<int32_t>(uniform(-32768, 32767));
    }
  }
  bool use_src = !gemm && !in.use_imm;
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::vector<Uop> uops;
    std::optional<uint32_t> reuse;
    if (!ranges_.empty() && chance(0.3)) {
      const UopRange& r = ranges_[uniform(0, static_cast<int64_t>(ranges_.size()) - 1)];
      bool valid = fits(r.uops, gemm);
      for (size_t k = 0; valid && k < r.uops.size(); ++k)
        valid = uop_model_[r.bgn - uop_.base + k] == r.uops[k];
      if (valid) {
        uops = r.uops;
        reuse = r.bgn;
      }
    }
    if (!reuse) {
      int n = static_cast<int>(uniform(1, std::max(1, opts_.max_uops)));
      n = std::min<int64_t>(n, uop_.size);
      uint32_t rd = static_cast<uint32_t>(uniform(0, acc_.size / 2));
      uint32_t rs = static_cast<uint32_t>(uniform(0, (gemm ? inp_ : acc_).size / 2));
      uint32_t rw = static_cast<uint32_t>(uniform(0, wgt_.size / 2));
      for (int k = 0; k < n; ++k) uops.push_back(random_uop(gemm, rd, rs, rw));
    }
    Loop l = choose_loop(uops, gemm);
    if (attempt == 19) {  // fall back to one micro-op, once
      uops.resize(1);
      l.iter_out = l.iter_in = 1;
      reuse.reset();
    }
    if (!loop_ok(uops, l, gemm, use_src)) continue;
    uint32_t pos = reuse ? *reuse
                         : static_cast<uint32_t>(uniform(
                               uop_.base, uop_.base + uop_.size - uops.size()));
    if (!reuse) {
      load_uops(out, pos, uops);
      ranges_.push_back({pos, uops, gemm});
    }
    l.bgn = pos;
    l.end = pos + static_cast<uint32_t>(uops.size());
    if (chance(0.03)) l.end = l.bgn;  // an empty micro-op range: a no-op
    Insn body = with_loop(in.opcode, l);
    body.reset = in.reset;
    body.alu_opcode = in.alu_opcode;
    body.use_imm = in.use_imm;
    body.imm = in.imm;
    out.push_back(body);
    return;
  }
}

// ALU SHR by `shift` over the whole ACC window: out = low bits of (acc >>= shift).
void Generator::copy_acc_to_out(std::vector<Insn>& out, int shift) {
  uint32_t pos = static_cast<uint32_t>(uniform(uop_.base, uop_.last()));
  load_uops(out, pos, {Uop{acc_.base, acc_.base, 0}});
  Insn in;
  in.opcode = Opcode::kAlu;
  in.alu_opcode = AluOp::kShr;
  in.use_imm = true;
  in.imm = shift;
  in.uop_bgn = pos;
  in.uop_end = pos + 1;
  in.iter_out = acc_.size;
  in.iter_in = 1;
  in.dst_factor_out = in.src_factor_out = acc_.size > 1 ? 1 : 0;
  out.push_back(in);
}

// Token-only no-ops: waiters of one module, then as many givers of its neighbour. Every
// token pushed is popped, and none orders a buffer access differently: each module is
// in order, so a token its no-op pushes means what its last real instruction's would.
void Generator::queue_burst(std::vector<Insn>& stream) {
  auto noop = [&](int module) {
    Insn in = module == 0   ? mem_insn(Opcode::kLoad, MemType::kInp)
              : module == 2 ? mem_insn(Opcode::kStore, MemType::kOut)
                            : noop_uop_load();
    in.x_size = in.y_size = 0;
    return in;
  };
  // (waiter, giver): load <- compute, compute <- load, store <- compute, compute <- store.
  static constexpr int kPairs[4][2] = {{0, 1}, {1, 0}, {2, 1}, {1, 2}};
  const int* pair = kPairs[uniform(0, 3)];
  int waiter = pair[0], giver = pair[1];
  bool giver_is_prev = giver < waiter;  // the waiter pops its prev queue
  // A round leaves one compute->load and one store->compute token for the next round's
  // first instructions; a burst of waiters on those queues takes it first, so one more
  // waiter is needed to fill the queue (the next round pops a burst token instead).
  const int n = hw::Config::kCmdQueueDepth + 1 + (giver_is_prev ? 0 : 1);
  for (int k = 0; k < n; ++k) {
    Insn w = noop(waiter);
    (giver_is_prev ? w.pop_prev_dep : w.pop_next_dep) = true;
    stream.push_back(w);
  }
  for (int k = 0; k < n; ++k) {
    Insn g = noop(giver);
    (giver_is_prev ? g.push_next_dep : g.push_prev_dep) = true;
    stream.push_back(g);
  }
}

RandomProgram Generator::generate() {
  if (opts_.groups < 1 || opts_.max_phase_insns < 1)
    throw hw::Error(fmt::format("random_program: groups ({}) and max_phase_insns ({}) must be at "
                                "least 1",
                                opts_.groups, opts_.max_phase_insns));
  std::vector<Insn> stream;
  auto phase_len = [&] { return static_cast<int>(uniform(1, opts_.max_phase_insns)); };
  for (int g = 0; g < opts_.groups; ++g) {
    bool last_group = g + 1 == opts_.groups;
    // Load: INP/WGT. The first waits for compute to be done with the previous round's.
    std::vector<Insn> load;
    if (g == 0) {
      for (MemType m : {MemType::kInp, MemType::kWgt}) {
        const Window& w = m == MemType::kInp ? inp_ : wgt_;
        int eb = m == MemType::kInp ? cfg_.inp_elem_bytes() : cfg_.wgt_elem_bytes();
        int width = m == MemType::kInp ? cfg_.inp_width() : cfg_.wgt_width();
        Insn in = mem_insn(Opcode::kLoad, m);
        in.sram_base = w.base;
        in.y_size = 1;
        in.x_size = in.x_stride = w.size;
        in.dram_base = static_cast<uint32_t>(
            alloc_data(std::string(hw::mem_type_name(m)), uint64_t{w.size} * eb, false, width) /
            eb);
        load.push_back(in);
      }
    }
    for (int k = phase_len(); k > 0; --k)
      load.push_back(random_load(chance(0.5) ? MemType::kInp : MemType::kWgt));
    int tokens = opts_.multi_tokens ? static_cast<int>(uniform(1, 3)) : 1;
    tokens = std::min<int>(tokens, static_cast<int>(load.size()));
    load.front().pop_next_dep = g > 0;
    load.back().push_next_dep = true;
    {
      std::vector<size_t> idx(load.size() - 1);
      for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
      std::shuffle(idx.begin(), idx.end(), rng_);
      for (int t = 0; t < tokens - 1; ++t) load[idx[t]].push_next_dep = true;
    }

    // Compute: the first `tokens` instructions pop load's tokens and touch no INP/WGT.
    std::vector<Insn> compute;
    for (int t = 0; t < tokens; ++t) {
      compute.push_back(chance(0.5) ? random_load(MemType::kAcc) : noop_uop_load());
      compute.back().pop_prev_dep = true;
    }
    compute.front().pop_next_dep = g > 0;  // the previous round's stores are done with OUT
    if (g == 0) {  // every ACC and OUT element of the window gets a value
      Insn in = mem_insn(Opcode::kLoad, MemType::kAcc);
      int eb = cfg_.acc_elem_bytes();
      in.sram_base = acc_.base;
      in.y_size = 1;
      in.x_size = in.x_stride = acc_.size;
      in.dram_base = static_cast<uint32_t>(
          alloc_data("acc", uint64_t{acc_.size} * eb, false, cfg_.acc_width()) / eb);
      compute.push_back(in);
      copy_acc_to_out(compute, 0);
    }
    for (int k = phase_len(); k > 0; --k) {
      double p = static_cast<double>(uniform(0, 99));
      if (p < 15) {
        compute.push_back(random_load(MemType::kAcc));
      } else {
        loop_insn(compute, p < 57);
      }
    }
    compute.back().push_next_dep = true;
    compute.back().push_prev_dep = !last_group;

    // Store: the first waits for compute, the last releases OUT to the next round.
    std::vector<Insn> store;
    for (int k = phase_len(); k > 0; --k) store.push_back(random_store());
    store.front().pop_prev_dep = true;
    store.back().push_prev_dep = true;

    for (auto* phase : {&load, &compute, &store})
      stream.insert(stream.end(), phase->begin(), phase->end());
    if (opts_.queue_limits && !last_group) queue_burst(stream);
  }
  // Expose every accumulator bit: store out = acc >> 0, >> w, >> 2w, ... (cumulative).
  for (int shift = 0; shift < cfg_.acc_width(); shift += cfg_.out_width()) {
    std::vector<Insn> compute;
    copy_acc_to_out(compute, shift == 0 ? 0 : cfg_.out_width());
    compute.front().pop_next_dep = true;
    compute.back().push_next_dep = true;
    Insn st = store_window();
    st.pop_prev_dep = true;
    st.push_prev_dep = true;
    stream.insert(stream.end(), compute.begin(), compute.end());
    stream.push_back(st);
  }
  Insn last = noop_uop_load();
  last.pop_next_dep = true;
  stream.push_back(last);
  stream.push_back(Insn{});  // FINISH

  // Layout: micro-op blob at 0, the data arena after it, the stream last.
  RandomProgram p;
  uint64_t blob_bytes = blob_.size() * hw::Config::kUopElemBytes;
  uint64_t data_base = round_up(blob_bytes, align_);
  for (Insn& in : stream) {
    if (in.opcode != Opcode::kLoad && in.opcode != Opcode::kStore) continue;
    if (in.x_size == 0 || in.y_size == 0 || in.memory_type == MemType::kUop) continue;
    int eb = in.memory_type == MemType::kInp   ? cfg_.inp_elem_bytes()
             : in.memory_type == MemType::kWgt ? cfg_.wgt_elem_bytes()
             : in.memory_type == MemType::kAcc ? cfg_.acc_elem_bytes()
                                               : cfg_.out_elem_bytes();
    in.dram_base += static_cast<uint32_t>(data_base / eb);
  }
  std::vector<uint8_t> blob = hw::encode_uops(layout_, blob_);
  std::vector<uint8_t> code = hw::encode_program(layout_, stream);
  p.insn_addr = (data_base + data_.size() + 63) / 64 * 64;
  p.insn_count = static_cast<uint32_t>(stream.size());
  p.dram.assign(p.insn_addr + code.size(), 0);
  std::copy(blob.begin(), blob.end(), p.dram.begin());
  std::copy(data_.begin(), data_.end(), p.dram.begin() + static_cast<std::ptrdiff_t>(data_base));
  std::copy(code.begin(), code.end(), p.dram.begin() + static_cast<std::ptrdiff_t>(p.insn_addr));
  p.regions.push_back({"uops", 0, blob_bytes, false});
  for (DramRegion r : regions_) {
    r.addr += data_base;
    p.regions.push_back(r);
  }
  p.regions.push_back({"insns", p.insn_addr, code.size(), false});
  p.insns = std::move(stream);
  p.uops = std::move(blob_);
  return p;
}

}  // namespace

RandomProgram random_program(const hw::Config& cfg, uint64_t seed,
                             const RandomProgramOptions& opts) {
  return Generator(cfg, seed, opts).generate();
}

std::string describe(const hw::Insn& in) {
  std::string flags = fmt::format("{}{}{}{}", in.pop_prev_dep ? " pop_prev" : "",
                                  in.pop_next_dep ? " pop_next" : "",
                                  in.push_prev_dep ? " push_prev" : "",
                                  in.push_next_dep ? " push_next" : "");
  switch (in.opcode) {
    case Opcode::kLoad:
    case Opcode::kStore:
      return fmt::format(
          "{} {} sram={} dram={} y={} x={} stride={} pad=(y {} {}, x {} {}){}",
          hw::opcode_name(in.opcode), hw::mem_type_name(in.memory_type), in.sram_base,
          in.dram_base, in.y_size, in.x_size, in.x_stride, in.y_pad_0, in.y_pad_1, in.x_pad_0,
          in.x_pad_1, flags);
    case Opcode::kGemm:
    case Opcode::kAlu: {
      std::string s = fmt::format(
          "{}{} uops=[{},{}) iter={}x{} dst=({},{}) src=({},{})", hw::opcode_name(in.opcode),
          in.reset ? " reset" : "", in.uop_bgn, in.uop_end, in.iter_out, in.iter_in,
          in.dst_factor_out, in.dst_factor_in, in.src_factor_out, in.src_factor_in);
      if (in.opcode == Opcode::kGemm)
        return s + fmt::format(" wgt=({},{}){}", in.wgt_factor_out, in.wgt_factor_in, flags);
      if (in.use_imm)
        return s + fmt::format(" {} imm={}{}", hw::alu_op_name(in.alu_opcode), in.imm, flags);
      return s + fmt::format(" {} acc{}", hw::alu_op_name(in.alu_opcode), flags);
    }
    case Opcode::kFinish: return "finish" + flags;
  }
  return "?";
}

}  // namespace kiln::sim::testing
