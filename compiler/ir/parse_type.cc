#include "compiler/ir/parse_type.h"

#include <utility>

#include "compiler/support/error.h"

namespace kiln::ir {

DataType parse_type(const std::string& text) {
  auto invalid = [&] {
    return CompileError("invalid data type '" + text + "' (expected e.g. float32, int8, uint8x16, bool)");
  };
  auto number = [&](const std::string& digits) {
    if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
      throw invalid();
    return std::stoi(digits);
  };
  std::string base = text;
  int lanes = 1;
  if (size_t x = text.rfind('x'); x != std::string::npos && x > 0) {
    base = text.substr(0, x);
    lanes = number(text.substr(x + 1));
  }
  if (base == "handle" && lanes == 1) return DataType::Handle();
  if (lanes < 1) throw CompileError("invalid data type '" + text + "': a vector has at least one lane");
  if (base == "bool") return DataType::Bool(lanes);
  if (base == "bfloat16") return DataType::BFloat16(lanes);
  for (auto [prefix, code] : {std::pair{"uint", TypeCode::UInt}, std::pair{"int", TypeCode::Int},
                              std::pair{"float", TypeCode::Float}}) {
    std::string p(prefix);
    if (base.rfind(p, 0) != 0) continue;
    int bits = number(base.substr(p.size()));
    try {
      return DataType(code, bits, lanes);
    } catch (const CompileError& e) {
      throw CompileError("invalid data type '" + text + "': " + e.what());
    }
  }
  throw invalid();
}

}  // namespace kiln::ir
