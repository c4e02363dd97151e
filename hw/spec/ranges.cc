#include "hw/spec/ranges.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "hw/spec/assembly.h"
#include "hw/spec/error.h"

namespace kiln::hw {

namespace {

bool is_noop(const Insn& in) {
  switch (in.opcode) {
    case Opcode::kLoad:
    case Opcode::kStore: return in.x_size == 0 || in.y_size == 0;
    case Opcode::kGemm:
    case Opcode::kAlu: return in.uop_end <= in.uop_bgn || in.iter_out == 0 || in.iter_in == 0;
    case Opcode::kFinish: return true;
  }
  return true;
}

// The block a LOAD writes, padding included: its rows and columns.
uint64_t load_rows(const Insn& in) { return uint64_t{in.y_pad_0} + in.y_size + in.y_pad_1; }
uint64_t load_cols(const Insn& in) { return uint64_t{in.x_pad_0} + in.x_size + in.x_pad_1; }

Uop uop_at(std::span<const Uop> uops, uint32_t k) { return k < uops.size() ? uops[k] : Uop{}; }

// One loop operand of GEMM or ALU: a micro-op field, its two factors and its buffer.
struct Operand {
  const char* name;  // "dst", "src", "wgt": fsim's words
  uint32_t Uop::*field;
  uint32_t Insn::*factor_out;
  uint32_t Insn::*factor_in;
  MemType buffer;
};

constexpr Operand kDst = {"dst", &Uop::dst_idx, &Insn::dst_factor_out, &Insn::dst_factor_in,
                          MemType::kAcc};
constexpr Operand kGemmSrc = {"src", &Uop::src_idx, &Insn::src_factor_out, &Insn::src_factor_in,
                              MemType::kInp};
constexpr Operand kGemmWgt = {"wgt", &Uop::wgt_idx, &Insn::wgt_factor_out, &Insn::wgt_factor_in,
                              MemType::kWgt};
constexpr Operand kAluSrc = {"src", &Uop::src_idx, &Insn::src_factor_out, &Insn::src_factor_in,
                             MemType::kAcc};
constexpr Operand kGemmOperands[] = {kDst, kGemmSrc, kGemmWgt};
constexpr Operand kAluOperands[] = {kDst, kAluSrc};

// The operands an instruction reads, in the order fsim checks them for one micro-op: a
// reset only clears dst, an ALU with an immediate reads no src.
std::span<const Operand> operands(const Insn& in) {
  if (in.reset || (in.opcode == Opcode::kAlu && in.use_imm)) return {&kDst, 1};
  if (in.opcode == Opcode::kGemm) return kGemmOperands;
  return kAluOperands;
}

// The first (i, j), i outer, at which base + i*fo + j*fi reaches `depth`, for i below
// iter_out and j below iter_in (both at least 1). Factors are unsigned, so a row's largest
// index is its last and the rows' largest indices grow with i: O(1), not a loop.
std::optional<std::pair<uint64_t, uint64_t>> first_beyond(uint64_t base, uint64_t iter_out,
                                                          uint64_t fo, uint64_t iter_in,
                                                          uint64_t fi, uint64_t depth) {
  uint64_t i = 0;
  uint64_t row0_top = base + (iter_in - 1) * fi;
  if (row0_top < depth) {
    if (fo == 0) return std::nullopt;
    i = (depth - row0_top + fo - 1) / fo;
    if (i >= iter_out) return std::nullopt;
  }
  uint64_t start = base + i * fo;
  // start < depth implies fi > 0: row i's last index reaches depth.
  uint64_t j = start >= depth ? 0 : (depth - start + fi - 1) / fi;
  return std::pair{i, j};
}

std::optional<RangeViolation> load_store_violation(const Config& cfg, const Insn& in) {
  if (in.opcode == Opcode::kStore) {
    uint64_t end = uint64_t{in.sram_base} + uint64_t{in.y_size} * in.x_size;
    uint32_t depth = cfg.out_depth();
    if (end <= depth) return std::nullopt;
    return RangeViolation{
        MemType::kOut, end - 1, depth,
        fmt::format("reads out elements {} to {} ({} x {}), but index {} is beyond the out "
                    "buffer's depth {}",
                    in.sram_base, end - 1, in.y_size, in.x_size, end - 1, depth)};
  }
  uint64_t rows = load_rows(in), cols = load_cols(in);
  uint64_t end = uint64_t{in.sram_base} + rows * cols;
  uint32_t depth = mem_depth(cfg, in.memory_type);
  if (end <= depth) return std::nullopt;
  std::string_view m = mem_type_name(in.memory_type);
  return RangeViolation{in.memory_type, end - 1, depth,
                        fmt::format("writes {} elements {} to {} ({} x {} with padding), but "
                                    "index {} is beyond the {} buffer's depth {}",
                                    m, in.sram_base, end - 1, rows, cols, end - 1, m, depth)};
}

std::optional<RangeViolation> loop_violation(const Config& cfg, const Insn& in,
                                             std::span<const Uop> uops) {
  if (in.uop_end > cfg.uop_depth()) {
    // The first micro-op the loop would read past the end.
    uint32_t idx = std::max(in.uop_bgn, cfg.uop_depth());
    return RangeViolation{MemType::kUop, idx, cfg.uop_depth(),
                          fmt::format("micro-op range [{}, {}) goes beyond the uop buffer's "
                                      "depth {} (micro-op index {})",
                                      in.uop_bgn, in.uop_end, cfg.uop_depth(), idx)};
  }
  // The earliest access in fsim's order: (i, j, k, operand).
  using Key = std::tuple<uint64_t, uint64_t, uint32_t, size_t>;
  std::optional<Key> first;
  const std::span<const Operand> ops = operands(in);
  for (uint32_t k = in.uop_bgn; k < in.uop_end; ++k) {
    const Uop u = uop_at(uops, k);
    for (size_t o = 0; o < ops.size(); ++o) {
      const Operand& op = ops[o];
      auto ij = first_beyond(u.*op.field, in.iter_out, in.*op.factor_out, in.iter_in,
                             in.*op.factor_in, mem_depth(cfg, op.buffer));
      if (!ij) continue;
      Key key{ij->first, ij->second, k, o};
      if (!first || key < *first) first = key;
    }
  }
  if (!first) return std::nullopt;
  auto [i, j, k, o] = *first;
  const Operand& op = ops[o];
  const uint64_t base = uop_at(uops, k).*op.field, fo = in.*op.factor_out,
                 fi = in.*op.factor_in;
  const uint64_t idx = base + i * fo + j * fi;
  const uint32_t depth = mem_depth(cfg, op.buffer);
  return RangeViolation{op.buffer, idx, depth,
                        fmt::format("{} index {} (micro-op {} + {}*{} + {}*{}) is beyond the {} "
                                    "buffer's depth {}",
                                    op.name, idx, base, i, fo, j, fi, mem_type_name(op.buffer),
                                    depth)};
}

}  // namespace

Footprint footprint(const Insn& in, std::span<const Uop> uops) {
  Footprint fp;
  if (is_noop(in)) return fp;
  switch (in.opcode) {
    case Opcode::kLoad:
      fp[in.memory_type] = uint64_t{in.sram_base} + load_rows(in) * load_cols(in) - 1;
      return fp;
    case Opcode::kStore:
      fp[MemType::kOut] = uint64_t{in.sram_base} + uint64_t{in.y_size} * in.x_size - 1;
      return fp;
    case Opcode::kGemm:
    case Opcode::kAlu: break;
    case Opcode::kFinish: return fp;
  }
  fp[MemType::kUop] = in.uop_end - 1u;
  const uint64_t last_i = in.iter_out - 1u, last_j = in.iter_in - 1u;
  for (const Operand& op : operands(in)) {
    std::optional<uint64_t>& top = fp[op.buffer];
    for (uint32_t k = in.uop_bgn; k < in.uop_end; ++k) {
      uint64_t idx = uop_at(uops, k).*op.field + last_i * (in.*op.factor_out) +
                     last_j * (in.*op.factor_in);
      top = std::max(top.value_or(0), idx);
    }
  }
  return fp;
}

std::optional<RangeViolation> first_out_of_range(const Config& cfg, const Insn& in,
                                                 std::span<const Uop> uops) {
  if (is_noop(in)) return std::nullopt;
  switch (in.opcode) {
    case Opcode::kLoad:
    case Opcode::kStore: return load_store_violation(cfg, in);
    case Opcode::kGemm:
    case Opcode::kAlu: return loop_violation(cfg, in, uops);
    case Opcode::kFinish: break;
  }
  return std::nullopt;
}

StreamRangeCheck::StreamRangeCheck(const Config& cfg)
    : cfg_(cfg), layout_(cfg), uops_(cfg.uop_depth()) {}

void StreamRangeCheck::check(std::span<const Insn> insns, const DramReader& read) {
  // Copied on the first LOAD UOP only: most streams load none, and a refused stream must
  // leave the buffer as it was.
  std::vector<Uop> loaded;
  for (size_t n = 0; n < insns.size(); ++n) {
    const Insn& in = insns[n];
    std::span<const Uop> now = loaded.empty() ? std::span<const Uop>(uops_) : loaded;
    if (auto v = first_out_of_range(cfg_, in, now)) {
      throw Error(fmt::format("instruction #{} ({}): {}", n, disassemble_insn(in, layout_),
                              v->message));
    }
    if (in.opcode == Opcode::kLoad && in.memory_type == MemType::kUop && !is_noop(in)) {
      if (loaded.empty()) loaded = uops_;
      load_uops(in, read, loaded);
    }
  }
  if (!loaded.empty()) uops_ = std::move(loaded);
}

void StreamRangeCheck::load_uops(const Insn& in, const DramReader& read,
                                 std::vector<Uop>& uops) const {
  const uint64_t cols = load_cols(in);
  // The RTL keeps a micro-op's field bits and ignores the rest (fsim refuses such a
  // micro-op when it loads it), so the fields are decoded from those bits alone.
  const int bits = layout_.uop_dst_width() + layout_.uop_src_width() + layout_.uop_wgt_width();
  const uint32_t mask = bits >= 32 ? ~0u : (1u << bits) - 1;
  std::vector<uint8_t> row(size_t{in.x_size} * Config::kUopElemBytes);
  for (uint64_t r = 0; r < load_rows(in); ++r) {
    uint64_t first = in.sram_base + r * cols;
    // Padding writes zero micro-ops (fsim refuses a padded LOAD UOP; zero is the least).
    std::fill_n(uops.begin() + static_cast<std::ptrdiff_t>(first), cols, Uop{});
    if (r < in.y_pad_0 || r >= in.y_pad_0 + uint64_t{in.y_size}) continue;
    uint64_t elem = uint64_t{in.dram_base} + (r - in.y_pad_0) * in.x_stride;
    uint64_t addr = elem * Config::kUopElemBytes;
    // A row outside DRAM stays zero: the device refuses the access when it runs it.
    if (!read(addr, row)) continue;
    for (uint32_t c = 0; c < in.x_size; ++c) {
      uint32_t word = 0;
      for (int b = 0; b < Config::kUopElemBytes; ++b)
        word |= uint32_t{row[size_t{c} * Config::kUopElemBytes + b]} << (8 * b);
      uops[first + in.x_pad_0 + c] = layout_.decode_uop(word & mask);
    }
  }
}

void StreamRangeCheck::forget() { std::fill(uops_.begin(), uops_.end(), Uop{}); }

}  // namespace kiln::hw
