// kiln_rtl_params --config FILE -o DIR [--axi-data-bits N]: writes DIR/kiln_cfg_pkg.sv,
// the RTL's parameter package for one configuration, DIR/kiln_zynq.v, kiln_top's Vivado
// wrapper for that AXI width, and DIR/kiln_top_flat.sv, kiln_top with flat AXI ports for
// the SystemC platform. CMake runs it at build time, once
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
    kiln::hw::Config cfg = kiln::hw::Config::from_file(config);
    std::filesystem::create_directories(dir);
    // Rewrite only on change, so a rebuild does not re-Verilate an unchanged model.
    auto write = [&](const char* name, const std::string& text) {
      std::filesystem::path path = std::filesystem::path(dir) / name;
      std::ifstream old(path);
      std::string previous((std::istreambuf_iterator<char>(old)), std::istreambuf_iterator<char>());
      if (previous == text) return;
      std::ofstream out(path);
      out << text;
      if (!out) throw kiln::hw::Error(fmt::format("{}: cannot write", path.string()));
    };
    write(kiln::hw::kRtlParamsFile, kiln::hw::rtl_params_package(cfg, axi_data_bits));
    write(kiln::hw::kZynqWrapperFile, kiln::hw::zynq_wrapper(axi_data_bits));
    write(kiln::hw::kFlatTopFile, kiln::hw::flat_top(axi_data_bits));
  } catch (const std::exception& e) {
    std::cerr << "kiln_rtl_params: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
