#pragma once
// Data types of the loop IR: int/uint of 1..64 bits, float16/32/64, bfloat16, an
// opaque handle (buffer pointers), each with a lane count for vectors.
#include <cstdint>
#include <string>

namespace kiln::ir {

enum class TypeCode : uint8_t { Int, UInt, Float, BFloat, Handle };

class DataType {
 public:
  DataType() = default;
  DataType(TypeCode code, int bits, int lanes = 1);

  static DataType Int(int bits, int lanes = 1) { return {TypeCode::Int, bits, lanes}; }
  static DataType UInt(int bits, int lanes = 1) { return {TypeCode::UInt, bits, lanes}; }
  static DataType Float(int bits, int lanes = 1) { return {TypeCode::Float, bits, lanes}; }
  static DataType BFloat16(int lanes = 1) { return {TypeCode::BFloat, 16, lanes}; }
  static DataType Bool(int lanes = 1) { return {TypeCode::UInt, 1, lanes}; }
  static DataType Handle() { return {TypeCode::Handle, 64, 1}; }

  TypeCode code() const { return code_; }
  int bits() const { return bits_; }
  int lanes() const { return lanes_; }
  bool is_int() const { return code_ == TypeCode::Int; }
  bool is_uint() const { return code_ == TypeCode::UInt; }
  bool is_integer() const { return is_int() || is_uint(); }  // bool included
  bool is_bool() const { return code_ == TypeCode::UInt && bits_ == 1; }
  bool is_float() const { return code_ == TypeCode::Float || code_ == TypeCode::BFloat; }
  bool is_handle() const { return code_ == TypeCode::Handle; }
  bool is_scalar() const { return lanes_ == 1; }
  bool is_vector() const { return lanes_ > 1; }

  DataType element_of() const { return with_lanes(1); }
  DataType with_lanes(int lanes) const {
    if (lanes == lanes_) return *this;
    return {code_, bits_, lanes};
  }
  // Bytes one element occupies in a host buffer: sub-byte types take a whole byte,
  // odd widths round up to the next power of two.
  int storage_bytes() const;

  // Smallest / largest value of an integer type, as int64 (uint64 max saturates).
  int64_t min_int() const;
  int64_t max_int() const;

  bool operator==(const DataType& o) const {
    return code_ == o.code_ && bits_ == o.bits_ && lanes_ == o.lanes_;
  }
  bool operator!=(const DataType& o) const { return !(*this == o); }

  // "int32", "uint8x16", "float16", "bfloat16", "bool", "handle".
  std::string to_string() const;

 private:
  TypeCode code_ = TypeCode::Int;
  int bits_ = 32;
  int lanes_ = 1;
};

// Wraps an integer to the width and signedness of `t` (two's complement).
int64_t wrap_to_type(int64_t v, DataType t);
// Rounds a double to the precision of float type `t` (one rounding, to nearest even).
double round_to_type(double v, DataType t);
// IEEE binary16 and bfloat16 bit encodings.
uint16_t float_to_half_bits(double v);
double half_bits_to_float(uint16_t bits);
uint16_t float_to_bfloat_bits(double v);
double bfloat_bits_to_float(uint16_t bits);

}  // namespace kiln::ir
