#pragma once
// The accelerator's instruction set (shared/ISA.md): instructions, micro-ops, their
// bit layouts derived from a Config, and encode/decode. One field table per format
// drives encoding, decoding, the assembler, the disassembler and the RTL parameters.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/spec/config.h"

namespace kiln::hw {

enum class Opcode : uint8_t { kLoad = 0, kStore = 1, kGemm = 2, kFinish = 3, kAlu = 4 };
enum class MemType : uint8_t { kUop = 0, kWgt = 1, kInp = 2, kAcc = 3, kOut = 4 };
enum class AluOp : uint8_t { kMin = 0, kMax = 1, kAdd = 2, kShr = 3, kMul = 4 };
// Every value of each, in encoding order (the generated RTL package's enums list these).
inline constexpr std::array kOpcodes = {Opcode::kLoad, Opcode::kStore, Opcode::kGemm,
                                        Opcode::kFinish, Opcode::kAlu};
inline constexpr std::array kMemTypes = {MemType::kUop, MemType::kWgt, MemType::kInp,
                                         MemType::kAcc, MemType::kOut};
inline constexpr std::array kAluOps = {AluOp::kMin, AluOp::kMax, AluOp::kAdd, AluOp::kShr,
                                       AluOp::kMul};

std::string_view opcode_name(Opcode op);    // "load", "store", "gemm", "finish", "alu"
std::string_view mem_type_name(MemType m);  // "uop", "wgt", "inp", "acc", "out"
std::string_view alu_op_name(AluOp op);     // "min", "max", "add", "shr", "mul"
// Every value with its encoding, for messages: "min 0, max 1, add 2, shr 3, mul 4".
std::string opcode_list();
std::string mem_type_list();
std::string alu_op_list();
// Bytes of one element of a buffer: the unit of a LOAD's or STORE's DRAM fields.
int mem_elem_bytes(const Config& cfg, MemType m);
// Elements a buffer holds (OUT shares ACC's index space).
uint32_t mem_depth(const Config& cfg, MemType m);

// The three modules behind fetch (shared/ISA.md, "Modules and tokens"), in the order
// of their token queues: tokens flow only between neighbours, and a module's "prev"
// is the one before it, its "next" the one after.
enum class Module : uint8_t { kLoad = 0, kCompute = 1, kStore = 2 };
inline constexpr int kNumModules = 3;
std::string_view module_name(Module m);  // "load", "compute", "store"
// The module whose queue fetch routes an instruction to: LOAD of INP or WGT to load,
// STORE to store, everything else (LOAD of UOP or ACC, GEMM, ALU, FINISH) to compute.
Module module_of(Opcode op, MemType memory_type);

// The four dependency-token queues.
enum class TokenQueue : uint8_t {
  kLoadToCompute = 0, kComputeToLoad = 1, kComputeToStore = 2, kStoreToCompute = 3,
};
inline constexpr int kNumTokenQueues = 4;
std::string_view token_queue_name(TokenQueue t);  // "load->compute", ...
// The queue tokens take from `from` to `to`; none unless the two are neighbours.
std::optional<TokenQueue> token_queue(Module from, Module to);
// The queues an instruction of module `m` pops and pushes through its four dependency
// flags; none where the module has no such neighbour (load has no prev, store no next).
struct TokenLinks {
  std::optional<TokenQueue> pop_prev, pop_next, push_prev, push_next;
};
TokenLinks token_links(Module m);

// One instruction with every field of every format; a format uses its own subset.
// Field names are exactly those of shared/ISA.md.
struct Insn {
  Opcode opcode = Opcode::kFinish;
  bool pop_prev_dep = false;
  bool pop_next_dep = false;
  bool push_prev_dep = false;
  bool push_next_dep = false;
  // LOAD / STORE
  MemType memory_type = MemType::kUop;
  uint32_t sram_base = 0;
  uint32_t dram_base = 0;
  uint32_t y_size = 0;
  uint32_t x_size = 0;
  uint32_t x_stride = 0;
  uint32_t y_pad_0 = 0;
  uint32_t y_pad_1 = 0;
  uint32_t x_pad_0 = 0;
  uint32_t x_pad_1 = 0;
  // GEMM / ALU
  bool reset = false;
  uint32_t uop_bgn = 0;
  uint32_t uop_end = 0;
  uint32_t iter_out = 0;
  uint32_t iter_in = 0;
  uint32_t dst_factor_out = 0;
  uint32_t dst_factor_in = 0;
  uint32_t src_factor_out = 0;
  uint32_t src_factor_in = 0;
  uint32_t wgt_factor_out = 0;  // GEMM only
  uint32_t wgt_factor_in = 0;   // GEMM only
  AluOp alu_opcode = AluOp::kMin;  // ALU only
  bool use_imm = false;            // ALU only
  int32_t imm = 0;                 // ALU only, int16

