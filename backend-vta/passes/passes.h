#pragma once
// Every pass of backend-vta's code generator, in the order codegen() runs them
// (backend-vta/codegen.cc), each over the instruction IR (insn_ir.h) and in its own
// file. KILN_DEBUG=vta logs each pass with a summary, KILN_DEBUG=vta-ir dumps the IR
// after each.
#include <array>
#include <vector>

#include "backend-vta/env.h"
#include "backend-vta/passes/insn_ir.h"
#include "compiler/schedule/lower.h"

namespace kiln::vta::passes {

// Runs the host loops with concrete values and records each accelerator region it
// meets as an instruction (DMA elements, GEMM micro-ops, ALU stores) over scratchpad
// tensors, with the events of their lifetimes.
InsnFunc extract_regions(const Env& env, const schedule::LoweredFunc& f);
// DMA regions -> 2D loads (zero padding included) and stores, split over the region's
// loops where one transfer cannot express it.
void match_dma(const Env& env, InsnFunc& fn);
// ALU regions -> one ALU operation (add, mul, min, max, shifts) with a tensor operand
// or an immediate, the operands as elements.
void match_alu(const Env& env, InsnFunc& fn);
// Gives each scratchpad tensor its range (first fit; ACC tiles centred on the ACC bank
// boundary where they fit), ALU results the range of the operand they overwrite; makes
// every micro-op and transfer absolute and records the ranges each instruction touches.
void plan_scratchpad(const Env& env, InsnFunc& fn);
// Micro-op lists -> the fewest micro-ops under the instruction's two loops (iter_out,
// iter_in), checked against the list; equal kernels are stored once.
void fold_uops(const Env& env, InsnFunc& fn);
// Reorders runs of loads by first consumer and runs of ALU instructions thread-major,
// where their ranges do not conflict (the result is unchanged).
void order_queues(const Env& env, InsnFunc& fn);
// Dependency tokens between the load, compute and store modules exactly where one
// module's access conflicts with an earlier one of another; writes the program's ops.
void insert_tokens(const Env& env, InsnFunc& fn);

// The fold of fold_uops, on its own: t[(i*e_in + j)*K + k] = uops[k] + i*f_out + j*f_in.
struct UopFit {
  int64_t e_out = 1, e_in = 1;
  Tup f_out, f_in;
  std::vector<Tup> uops;
};
UopFit fit_uops(const std::vector<Tup>& t, const std::array<int64_t, 3>& max_factor, int64_t max_iter);

}  // namespace kiln::vta::passes
