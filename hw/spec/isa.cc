#include "hw/spec/isa.h"

#include <fmt/format.h>

#include "hw/spec/error.h"

namespace kiln::hw {

std::string_view opcode_name(Opcode op) {
  switch (op) {
    case Opcode::kLoad: return "load";
    case Opcode::kStore: return "store";
    case Opcode::kGemm: return "gemm";
    case Opcode::kFinish: return "finish";
    case Opcode::kAlu: return "alu";
  }
  return "?";
}

std::string_view mem_type_name(MemType m) {
  switch (m) {
    case MemType::kUop: return "uop";
    case MemType::kWgt: return "wgt";
    case MemType::kInp: return "inp";
    case MemType::kAcc: return "acc";
    case MemType::kOut: return "out";
  }
  return "?";
}

int mem_elem_bytes(const Config& cfg, MemType m) {
  switch (m) {
    case MemType::kUop: return cfg.uop_elem_bytes();
    case MemType::kWgt: return cfg.wgt_elem_bytes();
    case MemType::kInp: return cfg.inp_elem_bytes();
    case MemType::kAcc: return cfg.acc_elem_bytes();
    case MemType::kOut: return cfg.out_elem_bytes();
  }
  return 1;
}

uint32_t mem_depth(const Config& cfg, MemType m) {
  switch (m) {
    case MemType::kUop: return cfg.uop_depth();
    case MemType::kWgt: return cfg.wgt_depth();
    case MemType::kInp: return cfg.inp_depth();
    case MemType::kAcc: return cfg.acc_depth();
    case MemType::kOut: return cfg.out_depth();
  }
  return 0;
}

std::string_view module_name(Module m) {
  switch (m) {
    case Module::kLoad: return "load";
    case Module::kCompute: return "compute";
    case Module::kStore: return "store";
  }
  return "?";
}

Module module_of(Opcode op, MemType memory_type) {
  switch (op) {
    case Opcode::kLoad:
      return memory_type == MemType::kInp || memory_type == MemType::kWgt ? Module::kLoad
                                                                          : Module::kCompute;
    case Opcode::kStore: return Module::kStore;
    case Opcode::kGemm:
    case Opcode::kAlu:
    case Opcode::kFinish: return Module::kCompute;
  }
  return Module::kCompute;
}

Insn noop_insn(Module m) {
  Insn insn;  // x_size 0
  insn.opcode = m == Module::kStore ? Opcode::kStore : Opcode::kLoad;
  insn.memory_type = m == Module::kLoad    ? MemType::kInp
                     : m == Module::kStore ? MemType::kOut
                                           : MemType::kUop;
  return insn;
}

std::string_view token_queue_name(TokenQueue t) {
  switch (t) {
    case TokenQueue::kLoadToCompute: return "load->compute";
    case TokenQueue::kComputeToLoad: return "compute->load";
    case TokenQueue::kComputeToStore: return "compute->store";
    case TokenQueue::kStoreToCompute: return "store->compute";
  }
  return "?";
}

std::optional<TokenQueue> token_queue(Module from, Module to) {
  using M = Module;
  if (from == M::kLoad && to == M::kCompute) return TokenQueue::kLoadToCompute;
  if (from == M::kCompute && to == M::kLoad) return TokenQueue::kComputeToLoad;
  if (from == M::kCompute && to == M::kStore) return TokenQueue::kComputeToStore;
  if (from == M::kStore && to == M::kCompute) return TokenQueue::kStoreToCompute;
  return std::nullopt;
}

TokenLinks token_links(Module m) {
  // prev of module k is k - 1, next is k + 1 (where they exist).
  auto neighbour = [m](int step) -> std::optional<Module> {
    int k = static_cast<int>(m) + step;
    if (k < 0 || k >= kNumModules) return std::nullopt;
    return static_cast<Module>(k);
  };
  auto queue = [](std::optional<Module> from, std::optional<Module> to) -> std::optional<TokenQueue> {
    if (!from || !to) return std::nullopt;
    return token_queue(*from, *to);
  };
  std::optional<Module> prev = neighbour(-1), next = neighbour(+1), self = m;
  return {queue(prev, self), queue(next, self), queue(self, prev), queue(self, next)};
}

std::string_view alu_op_name(AluOp op) {
  switch (op) {
    case AluOp::kMin: return "min";
    case AluOp::kMax: return "max";
    case AluOp::kAdd: return "add";
    case AluOp::kShr: return "shr";
    case AluOp::kMul: return "mul";
  }
  return "?";
}

namespace {

template <class E, size_t N>
std::string value_list(const std::array<E, N>& values, std::string_view (*name)(E)) {
  std::string out;
  for (E v : values)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name(v), static_cast<int>(v));
  return out;
}

}  // namespace

