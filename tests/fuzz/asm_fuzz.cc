// Fuzzes the text assembler (hw/spec/assembly.h) on the default and the tiny
// configuration (first byte). A program that assembles must disassemble to text that
// assembles to the same program; anything else must be refused with hw::Error.
#include <memory>
#include <string_view>

#include "hw/spec/assembly.h"
#include "hw/spec/error.h"
#include "tests/fuzz/fuzz_util.h"

namespace {
std::unique_ptr<kiln::hw::Config> configs[2];
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  configs[0] = std::make_unique<kiln::hw::Config>(kiln::hw::Config::vta_default());
  configs[1] = std::make_unique<kiln::hw::Config>(kiln::hw::Config::from_file(kiln::fuzz::config_file("tiny")));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const kiln::hw::Config& cfg = *configs[data[0] & 1];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  kiln::hw::AsmProgram p;
  try {
    p = kiln::hw::assemble(text, cfg, "fuzz.s");
  } catch (const kiln::hw::Error&) {
    return 0;
  }
  std::string again = kiln::hw::disassemble(p.insns, cfg) + kiln::hw::disassemble_uops(p.uops);
  kiln::hw::AsmProgram q;
  try {
    q = kiln::hw::assemble(again, cfg, "disassembled.s");
  } catch (const kiln::hw::Error& e) {
    kiln::fuzz::fail(std::string("the disassembly does not assemble: ") + e.what());
  }
  kiln::fuzz::check(q.insns == p.insns && q.uops == p.uops, "assemble(disassemble(p)) differs from p");
  return 0;
}
