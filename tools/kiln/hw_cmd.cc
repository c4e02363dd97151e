// kiln hw: the accelerator configuration and what derives from it.

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <nlohmann/json.hpp>

#include "hw/driver/device.h"
#include "hw/spec/error.h"
#include "hw/spec/isa.h"
#include "tools/kiln/common.h"
#ifdef KILN_HAVE_RTL_PARAMS
#include "hw/spec/rtl_params.h"
#endif

namespace kiln::cli {

namespace {

void print_config(const hw::Config& c) {
  fmt::print("configuration {} (fingerprint {:016x})\n", c.name(), c.fingerprint());
  if (!c.description().empty()) fmt::print("  {}\n", c.description());
  fmt::print("\n  GEMM core     {} x {} x {} (BATCH x BLOCK_IN x BLOCK_OUT)\n", c.batch(),
             c.block_in(), c.block_out());
  fmt::print("  widths        inp {} bits, wgt {} bits, acc {} bits, out {} bits\n", c.inp_width(),
             c.wgt_width(), c.acc_width(), c.out_width());
  fmt::print("\n  {:<6} {:>10} {:>12} {:>8} {:>10}\n", "buffer", "bytes", "elem bytes", "depth",
             "idx bits");
  auto row = [](std::string_view n, uint32_t bytes, int elem, uint32_t depth, int bits) {
    fmt::print("  {:<6} {:>10} {:>12} {:>8} {:>10}\n", n, bytes, elem, depth, bits);
  };
  row("uop", c.uop_buff_bytes(), c.uop_elem_bytes(), c.uop_depth(), c.log_uop_depth());
  row("inp", c.inp_buff_bytes(), c.inp_elem_bytes(), c.inp_depth(), c.log_inp_depth());
  row("wgt", c.wgt_buff_bytes(), c.wgt_elem_bytes(), c.wgt_depth(), c.log_wgt_depth());
  row("acc", c.acc_buff_bytes(), c.acc_elem_bytes(), c.acc_depth(), c.log_acc_depth());
  row("out", c.out_buff_bytes(), c.out_elem_bytes(), c.out_depth(), c.log_acc_depth());
  fmt::print("  (out is no storage of its own: it is acc's low {} bits, read by STORE)\n",
             c.out_width());
  fmt::print("\n  micro-op      dst_idx {} bits, src_idx {} bits, wgt_idx {} bits\n",
             c.uop_dst_width(), c.uop_src_width(), c.uop_wgt_width());
  hw::InsnLayout layout(c);
  for (auto [name, op] : {std::pair{"LOAD/STORE", hw::Opcode::kLoad},
                          std::pair{"GEMM", hw::Opcode::kGemm}, std::pair{"ALU", hw::Opcode::kAlu}}) {
    fmt::print("\n  {} fields\n", name);
    for (const hw::FieldSpec& f : layout.fields(op))
      fmt::print("    {:<16} [{:>3}:{:>3}]\n", f.name, f.lsb + f.width - 1, f.lsb);
  }
}

}  // namespace

void add_hw_commands(CLI::App& app) {
  CLI::App* hw = app.add_subcommand("hw", "accelerator configurations and devices");
  hw->require_subcommand(1);

  auto config = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* show = hw->add_subcommand("show", "print a configuration's derived parameters");
  add_config_option(show, *config);
  show->add_flag("--json", *json, "print one JSON object");
  show->callback([config, json] {
    hw::Config c = load_config(*config);
    if (*json) {
      fmt::print("{}\n", c.to_json(true));
    } else {
      print_config(c);
    }
  });

  CLI::App* devices = hw->add_subcommand("devices", "list the devices this build can run");
  devices->callback([] {
    for (const std::string& k : driver::device_kinds()) fmt::print("{}\n", k);
  });

#ifdef KILN_HAVE_RTL_PARAMS
  auto out_dir = std::make_shared<std::string>();
  auto cfg2 = std::make_shared<std::string>();
  auto axi_bits = std::make_shared<int>(hw::kRtlAxiDataBits);
  CLI::App* params = hw->add_subcommand(
      "rtl-params", "write the RTL parameter package (kiln_cfg_pkg.sv) for a configuration and kiln_top's Vivado wrapper (kiln_zynq.v)");
  add_config_option(params, *cfg2);
  params->add_option("-o,--output", *out_dir, "output directory")->required();
  params->add_option("--axi-data-bits", *axi_bits, "data width of the AXI4 master port")
      ->default_val(hw::kRtlAxiDataBits);
  params->callback([cfg2, out_dir, axi_bits] {
    hw::Config c = load_config(*cfg2);
    std::filesystem::create_directories(*out_dir);
    std::string pkg = hw::rtl_params_package(c, *axi_bits);  // checks the width first
    for (const auto& [name, text] : {std::pair{hw::kRtlParamsFile, pkg},
                                     {hw::kZynqWrapperFile, hw::zynq_wrapper(*axi_bits)},
                                     {hw::kFlatTopFile, hw::flat_top(*axi_bits)}}) {
      std::filesystem::path file = std::filesystem::path(*out_dir) / name;
      std::ofstream out(file);
      if (!out) throw hw::Error(fmt::format("{}: cannot open for writing", file.string()));
      out << text;
      fmt::print("{}\n", file.string());
    }
  });
#endif
}

}  // namespace kiln::cli
