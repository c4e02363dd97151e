// match_dma: each DMA region's elements become one 2D transfer (rows of contiguous
// scratchpad elements from rows of DRAM elements a stride apart, loads with zero
// padding on the four sides), or, where that cannot express them, the transfers of
// its parts (the iterations of its loop, the statements of its sequence), down to one
// row at a time.
#include <fmt/format.h>

#include <algorithm>

#include "backend-vta/passes/passes.h"
#include "support/integer.h"

namespace kiln::vta::passes {

namespace {

class DmaMatcher {
 public:
  DmaMatcher(const Env& env, InsnFunc& fn) : env_(env), fn_(fn), layout_(env.config()) {}

  void run() {
    std::vector<Insn> out;
    out.reserve(fn_.insns.size());
    for (Insn& x : fn_.insns) {
      if (x.kind != Insn::Kind::kLoad && x.kind != Insn::Kind::kStore) {
        out.push_back(std::move(x));
        continue;
      }
      check_width(x);
      match(x, x.split, out);
    }
    fn_.insns = std::move(out);
  }

 private:
  // The ISA loads ACC only from accumulator-width data, INP and WGT from theirs.
  void check_width(const Insn& x) const {
    if (x.kind != Insn::Kind::kLoad) return;
    const hw::Config& c = env_.config();
    int want = x.mem == hw::MemType::kInp ? c.inp_width() : x.mem == hw::MemType::kWgt ? c.wgt_width() : c.acc_width();
    const ProgramArg& a = fn_.program.args()[static_cast<size_t>(x.arg)];
    if (a.bits != want)
      fn_.fail(fmt::format("'{}' is int{}, a {} load (into '{}') needs int{}", a.name, a.bits, hw::mem_type_name(x.mem),
                           fn_.tensors[static_cast<size_t>(x.tensor)].name, want));
  }

  void match(const Insn& x, const DmaPart& part, std::vector<Insn>& out) {
    if (part.begin == part.end) return;
    std::span<const DmaElem> el(x.elems.data() + part.begin, part.end - part.begin);
    ProgramOp op;
    bool ok = x.kind == Insn::Kind::kLoad ? fit_load(el, x.mem, &op) : fit_store(el, &op);
    if (ok) {
      op.arg = x.arg;
      Insn& t = out.emplace_back();
      t.kind = x.kind;
      t.stage = x.stage;
      t.region = x.region;
      t.source = part.body;
      t.tensor = x.tensor;
      t.mem = x.mem;
      t.arg = x.arg;
      t.dma_elems = static_cast<int64_t>(el.size());
      t.op = op;
      return;
    }
    if (!part.splittable) {
      fn_.fail(fmt::format("the copy '{}' ({} '{}') is not a 2D transfer, even one row at a time", brief(part.body),
                           x.kind == Insn::Kind::kLoad ? "into" : "from",
                           fn_.tensors[static_cast<size_t>(x.tensor)].name));
    }
    for (const DmaPart& p : part.parts) match(x, p, out);
  }

