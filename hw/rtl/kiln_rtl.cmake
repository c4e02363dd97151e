# The accelerator's RTL: the source list and the configurations Verilated by default.
# Included by hw/sim/rtl (the Verilated models) and tests/rtl (lint, Yosys).
set(KILN_RTL_DIR ${CMAKE_CURRENT_LIST_DIR})
set(KILN_RTL_SOURCES
  ${KILN_RTL_DIR}/kiln_fifo.sv
  ${KILN_RTL_DIR}/kiln_sram.sv
  ${KILN_RTL_DIR}/kiln_token_queue.sv
  ${KILN_RTL_DIR}/kiln_burst_gen.sv
  ${KILN_RTL_DIR}/kiln_dma_cmd.sv
  ${KILN_RTL_DIR}/kiln_dma_reader.sv
  ${KILN_RTL_DIR}/kiln_dma_writer.sv
  ${KILN_RTL_DIR}/kiln_axi_rd_arbiter.sv
  ${KILN_RTL_DIR}/kiln_load_2d.sv
  ${KILN_RTL_DIR}/kiln_gemm.sv
  ${KILN_RTL_DIR}/kiln_alu.sv
  ${KILN_RTL_DIR}/kiln_loop_fields.sv
  ${KILN_RTL_DIR}/kiln_fetch.sv
  ${KILN_RTL_DIR}/kiln_token_seq.sv
  ${KILN_RTL_DIR}/kiln_load.sv
  ${KILN_RTL_DIR}/kiln_compute.sv
  ${KILN_RTL_DIR}/kiln_store.sv
  ${KILN_RTL_DIR}/kiln_regfile.sv
  ${KILN_RTL_DIR}/kiln_top.sv)
set(KILN_RTL_TOP kiln_top)

# The in-order core (kiln_inorder_top: one sequencer, the same ISA and register map) for
# parts too small for kiln_top, and its AXI wrapper with kiln_top's ports, which the rtl
# device runs when DeviceOptions::core is "inorder".
set(KILN_RTL_INORDER_SOURCES
  ${KILN_RTL_DIR}/kiln_sram.sv
  ${KILN_RTL_DIR}/kiln_alu.sv
  ${KILN_RTL_DIR}/kiln_regfile.sv
  ${KILN_RTL_DIR}/kiln_loop_fields.sv
  ${KILN_RTL_DIR}/kiln_inorder_decode.sv
  ${KILN_RTL_DIR}/kiln_inorder_tokens.sv
  ${KILN_RTL_DIR}/kiln_inorder_loop.sv
  ${KILN_RTL_DIR}/kiln_inorder_lanes.sv
  ${KILN_RTL_DIR}/kiln_inorder_top.sv)
set(KILN_RTL_INORDER_AXI_SOURCES ${KILN_RTL_INORDER_SOURCES} ${KILN_RTL_DIR}/kiln_inorder_axi.sv)
set(KILN_RTL_INORDER_CONFIGS "default;tiny;small" CACHE STRING
    "Configurations to build Verilated models of the in-order core for (rtl device, core inorder)")

# One Verilated model per configuration (hw/config/<name>.json), all linked into one
# binary; the rtl device picks the one whose fingerprint matches.
set(KILN_RTL_CONFIGS "default;tiny;small" CACHE STRING
    "Configurations (hw/config/<name>.json) to build Verilated models for")
# Configurations whose models pair two GEMM products per multiplier (kiln_top's
# GEMM_PAIR_PRODUCTS, what the Xilinx board flows synthesize); the others are built
# without, as for iCE40. The differential tests thereby cover both forms. Not default:
# its 256 paired products simulate a third slower than the plain ones, and the cycles
# are the same either way.
set(KILN_RTL_PAIRED_CONFIGS "small" CACHE STRING
    "Configurations Verilated with GEMM_PAIR_PRODUCTS=1 (two GEMM products per multiplier)")

# The AXI4 master's data width; the Verilator harness takes 32 or 64.
set(KILN_RTL_AXI_DATA_BITS 64 CACHE STRING "AXI4 data width of the RTL's DRAM port (32 or 64)")
set_property(CACHE KILN_RTL_AXI_DATA_BITS PROPERTY STRINGS 32 64)
if(NOT KILN_RTL_AXI_DATA_BITS MATCHES "^(32|64)$")
  message(FATAL_ERROR "KILN_RTL_AXI_DATA_BITS is ${KILN_RTL_AXI_DATA_BITS}; the harness takes 32 or 64")
endif()

# kiln_rtl_package(<cfg> <out-var>): the rule that generates the parameter package of
# configuration <cfg> into ${CMAKE_BINARY_DIR}/hw/rtl/<cfg>/kiln_cfg_pkg.sv.
# kiln_rtl_top_params(<cfg> <out-var>): Verilator -G options of kiln_top for <cfg>.
function(kiln_rtl_top_params cfg out_var)
  set(params "")
  if(cfg IN_LIST KILN_RTL_PAIRED_CONFIGS)
    list(APPEND params -GGEMM_PAIR_PRODUCTS=1)
  endif()
  set(${out_var} ${params} PARENT_SCOPE)
endfunction()

function(kiln_rtl_package cfg out_var)
  set(dir ${CMAKE_BINARY_DIR}/hw/rtl/${cfg})
  set(pkg ${dir}/kiln_cfg_pkg.sv)
  set(json ${PROJECT_SOURCE_DIR}/hw/config/${cfg}.json)
  if(NOT EXISTS ${json})
    message(FATAL_ERROR "KILN_RTL_CONFIGS names '${cfg}', but ${json} does not exist")
  endif()
  # The same run writes kiln_top's Vivado wrapper (kiln_zynq.v) and its flat-port
  # wrapper for the SystemC platform (kiln_top_flat.sv) beside the package.
  add_custom_command(OUTPUT ${pkg} ${dir}/kiln_zynq.v ${dir}/kiln_top_flat.sv
    COMMAND kiln_rtl_params_gen --config ${json} -o ${dir} --axi-data-bits ${KILN_RTL_AXI_DATA_BITS}
    DEPENDS kiln_rtl_params_gen ${json}
    COMMENT "Generating the RTL parameter package for configuration ${cfg}")
  set(${out_var} ${pkg} PARENT_SCOPE)
endfunction()

# How Verilator's --build compiles a model's C++ (hw/sim/rtl, hw/sim/systemc,
# hw/sim/uart): clang++ at -O3 where there is one (scripts/install-deps.sh installs
# clang-19 for the fuzz build): the Verilated models simulate 5% (default) to 40%
# (tiny) faster than with g++ 12 at -O2 or -O3 (docs/performance.md, bench/rtl); g++
# -O2 otherwise. The slow
# (constructor, trace set-up) code stays at -O1 for short 2-core builds. Warnings in
# generated code are not ours to fix.
find_program(KILN_VERILATED_CXX NAMES clang++-19 clang++
             DOC "C++ compiler for the Verilated models (clang++ preferred: faster models)")
if(KILN_VERILATED_CXX)
  set(KILN_VERILATOR_BUILD_ARGS -CFLAGS -fPIC -CFLAGS -w
      -MAKEFLAGS "CXX=${KILN_VERILATED_CXX} OPT_FAST=-O3 OPT_SLOW=-O1 OPT_GLOBAL=-O1")
else()
  set(KILN_VERILATOR_BUILD_ARGS -CFLAGS -fPIC -CFLAGS -w
      -MAKEFLAGS "OPT_FAST=-O2 OPT_SLOW=-O1 OPT_GLOBAL=-O1")
endif()
