#pragma once
// A shared read-write mmap of a device node or file (/dev/uioN, /dev/udmabufN, /dev/mem),
// unmapped on destruction. Errors name the path and say what to check.

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::driver {

class Mapping {
 public:
  // Maps `bytes` at `offset` (a multiple of the page size) of `path`, opened read-write;
  // `uncached` opens it with O_SYNC (u-dma-buf and /dev/mem then map it uncached).
  // `what` names the mapping in errors ("register file", "DMA buffer").
  Mapping(const std::string& path, uint64_t offset, uint64_t bytes, bool uncached,
          const std::string& what);
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  uint8_t* data() const { return data_; }
  uint64_t size() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  uint8_t* data_ = nullptr;
  uint64_t bytes_ = 0;
  uint64_t mapped_ = 0;  // bytes_ rounded up to pages
};

// The system's page size (the unit of mmap offsets).
uint64_t page_bytes();

}  // namespace kiln::driver
