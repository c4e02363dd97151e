#include "compiler/ir/type.h"

#include <limits>

#include "compiler/support/error.h"

namespace kiln::ir {

DataType::DataType(TypeCode code, int bits, int lanes) : code_(code), bits_(bits), lanes_(lanes) {
  bool ok = lanes >= 1;
  switch (code) {
    case TypeCode::Int:
    case TypeCode::UInt: ok = ok && bits >= 1 && bits <= 64; break;
    case TypeCode::Float: ok = ok && (bits == 16 || bits == 32 || bits == 64); break;
    case TypeCode::BFloat: ok = ok && bits == 16; break;
    case TypeCode::Handle: ok = ok && bits == 64 && lanes == 1; break;
  }
  if (!ok) {
    throw CompileError("invalid data type: code " + std::to_string(static_cast<int>(code)) +
                       ", " + std::to_string(bits) + " bits, " + std::to_string(lanes) + " lanes");
  }
}

int DataType::storage_bytes() const {
  if (bits_ <= 8) return 1;
  if (bits_ <= 16) return 2;
  if (bits_ <= 32) return 4;
  return 8;
}

int64_t DataType::min_int() const {
  if (is_uint()) return 0;
  if (bits_ == 64) return std::numeric_limits<int64_t>::min();
  return -(int64_t{1} << (bits_ - 1));
}

int64_t DataType::max_int() const {
  if (bits_ == 64) return std::numeric_limits<int64_t>::max();
  if (is_uint()) return bits_ == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << bits_) - 1;
  return (int64_t{1} << (bits_ - 1)) - 1;
}

std::string DataType::to_string() const {
  std::string s;
  switch (code_) {
    case TypeCode::Int: s = "int" + std::to_string(bits_); break;
    case TypeCode::UInt: s = bits_ == 1 ? "bool" : "uint" + std::to_string(bits_); break;
    case TypeCode::Float: s = "float" + std::to_string(bits_); break;
    case TypeCode::BFloat: s = "bfloat16"; break;
    case TypeCode::Handle: return "handle";
  }
  if (lanes_ > 1) s += "x" + std::to_string(lanes_);
  return s;
}

}  // namespace kiln::ir
