#include "tools/kiln/common.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>

#include "hw/spec/config_files.h"
#include "hw/spec/error.h"
#include "support/file.h"

namespace kiln::cli {

namespace fs = std::filesystem;

hw::Config load_config(const std::string& name_or_path) { return hw::load_config(name_or_path); }

void add_config_option(CLI::App* app, std::string& target) {
  app->add_option("--config", target,
                  "accelerator configuration: a JSON file, or a name in hw/config")
      ->default_val("default");
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::string bytes = read_file(path.string());
  return {bytes.begin(), bytes.end()};
}

void write_file(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw hw::Error(fmt::format("{}: cannot open for writing", path.string()));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw hw::Error(fmt::format("{}: write failed", path.string()));
}

}  // namespace kiln::cli
