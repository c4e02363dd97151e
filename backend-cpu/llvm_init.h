#pragma once
// Internal: LLVM's targets are registered once per process before any use.
namespace kiln::cpu {
void ensure_llvm_initialized();
}  // namespace kiln::cpu
