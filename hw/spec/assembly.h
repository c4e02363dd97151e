#pragma once
// Kiln's text assembly for the accelerator ISA (docs/isa.md): one instruction per
// line, a mnemonic (load, store, gemm, alu, finish) and then fields as name=value with
// the field names of shared/ISA.md; dependency flags by name; `#` starts a comment.
// Micro-ops sit in the same file as `uop dst_idx=.. src_idx=.. wgt_idx=..` lines and go
// to their own blob, since they are data loaded by LOAD UOP, not instructions.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/spec/config.h"
#include "hw/spec/isa.h"

namespace kiln::hw {

struct AsmProgram {
  std::vector<Insn> insns;
  std::vector<Uop> uops;
};

// Parses assembly text. Errors throw hw::Error as "SOURCE:LINE: message", naming the
// field and its valid range when a value does not fit the configuration's layout.
AsmProgram assemble(std::string_view text, const Config& cfg, std::string_view source = "<asm>");

// One line per instruction / micro-op, in the syntax assemble() reads back exactly.
std::string disassemble_insn(const Insn& insn, const InsnLayout& layout);
std::string disassemble(std::span<const Insn> insns, const Config& cfg);
std::string disassemble_uops(std::span<const Uop> uops);

}  // namespace kiln::hw
