#pragma once
// The CPU backend's entry point, in the spirit of TVM's build(): lower a schedule (or
// take lowered functions), generate LLVM IR, optimize it for a target and return a
// callable Module. On the host the Module runs in-process through LLVM's ORC JIT
// (LLJIT); for any target it exports an object file, and on the host a shared
// library with a C header that a program without LLVM can dlopen and call.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend-cpu/runtime/tensor.h"
#include "backend-cpu/target.h"
#include "compiler/schedule/lower.h"
#include "compiler/schedule/schedule.h"
#include "support/error.h"

namespace kiln::cpu {

// A fault of a running program (division by zero, out of memory) or bad arguments.
class RuntimeError : public Error {
 public:
  explicit RuntimeError(const std::string& what) : Error(what) {}
};

class Module {
 public:
  Module() = default;

  const Target& target() const;
  // The functions, in the order given to build().
  std::vector<std::string> function_names() const;
  const schedule::LoweredFunc& function(const std::string& name) const;

  // Runs a function on arrays whose types and shapes match its arguments; arrays must be
  // compact and distinct. Throws RuntimeError (and never runs code) when they do not.
  void call(const std::string& name, const std::vector<NDArray>& args) const;
  // The only (or first) function.
  void operator()(const std::vector<NDArray>& args) const;
  // No checks: one pointer per argument, in order. Returns the function's status code.
  int32_t call_packed(const std::string& name, void** args) const;
  // The address of `name(T0*, T1*, ...)` in the JIT (typed C entry).
  void* function_pointer(const std::string& name) const;

  // The optimized LLVM IR, the target's assembly (of each part in turn), the object
  // file's bytes (one object of every function: where build() compiled the functions
  // in parts, they are compiled again as one module on the first call).
  std::string llvm_ir() const;
  std::string assembly() const;
  const std::string& object() const;
  // The objects build() made: one per part it compiled on a thread of its own.
  size_t num_objects() const;
  // A C header declaring every function (and the thread pool's controls).
  std::string header(const std::string& guard = "KILN_MODULE_H") const;

  void export_object(const std::string& path) const;
  // Links the object and the parallel runtime into a shared library with the system
  // linker (`cc -shared`), and writes the header next to it (`libfoo.so` -> `libfoo.h`).
  // Host targets only.
  void export_library(const std::string& path) const;

  struct Impl;

 private:
  friend Module build(const std::vector<schedule::LoweredFunc>& funcs, const Target& target);
  std::shared_ptr<Impl> impl_;
};

// Compiles the functions in parts, one per compiling thread (KILN_COMPILE_THREADS, else
// the hardware's count; at most one part a function), each part in an LLVM context of
// its own on a thread of its own; the parts' objects are loaded and linked together.
Module build(const std::vector<schedule::LoweredFunc>& funcs, const Target& target);
Module build(const std::vector<schedule::LoweredFunc>& funcs, const std::string& target = "llvm");
// The threads build() compiles on: KILN_COMPILE_THREADS (1 to 1024; anything else is a
// CompileError naming it), else the hardware's count.
int compile_threads();
// Indices of `costs` in at most `parts` groups of about equal total cost (longest first,
// each to the lightest group), each group's indices in order.
std::vector<std::vector<size_t>> partition_functions(const std::vector<size_t>& costs, int parts);
Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const std::string& target = "llvm",
             const std::string& name = "main");

// The C type an argument of this element type has in the generated entry points.
std::string c_type_name(ir::DataType t);

}  // namespace kiln::cpu
