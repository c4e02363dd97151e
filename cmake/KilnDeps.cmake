# Third-party libraries, all from Debian packages (scripts/install-deps.sh).

find_package(nlohmann_json 3 REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)
if(KILN_BUILD_TESTS OR KILN_FUZZ)
  find_package(GTest REQUIRED)
endif()
