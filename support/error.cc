#include "support/error.h"

namespace kiln {

std::string Error::report(std::string_view program) const {
  return std::string(program) + ": error: " + what();
}

std::string internal_error_report(std::string_view program, const std::exception& e) {
  return std::string(program) + ": internal error: " + e.what() +
         " (a bug in Kiln: please report it with the command that caused it)";
}

}  // namespace kiln
