#include "hw/sim/systemc/verilated_thread_context.h"

#include <verilated.h>

namespace kiln::sim::sc {

VerilatedThreadContext::VerilatedThreadContext() : ctx_(std::make_unique<VerilatedContext>()) {
  Verilated::threadContextp(ctx_.get());
}

VerilatedThreadContext::~VerilatedThreadContext() = default;

}  // namespace kiln::sim::sc
