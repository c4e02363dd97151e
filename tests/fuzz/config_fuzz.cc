// Fuzzes the configuration reader (hw/spec/config.h, Config::from_json). A
// configuration that parses must rebuild from its parameters with the same fingerprint;
// anything else must be refused with hw::Error.
#include <string_view>

#include "hw/spec/config.h"
#include "hw/spec/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    kiln::hw::Config c = kiln::hw::Config::from_json(text, "fuzz.json");
    kiln::hw::Config again = kiln::hw::Config::from_params(c.params(), c.name());
    kiln::fuzz::check(again.params() == c.params(), "from_params(params()) changed the parameters");
  } catch (const kiln::hw::Error&) {
  }
  return 0;
}
