#include "compiler/interp/host_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>

#include "compiler/support/error.h"

namespace kiln::interp {

namespace {

uint64_t read_bits(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  std::memcpy(&v, p, bytes);  // little-endian host
  return v;
}

void write_bits(uint8_t* p, int bytes, uint64_t v) { std::memcpy(p, &v, bytes); }

}  // namespace

double load_float(const uint8_t* base, int64_t i, ir::DataType t) {
  if (t.code() == ir::TypeCode::BFloat) return ir::bfloat_bits_to_float(static_cast<uint16_t>(read_bits(base + i * 2, 2)));
  if (t.is_float()) {
    switch (t.bits()) {
      case 16: return ir::half_bits_to_float(static_cast<uint16_t>(read_bits(base + i * 2, 2)));
      case 32: {
        float f;
        std::memcpy(&f, base + i * 4, 4);
        return f;
      }
      default: {
        double d;
        std::memcpy(&d, base + i * 8, 8);
        return d;
      }
    }
  }
  int64_t v = load_int(base, i, t);
  return t.is_uint() ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
}

void store_float(uint8_t* base, int64_t i, ir::DataType t, double v) {
  if (t.code() == ir::TypeCode::BFloat) return write_bits(base + i * 2, 2, ir::float_to_bfloat_bits(v));
  if (t.is_float()) {
    switch (t.bits()) {
      case 16: return write_bits(base + i * 2, 2, ir::float_to_half_bits(v));
      case 32: {
        float f = static_cast<float>(v);
        std::memcpy(base + i * 4, &f, 4);
        return;
      }
      default: std::memcpy(base + i * 8, &v, 8); return;
    }
  }
  store_int(base, i, t, static_cast<int64_t>(v));
}

int64_t load_int(const uint8_t* base, int64_t i, ir::DataType t) {
  int bytes = t.storage_bytes();
  return ir::wrap_to_type(static_cast<int64_t>(read_bits(base + i * bytes, bytes)), t);
}

void store_int(uint8_t* base, int64_t i, ir::DataType t, int64_t v) {
  int bytes = t.storage_bytes();
  write_bits(base + i * bytes, bytes, static_cast<uint64_t>(ir::wrap_to_type(v, t)));
}

namespace {
constexpr size_t kHugePage = size_t{2} << 20, kHugeFrom = size_t{4} << 20;
}  // namespace

void* allocate_host_bytes(size_t bytes) {
  if (bytes < kHugeFrom) return ::operator new(bytes);
  void* p = nullptr;
  if (posix_memalign(&p, kHugePage, bytes) != 0) throw std::bad_alloc();
  madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without THP the pages stay small
  return p;
}

void free_host_bytes(void* p, size_t bytes) noexcept {
  if (bytes < kHugeFrom) ::operator delete(p);
  else std::free(p);
}

HostBuffer::HostBuffer(ir::DataType dtype, std::vector<int64_t> shape) : HostBuffer(dtype, std::move(shape), Uninitialized{}) {
  std::fill(bytes_.begin(), bytes_.end(), uint8_t{0});
}

HostBuffer::HostBuffer(ir::DataType dtype, std::vector<int64_t> shape, Uninitialized) : dtype_(dtype), shape_(std::move(shape)) {
  if (!dtype.is_scalar() || dtype.is_handle()) throw CompileError("HostBuffer: element type must be a scalar, not " + dtype.to_string());
  size_ = 1;
  for (int64_t d : shape_) {
    if (d < 0) throw CompileError("HostBuffer: negative dimension");
    size_ *= d;
  }
  bytes_.resize(static_cast<size_t>(size_ * dtype.storage_bytes()));
}

double HostBuffer::get(int64_t i) const { return load_float(bytes_.data(), i, dtype_); }
void HostBuffer::set(int64_t i, double v) { store_float(bytes_.data(), i, dtype_, v); }
int64_t HostBuffer::get_int(int64_t i) const {
  if (dtype_.is_float()) return static_cast<int64_t>(get(i));
  return load_int(bytes_.data(), i, dtype_);
}
void HostBuffer::set_int(int64_t i, int64_t v) {
  if (dtype_.is_float()) return set(i, static_cast<double>(v));
  store_int(bytes_.data(), i, dtype_, v);
}

void HostBuffer::fill_random(uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < size_; ++i) {
    if (dtype_.is_float()) {
      // multiples of 1/8 in [-1, 1]: exact in every float type, sums stay exact
      set(i, static_cast<double>(static_cast<int>(rng() % 17) - 8) / 8.0);
    } else if (dtype_.is_bool()) {
      set_int(i, static_cast<int64_t>(rng() % 2));
    } else {
      int64_t span = dtype_.bits() >= 8 ? 16 : (int64_t{1} << (dtype_.bits() - 1));
      int64_t v = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * span)) - span;
      if (dtype_.is_uint()) v = static_cast<int64_t>(rng() % static_cast<uint64_t>(span));
      set_int(i, v);
    }
  }
}

void HostBuffer::fill(double v) {
  for (int64_t i = 0; i < size_; ++i) set(i, v);
}

bool HostBuffer::bit_equal(const HostBuffer& o) const {
  return dtype_ == o.dtype_ && shape_ == o.shape_ && bytes_ == o.bytes_;
}

double HostBuffer::max_abs_diff(const HostBuffer& o) const {
  double m = 0;
  for (int64_t i = 0; i < std::min(size_, o.size_); ++i) m = std::max(m, std::fabs(get(i) - o.get(i)));
  return m;
}

std::string HostBuffer::first_difference(const HostBuffer& o) const {
  if (dtype_ != o.dtype_ || shape_ != o.shape_) return "type or shape differs";
  int bytes = dtype_.storage_bytes();
  for (int64_t i = 0; i < size_; ++i) {
    if (std::memcmp(bytes_.data() + i * bytes, o.bytes_.data() + i * bytes, bytes) != 0) {
      return "element " + std::to_string(i) + ": " + std::to_string(get(i)) + " vs " + std::to_string(o.get(i));
    }
  }
  return "";
}

}  // namespace kiln::interp
