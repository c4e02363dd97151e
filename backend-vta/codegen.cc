// codegen(): the code generator's pipeline, top to bottom (the passes are listed in
// backend-vta/passes/passes.h). KILN_DEBUG=vta prints a line per pass, KILN_DEBUG=vta-ir
// the instruction IR after each.
#include "backend-vta/codegen.h"

#include <iostream>

#include "backend-vta/passes/passes.h"
#include "support/debug.h"

namespace kiln::vta {

namespace {

void log_pass(const char* pass, const InsnFunc& fn) {
  const bool ir = debug_enabled("vta-ir");
  if (!ir && !debug_enabled("vta")) return;
  std::cerr << "// vta codegen '" << fn.name << "' after " << pass << ": " << fn.summary() << "\n";
  if (ir) std::cerr << fn.dump();
}

}  // namespace

Program codegen(const Env& env, const schedule::LoweredFunc& f) {
  InsnFunc fn = passes::extract_regions(env, f);
  log_pass("extract_regions", fn);
  passes::match_dma(env, fn);
  log_pass("match_dma", fn);
  passes::match_alu(env, fn);
  log_pass("match_alu", fn);
  passes::plan_scratchpad(env, fn);
  log_pass("plan_scratchpad", fn);
  passes::fold_uops(env, fn);
  log_pass("fold_uops", fn);
  passes::order_queues(env, fn);
  log_pass("order_queues", fn);
  passes::insert_tokens(env, fn);
  log_pass("insert_tokens", fn);
  return std::move(fn.program);
}

}  // namespace kiln::vta
