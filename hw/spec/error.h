#pragma once
// The exception type of hw/: configurations, the ISA, simulators and devices throw it
// with a message a user can act on (file, line, field, what was expected). It is a
// kiln::Error (support/error.h), so a caller that only reports catches that.

#include <string>

#include "support/error.h"

namespace kiln::hw {

class Error : public kiln::Error {
 public:
  explicit Error(const std::string& what) : kiln::Error(what) {}
};

}  // namespace kiln::hw
