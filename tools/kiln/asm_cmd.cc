// kiln asm / kiln disasm: the text assembly of docs/isa.md and PROG.bin files.

#include <fmt/format.h>

#include <memory>
#include <string>

#include "hw/spec/assembly.h"
#include "hw/spec/error.h"
#include "support/file.h"
#include "tools/kiln/common.h"

namespace kiln::cli {

namespace {

struct AsmArgs {
  std::string config, input, output, uops;
};

void run_asm(const AsmArgs& a) {
  hw::Config cfg = load_config(a.config);
  const std::string text = read_file(a.input);
  hw::AsmProgram prog = hw::assemble(text, cfg, a.input);
  hw::InsnLayout layout(cfg);
  if (!prog.uops.empty() && a.uops.empty()) {
    throw hw::Error(fmt::format("{}: the file has {} micro-op lines; give --uops FILE for them",
                                a.input, prog.uops.size()));
  }
  write_file(a.output, hw::encode_program(layout, prog.insns));
  if (!a.uops.empty()) write_file(a.uops, hw::encode_uops(layout, prog.uops));
}

void run_disasm(const AsmArgs& a) {
  hw::Config cfg = load_config(a.config);
  hw::InsnLayout layout(cfg);
  std::string text;
  if (!a.input.empty()) {
    std::vector<uint8_t> bytes = read_bytes(a.input);
    try {
      text += hw::disassemble(hw::decode_program(layout, bytes), cfg);
    } catch (const hw::Error& e) {
      throw hw::Error(fmt::format("{}: {}", a.input, e.what()));
    }
  }
  if (!a.uops.empty()) text += hw::disassemble_uops(hw::decode_uops(layout, read_bytes(a.uops)));
  if (a.output.empty()) {
    fmt::print("{}", text);
  } else {
    write_file(a.output, std::vector<uint8_t>(text.begin(), text.end()));
  }
}

}  // namespace

void add_asm_commands(CLI::App& app) {
  auto a = std::make_shared<AsmArgs>();
  CLI::App* as = app.add_subcommand("asm", "assemble text (docs/isa.md) into PROG.bin");
  as->add_option("input", a->input, "assembly file")->required();
  as->add_option("-o,--output", a->output, "program file to write (16 bytes per instruction)")
      ->required();
  as->add_option("-u,--uops", a->uops, "micro-op blob to write for `uop` lines (4 bytes each)");
  add_config_option(as, a->config);
  as->callback([a] { run_asm(*a); });

  auto d = std::make_shared<AsmArgs>();
  CLI::App* dis = app.add_subcommand("disasm", "print PROG.bin (and micro-ops) as assembly");
  dis->add_option("input", d->input, "program file");
  dis->add_option("-u,--uops", d->uops, "micro-op blob to print as `uop` lines");
  dis->add_option("-o,--output", d->output, "write the text here instead of stdout");
  add_config_option(dis, d->config);
  dis->callback([d] {
    if (d->input.empty() && d->uops.empty())
      throw hw::Error("disasm: give a program file, --uops FILE, or both");
    run_disasm(*d);
  });
}

}  // namespace kiln::cli
