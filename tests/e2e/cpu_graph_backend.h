#pragma once
// The "cpu" backend of the graph registry for the tests: backend-cpu's own
// registration (kiln_cpu_graph) when that library exists, else this folder's copy of
// the adapter (cpu_graph_backend.cc), which it came from.
#ifdef KILN_E2E_CPU_GRAPH_IN_BACKEND
#include "backend-cpu/graph_backend.h"
namespace kiln::test {
inline void register_cpu_graph_backend() { cpu::register_graph_backend(); }
}  // namespace kiln::test
#else
namespace kiln::test {
void register_cpu_graph_backend();
}  // namespace kiln::test
#endif
