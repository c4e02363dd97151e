#pragma once
// The CPU backend in compiler/target's registry, under the name "cpu": the graph
// executor asks for it by name and never links it (DESIGN.md's dependency direction).

namespace kiln::cpu {

// Registers the "cpu" backend: kernels JIT-compiled through LLVM, saved as a shared
// library and loaded back with dlopen (no LLVM, no compiler needed to load them).
void register_graph_backend();

}  // namespace kiln::cpu
