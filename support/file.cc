#include "support/file.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "support/error.h"

namespace kiln {

std::string read_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw Error(path + ": cannot open the file");
  if (fs::is_directory(st)) throw Error(path + ": is a directory, not a file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open the file");
  if (!fs::is_regular_file(st)) {  // a pipe or a device: its size is not known ahead
    std::ostringstream ss;
    ss << f.rdbuf();
    if (f.bad()) throw Error(path + ": cannot read the file");
    return ss.str();
  }
  uintmax_t size = fs::file_size(path, ec);
  if (ec) throw Error(path + ": cannot read the file's size");
  std::string bytes(static_cast<size_t>(size), '\0');
  if (size > 0 && !f.read(bytes.data(), static_cast<std::streamsize>(size))) throw Error(path + ": cannot read the file");
  return bytes;
}

}  // namespace kiln
