#pragma once
// The Verilator context that the platform's SystemC models (verilator --sc) take:
// they use Verilator's thread context, which is otherwise the last one made anywhere
// in the process (perhaps an rtl device's, since deleted). Made before the models and
// kept until after them. Its own unit, since verilated.h must not see systemc.h here.

#include <memory>

class VerilatedContext;

namespace kiln::sim::sc {

class VerilatedThreadContext {
 public:
  VerilatedThreadContext();
  ~VerilatedThreadContext();
  VerilatedThreadContext(const VerilatedThreadContext&) = delete;
  VerilatedThreadContext& operator=(const VerilatedThreadContext&) = delete;

 private:
  std::unique_ptr<VerilatedContext> ctx_;
};

}  // namespace kiln::sim::sc