std::string opcode_list() { return value_list(kOpcodes, opcode_name); }
std::string mem_type_list() { return value_list(kMemTypes, mem_type_name); }
std::string alu_op_list() { return value_list(kAluOps, alu_op_name); }

int64_t get_field(const Insn& i, Field f) {
  switch (f) {
    case Field::kOpcode: return static_cast<int64_t>(i.opcode);
    case Field::kPopPrevDep: return i.pop_prev_dep;
    case Field::kPopNextDep: return i.pop_next_dep;
    case Field::kPushPrevDep: return i.push_prev_dep;
    case Field::kPushNextDep: return i.push_next_dep;
    case Field::kMemoryType: return static_cast<int64_t>(i.memory_type);
    case Field::kSramBase: return i.sram_base;
    case Field::kDramBase: return i.dram_base;
    case Field::kYSize: return i.y_size;
    case Field::kXSize: return i.x_size;
    case Field::kXStride: return i.x_stride;
    case Field::kYPad0: return i.y_pad_0;
    case Field::kYPad1: return i.y_pad_1;
    case Field::kXPad0: return i.x_pad_0;
    case Field::kXPad1: return i.x_pad_1;
    case Field::kReset: return i.reset;
    case Field::kUopBgn: return i.uop_bgn;
    case Field::kUopEnd: return i.uop_end;
    case Field::kIterOut: return i.iter_out;
    case Field::kIterIn: return i.iter_in;
    case Field::kDstFactorOut: return i.dst_factor_out;
    case Field::kDstFactorIn: return i.dst_factor_in;
    case Field::kSrcFactorOut: return i.src_factor_out;
    case Field::kSrcFactorIn: return i.src_factor_in;
    case Field::kWgtFactorOut: return i.wgt_factor_out;
    case Field::kWgtFactorIn: return i.wgt_factor_in;
    case Field::kAluOpcode: return static_cast<int64_t>(i.alu_opcode);
    case Field::kUseImm: return i.use_imm;
    case Field::kImm: return i.imm;
  }
  return 0;
}

// Values are stored as given; encode() checks that they fit their field.
void set_field(Insn& i, Field f, int64_t v) {
  auto u = static_cast<uint32_t>(v);
  switch (f) {
    case Field::kOpcode: i.opcode = static_cast<Opcode>(v); break;
    case Field::kPopPrevDep: i.pop_prev_dep = v != 0; break;
    case Field::kPopNextDep: i.pop_next_dep = v != 0; break;
    case Field::kPushPrevDep: i.push_prev_dep = v != 0; break;
    case Field::kPushNextDep: i.push_next_dep = v != 0; break;
    case Field::kMemoryType: i.memory_type = static_cast<MemType>(v); break;
    case Field::kSramBase: i.sram_base = u; break;
    case Field::kDramBase: i.dram_base = u; break;
    case Field::kYSize: i.y_size = u; break;
    case Field::kXSize: i.x_size = u; break;
    case Field::kXStride: i.x_stride = u; break;
    case Field::kYPad0: i.y_pad_0 = u; break;
    case Field::kYPad1: i.y_pad_1 = u; break;
    case Field::kXPad0: i.x_pad_0 = u; break;
    case Field::kXPad1: i.x_pad_1 = u; break;
    case Field::kReset: i.reset = v != 0; break;
    case Field::kUopBgn: i.uop_bgn = u; break;
    case Field::kUopEnd: i.uop_end = u; break;
    case Field::kIterOut: i.iter_out = u; break;
    case Field::kIterIn: i.iter_in = u; break;
    case Field::kDstFactorOut: i.dst_factor_out = u; break;
    case Field::kDstFactorIn: i.dst_factor_in = u; break;
    case Field::kSrcFactorOut: i.src_factor_out = u; break;
    case Field::kSrcFactorIn: i.src_factor_in = u; break;
    case Field::kWgtFactorOut: i.wgt_factor_out = u; break;
    case Field::kWgtFactorIn: i.wgt_factor_in = u; break;
    case Field::kAluOpcode: i.alu_opcode = static_cast<AluOp>(v); break;
    case Field::kUseImm: i.use_imm = v != 0; break;
    case Field::kImm: i.imm = static_cast<int32_t>(v); break;
  }
}

