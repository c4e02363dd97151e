#pragma once
// A dense row-major host array of any IR data type: what the interpreter reads and
// writes. Sub-byte and odd-width integers take their storage_bytes() each.
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/type.h"

namespace kiln::interp {

// Host memory for large arrays (a model's weights): blocks of 4 MiB and more aligned to
// 2 MiB and marked for transparent huge pages, so the kernel maps them 2 MiB at a time
// (a page fault per 4 KiB was a third of BERT-base's compilation on a virtual machine).
void* allocate_host_bytes(size_t bytes);
void free_host_bytes(void* p, size_t bytes) noexcept;

// An allocator of that memory whose elements start uninitialized: a vector of it
// grows without filling (a model's weights, copied in after, are not written twice).
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(allocate_host_bytes(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { free_host_bytes(p, n * sizeof(T)); }
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

class HostBuffer {
 public:
  // Tells a constructor to leave the elements unwritten.
  struct Uninitialized {};

  HostBuffer() = default;
  // Zero elements.
  HostBuffer(ir::DataType dtype, std::vector<int64_t> shape);
  // Elements with no value yet, for a caller that writes every byte next (a copy):
  // zeroing them first was 17% of BERT-base's compilation.
  HostBuffer(ir::DataType dtype, std::vector<int64_t> shape, Uninitialized);

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
  std::vector<uint8_t, DefaultInitAllocator<uint8_t>> bytes_;
};

// Reading and writing one element of a raw buffer of type t (scalar).
double load_float(const uint8_t* base, int64_t i, ir::DataType t);
void store_float(uint8_t* base, int64_t i, ir::DataType t, double v);
int64_t load_int(const uint8_t* base, int64_t i, ir::DataType t);  // sign- or zero-extended
void store_int(uint8_t* base, int64_t i, ir::DataType t, int64_t v);

}  // namespace kiln::interp
