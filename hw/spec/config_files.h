#pragma once
// Finding a configuration by name: a file path, or the name of a file in hw/config
// ("default", "small", "tiny"). KILN_CONFIG_DIR in the environment overrides where
// names are looked up. One place for the CLI, the compiler's accelerator target and
// the benchmarks.
#include <string>

#include "hw/spec/config.h"

namespace kiln::hw {

// hw::Error naming the known configurations when there is no such file or name.
Config load_config(const std::string& name_or_path);

}  // namespace kiln::hw
