// kiln_rtl_params --config FILE -o DIR [--axi-data-bits N]: writes DIR/kiln_cfg_pkg.sv,
// the RTL's parameter package for one configuration. CMake runs it at build time, once
// per configuration.

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "hw/spec/error.h"
#include "hw/spec/rtl_params.h"

int main(int argc, char** argv) {
  const char* usage = "usage: kiln_rtl_params --config FILE.json -o DIR [--axi-data-bits N]\n";
  std::string config, dir;
  int axi_data_bits = kiln::hw::kRtlAxiDataBits;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--config" || a == "-o") && i + 1 < argc) {
      (a == "-o" ? dir : config) = argv[++i];
    } else if (a == "--axi-data-bits" && i + 1 < argc) {
      axi_data_bits = std::atoi(argv[++i]);
    } else {
      std::cerr << usage;
      return 2;
    }
  }
  if (config.empty() || dir.empty()) {
    std::cerr << usage;
    return 2;
  }
  try {
    std::string text =
        kiln::hw::rtl_params_package(kiln::hw::Config::from_file(config), axi_data_bits);
    std::filesystem::create_directories(dir);
    std::filesystem::path path = std::filesystem::path(dir) / kiln::hw::kRtlParamsFile;
    // Rewrite only on change, so a rebuild does not re-Verilate an unchanged model.
    std::ifstream old(path);
    std::string previous((std::istreambuf_iterator<char>(old)), std::istreambuf_iterator<char>());
    if (previous != text) {
      std::ofstream out(path);
      out << text;
      if (!out) throw kiln::hw::Error(fmt::format("{}: cannot write", path.string()));
    }
  } catch (const std::exception& e) {
    std::cerr << "kiln_rtl_params: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
