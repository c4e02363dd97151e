#pragma once
// The exception type of the compiler: a message a user can act on (which stage, which
// axis, what was expected). Bad schedules and bad IR never abort the process. It is a
// kiln::Error (support/error.h), so a caller that only reports catches that.
#include <string>

#include "support/error.h"

namespace kiln {

class CompileError : public Error {
 public:
  explicit CompileError(const std::string& what) : Error(what) {}
};

}  // namespace kiln
