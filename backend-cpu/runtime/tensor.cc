#include "backend-cpu/runtime/tensor.h"

#include <dlpack/dlpack.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "compiler/support/error.h"

namespace kiln::cpu {

struct NDArray::Storage {
  void* base = nullptr;
  std::function<void()> release;
  ~Storage() {
    if (release) release();
  }
};

namespace {

[[noreturn]] void fail(const std::string& msg) { throw CompileError(msg); }

void check_dtype(ir::DataType t) {
  if (!t.is_scalar() || t.is_handle()) fail("NDArray: element type must be a scalar number, not " + t.to_string());
}

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail("NDArray: negative dimension");
    if (d == 0) return 0;  // before any overflow of the other dimensions' product
  }
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) fail("NDArray: the shape has more elements than int64 counts");
  return n;
}

}  // namespace

std::vector<int64_t> compact_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = step;
    // Past int64 only beside a zero dimension (product() refuses the rest): an array
    // without elements, whose strides are never used.
    if (__builtin_mul_overflow(step, shape[i], &step)) step = 0;
  }
  return s;
}

NDArray NDArray::empty(std::vector<int64_t> shape, ir::DataType dtype) {
  check_dtype(dtype);
  NDArray a;
  a.dtype_ = dtype;
  a.shape_ = std::move(shape);
  a.strides_ = compact_strides(a.shape_);
  int64_t bytes = product(a.shape_) * dtype.storage_bytes();
  size_t rounded = static_cast<size_t>((bytes + kAlignment - 1) / kAlignment * kAlignment);
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (!p) fail("NDArray: out of memory allocating " + std::to_string(bytes) + " bytes");
  a.storage_ = std::make_shared<Storage>();
  a.storage_->base = p;
  a.storage_->release = [p] { std::free(p); };
  a.data_ = p;
  return a;
}

NDArray NDArray::zeros(std::vector<int64_t> shape, ir::DataType dtype) {
  NDArray a = empty(std::move(shape), dtype);
  std::memset(a.data_, 0, static_cast<size_t>(a.nbytes()));
  return a;
}

int64_t NDArray::size() const { return product(shape_); }
int64_t NDArray::nbytes() const { return size() * element_bytes(); }

bool NDArray::is_contiguous() const {
  if (size() == 0) return true;  // no element to place (and no product to overflow)
  int64_t step = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != step) return false;
    step *= shape_[i];
  }
  return true;
}

NDArray NDArray::contiguous() const {
  if (is_contiguous()) return *this;
  return copy();
}

