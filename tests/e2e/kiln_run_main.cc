// A `kiln` with only the run and compile commands (tools/kiln/run_cmd.cc) and the CPU
// backend registered, so the commands are tested here before the lead wires them
// into tools/kiln.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <exception>

#include "tests/e2e/cpu_graph_backend.h"

namespace kiln::cli {
void add_run_commands(CLI::App& app);
}

int main(int argc, char** argv) {
  kiln::test::register_cpu_graph_backend();
  CLI::App app{"kiln (run and compile only)"};
  app.require_subcommand(1);
  kiln::cli::add_run_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "kiln: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
