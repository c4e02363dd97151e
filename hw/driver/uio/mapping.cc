#include "hw/driver/uio/mapping.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hw/spec/error.h"
#include "support/integer.h"

namespace kiln::driver {

namespace {

// What a user can do about a failed open.
std::string open_hint(int err) {
  if (err == ENOENT) return "; is the bitstream loaded and the node in the device tree (docs/uio-device.md)?";
  if (err == EACCES || err == EPERM)
    return "; run as root or give your user access to it (a udev rule, docs/uio-device.md)";
  return "";
}

}  // namespace

uint64_t page_bytes() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

Mapping::Mapping(const std::string& path, uint64_t offset, uint64_t bytes, bool uncached,
                 const std::string& what)
    : path_(path), bytes_(bytes) {
  uint64_t page = page_bytes();
  if (offset % page != 0) {
    throw hw::Error(fmt::format("{} {}: offset 0x{:x} is not a multiple of the {}-byte page", what,
                                path, offset, page));
  }
  if (bytes == 0) throw hw::Error(fmt::format("{} {}: nothing to map (0 bytes)", what, path));
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (uncached ? O_SYNC : 0));
  if (fd < 0) {
    int err = errno;
    throw hw::Error(fmt::format("cannot open the {} {}: {}{}", what, path, std::strerror(err),
                                open_hint(err)));
  }
  // A plain file shorter than the mapping would fault (SIGBUS) on the first access.
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<uint64_t>(st.st_size) < offset + bytes) {
    ::close(fd);
    throw hw::Error(fmt::format("{} {}: the file has {} bytes, too few for {} bytes at 0x{:x}",
                                what, path, st.st_size, bytes, offset));
  }
  mapped_ = round_up(bytes, page);
  void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
  int err = errno;
  ::close(fd);  // the mapping keeps the file
  if (p == MAP_FAILED) {
    throw hw::Error(fmt::format("cannot map {} bytes at 0x{:x} of the {} {}: {}", mapped_, offset,
                                what, path, std::strerror(err)));
  }
  data_ = static_cast<uint8_t*>(p);
}

Mapping::~Mapping() {
  if (data_ != nullptr) munmap(data_, mapped_);
}

}  // namespace kiln::driver
