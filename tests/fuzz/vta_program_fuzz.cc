// Fuzzes the VTA program reader (backend-vta/program.h, Program::from_json) for the
// default configuration. A program that reads must write back to JSON that reads to
// the same program; anything else must be refused with hw::Error.
#include <memory>

#include "backend-vta/program.h"
#include "hw/spec/error.h"
#include "tests/fuzz/fuzz_util.h"

namespace {
std::unique_ptr<kiln::hw::Config> config;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  config = std::make_unique<kiln::hw::Config>(kiln::hw::Config::vta_default());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::vta::Program p;
  try {
    p = kiln::vta::Program::from_json(text, *config, "fuzz.json");
  } catch (const kiln::hw::Error&) {
    return 0;
  }
  std::string json = p.to_json();
  try {
    kiln::vta::Program q = kiln::vta::Program::from_json(json, *config, "written.json");
    kiln::fuzz::check(q.to_json() == json, "from_json(to_json(p)) differs from p");
  } catch (const kiln::hw::Error& e) {
    kiln::fuzz::fail(std::string("a program that was read does not read back: ") + e.what());
  }
  return 0;
}
