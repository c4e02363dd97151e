#pragma once
// The code generator's instruction IR: what a lowered function becomes once its host
// loops have run, before encoding. The passes of passes.h fill it in, in order:
//   - scratchpad tensors (one per execution of an Allocate) and the events that give
//     and take back their ranges (SpadEvent);
//   - instructions, each run by one module (its queue: load, compute or store), with
//     the raw content of its region (DMA elements, GEMM micro-ops, ALU stores) as
//     elements relative to scratchpad tensors; then, once placed, absolute micro-ops
//     and the scratchpad ranges it reads and writes; then its program op (a 2D
//     transfer, or a kernel of the program);
//   - the program (backend-vta/program.h): arguments, kernels and, once the tokens
//     are inserted, its ops.
#include <cstdint>
#include <string>
#include <vector>

#include "backend-vta/env.h"
#include "backend-vta/program.h"
#include "compiler/ir/node.h"

namespace kiln::vta {

// An element of a scratchpad tensor: the tensor, and the element from its start.
struct SpadRef {
  int tensor = -1;
  int64_t elem = 0;
};

// One execution of an Allocate in a scratchpad (one inside a loop makes one a turn).
struct SpadTensor {
  std::string name;
  hw::MemType mem = hw::MemType::kInp;
  int64_t elems = 0;
  // plan_scratchpad: the first element of its range in its buffer.
  bool placed = false;
  int64_t base = 0;
  int alias_of = -1;  // the tensor whose storage it shares (an ALU stage in place)
};

// What scratchpad planning replays, in program order: a tensor's first write gives
// it a range (kPlace), or, for an ALU stage's result, the range of the operand it
// overwrites (kAlias, target filled by match_alu); leaving its Allocate frees it.
struct SpadEvent {
  enum class Kind : uint8_t { kPlace, kAlias, kFree };
  Kind kind = Kind::kPlace;
  int tensor = -1;
  SpadRef target;  // kAlias: the element of the operand that element 0 of `tensor` is
};

// A micro-op as elements: accumulator, input, weight (GEMM) or destination and source
// (ALU, in `inp`). tensor < 0: the operand is not used.
struct UopRef {
  SpadRef acc, inp, wgt;
};

// A micro-op once placed: absolute elements of the buffers.
struct Tup {
  int64_t d = 0, s = 0, w = 0;
  bool operator==(const Tup&) const = default;
};

// One scratchpad range an instruction reads or writes.
struct Access {
  hw::MemType mem = hw::MemType::kInp;
  int64_t lo = 0, hi = 0;  // [lo, hi)
  bool write = false;
};

// One element of a DMA region: its scratchpad element (relative to Insn::tensor), its
// DRAM element in the argument, and for loads whether it is padding.
struct DmaElem {
  int64_t spad = 0;
  int64_t dram = 0;
  bool pad = false;
};

// How a DMA region splits when it is not one 2D transfer: a loop into its iterations,
// a sequence into its statements. Leaves and element loops do not split.
struct DmaPart {
  size_t begin = 0, end = 0;  // elements [begin, end) of the region
  bool splittable = false;
  ir::Stmt body;
  std::vector<DmaPart> parts;
};

// One store of an ALU region, evaluated: the destination's scalar range, and every
// load of the stored value with its scalar range.
struct AluLeaf {
  struct Operand {
    const ir::LoadNode* load = nullptr;
    int tensor = -1;  // not a scratchpad tensor: -1
    int64_t first = 0, last = 0;
    bool written = false;  // the tensor held data when the region ran
  };
  const ir::StoreNode* store = nullptr;
  int64_t first = 0, last = 0;
  std::vector<Operand> operands;
};

struct Insn {
  enum class Kind : uint8_t { kLoad, kStore, kGemmReset, kGemm, kAlu };
  Kind kind = Kind::kLoad;
  hw::Module stage = hw::Module::kLoad;  // the module whose queue runs it
  int region = 0;                                // the region it came from, in program order
  ir::Stmt source;                               // that region's statement (errors, dumps)
  int tensor = -1;  // the scratchpad tensor it writes (loads, GEMM, ALU) or stores

  // kLoad / kStore. extract_regions: the elements; match_dma: the 2D transfer in `op`
  // (op.sram relative to `tensor` until plan_scratchpad) and its element count.
  hw::MemType mem = hw::MemType::kInp;
  int arg = -1;
  std::vector<DmaElem> elems;
  DmaPart split;
  int64_t dma_elems = 0;

  // kGemmReset / kGemm: extract_regions. kAlu: match_alu (acc = the destination, inp =
  // the first operand, wgt = the second; none with an immediate).
  std::vector<UopRef> uops;
  // kAlu. extract_regions: the stores; match_alu: the operation.
  std::vector<AluLeaf> leaves;
  hw::AluOp alu_op = hw::AluOp::kMin;
  bool use_imm = false, commutative = false;
  int64_t imm = 0;
  int alias_event = -1;  // the kAlias event of its destination, if it takes over storage

  // plan_scratchpad: absolute micro-ops and the ranges the instruction touches.
  std::vector<Tup> placed;
  std::vector<Access> accesses;

  // match_dma (transfers) / fold_uops (kernels): the program op.
  ProgramOp op;
};

const char* insn_kind_name(Insn::Kind k);

// True when two instructions touch overlapping ranges of one buffer (OUT is ACC) and
// one of them writes.
bool conflicts(const Insn& a, const Insn& b);

// The instruction IR of one lowered function.
struct InsnFunc {
  std::string name;  // the operator (the lowered function's name)
  Program program;
  std::vector<SpadTensor> tensors;
  std::vector<SpadEvent> events;
  std::vector<Insn> insns;
  bool ops_done = false;  // insert_tokens has written program's ops

  // A CompileError naming the operator.
  [[noreturn]] void fail(const std::string& why) const;
  // The element of tensor `t` that scalar `idx` starts; fails when it is not at an
  // element boundary or outside the tensor.
  int64_t element(const Env& env, int t, int64_t idx, const char* what) const;
  // The absolute element of a placed reference.
  int64_t abs(const SpadRef& r) const { return tensors[static_cast<size_t>(r.tensor)].base + r.elem; }

  std::string summary() const;  // one line of counts
  std::string dump() const;     // every tensor and instruction, one a line
};

// The first line of a statement, for messages.
std::string brief(const ir::Stmt& s);

}  // namespace kiln::vta
