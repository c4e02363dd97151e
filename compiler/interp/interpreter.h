#pragma once
// The reference interpreter: executes lowered loop IR on host buffers, for every data
// type (integers of any width wrap, float16/bfloat16/float32 round after every
// operation). Every backend is compared with it. The IR is compiled once into a tree
// of evaluators with variables in slots, then run as often as wanted.
#include <memory>
#include <vector>

#include "compiler/interp/host_buffer.h"
#include "compiler/schedule/lower.h"
#include "support/error.h"

namespace kiln::interp {

// A fault of the program being run (out-of-bounds access, division by zero).
class InterpError : public Error {
 public:
  explicit InterpError(const std::string& what) : Error(what) {}
};

class Program {
 public:
  explicit Program(const schedule::LoweredFunc& f);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // Arguments in the order of the function's args; shapes and types must match.
  void run(const std::vector<HostBuffer*>& args);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Compiles and runs once.
void run(const schedule::LoweredFunc& f, const std::vector<HostBuffer*>& args);

}  // namespace kiln::interp
