#pragma once
// Runs a command line through the shell, as a user would, for the tests of the command
// line tools: its exit status and everything it printed (stdout and stderr together).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

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

// The non-empty lines of a file a command writes (a records file): none if it is missing.
inline std::vector<std::string> lines_of(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::vector<std::string> r;
  std::string l;
  while (std::getline(in, l))
    if (!l.empty()) r.push_back(l);
  return r;
}

// How a command started in the background ended.
enum class KillOutcome { kKilled, kExitedFirst, kNotKilled };

// Runs `command_line` through the shell in the background (its output discarded), waits
// until `ready()` holds, then kills it with SIGKILL, as a user's kill -9 would. No clock
// of its own: a loaded machine may take minutes to get there, and CTest's timeout is the
// limit. kExitedFirst: it ended before `ready()` held; kNotKilled: it finished on its own
// between the check and the kill.
inline KillOutcome kill_when(const std::string& command_line, const std::function<bool()>& ready) {
  pid_t pid = fork();
  if (pid < 0) return KillOutcome::kExitedFirst;
  if (pid == 0) {
    const std::string cmd = "exec " + command_line + " >/dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (!ready()) {
    if (waitpid(pid, &status, WNOHANG) == pid) return KillOutcome::kExitedFirst;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? KillOutcome::kKilled : KillOutcome::kNotKilled;
}

}  // namespace kiln::test
