# Runs one libFuzzer harness for SECONDS on its committed corpus (docs/testing.md):
#   cmake -DNAME=n -DHARNESS=path -DSOURCE_DIR=tests/fuzz -DWORK_DIR=dir -DSECONDS=s -P run_fuzz.cmake
# KILN_FUZZ_SECONDS in the environment overrides SECONDS (make fuzz FUZZ_SECONDS=N);
# KILN_FUZZ_RUNS runs that many executions instead, however long they take
# (make fuzz FUZZ_RUNS=1000000).
# New inputs go to WORK_DIR/corpus (the committed corpus is only read); a crash, leak,
# timeout or sanitizer report leaves its input in WORK_DIR/artifacts and fails.
# In CI (CI=true, no KILN_FUZZ_SECONDS) the run is deterministic: a fixed seed and a
# fixed number of executions from the committed corpus alone, so a CI result depends on
# the commit, not on the machine's speed or an earlier run's finds.
set(budget -max_total_time=${SECONDS})
if(DEFINED ENV{KILN_FUZZ_RUNS})
  set(budget -runs=$ENV{KILN_FUZZ_RUNS})
elseif(DEFINED ENV{KILN_FUZZ_SECONDS})
  set(SECONDS $ENV{KILN_FUZZ_SECONDS})
  set(budget -max_total_time=${SECONDS})
elseif("$ENV{CI}" STREQUAL "true")
  set(budget -seed=1 -runs=3000)
  file(REMOVE_RECURSE ${WORK_DIR}/corpus)
endif()
set(seeds ${SOURCE_DIR}/corpus/${NAME})
set(dict ${SOURCE_DIR}/${NAME}.dict)
file(REMOVE_RECURSE ${WORK_DIR}/artifacts)
file(MAKE_DIRECTORY ${WORK_DIR}/corpus ${WORK_DIR}/artifacts)
set(args ${budget} -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024
         -print_final_stats=1 -artifact_prefix=${WORK_DIR}/artifacts/)
if(EXISTS ${dict})
  list(APPEND args -dict=${dict})
endif()
message(STATUS "${HARNESS} ${args} ${WORK_DIR}/corpus ${seeds}")
string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${HARNESS} ${args} ${WORK_DIR}/corpus ${seeds}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(TIMESTAMP t1 "%s")
math(EXPR took "${t1} - ${t0}")
string(REGEX MATCH "stat::number_of_executed_units: *[0-9]+" runs "${out}")
string(REGEX MATCH "stat::average_exec_per_sec: *[0-9]+" rate "${out}")
string(REGEX MATCH "stat::new_units_added: *[0-9]+" added "${out}")
string(REGEX REPLACE "[^0-9]" "" runs "${runs}")
string(REGEX REPLACE "[^0-9]" "" rate "${rate}")
string(REGEX REPLACE "[^0-9]" "" added "${added}")
if(rc EQUAL 0)
  message(STATUS "${NAME}: ${runs} executions in ${took} s (${budget}, ${rate}/s), ${added} new inputs, no crash")
  return()
endif()
file(GLOB found ${WORK_DIR}/artifacts/*)
string(LENGTH "${out}" n)
if(n GREATER 8000)
  math(EXPR from "${n} - 8000")
  string(SUBSTRING "${out}" ${from} 8000 out)
endif()
message("${out}")
message(FATAL_ERROR "${NAME} failed (exit ${rc}). The input is in: ${found}\n"
                    "Replay: ${HARNESS} <that file>\n"
                    "Minimise: ${HARNESS} -minimize_crash=1 -runs=100000 <that file>, fix the reader, "
                    "then add the minimised input to ${seeds}/ as a regression case.")
