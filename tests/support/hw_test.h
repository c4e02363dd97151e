#pragma once
// Helpers shared by the hardware-side suites: a configuration shipped in hw/config, and
// the check that a call fails with hw::Error naming what went wrong.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

#include "hw/spec/config.h"
#include "hw/spec/error.h"

namespace kiln::test {

// hw/config/NAME.json of the source tree: KILN_SOURCE_DIR from the environment (CTest
// sets it), else the one the test was compiled with.
inline hw::Config shipped_config(std::string_view name) {
  const char* env = std::getenv("KILN_SOURCE_DIR");
#ifdef KILN_SOURCE_DIR
  std::filesystem::path root = env != nullptr ? env : KILN_SOURCE_DIR;
#else
  std::filesystem::path root = env != nullptr ? env : ".";
#endif
  return hw::Config::from_file(root / "hw/config" / (std::string(name) + ".json"));
}

// Expects `f` to throw hw::Error whose message contains every one of `parts`.
template <typename F>
void expect_error(F&& f, std::initializer_list<std::string_view> parts) {
  try {
    f();
  } catch (const hw::Error& e) {
    std::string what = e.what();
    for (std::string_view p : parts)
      EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
    return;
  }
  ADD_FAILURE() << "no hw::Error thrown";
}

}  // namespace kiln::test
