#pragma once
// KILN_DEBUG=ir[,other]: which debug dumps are on. Read once per process.
#include <string_view>

namespace kiln {

// True when `topic` is one of the comma-separated words of $KILN_DEBUG.
bool debug_enabled(std::string_view topic);

}  // namespace kiln
