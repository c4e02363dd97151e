#pragma once
// The reference interpreter: executes lowered loop IR on host buffers, for every data
// type (integers of any width wrap, float16/bfloat16/float32 round after every
// operation). Every backend is compared with it. The IR is compiled once into a tree
// of evaluators with variables in slots, then run as often as wanted.
#include <memory>
#include <vector>

#include "compiler/interp/host_buffer.h"
#include "compiler/passes/split_host_device.h"
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

// The order in which a GPU kernel's blocks, and each block's threads, are run. The
// threads of a block run one after another from one barrier to the next, so a kernel
// that lacks a barrier reads what another thread has not written yet (or has already
// overwritten) in one of these orders.
enum class ThreadOrder { Forward, Reverse, Shuffled };

// Runs the kernels of a GPU function (passes::split_host_device) as a GPU would,
// thread by thread: every thread has its own variables and "local" buffers, a block's
// threads share its "shared" buffers, global temporaries live between the kernels. A
// loop or condition around a barrier whose value differs between the threads of a
// block is an InterpError (a GPU would hang or be undefined there).
class DeviceProgram {
 public:
  explicit DeviceProgram(const passes::DeviceFunc& f);
  ~DeviceProgram();
  DeviceProgram(const DeviceProgram&) = delete;
  DeviceProgram& operator=(const DeviceProgram&) = delete;

  // Arguments in the order of the function's args, as Program::run. `seed` chooses
  // the permutation of ThreadOrder::Shuffled.
  void run(const std::vector<HostBuffer*>& args, ThreadOrder order = ThreadOrder::Forward, uint64_t seed = 1);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::interp