namespace {

struct FieldDef {
  Field field;
  std::string_view name;
  int width;
  bool is_signed = false;
};

// Lays fields from bit 0 upwards; a field that does not fit in what is left of the
// current 64-bit word starts at bit 0 of the next (the uint64_t bit-field rule).
std::vector<FieldSpec> pack(std::string_view format, const std::vector<FieldDef>& defs) {
  std::vector<FieldSpec> out;
  int pos = 0;
  for (const FieldDef& d : defs) {
    if (pos % 64 + d.width > 64) pos = (pos / 64 + 1) * 64;
    if (pos + d.width > 128) {
      throw Error(fmt::format("the {} instruction does not fit in 128 bits: field {} ({} bits) "
                              "would end at bit {}",
                              format, d.name, d.width, pos + d.width - 1));
    }
    out.push_back({d.field, d.name, d.width, pos, d.is_signed});
    pos += d.width;
  }
  return out;
}

std::vector<FieldDef> common_fields() {
  return {{Field::kOpcode, "opcode", 3},
          {Field::kPopPrevDep, "pop_prev_dep", 1},
          {Field::kPopNextDep, "pop_next_dep", 1},
          {Field::kPushPrevDep, "push_prev_dep", 1},
          {Field::kPushNextDep, "push_next_dep", 1}};
}

uint64_t extract(const InsnBits& bits, int lsb, int width) {
  uint64_t word = bits[lsb / 64] >> (lsb % 64);
  return width == 64 ? word : word & ((uint64_t{1} << width) - 1);
}

void deposit(InsnBits& bits, int lsb, int width, uint64_t value) {
  uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  bits[lsb / 64] |= (value & mask) << (lsb % 64);
}

}  // namespace

InsnLayout::InsnLayout(const Config& cfg)
    : uop_dst_width_(cfg.uop_dst_width()),
      uop_src_width_(cfg.uop_src_width()),
      uop_wgt_width_(cfg.uop_wgt_width()) {
  std::vector<FieldDef> mem = common_fields();
  mem.insert(mem.end(), {{Field::kMemoryType, "memory_type", 3},
                         {Field::kSramBase, "sram_base", 16},
                         {Field::kDramBase, "dram_base", 32},
                         {Field::kYSize, "y_size", 16},
                         {Field::kXSize, "x_size", 16},
                         {Field::kXStride, "x_stride", 16},
                         {Field::kYPad0, "y_pad_0", 4},
                         {Field::kYPad1, "y_pad_1", 4},
                         {Field::kXPad0, "x_pad_0", 4},
                         {Field::kXPad1, "x_pad_1", 4}});
  std::vector<FieldDef> loop = common_fields();
  loop.insert(loop.end(), {{Field::kReset, "reset", 1},
                           {Field::kUopBgn, "uop_bgn", cfg.log_uop_depth()},
                           {Field::kUopEnd, "uop_end", cfg.log_uop_depth() + 1},
                           {Field::kIterOut, "iter_out", 14},
                           {Field::kIterIn, "iter_in", 14},
                           {Field::kDstFactorOut, "dst_factor_out", cfg.log_acc_depth()},
                           {Field::kDstFactorIn, "dst_factor_in", cfg.log_acc_depth()}});
  std::vector<FieldDef> gemm = loop;
  gemm.insert(gemm.end(), {{Field::kSrcFactorOut, "src_factor_out", cfg.log_inp_depth()},
                           {Field::kSrcFactorIn, "src_factor_in", cfg.log_inp_depth()},
                           {Field::kWgtFactorOut, "wgt_factor_out", cfg.log_wgt_depth()},
                           {Field::kWgtFactorIn, "wgt_factor_in", cfg.log_wgt_depth()}});
  std::vector<FieldDef> alu = loop;
  alu.insert(alu.end(), {{Field::kSrcFactorOut, "src_factor_out", cfg.log_acc_depth()},
                         {Field::kSrcFactorIn, "src_factor_in", cfg.log_acc_depth()},
                         {Field::kAluOpcode, "alu_opcode", 3},
                         {Field::kUseImm, "use_imm", 1},
                         {Field::kImm, "imm", 16, true}});
  mem_ = pack("LOAD/STORE", mem);
  gemm_ = pack("GEMM", gemm);
  alu_ = pack("ALU", alu);
  finish_ = pack("FINISH", common_fields());
}

