// A `kiln` with only the synth command (tools/kiln/synth_cmd.cc), so the command is
// tested here before the lead wires it into tools/kiln.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <exception>

namespace kiln::cli {
void add_synth_command(CLI::App& app);
}

int main(int argc, char** argv) {
  CLI::App app{"kiln (synth only)"};
  app.require_subcommand(1);
  kiln::cli::add_synth_command(app);
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
