// kiln: the command line of the Kiln toolkit (docs/cli.md).

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <exception>

#include "support/error.h"
#include "tools/kiln/common.h"
#include "tools/kiln/plugin.h"
#ifdef KILN_HAVE_CPU
#include "backend-cpu/graph_backend.h"
#endif
#ifdef KILN_HAVE_VTA_GRAPH
#include "backend-vta/graph_target.h"
#endif
#ifdef KILN_HAVE_GPU
#include "backend-gpu/graph_backend.h"
#endif
#ifdef KILN_HAVE_VTA
namespace kiln::cli {
void add_vta_commands(CLI::App& app);  // kiln vta (vta_cmd.cc)
}
#endif
#ifdef KILN_HAVE_TUNER
namespace kiln::cli {
void add_tune_command(CLI::App& app);  // kiln tune (tune_cmd.cc)
}
#endif
#ifdef KILN_HAVE_EXPLORE
namespace kiln::cli {
void add_explore_command(CLI::App& app);  // kiln explore (explore_cmd.cc)
}
#endif

int main(int argc, char** argv) {
  CLI::App app{
      "Kiln: a deep-learning compiler and an open tensor accelerator, built together.\n"
      "Run `kiln <command> --help` for the options of a command."};
  app.set_version_flag("--version", "kiln 0.1.0");
  app.require_subcommand(1);
  // Given before the command, so its targets are registered before the command runs.
  app.add_option("--plugin", "a shared object that registers a target of its own (docs/compiler.md, Adding a backend)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->each([](const std::string& path) { kiln::cli::load_plugin(path); });
  kiln::cli::add_hw_commands(app);
  kiln::cli::add_asm_commands(app);
  kiln::cli::add_sim_command(app);
  kiln::cli::add_synth_command(app);
#ifdef KILN_HAVE_CPU
  // Backends register with compiler/target's registry before any model is compiled.
  kiln::cpu::register_graph_backend();
#ifdef KILN_HAVE_VTA_GRAPH
  kiln::vta::register_graph_target();
#endif
#ifdef KILN_HAVE_GPU
  kiln::gpu::register_graph_backends();
#endif
  kiln::cli::add_run_commands(app);
  kiln::cli::add_quantize_command(app);
#endif
#ifdef KILN_HAVE_VTA
  kiln::cli::add_vta_commands(app);
#endif
#ifdef KILN_HAVE_TUNER
  kiln::cli::add_tune_command(app);
#endif
#ifdef KILN_HAVE_EXPLORE
  kiln::cli::add_explore_command(app);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const kiln::Error& e) {  // every layer's errors: hw/, the compiler, the backends, the tuner
    fmt::print(stderr, "{}\n", e.report("kiln"));
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", kiln::internal_error_report("kiln", e));
    return 1;
  }
  return 0;
}
