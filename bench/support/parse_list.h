#pragma once
// "64,128,256" as integers, for the benches' size, thread and layer lists (bench/gemm
// --sizes and --threads, bench/conv2d --layers).

#include <cstdlib>
#include <vector>

namespace kiln::bench_support {

inline std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    out.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return out;
}

}  // namespace kiln::bench_support