NDArray NDArray::copy() const {
  NDArray out = empty(shape_, dtype_);
  int64_t n = size();
  int64_t eb = element_bytes();
  if (is_contiguous()) {
    std::memcpy(out.data_, data_, static_cast<size_t>(n * eb));
    return out;
  }
  std::vector<int64_t> idx(shape_.size(), 0);
  auto* dst = static_cast<uint8_t*>(out.data_);
  const auto* src = static_cast<const uint8_t*>(data_);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides_[d];
    std::memcpy(dst + i * eb, src + off * eb, static_cast<size_t>(eb));
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < shape_[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

void NDArray::copy_from_bytes(const void* src, int64_t bytes) {
  if (!is_contiguous() || bytes != nbytes()) fail("NDArray::copy_from_bytes: size mismatch or strided array");
  std::memcpy(data_, src, static_cast<size_t>(bytes));
}

void NDArray::copy_to_bytes(void* dst, int64_t bytes) const {
  if (!is_contiguous() || bytes != nbytes()) fail("NDArray::copy_to_bytes: size mismatch or strided array");
  std::memcpy(dst, data_, static_cast<size_t>(bytes));
}

// ---------------------------------------------------------------- DLPack

namespace {

DLDataType to_dl(ir::DataType t) {
  DLDataType d;
  d.lanes = 1;
  d.bits = static_cast<uint8_t>(t.bits());
  switch (t.code()) {
    case ir::TypeCode::Int: d.code = kDLInt; break;
    case ir::TypeCode::UInt: d.code = kDLUInt; break;
    case ir::TypeCode::Float: d.code = kDLFloat; break;
    case ir::TypeCode::BFloat: d.code = kDLBfloat; break;
    case ir::TypeCode::Handle: fail("NDArray: handles cannot be exported");
  }
  return d;
}

ir::DataType from_dl(DLDataType d) {
  if (d.lanes != 1) fail("from_dlpack: vector element types (lanes " + std::to_string(d.lanes) + ") are not supported");
  switch (d.code) {
    case kDLInt: return ir::DataType::Int(d.bits);
    case kDLUInt: return ir::DataType::UInt(d.bits);
    case kDLFloat: return ir::DataType::Float(d.bits);
    case kDLBfloat:
      if (d.bits != 16) break;
      return ir::DataType::BFloat16();
    default: break;
  }
  fail("from_dlpack: unsupported data type (code " + std::to_string(d.code) + ", " + std::to_string(d.bits) + " bits)");
}

// What an export owns: the storage reference and the shape/stride arrays.
struct ExportContext {
  std::shared_ptr<void> keep;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
};

}  // namespace

DLManagedTensor* NDArray::to_dlpack() const {
  if (!defined()) fail("to_dlpack: the array is empty");
  auto* ctx = new ExportContext;
  ctx->keep = storage_;
  ctx->shape = shape_;
  ctx->strides = strides_;
  DLTensor& t = ctx->managed.dl_tensor;
  t.data = data_;
  t.device = {kDLCPU, 0};
  t.ndim = ndim();
  t.dtype = to_dl(dtype_);
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  t.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = [](DLManagedTensor* self) { delete static_cast<ExportContext*>(self->manager_ctx); };
  return &ctx->managed;
}

NDArray NDArray::from_dlpack(DLManagedTensor* m) {
  if (!m) fail("from_dlpack: null tensor");
  const DLTensor& t = m->dl_tensor;
  auto release = [m] {
    if (m->deleter) m->deleter(m);
  };
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost) {
    release();
    fail("from_dlpack: only CPU tensors can be imported (device type " + std::to_string(t.device.device_type) + ")");
  }
  NDArray a;
  try {
    a.dtype_ = from_dl(t.dtype);
  } catch (...) {
    release();
    throw;
  }
  a.shape_.assign(t.shape, t.shape + t.ndim);
  a.strides_ = t.strides ? std::vector<int64_t>(t.strides, t.strides + t.ndim) : compact_strides(a.shape_);
  a.data_ = static_cast<uint8_t*>(t.data) + t.byte_offset;
  a.storage_ = std::make_shared<Storage>();
  a.storage_->base = t.data;
  a.storage_->release = release;
  return a;
}

// ---------------------------------------------------------------- .npy

namespace {

std::string npy_descr(ir::DataType t) {
  int bytes = t.storage_bytes();
  char order = bytes == 1 ? '|' : '<';
  switch (t.code()) {
    case ir::TypeCode::Int: return std::string(1, order) + "i" + std::to_string(bytes);
    case ir::TypeCode::UInt: return t.is_bool() ? "|b1" : std::string(1, order) + "u" + std::to_string(bytes);
    case ir::TypeCode::Float: return "<f" + std::to_string(bytes);
    default: break;
  }
  fail("save_npy: " + t.to_string() + " has no .npy type; cast it to float32 first");
}

ir::DataType npy_type(const std::string& descr, const std::string& path) {
  if (descr.size() < 3) fail(path + ": bad descr '" + descr + "'");
  char order = descr[0];
  char kind = descr[1];
  int bytes = std::atoi(descr.c_str() + 2);
  if (order == '>' && bytes > 1) fail(path + ": big-endian data ('" + descr + "') is not supported");
  switch (kind) {
    case 'b':
      if (bytes == 1) return ir::DataType::Bool();
      break;
    case 'i':
      if (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8) return ir::DataType::Int(bytes * 8);
      break;
    case 'u':
      if (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8) return ir::DataType::UInt(bytes * 8);
      break;
    case 'f':
      if (bytes == 2 || bytes == 4 || bytes == 8) return ir::DataType::Float(bytes * 8);
      break;
    default: break;
  }
  fail(path + ": unsupported .npy data type '" + descr + "'");
}

// The value of `key` in the header dict: the text up to the next top-level comma.
std::string header_field(const std::string& h, const std::string& key, const std::string& path) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) fail(path + ": .npy header has no '" + key + "'");
  size_t colon = h.find(':', k);
  if (colon == std::string::npos) fail(path + ": bad .npy header");
  size_t i = colon + 1;
  while (i < h.size() && h[i] == ' ') ++i;
  if (i < h.size() && h[i] == '(') {
    size_t close = h.find(')', i);
    if (close == std::string::npos) fail(path + ": bad shape in .npy header");
    return h.substr(i, close - i + 1);
  }
  size_t end = h.find_first_of(",}", i);
  std::string v = h.substr(i, end - i);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"')) v = v.substr(1, v.size() - 2);
  return v;
}

}  // namespace

