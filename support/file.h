#pragma once
// A whole file's bytes, read at its size in one pass: through a stream buffer
// (`ss << f.rdbuf()`) a 346 MB model was copied as the buffer grew and again out of it.
#include <string>

namespace kiln {

// A regular file is read at its size, a pipe or a device as a stream. Throws
// kiln::Error "PATH: cannot open the file", "PATH: is a directory, not a file" or
// "PATH: cannot read the file".
std::string read_file(const std::string& path);

}  // namespace kiln
