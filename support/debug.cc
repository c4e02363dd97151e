#include "support/debug.h"

#include <cstdlib>

namespace kiln {

bool debug_enabled(std::string_view topic) {
  const char* env = std::getenv("KILN_DEBUG");
  std::string_view all = env != nullptr ? env : "";
  while (!all.empty()) {
    size_t comma = all.find(',');
    std::string_view word = all.substr(0, comma);
    if (word == topic || word == "all") return true;
    if (comma == std::string_view::npos) break;
    all.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace kiln
