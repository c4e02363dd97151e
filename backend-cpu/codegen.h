#pragma once
// Internal: lowered loop IR to LLVM IR, and LLVM's optimization and object emission.
// Each lowered function `f` becomes two C-ABI entries:
//   int32_t f(T0* a0, T1* a1, ...)        typed pointers, one per argument buffer
//   int32_t f_packed(void** args, int32_t n)   the same through an array of pointers
// Both return 0, or a non-zero code for a fault of the program (division by zero).
#include <memory>
#include <string>
#include <vector>

#include "backend-cpu/target.h"
#include "compiler/schedule/lower.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
}  // namespace llvm

namespace kiln::cpu {

// A TargetMachine for `t`, position-independent (for JIT and shared libraries alike).
std::unique_ptr<llvm::TargetMachine> create_target_machine(const Target& t);

std::unique_ptr<llvm::Module> codegen_module(const std::vector<schedule::LoweredFunc>& funcs, const Target& t,
                                             llvm::TargetMachine& tm, llvm::LLVMContext& ctx);

// LLVM's -O<level> pipeline, tuned for the target.
void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, int opt_level);

// An ELF/Mach-O object, or assembly text, of the module.
std::string emit_object(llvm::Module& m, llvm::TargetMachine& tm);
std::string emit_assembly(llvm::Module& m, llvm::TargetMachine& tm);

}  // namespace kiln::cpu
