#pragma once
// The one exception type of Kiln. Every layer's error is one (hw::Error, CompileError,
// the interpreter's, the CPU runtime's, the tuner's), with a message a user can act on:
// which file, line, node, field or flag, and what was expected. A program that only
// reports errors catches kiln::Error and prints report(); anything else that reaches it
// is a bug in Kiln.
//
// It is a std::invalid_argument because every Kiln error is an input that was refused
// (a model, a configuration, a program, a schedule, a path, a flag), and because the
// tuner's interface promised that type before this one existed.
#include <stdexcept>
#include <string>
#include <string_view>

namespace kiln {

class Error : public std::invalid_argument {
 public:
  explicit Error(const std::string& message) : std::invalid_argument(message) {}

  // The line `program` prints for it on stderr: "PROGRAM: error: MESSAGE".
  std::string report(std::string_view program) const;
};

// The line `program` prints for an exception that is not a kiln::Error: it escaped the
// checks that name the user's input, so it is Kiln's fault and says so.
std::string internal_error_report(std::string_view program, const std::exception& e);

}  // namespace kiln
