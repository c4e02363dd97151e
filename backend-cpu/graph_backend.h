#pragma once
// The CPU backend in compiler/target's registry, under the name "cpu": the graph
// executor asks for it by name and never links it (DESIGN.md's dependency direction).
#include "backend-cpu/module.h"
#include "compiler/target/backend.h"

namespace kiln::cpu {

// Registers the "cpu" backend: kernels JIT-compiled through LLVM, saved as a shared
// library and loaded back with dlopen (no LLVM, no compiler needed to load them).
void register_graph_backend();

// The code of kernels that the "cpu" backend compiled (Backend::build): all of a
// model's host kernels in one Module, to export as an object file or a shared library,
// also when they were compiled for another machine ("llvm -mtriple=aarch64-linux-gnu")
// and cannot run here. Null for kernels loaded from a saved library, for a model
// without host kernels, and for another backend's kernels.
const Module* compiled_module(const target::KernelModule& kernels);

}  // namespace kiln::cpu
