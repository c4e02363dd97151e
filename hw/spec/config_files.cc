#include "hw/spec/config_files.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "hw/spec/error.h"

namespace kiln::hw {

namespace fs = std::filesystem;

Config load_config(const std::string& name_or_path) {
  if (fs::is_regular_file(name_or_path)) return Config::from_file(name_or_path);
  const char* env = std::getenv("KILN_CONFIG_DIR");
  fs::path dir = env ? env : KILN_CONFIG_DIR;
  fs::path named = dir / (name_or_path + ".json");
  if (name_or_path.find('/') == std::string::npos && fs::is_regular_file(named))
    return Config::from_file(named);
  std::string known;
  if (fs::is_directory(dir)) {
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().extension() == ".json") known += " " + entry.path().stem().string();
  }
  throw Error(fmt::format("configuration '{}' is neither a file nor a name in {} (known:{})", name_or_path, dir.string(), known.empty() ? " none" : known));
}

}  // namespace kiln::hw
