#pragma once
// The CPU runtime's tensor: a shape, a data type, strides (in elements) and storage
// that is 64-byte aligned when Kiln allocates it. Storage is shared: copies of an
// NDArray and DLPack exports alias the same bytes. Tensors cross process boundaries
// as .npy files and libraries as DLPack (dlpack/dlpack.h).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/type.h"

struct DLManagedTensor;

namespace kiln::cpu {

class NDArray {
 public:
  static constexpr int64_t kAlignment = 64;

  NDArray() = default;
  // Uninitialized compact row-major storage.
  static NDArray empty(std::vector<int64_t> shape, ir::DataType dtype);
  static NDArray zeros(std::vector<int64_t> shape, ir::DataType dtype);

  bool defined() const { return storage_ != nullptr; }
  ir::DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }  // in elements
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t size() const;                 // number of elements
  int64_t nbytes() const;               // size() * element storage bytes
  int64_t element_bytes() const { return dtype_.storage_bytes(); }
  bool is_contiguous() const;           // compact row-major
  void* data() const { return data_; }  // the first element
  template <typename T>
  T* data_as() const { return static_cast<T*>(data_); }

  // A compact row-major copy (or this array when it already is one).
  NDArray contiguous() const;
  // A new array with the same contents and its own storage.
  NDArray copy() const;
  // Copies bytes in or out of a contiguous array (sizes must match).
  void copy_from_bytes(const void* src, int64_t bytes);
  void copy_to_bytes(void* dst, int64_t bytes) const;

  // DLPack: the export shares the storage and keeps it alive until its deleter runs;
  // the import takes ownership of `t` (its deleter runs when the last NDArray using
  // the storage goes). Only CPU tensors are accepted.
  DLManagedTensor* to_dlpack() const;
  static NDArray from_dlpack(DLManagedTensor* t);

  // .npy (format versions 1-3, little-endian, C or Fortran order). bfloat16 has no
  // numpy type and cannot be saved; integers of odd widths are saved by their
  // storage type (int3 as int8).
  static NDArray load_npy(const std::string& path);
  void save_npy(const std::string& path) const;

 private:
  struct Storage;
  std::shared_ptr<Storage> storage_;
  void* data_ = nullptr;
  ir::DataType dtype_;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
};

// Compact row-major strides of a shape.
std::vector<int64_t> compact_strides(const std::vector<int64_t>& shape);

}  // namespace kiln::cpu
