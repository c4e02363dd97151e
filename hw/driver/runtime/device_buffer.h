#pragma once
// A tensor in device DRAM: an allocation that frees itself, with typed copies in and
// out. The runtime's loads and stores take its address().

#include <cstdint>
#include <span>
#include <vector>

#include "hw/driver/device.h"

namespace kiln::runtime {

class DeviceBuffer {
 public:
  // Allocates `bytes` in device DRAM. The default alignment is the largest buffer
  // element of the device's configuration (at least 64 bytes), so any element type
  // can be loaded from the start of the buffer.
  DeviceBuffer(driver::Device& dev, uint64_t bytes, uint64_t align = 0);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  driver::DevAddr address() const { return addr_; }
  uint64_t size() const { return bytes_; }

  // Copies at a byte offset; a range outside the buffer throws hw::Error.
  void write(std::span<const uint8_t> data, uint64_t offset = 0);
  void read(std::span<uint8_t> data, uint64_t offset = 0) const;

  template <typename T>
  void write_elems(std::span<const T> data, uint64_t offset = 0) {
    write({reinterpret_cast<const uint8_t*>(data.data()), data.size_bytes()}, offset);
  }
  template <typename T>
  std::vector<T> read_elems(size_t count, uint64_t offset = 0) const {
    std::vector<T> out(count);
    read({reinterpret_cast<uint8_t*>(out.data()), count * sizeof(T)}, offset);
    return out;
  }

 private:
  void check(uint64_t offset, uint64_t bytes, const char* what) const;
  void release();

  driver::Device* dev_ = nullptr;
  driver::DevAddr addr_ = 0;
  uint64_t bytes_ = 0;
};

// A good default alignment for tensors on `dev`: the largest buffer element (>= 64).
uint64_t tensor_alignment(const hw::Config& cfg);

}  // namespace kiln::runtime
