#pragma once
// A dense row-major host array of any IR data type: what the interpreter reads and
// writes. Sub-byte and odd-width integers take their storage_bytes() each.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/type.h"

namespace kiln::interp {

class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(ir::DataType dtype, std::vector<int64_t> shape);

  ir::DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t size() const { return size_; }
  uint8_t* data() { return bytes_.data(); }
  const uint8_t* data() const { return bytes_.data(); }

  // Element access by flat index, converted to/from double or int64.
  double get(int64_t i) const;
  void set(int64_t i, double v);
  int64_t get_int(int64_t i) const;
  void set_int(int64_t i, int64_t v);

  // Deterministic pseudo-random contents: small integers for integer types, values
  // in [-1, 1] for floats (exactly representable in the type).
  void fill_random(uint64_t seed);
  void fill(double v);

  // Bit-for-bit equality of two buffers of the same type and shape.
  bool bit_equal(const HostBuffer& o) const;
  // Largest |a - b| (as doubles).
  double max_abs_diff(const HostBuffer& o) const;
  // "A[3] = 1.5 vs 2.5" for the first differing element, or "".
  std::string first_difference(const HostBuffer& o) const;

 private:
  ir::DataType dtype_;
  std::vector<int64_t> shape_;
  int64_t size_ = 0;
  std::vector<uint8_t> bytes_;
};

// Reading and writing one element of a raw buffer of type t (scalar).
double load_float(const uint8_t* base, int64_t i, ir::DataType t);
void store_float(uint8_t* base, int64_t i, ir::DataType t, double v);
int64_t load_int(const uint8_t* base, int64_t i, ir::DataType t);  // sign- or zero-extended
void store_int(uint8_t* base, int64_t i, ir::DataType t, int64_t v);

}  // namespace kiln::interp