InsnLayout::Format InsnLayout::format_of(Opcode op) {
  switch (op) {
    case Opcode::kLoad:
    case Opcode::kStore: return Format::kMem;
    case Opcode::kGemm: return Format::kGemm;
    case Opcode::kAlu: return Format::kAlu;
    case Opcode::kFinish: return Format::kFinish;
  }
  throw Error(fmt::format("unknown opcode {}", static_cast<int>(op)));
}

std::span<const FieldSpec> InsnLayout::fields(Format f) const {
  switch (f) {
    case Format::kMem: return mem_;
    case Format::kGemm: return gemm_;
    case Format::kAlu: return alu_;
    case Format::kFinish: return finish_;
  }
  return {};
}

int64_t InsnLayout::field_max(Opcode op, Field f) const {
  for (const FieldSpec& spec : fields(op))
    if (spec.field == f) return spec.max();
  throw Error(fmt::format("field_max: {} has no such field", opcode_name(op)));
}

InsnBits InsnLayout::encode(const Insn& insn) const {
  InsnBits bits{0, 0};
  for (const FieldSpec& f : fields(insn.opcode)) {
    int64_t v = get_field(insn, f.field);
    if (v < f.min() || v > f.max()) {
      throw Error(fmt::format("{}: field {} = {} does not fit its {} bits (valid {} to {})",
                              opcode_name(insn.opcode), f.name, v, f.width, f.min(), f.max()));
    }
    deposit(bits, f.lsb, f.width, static_cast<uint64_t>(v));
  }
  return bits;
}

Insn InsnLayout::header(const InsnBits& bits) const {
  Insn insn;
  auto read = [&](const FieldSpec& f) {
    set_field(insn, f.field, static_cast<int64_t>(extract(bits, f.lsb, f.width)));
  };
  for (const FieldSpec& f : finish_) read(f);
  for (const FieldSpec& f : mem_)
    if (f.field == Field::kMemoryType) read(f);
  return insn;
}

Insn InsnLayout::decode(const InsnBits& bits) const {
  Insn head = header(bits);
  auto op = head.opcode;
  if (static_cast<size_t>(op) >= kOpcodes.size())
    throw Error(fmt::format("unknown opcode {} (valid: {})", static_cast<int>(op), opcode_list()));
  Insn insn;
  InsnBits used{0, 0};
  for (const FieldSpec& f : fields(op)) {
    uint64_t raw = extract(bits, f.lsb, f.width);
    int64_t v = static_cast<int64_t>(raw);
    if (f.is_signed && (raw >> (f.width - 1)) & 1) v -= int64_t{1} << f.width;
    set_field(insn, f.field, v);
    deposit(used, f.lsb, f.width, ~uint64_t{0});
  }
  for (int w = 0; w < 2; ++w) {
    uint64_t stray = bits[w] & ~used[w];
    if (stray != 0) {
      int bit = w * 64 + __builtin_ctzll(stray);
      throw Error(fmt::format("{}: bit {} is set but belongs to no field of the format",
                              opcode_name(op), bit));
    }
  }
  if (format_of(op) == Format::kMem && static_cast<size_t>(insn.memory_type) >= kMemTypes.size()) {
    throw Error(fmt::format("{}: memory_type {} is not one of {}", opcode_name(op),
                            static_cast<int>(insn.memory_type), mem_type_list()));
  }
  if (op == Opcode::kAlu && static_cast<size_t>(insn.alu_opcode) >= kAluOps.size()) {
    throw Error(fmt::format("alu: alu_opcode {} is not one of {}",
                            static_cast<int>(insn.alu_opcode), alu_op_list()));
  }
  return insn;
}

