#include "support/file.h"

#include <fstream>

#include "support/error.h"

namespace kiln {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw Error(path + ": cannot open the file");
  std::streamoff size = f.tellg();
  if (size < 0) throw Error(path + ": cannot read the file's size");
  std::string bytes(static_cast<size_t>(size), '\0');
  f.seekg(0);
  if (size > 0 && !f.read(bytes.data(), size)) throw Error(path + ": cannot read the file");
  return bytes;
}

}  // namespace kiln
