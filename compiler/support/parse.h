#pragma once
// Parsing numbers out of user text (command-line values, knobs in records) without
// exceptions: the whole text must be the number.
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

// The decimal integer that `text` is, or nothing (empty, trailing characters, out of range).
std::optional<int64_t> parse_int(std::string_view text);

}  // namespace kiln