uint32_t InsnLayout::encode_uop(const Uop& u) const {
  auto check = [](std::string_view name, uint32_t v, int width) {
    if (v >> width) {
      throw Error(fmt::format("uop: field {} = {} does not fit its {} bits (valid 0 to {})", name,
                              v, width, (1u << width) - 1));
    }
  };
  check("dst_idx", u.dst_idx, uop_dst_width_);
  check("src_idx", u.src_idx, uop_src_width_);
  check("wgt_idx", u.wgt_idx, uop_wgt_width_);
  return u.dst_idx | (u.src_idx << uop_dst_width_) |
         (u.wgt_idx << (uop_dst_width_ + uop_src_width_));
}

Uop InsnLayout::decode_uop(uint32_t bits) const {
  int used = uop_dst_width_ + uop_src_width_ + uop_wgt_width_;
  if (used < 32 && (bits >> used) != 0) {
    throw Error(fmt::format("uop: bits above bit {} are set but belong to no field", used - 1));
  }
  auto take = [&](int lsb, int width) { return (bits >> lsb) & ((1u << width) - 1); };
  return {take(0, uop_dst_width_), take(uop_dst_width_, uop_src_width_),
          take(uop_dst_width_ + uop_src_width_, uop_wgt_width_)};
}

std::vector<uint8_t> encode_program(const InsnLayout& layout, std::span<const Insn> insns) {
  std::vector<uint8_t> out(insns.size() * kInsnBytes);
  for (size_t n = 0; n < insns.size(); ++n) {
    InsnBits bits;
    try {
      bits = layout.encode(insns[n]);
    } catch (const Error& e) {
      throw Error(fmt::format("instruction {}: {}", n, e.what()));
    }
    for (int b = 0; b < kInsnBytes; ++b) out[n * kInsnBytes + b] = bits[b / 8] >> (8 * (b % 8));
  }
  return out;
}

std::vector<Insn> decode_program(const InsnLayout& layout, std::span<const uint8_t> bytes) {
  if (bytes.size() % kInsnBytes != 0) {
    throw Error(fmt::format("a program is a whole number of 16-byte instructions; {} bytes "
                            "leave {} over",
                            bytes.size(), bytes.size() % kInsnBytes));
  }
  std::vector<Insn> insns;
  for (size_t n = 0; n < bytes.size() / kInsnBytes; ++n) {
    InsnBits bits{0, 0};
    for (int b = 0; b < kInsnBytes; ++b)
      bits[b / 8] |= uint64_t{bytes[n * kInsnBytes + b]} << (8 * (b % 8));
    try {
      insns.push_back(layout.decode(bits));
    } catch (const Error& e) {
      throw Error(fmt::format("instruction {} (byte offset {}): {}", n, n * kInsnBytes, e.what()));
    }
  }
  return insns;
}

std::vector<uint8_t> encode_uops(const InsnLayout& layout, std::span<const Uop> uops) {
  std::vector<uint8_t> out(uops.size() * 4);
  for (size_t n = 0; n < uops.size(); ++n) {
    uint32_t v;
    try {
      v = layout.encode_uop(uops[n]);
    } catch (const Error& e) {
      throw Error(fmt::format("micro-op {}: {}", n, e.what()));
    }
    for (int b = 0; b < 4; ++b) out[n * 4 + b] = static_cast<uint8_t>(v >> (8 * b));
  }
  return out;
}

std::vector<Uop> decode_uops(const InsnLayout& layout, std::span<const uint8_t> bytes) {
  if (bytes.size() % 4 != 0)
    throw Error(fmt::format("a micro-op blob is a whole number of 4-byte micro-ops; got {} bytes",
                            bytes.size()));
  std::vector<Uop> uops;
  for (size_t n = 0; n < bytes.size() / 4; ++n) {
    uint32_t v = 0;
    for (int b = 0; b < 4; ++b) v |= uint32_t{bytes[n * 4 + b]} << (8 * b);
    uops.push_back(layout.decode_uop(v));
  }
  return uops;
}

}  // namespace kiln::hw
