# Warnings, sanitizers and the include root shared by every Kiln target.

add_library(kiln_options INTERFACE)
target_compile_options(kiln_options INTERFACE -Wall -Wextra -Werror)
# g++ 12 in C++20 mode at -O3 reports `"text" + std::string` inside libstdc++ as an
# overlapping memcpy of 2^63 bytes (-Wrestrict): a known false positive, which broke
# Release builds (compiler/ir/type.cc, boards/flow/synth.cc). Off for g++ 12.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(kiln_options INTERFACE -Wno-restrict)
endif()
# Headers are included by their path from the repository root.
target_include_directories(kiln_options INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})

if(KILN_SANITIZE)
  # g++ 12's -Wmaybe-uninitialized misfires inside libstdc++ (<regex>'s automaton)
  # once the sanitizers instrument it; the sanitizers themselves check the real thing.
  target_compile_options(kiln_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                               -fno-sanitize-recover=undefined -Wno-maybe-uninitialized)
  target_link_options(kiln_options INTERFACE -fsanitize=address,undefined)
endif()

if(KILN_FUZZ)
  # Every library the harnesses link is instrumented for coverage (fuzzer-no-link) and
  # checked by ASan and UBSan; the harness executables add the libFuzzer driver.
  target_compile_options(kiln_options INTERFACE -fsanitize=fuzzer-no-link,address,undefined
                                               -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(kiln_options INTERFACE -fsanitize=address,undefined)
endif()

# kiln_add_library(name SOURCES ... DEPS ...): a static library with the project options.
function(kiln_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_link_libraries(${name} PUBLIC kiln_options ${ARG_DEPS})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

# kiln_add_test(name LABEL label SOURCES ... DEPS ...): a GoogleTest executable whose
# tests are registered one by one with CTest under the given label.
function(kiln_add_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE kiln_options ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  if(KILN_FUZZ)
    # The clang build (build/fuzz) makes the suites that run under ASan and UBSan
    # (KILN_SANITIZED_SUITES, tests/fuzz/CMakeLists.txt); the main build registers them.
    if(name IN_LIST KILN_SANITIZED_SUITES)
      add_dependencies(kiln_sanitized_tests ${name})
    endif()
    return()
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  if(KILN_SANITIZE)
    # A timeout catches a hang, not a slow run: Debug code under ASan runs several times
    # slower, and slower still on a loaded machine (ctest -j2 runs two suites at a time).
    math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * 3")
  endif()
  # NO_PRETTY_VALUES: parametrized cases are named by their generators, so CTest names
  # stay "Suite.Case/param" without the printed parameter bytes.
  gtest_discover_tests(${name} NO_PRETTY_VALUES
    PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT}
               ENVIRONMENT "KILN_SOURCE_DIR=${PROJECT_SOURCE_DIR};KILN_BINARY_DIR=${PROJECT_BINARY_DIR}"
    DISCOVERY_TIMEOUT 60)
endfunction()
