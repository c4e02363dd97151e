# Synthesizes kiln_top with Yosys for one configuration (ctest: rtl_yosys_<cfg>).
# tiny: synth_ice40 (iCE40 UP5K: block RAM, SPRAM and DSP inference).
# others: the generic `synth` flow up to technology mapping. Its last step,
# memory_map, would turn megabits of scratchpad into flip-flops, so the scratchpads
# stay inferred memories ($mem cells: block RAM on any FPGA) and the logic is mapped
# to gates around them.
cmake_minimum_required(VERSION 3.25)
string(REPLACE ";" " " sources "${SOURCES}")
file(MAKE_DIRECTORY ${OUT})
if(CFG STREQUAL "tiny")
  set(flow "synth_ice40 -top ${TOP} -dsp -spram -json ${OUT}/kiln_top.json")
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
