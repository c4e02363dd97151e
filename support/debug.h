#pragma once
// KILN_DEBUG=ir[,stream,...]: which debug dumps are on, for every layer. $KILN_DEBUG is
// read at each call, so a test may set it for one case and unset it after.
#include <string_view>

namespace kiln {

// True when `topic` or "all" is one of the comma-separated words of $KILN_DEBUG.
bool debug_enabled(std::string_view topic);

}  // namespace kiln
