// kiln synth: a board's synthesis flow (boards/flow/synth.h) and its resource report.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <string>

#include "boards/flow/board.h"
#include "boards/flow/synth.h"

namespace kiln::cli {

namespace {

struct SynthArgs {
  std::string board, config, out_dir, yosys = "yosys";
  bool json = false, list = false;
};

void print_report(const boards::SynthReport& r) {
  fmt::print("board {} ({}), configuration {}\n", r.board, r.part, r.config);
  fmt::print("flow  {} ({:.0f} s; logs in {})\n\n", r.flow, r.seconds, r.out_dir.string());
  fmt::print("  {:<6} {:>10} {:>10} {:>8}\n", "kind", "used", "available", "percent");
  for (const boards::Resource& res : r.resources)
    fmt::print("  {:<6} {:>10} {:>10} {:>7.1f}%\n", res.kind, res.used, res.available,
               res.percent());
  fmt::print("\nfmax       {}\n", r.fmax_mhz ? fmt::format("{:.1f} MHz", *r.fmax_mhz)
                                            : std::string("unknown"));
  fmt::print("bitstream  {}\n", r.bitstream ? r.bitstream->string() : std::string("none"));
  for (const std::string& n : r.notes) fmt::print("note: {}\n", n);
}

void run(const SynthArgs& a) {
  if (a.list) {
    for (const std::string& n : boards::board_names(boards::boards_dir())) {
      boards::Board b = boards::load_board(n, boards::boards_dir());
      fmt::print("{:<12} {:<20} {}\n", b.name, b.part, b.config);
    }
    return;
  }
  if (a.board.empty()) throw CLI::RequiredError("--board");
  boards::Board board = boards::load_board(a.board, boards::boards_dir());
  hw::Config cfg = boards::load_config(a.config.empty() ? board.config : a.config);
  std::string out = a.out_dir.empty() ? fmt::format("synth-{}-{}", board.name, cfg.name()) : a.out_dir;
  boards::SynthOptions opt = boards::default_synth_options(out);
  opt.yosys = a.yosys;
  boards::SynthReport r = boards::run_synth(board, cfg, opt);
  if (a.json) {
    fmt::print("{}\n", r.to_json().dump(2));
  } else {
    print_report(r);
  }
}

}  // namespace

void add_synth_command(CLI::App& app) {
  auto a = std::make_shared<SynthArgs>();
  CLI::App* c = app.add_subcommand(
      "synth", "synthesize the accelerator for a board (boards/NAME) and report its resources");
  c->add_option("--board", a->board, "board name (a folder of boards/) or a board.json path");
  c->add_option("--config", a->config, "configuration file or name (default: the board's)");
  c->add_option("--out", a->out_dir, "folder for netlist, logs and reports (default synth-BOARD-CONFIG)");
  c->add_option("--yosys", a->yosys, "the yosys program");
  c->add_flag("--json", a->json, "print one JSON object");
  c->add_flag("--list", a->list, "list the boards");
  c->callback([a] { run(*a); });
}

}  // namespace kiln::cli
