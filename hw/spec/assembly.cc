#include "hw/spec/assembly.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <set>

#include "hw/spec/error.h"

namespace kiln::hw {

namespace {

bool is_flag(Field f) {
  return f == Field::kPopPrevDep || f == Field::kPopNextDep || f == Field::kPushPrevDep ||
         f == Field::kPushNextDep;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<Opcode> parse_mnemonic(std::string_view word) {
  for (Opcode op : kOpcodes)
    if (lower(word) == opcode_name(op)) return op;
  return std::nullopt;
}

std::optional<int64_t> parse_integer(std::string_view s) {
  bool negative = !s.empty() && s[0] == '-';
  if (negative) s.remove_prefix(1);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || v > (uint64_t{1} << 62))
    return std::nullopt;
  return negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
}

// memory_type and alu_opcode take a name or a number.
std::optional<int64_t> parse_value(Field field, std::string_view s) {
  if (field == Field::kMemoryType) {
    for (MemType m : kMemTypes)
      if (lower(s) == mem_type_name(m)) return static_cast<int>(m);
  }
  if (field == Field::kAluOpcode) {
    for (AluOp a : kAluOps)
      if (lower(s) == alu_op_name(a)) return static_cast<int>(a);
  }
  return parse_integer(s);
}

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t j = i;
    while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
    if (j > i) words.push_back(line.substr(i, j - i));
    i = j;
  }
  return words;
}

std::string field_list(std::span<const FieldSpec> fields) {
  std::string out;
  for (const FieldSpec& f : fields)
    if (f.field != Field::kOpcode) out += fmt::format("{}{}", out.empty() ? "" : ", ", f.name);
  return out;
}

Insn parse_insn(Opcode op, std::span<const std::string_view> args, const InsnLayout& layout) {
  Insn insn;
  insn.opcode = op;
  std::span<const FieldSpec> fields = layout.fields(op);
  std::set<std::string_view> seen;
  for (std::string_view arg : args) {
    size_t eq = arg.find('=');
    std::string_view name = arg.substr(0, eq);
    const FieldSpec* spec = nullptr;
    for (const FieldSpec& f : fields)
      if (f.name == name && f.field != Field::kOpcode) spec = &f;
    if (!spec) {
      throw Error(fmt::format("'{}' is not a field of {}; its fields are {}", name,
                              opcode_name(op), field_list(fields)));
    }
    if (!seen.insert(spec->name).second)
      throw Error(fmt::format("field {} is given twice", spec->name));
    int64_t value = 1;  // a bare flag name sets it
    if (eq == std::string_view::npos) {
      if (!is_flag(spec->field))
        throw Error(fmt::format("field {} needs a value ({}=N)", spec->name, spec->name));
    } else {
      std::string_view text = arg.substr(eq + 1);
      auto parsed = parse_value(spec->field, text);
      if (!parsed)
        throw Error(fmt::format("field {}: '{}' is not a number", spec->name, text));
      value = *parsed;
    }
    if (value < spec->min() || value > spec->max()) {
      throw Error(fmt::format("field {} = {} does not fit its {} bits (valid {} to {})", spec->name,
                              value, spec->width, spec->min(), spec->max()));
    }
    set_field(insn, spec->field, value);
  }
  // Reject enum values that the layout's width admits but the ISA does not define.
  if (InsnLayout::format_of(op) == InsnLayout::Format::kMem &&
      static_cast<size_t>(insn.memory_type) >= kMemTypes.size())
    throw Error("memory_type must be one of " + mem_type_list());
  if (op == Opcode::kAlu && static_cast<size_t>(insn.alu_opcode) >= kAluOps.size())
    throw Error("alu_opcode must be one of " + alu_op_list());
  return insn;
}

Uop parse_uop(std::span<const std::string_view> args, const InsnLayout& layout) {
  Uop uop;
  std::set<std::string_view> seen;
  for (std::string_view arg : args) {
    size_t eq = arg.find('=');
    std::string_view name = arg.substr(0, eq);
    uint32_t* slot = name == "dst_idx"   ? &uop.dst_idx
                     : name == "src_idx" ? &uop.src_idx
                     : name == "wgt_idx" ? &uop.wgt_idx
                                         : nullptr;
    int width = name == "dst_idx"   ? layout.uop_dst_width()
                : name == "src_idx" ? layout.uop_src_width()
                                    : layout.uop_wgt_width();
    if (!slot) throw Error(fmt::format("'{}' is not a field of uop; its fields are dst_idx, "
                                       "src_idx, wgt_idx", name));
    if (!seen.insert(name).second) throw Error(fmt::format("field {} is given twice", name));
    if (eq == std::string_view::npos) throw Error(fmt::format("field {} needs a value", name));
    auto v = parse_integer(arg.substr(eq + 1));
    if (!v) throw Error(fmt::format("field {}: '{}' is not a number", name, arg.substr(eq + 1)));
    int64_t max = (int64_t{1} << width) - 1;
    if (*v < 0 || *v > max)
      throw Error(fmt::format("field {} = {} does not fit its {} bits (valid 0 to {})", name, *v,
                              width, max));
    *slot = static_cast<uint32_t>(*v);
  }
  return uop;
}

}  // namespace

AsmProgram assemble(std::string_view text, const Config& cfg, std::string_view source) {
  InsnLayout layout(cfg);
  AsmProgram prog;
  int line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    line = line.substr(0, line.find('#'));
    std::vector<std::string_view> words = split_words(line);
    if (words.empty()) continue;
    std::span<const std::string_view> args(words.begin() + 1, words.end());
    try {
      if (lower(words[0]) == "uop") {
        prog.uops.push_back(parse_uop(args, layout));
      } else if (auto op = parse_mnemonic(words[0])) {
        prog.insns.push_back(parse_insn(*op, args, layout));
      } else {
        throw Error(fmt::format("unknown mnemonic '{}' (expected load, store, gemm, alu, finish or "
                                "uop)",
                                words[0]));
      }
    } catch (const Error& e) {
      throw Error(fmt::format("{}:{}: {}", source, line_no, e.what()));
    }
  }
  return prog;
}

std::string disassemble_insn(const Insn& insn, const InsnLayout& layout) {
  std::string line(opcode_name(insn.opcode));
  std::string flags;
  for (const FieldSpec& f : layout.fields(insn.opcode)) {
    if (f.field == Field::kOpcode) continue;
    int64_t v = get_field(insn, f.field);
    if (is_flag(f.field)) {
      if (v) flags += fmt::format(" {}", f.name);
    } else if (f.field == Field::kMemoryType && static_cast<size_t>(v) < kMemTypes.size()) {
      line += fmt::format(" {}={}", f.name, mem_type_name(static_cast<MemType>(v)));
    } else if (f.field == Field::kAluOpcode && static_cast<size_t>(v) < kAluOps.size()) {
      line += fmt::format(" {}={}", f.name, alu_op_name(static_cast<AluOp>(v)));
    } else {
      line += fmt::format(" {}={}", f.name, v);
    }
  }
  return line + flags;
}

std::string disassemble(std::span<const Insn> insns, const Config& cfg) {
  InsnLayout layout(cfg);
  std::string out;
  for (const Insn& insn : insns) out += disassemble_insn(insn, layout) + "\n";
  return out;
}

std::string disassemble_uops(std::span<const Uop> uops) {
  std::string out;
  for (const Uop& u : uops)
    out += fmt::format("uop dst_idx={} src_idx={} wgt_idx={}\n", u.dst_idx, u.src_idx, u.wgt_idx);
  return out;
}

}  // namespace kiln::hw
