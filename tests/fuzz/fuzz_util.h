#pragma once
// What every libFuzzer harness shares (docs/testing.md, "Fuzzing"): a scratch file for
// the readers that take a path, the configurations from hw/config, and a check that
// stops the run when an invariant breaks.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace kiln::fuzz {

// Aborts with a message: libFuzzer reports it as a crash and writes the input.
[[noreturn]] inline void fail(std::string_view what) {
  std::fprintf(stderr, "kiln fuzz: invariant broken: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}
inline void check(bool ok, std::string_view what) {
  if (!ok) fail(what);
}

// A per-process scratch file (in /dev/shm where it exists: no disk I/O per input).
inline const std::string& scratch_path(std::string_view suffix) {
  static const std::string path = [&] {
    std::filesystem::path dir = std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    return (dir / ("kiln-fuzz-" + std::to_string(getpid()) + std::string(suffix))).string();
  }();
  return path;
}

// Writes the input to the scratch file and returns its path.
inline const std::string& write_scratch(const uint8_t* data, size_t size, std::string_view suffix) {
  const std::string& path = scratch_path(suffix);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!f) fail("cannot write the scratch file " + path);
  return path;
}

// hw/config/NAME.json of the source tree this harness was built from.
inline std::filesystem::path config_file(std::string_view name) {
  return std::filesystem::path(KILN_FUZZ_CONFIG_DIR) / (std::string(name) + ".json");
}

}  // namespace kiln::fuzz
