// Fuzzes the instruction and micro-op decoders (hw/spec/isa.h) on the default and the
// tiny configuration: the first byte picks the configuration and whether the rest is a
// program (16 bytes an instruction) or a micro-op blob (4 bytes each). Whatever decodes
// must encode back to the same bytes; anything else must be refused with hw::Error.
#include <memory>
#include <span>
#include <vector>

#include "hw/spec/error.h"
#include "hw/spec/isa.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

struct Target {
  kiln::hw::Config config;
  kiln::hw::InsnLayout layout;
  explicit Target(kiln::hw::Config c) : config(std::move(c)), layout(config) {}
};
std::unique_ptr<Target> targets[2];

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  targets[0] = std::make_unique<Target>(kiln::hw::Config::vta_default());
  targets[1] = std::make_unique<Target>(kiln::hw::Config::from_file(kiln::fuzz::config_file("tiny")));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const Target& t = *targets[data[0] & 1];
  std::span<const uint8_t> bytes(data + 1, size - 1);
  try {
    if (data[0] & 2) {
      auto uops = kiln::hw::decode_uops(t.layout, bytes);
      auto again = kiln::hw::encode_uops(t.layout, uops);
      kiln::fuzz::check(std::equal(again.begin(), again.end(), bytes.begin(), bytes.end()),
                        "decode_uops then encode_uops changed the bytes");
    } else {
      auto insns = kiln::hw::decode_program(t.layout, bytes);
      auto again = kiln::hw::encode_program(t.layout, insns);
      kiln::fuzz::check(std::equal(again.begin(), again.end(), bytes.begin(), bytes.end()),
                        "decode_program then encode_program changed the bytes");
    }
  } catch (const kiln::hw::Error&) {
  }
  return 0;
}
