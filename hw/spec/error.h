#pragma once
// The one exception type of hw/: configurations, the ISA, simulators and devices throw
// it with a message a user can act on (file, line, field, what was expected).

#include <stdexcept>
#include <string>

namespace kiln::hw {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace kiln::hw
