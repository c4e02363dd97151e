#pragma once
// A micro-op kernel: the body of one GEMM or ALU instruction, recorded once and reused.
// Up to two nested loops (iter_out, iter_in) with per-loop index factors, and the
// micro-ops of the innermost body. Kernels are configuration-independent values; the
// CommandStream checks them against its Config when they are pushed, and keeps their
// micro-ops cached in the uop buffer (keyed by the micro-ops themselves).

#include <cstdint>
#include <string>
#include <vector>

#include "hw/spec/isa.h"

namespace kiln::runtime {

enum class KernelKind : uint8_t { kGemm, kAlu };

// One loop of a kernel: `extent` iterations; each iteration adds the factors to the
// dst (ACC), src (INP for GEMM, ACC for ALU) and wgt (WGT, GEMM only) indices.
struct UopLoop {
  uint32_t extent = 1;
  uint32_t dst_factor = 0;
  uint32_t src_factor = 0;
  uint32_t wgt_factor = 0;
  bool operator==(const UopLoop&) const = default;
};

class UopKernel {
 public:
  static constexpr int kMaxLoops = 2;

  const std::string& name() const { return name_; }
  KernelKind kind() const { return kind_; }
  const std::vector<hw::Uop>& uops() const { return uops_; }
  const std::vector<UopLoop>& loops() const { return loops_; }  // outer first
  // GEMM: reset the accumulators instead of accumulating.
  bool reset() const { return reset_; }
  // ALU: the operation, and the immediate operand when use_imm.
  hw::AluOp alu_op() const { return alu_op_; }
  bool use_imm() const { return use_imm_; }
  int32_t imm() const { return imm_; }

  // The loop as the instruction sees it: a missing loop runs once with zero factors.
  UopLoop outer() const { return loops_.size() > 0 ? loops_[0] : UopLoop{}; }
  UopLoop inner() const { return loops_.size() > 1 ? loops_[1] : UopLoop{}; }

 private:
  friend class UopKernelBuilder;
  std::string name_;
  KernelKind kind_ = KernelKind::kGemm;
  std::vector<hw::Uop> uops_;
  std::vector<UopLoop> loops_;
  bool reset_ = false;
  hw::AluOp alu_op_ = hw::AluOp::kMin;
  bool use_imm_ = false;
  int32_t imm_ = 0;
};

// Records a kernel like VTA's VTAUopLoopBegin / VTAUopPush / VTAUopLoopEnd:
//   auto b = UopKernelBuilder::gemm("matmul");
//   b.loop_begin(rows, ...); b.loop_begin(cols, ...);
//   for (k ...) b.push(0, k, k);
//   b.loop_end(); b.loop_end();
//   UopKernel kernel = b.finish();
// Loops open before the first micro-op; every micro-op sits in the innermost body.
// Misuse throws hw::Error naming the kernel.
class UopKernelBuilder {
 public:
  static UopKernelBuilder gemm(std::string name, bool reset = false);
  // An ALU kernel: acc[dst] = op(acc[dst], acc[src]).
  static UopKernelBuilder alu(std::string name, hw::AluOp op);
  // An ALU kernel with an immediate operand: acc[dst] = op(acc[dst], imm). The imm
  // field's width is checked when the kernel is pushed.
  static UopKernelBuilder alu_imm(std::string name, hw::AluOp op, int32_t imm);

  UopKernelBuilder& loop_begin(uint32_t extent, uint32_t dst_factor, uint32_t src_factor,
                               uint32_t wgt_factor = 0);
  UopKernelBuilder& loop_end();
  UopKernelBuilder& push(uint32_t dst, uint32_t src, uint32_t wgt = 0);
  UopKernel finish();

 private:
  UopKernelBuilder(std::string name, KernelKind kind);
  [[noreturn]] void fail(const std::string& what) const;

  UopKernel kernel_;
  int open_loops_ = 0;
  bool closed_any_ = false;
  bool finished_ = false;
};

}  // namespace kiln::runtime
