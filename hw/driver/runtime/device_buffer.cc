#include "hw/driver/runtime/device_buffer.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "hw/spec/error.h"

namespace kiln::runtime {

uint64_t tensor_alignment(const hw::Config& cfg) {
  int elem = std::max({cfg.inp_elem_bytes(), cfg.wgt_elem_bytes(), cfg.acc_elem_bytes(),
                       cfg.out_elem_bytes(), 64});
  // Element sizes are powers of two, so the largest one is a valid alignment.
  return static_cast<uint64_t>(elem);
}

DeviceBuffer::DeviceBuffer(driver::Device& dev, uint64_t bytes, uint64_t align)
    : dev_(&dev), bytes_(bytes) {
  addr_ = dev.alloc(bytes, align != 0 ? align : tensor_alignment(dev.config()));
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : dev_(std::exchange(other.dev_, nullptr)), addr_(other.addr_), bytes_(other.bytes_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    dev_ = std::exchange(other.dev_, nullptr);
    addr_ = other.addr_;
    bytes_ = other.bytes_;
  }
  return *this;
}

void DeviceBuffer::release() {
  if (dev_ == nullptr) return;
  dev_->free(addr_);
  dev_ = nullptr;
}

void DeviceBuffer::check(uint64_t offset, uint64_t bytes, const char* what) const {
  if (dev_ == nullptr) throw hw::Error(fmt::format("{}: the device buffer was moved from", what));
  if (offset > bytes_ || bytes > bytes_ - offset) {
    throw hw::Error(fmt::format("{}: bytes [{}, {}) are outside the {}-byte device buffer at 0x{:x}",
                                what, offset, offset + bytes, bytes_, addr_));
  }
}

void DeviceBuffer::write(std::span<const uint8_t> data, uint64_t offset) {
  check(offset, data.size(), "write to device buffer");
  dev_->write(addr_ + offset, data);
}

void DeviceBuffer::read(std::span<uint8_t> data, uint64_t offset) const {
  check(offset, data.size(), "read from device buffer");
  dev_->read(addr_ + offset, data);
}

}  // namespace kiln::runtime
