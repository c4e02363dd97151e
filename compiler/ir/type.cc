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

#include <cmath>
#include <cstring>

namespace kiln::ir {

int64_t wrap_to_type(int64_t v, DataType t) {
  int bits = t.bits();
  if (bits >= 64) return v;
  uint64_t u = static_cast<uint64_t>(v) & ((uint64_t{1} << bits) - 1);
  if (t.is_int() && (u >> (bits - 1)) != 0) u |= ~((uint64_t{1} << bits) - 1);
  return static_cast<int64_t>(u);
}

namespace {

// Rounds to a binary format with `mant` explicit mantissa bits and exponent range
// [emin, emax] (of the normalized value 1.x * 2^e); overflow gives infinity.
double round_format(double v, int mant, int emin, int emax) {
  if (!std::isfinite(v) || v == 0.0) return v;
  int e = 0;
  std::frexp(v, &e);  // v = f * 2^e, 0.5 <= |f| < 1, so the normalized exponent is e-1
  int exp = std::max(e - 1, emin);
  double scale = std::ldexp(1.0, mant - exp);
  double r = std::nearbyint(v * scale) / scale;
  double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -mant), emax);
  if (std::fabs(r) > max_finite) return std::copysign(INFINITY, v);
  return r;
}

}  // namespace

double round_to_type(double v, DataType t) {
  if (t.code() == TypeCode::BFloat) return round_format(v, 7, -126, 127);
  if (t.bits() == 16) return round_format(v, 10, -14, 15);
  if (t.bits() == 32) return static_cast<double>(static_cast<float>(v));
  return v;
}

uint16_t float_to_half_bits(double v) {
  double r = round_format(v, 10, -14, 15);
  uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  double a = std::fabs(r);
  if (std::isnan(r)) return 0x7e00;
  if (std::isinf(a)) return sign | 0x7c00;
  if (a == 0.0) return sign;
  int e = 0;
  std::frexp(a, &e);
  int exp = e - 1;
  if (exp < -14) {  // subnormal: a = m * 2^-24
    return sign | static_cast<uint16_t>(std::ldexp(a, 24));
  }
  uint16_t m = static_cast<uint16_t>(std::ldexp(a, 10 - exp) - 1024.0);
  return sign | static_cast<uint16_t>((exp + 15) << 10) | m;
}

double half_bits_to_float(uint16_t bits) {
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  int exp = (bits >> 10) & 0x1f;
  int m = bits & 0x3ff;
  if (exp == 0) return sign * std::ldexp(m, -24);
  if (exp == 31) return m ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + m, exp - 25);
}

uint16_t float_to_bfloat_bits(double v) {
  float f = static_cast<float>(round_format(v, 7, -126, 127));
  if (std::isnan(f)) return 0x7fc0;
  uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}

double bfloat_bits_to_float(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace kiln::ir
