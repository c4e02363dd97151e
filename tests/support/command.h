#pragma once
// Runs a command line through the shell, as a user would, for the tests of the command
// line tools: its exit status and everything it printed (stdout and stderr together).
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace kiln::test {

struct CommandResult {
  int status;          // the exit status; -1 when the process did not exit normally
  std::string output;  // stdout and stderr together
};

inline CommandResult run_command(const std::string& command_line) {
  std::string cmd = command_line + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return {-1, "popen failed for: " + command_line};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace kiln::test