NDArray NDArray::load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path + ": cannot open");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(path + ": not a .npy file (bad magic)");
  int major = static_cast<uint8_t>(magic[6]);
  uint32_t header_len = 0;
  if (major == 1) {
    uint8_t b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) fail(path + ": truncated header");
    header_len = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    uint8_t b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) fail(path + ": truncated header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    fail(path + ": unsupported .npy version " + std::to_string(major));
  }
  if (header_len > (1u << 20)) fail(path + ": .npy header too long");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) fail(path + ": truncated header");
  ir::DataType dtype = npy_type(header_field(header, "descr", path), path);
  bool fortran = header_field(header, "fortran_order", path) == "True";
  std::string shape_text = header_field(header, "shape", path);
  std::vector<int64_t> shape;
  for (size_t i = 1; i < shape_text.size();) {
    while (i < shape_text.size() && (shape_text[i] == ' ' || shape_text[i] == ',')) ++i;
    if (i >= shape_text.size() || shape_text[i] == ')') break;
    char* end = nullptr;
    long long d = std::strtoll(shape_text.c_str() + i, &end, 10);
    if (end == shape_text.c_str() + i || d < 0) fail(path + ": bad shape " + shape_text);
    shape.push_back(d);
    i = static_cast<size_t>(end - shape_text.c_str());
  }
  // The data must be in the file before anything is allocated for it: a header may
  // claim any shape (and a product that overflows).
  const std::streamoff data_at = in.tellg();
  in.seekg(0, std::ios::end);
  const uint64_t available = static_cast<uint64_t>(in.tellg() - data_at);
  in.seekg(data_at);
  uint64_t bytes = static_cast<uint64_t>(dtype.storage_bytes());
  for (int64_t d : shape) {
    if (d != 0 && bytes > available / static_cast<uint64_t>(d)) bytes = available + 1;
    else bytes *= static_cast<uint64_t>(d);
  }
  if (bytes > available) {
    fail(path + ": truncated data (the shape " + shape_text + " needs more than the " + std::to_string(available) +
         " bytes after the header)");
  }
  std::vector<int64_t> stored = shape;
  if (fortran) stored.assign(shape.rbegin(), shape.rend());
  NDArray a = empty(stored, dtype);
  if (!in.read(static_cast<char*>(a.data_), a.nbytes())) fail(path + ": truncated data (" + std::to_string(a.nbytes()) + " bytes expected)");
  if (!fortran) return a;
  // Fortran order: view the column-major bytes with reversed strides, then compact.
  NDArray view = a;
  view.shape_ = shape;
  view.strides_.assign(a.strides_.rbegin(), a.strides_.rend());
  return view.copy();
}

void NDArray::save_npy(const std::string& path) const {
  std::string descr = npy_descr(dtype_);
  std::ostringstream h;
  h << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape_.size(); ++i) h << shape_[i] << (shape_.size() == 1 || i + 1 < shape_.size() ? ", " : "");
  h << "), }";
  std::string header = h.str();
  // Pad so that the data starts at a multiple of 64 bytes (magic 6 + version 2 + len 2).
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  if (header.size() > 65535) fail("save_npy: shape too long");
  std::ofstream out(path, std::ios::binary);
  if (!out) fail(path + ": cannot open for writing");
  out.write("\x93NUMPY\x01\x00", 8);
  uint8_t len[2] = {static_cast<uint8_t>(header.size() & 0xff), static_cast<uint8_t>(header.size() >> 8)};
  out.write(reinterpret_cast<const char*>(len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  NDArray c = contiguous();
  out.write(static_cast<const char*>(c.data_), c.nbytes());
  if (!out) fail(path + ": write failed");
}

}  // namespace kiln::cpu