  bool operator==(const Insn&) const = default;
};

inline Module module_of(const Insn& insn) { return module_of(insn.opcode, insn.memory_type); }
// A LOAD or STORE of no elements that fetch routes to `m`: it only pops and pushes the
// tokens its dependency flags name.
Insn noop_insn(Module m);

// A micro-op: indices into ACC (dst), INP or ACC (src) and WGT (wgt).
struct Uop {
  uint32_t dst_idx = 0;
  uint32_t src_idx = 0;
  uint32_t wgt_idx = 0;
  bool operator==(const Uop&) const = default;
};

enum class Field : uint8_t {
  kOpcode, kPopPrevDep, kPopNextDep, kPushPrevDep, kPushNextDep,
  kMemoryType, kSramBase, kDramBase, kYSize, kXSize, kXStride, kYPad0, kYPad1, kXPad0, kXPad1,
  kReset, kUopBgn, kUopEnd, kIterOut, kIterIn,
  kDstFactorOut, kDstFactorIn, kSrcFactorOut, kSrcFactorIn, kWgtFactorOut, kWgtFactorIn,
  kAluOpcode, kUseImm, kImm,
};

// A field's place in the 128-bit instruction: bits [lsb + width - 1 : lsb].
struct FieldSpec {
  Field field;
  std::string_view name;
  int width;
  int lsb;
  bool is_signed;
  int64_t min() const { return is_signed ? -(int64_t{1} << (width - 1)) : 0; }
  int64_t max() const {
    return is_signed ? (int64_t{1} << (width - 1)) - 1 : (int64_t{1} << width) - 1;
  }
};

int64_t get_field(const Insn& insn, Field f);
void set_field(Insn& insn, Field f, int64_t value);

// The 128 bits of one instruction: word[0] is bits [63:0].
using InsnBits = std::array<uint64_t, 2>;

// The bit layouts of the four formats for one configuration (ISA.md's packing rule).
class InsnLayout {
 public:
  explicit InsnLayout(const Config& cfg);

  enum class Format { kMem, kGemm, kAlu, kFinish };
  static Format format_of(Opcode op);
  std::span<const FieldSpec> fields(Format f) const;
  std::span<const FieldSpec> fields(Opcode op) const { return fields(format_of(op)); }
  // The largest value field `f` of `op` holds; hw::Error when `op` has no such field.
  int64_t field_max(Opcode op, Field f) const;

  // Throws hw::Error naming the field when a value does not fit its width.
  InsnBits encode(const Insn& insn) const;
  // Throws hw::Error on an unknown opcode or bits set outside every field.
  Insn decode(const InsnBits& bits) const;
  // What fetch and the modules read of any 128 bits, checking nothing: the opcode, the
  // four dependency flags and the memory type (opcode and memory type may be values
  // no enumerator names; module_of routes those to compute, as fetch does).
  Insn header(const InsnBits& bits) const;

  int uop_dst_width() const { return uop_dst_width_; }
  int uop_src_width() const { return uop_src_width_; }
  int uop_wgt_width() const { return uop_wgt_width_; }
  uint32_t encode_uop(const Uop& uop) const;
  Uop decode_uop(uint32_t bits) const;

 private:
  std::vector<FieldSpec> mem_, gemm_, alu_, finish_;
  int uop_dst_width_, uop_src_width_, uop_wgt_width_;
};

// A program file (PROG.bin) is the raw instruction stream: 16 bytes per instruction,
// bits [63:0] first, little-endian. A micro-op blob is 4 bytes per micro-op.
inline constexpr int kInsnBytes = 16;
std::vector<uint8_t> encode_program(const InsnLayout& layout, std::span<const Insn> insns);
std::vector<Insn> decode_program(const InsnLayout& layout, std::span<const uint8_t> bytes);
std::vector<uint8_t> encode_uops(const InsnLayout& layout, std::span<const Uop> uops);
std::vector<Uop> decode_uops(const InsnLayout& layout, std::span<const uint8_t> bytes);

}  // namespace kiln::hw
