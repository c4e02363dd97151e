#pragma once
// Helpers shared by the subcommands of the kiln command line.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/quantize/quantize.h"
#include "hw/spec/config.h"

namespace kiln::graph {
class Executor;
}

namespace kiln::cli {

// A configuration given as a file path or as the name of one in hw/config
// ("default", "tiny", "small"); KILN_CONFIG_DIR overrides where names are looked up.
hw::Config load_config(const std::string& name_or_path);
// Adds `--config FILE|NAME` (default "default") to a subcommand.
void add_config_option(CLI::App* app, std::string& target);

std::vector<uint8_t> read_bytes(const std::filesystem::path& path);  // support/file.h's read_file, as bytes
void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);

// kiln quantize without the output file: MODEL.onnx calibrated on the .npy inputs of
// `calibrate_dir` (quantize_cmd.cc); returns the QDQ model's bytes.
std::string quantize_file(const std::string& model, const std::string& calibrate_dir, const quantize::Options& opt,
                          quantize::Report* report = nullptr);

// Fills a compiled model's inputs from NAME=FILE.npy specs, the others with random
// data (floats in [-1, 1), integers in [0, 10)); run_cmd.cc.
void set_inputs(graph::Executor& ex, const std::vector<std::string>& specs);

// Subcommand registration; each returns after adding its callbacks to `app`.
void add_hw_commands(CLI::App& app);
void add_asm_commands(CLI::App& app);
void add_sim_command(CLI::App& app);
void add_synth_command(CLI::App& app);
void add_run_commands(CLI::App& app);  // kiln run, kiln compile (run_cmd.cc)
void add_quantize_command(CLI::App& app);  // kiln quantize (quantize_cmd.cc)

}  // namespace kiln::cli