  bool fit_load(std::span<const DmaElem> el, hw::MemType mem, ProgramOp* out) const {
    int64_t n = static_cast<int64_t>(el.size());
    for (int64_t i = 0; i < n; ++i)
      if (el[i].spad != el[0].spad + i) return false;
    int64_t max_pad = layout_.field_max(hw::Opcode::kLoad, hw::Field::kYPad0);
    int64_t max_size = layout_.field_max(hw::Opcode::kLoad, hw::Field::kXSize);
    int64_t max_rows = layout_.field_max(hw::Opcode::kLoad, hw::Field::kYSize);
    int64_t max_stride = layout_.field_max(hw::Opcode::kLoad, hw::Field::kXStride);
    std::vector<int64_t> ds = divisors(n);
    for (auto it = ds.rbegin(); it != ds.rend(); ++it) {
      int64_t r = *it, rows = n / r;
      auto row_pad = [&](int64_t y) {
        for (int64_t x = 0; x < r; ++x)
          if (!el[y * r + x].pad) return false;
        return true;
      };
      int64_t y0 = 0, y1 = 0;
      while (y0 < rows && row_pad(y0)) ++y0;
      if (y0 == rows) continue;
      while (row_pad(rows - 1 - y1)) ++y1;
      int64_t x0 = 0;
      while (el[y0 * r + x0].pad) ++x0;
      int64_t xs = 0;
      while (x0 + xs < r && !el[y0 * r + x0 + xs].pad) ++xs;
      int64_t x1 = r - x0 - xs;
      int64_t ys = rows - y0 - y1;
      int64_t src0 = el[y0 * r + x0].dram;
      int64_t stride = ys > 1 ? el[(y0 + 1) * r + x0].dram - src0 : xs;
      if (y0 > max_pad || y1 > max_pad || x0 > max_pad || x1 > max_pad || xs > max_size || ys > max_rows ||
          stride < 0 || stride > max_stride)
        continue;
      bool good = true;
      for (int64_t y = 0; y < rows && good; ++y)
        for (int64_t x = 0; x < r; ++x) {
          const DmaElem& e = el[y * r + x];
          bool inside = y >= y0 && y < y0 + ys && x >= x0 && x < x0 + xs;
          if (inside != !e.pad || (inside && e.dram != src0 + (y - y0) * stride + (x - x0))) {
            good = false;
            break;
          }
        }
      if (!good) continue;
      out->kind = ProgramOp::Kind::kLoad;
      out->mem = mem;
      out->sram = static_cast<uint32_t>(el[0].spad);
      out->dram_elem = static_cast<uint64_t>(src0);
      out->y_size = static_cast<uint32_t>(ys);
      out->x_size = static_cast<uint32_t>(xs);
      out->x_stride = static_cast<uint32_t>(stride);
      out->pad = runtime::Pad{static_cast<uint32_t>(y0), static_cast<uint32_t>(y1), static_cast<uint32_t>(x0),
                              static_cast<uint32_t>(x1)};
      return true;
    }
    return false;
  }

  bool fit_store(std::span<const DmaElem> el, ProgramOp* out) const {
    int64_t n = static_cast<int64_t>(el.size());
    for (int64_t i = 0; i < n; ++i)
      if (el[i].spad != el[0].spad + i) return false;
    int64_t max_size = layout_.field_max(hw::Opcode::kStore, hw::Field::kXSize);
    int64_t max_stride = layout_.field_max(hw::Opcode::kStore, hw::Field::kXStride);
    std::vector<int64_t> ds = divisors(n);
    for (auto it = ds.rbegin(); it != ds.rend(); ++it) {
      int64_t r = *it, rows = n / r;
      if (r > max_size) continue;
      int64_t stride = rows > 1 ? el[r].dram - el[0].dram : r;
      if (stride < 0 || stride > max_stride) continue;
      bool good = true;
      for (int64_t y = 0; y < rows && good; ++y)
        for (int64_t x = 0; x < r; ++x)
          if (el[y * r + x].dram != el[0].dram + y * stride + x) {
            good = false;
            break;
          }
      if (!good) continue;
      out->kind = ProgramOp::Kind::kStore;
      out->mem = hw::MemType::kOut;
      out->sram = static_cast<uint32_t>(el[0].spad);
      out->dram_elem = static_cast<uint64_t>(el[0].dram);
      out->y_size = static_cast<uint32_t>(rows);
      out->x_size = static_cast<uint32_t>(r);
      out->x_stride = static_cast<uint32_t>(stride);
      return true;
    }
    return false;
  }

  const Env& env_;
  InsnFunc& fn_;
  hw::InsnLayout layout_;
};

}  // namespace

void match_dma(const Env& env, InsnFunc& fn) { DmaMatcher(env, fn).run(); }

}  // namespace kiln::vta::passes
