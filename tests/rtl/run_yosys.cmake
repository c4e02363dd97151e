# Synthesizes kiln_top with Yosys for one configuration (ctest: rtl_yosys_<cfg>).
# tiny: synth_ice40 with DSP inference. -nocarry: Yosys 0.23's ice40_opt needs over
#   100 rounds to fold this design's constant carry chains (5 CPU minutes against 1.5);
#   the full flow with SB_CARRY also succeeds and belongs to the board flow.
# others: Yosys's generic `synth` through gate mapping (abc). Its fine stage would run
#   memory_map, turning megabits of scratchpad into flip-flops for hours, so the
#   scratchpads stay inferred memories ($mem cells: block RAM on any FPGA) and the
#   logic around them is mapped to gates.
cmake_minimum_required(VERSION 3.25)
string(REPLACE ";" " " sources "${SOURCES}")
file(MAKE_DIRECTORY ${OUT})
if(CFG STREQUAL "tiny")
  set(flow "synth_ice40 -top ${TOP} -dsp -nocarry -json ${OUT}/kiln_top.json")
else()
  set(flow "synth -top ${TOP} -run begin:fine; opt -fast -full; techmap; opt -fast; abc -fast; opt -fast")
endif()
set(script "read_verilog -sv ${PKG} ${sources}; hierarchy -check -top ${TOP}; ${flow}; check -assert; tee -o ${OUT}/stat.txt stat")
execute_process(COMMAND ${YOSYS} -q -l ${OUT}/yosys.log -p "${script}"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "yosys failed for configuration ${CFG} (exit ${rc}); see ${OUT}/yosys.log")
endif()
file(READ ${OUT}/stat.txt stat)
message("${stat}")
