#pragma once
// The one exception type of the compiler: a message a user can act on (which stage,
// which axis, what was expected). Bad schedules and bad IR never abort the process.
#include <stdexcept>
#include <string>

namespace kiln {

class CompileError : public std::runtime_error {
 public:
  explicit CompileError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace kiln
