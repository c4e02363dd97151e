#include "hw/driver/runtime/uop_kernel.h"

#include <fmt/format.h>

#include "hw/spec/error.h"

namespace kiln::runtime {

UopKernelBuilder::UopKernelBuilder(std::string name, KernelKind kind) {
  kernel_.name_ = std::move(name);
  kernel_.kind_ = kind;
}

UopKernelBuilder UopKernelBuilder::gemm(std::string name, bool reset) {
  UopKernelBuilder b(std::move(name), KernelKind::kGemm);
  b.kernel_.reset_ = reset;
  return b;
}

UopKernelBuilder UopKernelBuilder::alu(std::string name, hw::AluOp op) {
  UopKernelBuilder b(std::move(name), KernelKind::kAlu);
  b.kernel_.alu_op_ = op;
  return b;
}

UopKernelBuilder UopKernelBuilder::alu_imm(std::string name, hw::AluOp op, int32_t imm) {
  UopKernelBuilder b = alu(std::move(name), op);
  b.kernel_.use_imm_ = true;
  b.kernel_.imm_ = imm;
  return b;
}

void UopKernelBuilder::fail(const std::string& what) const {
  throw hw::Error(fmt::format("micro-op kernel '{}': {}", kernel_.name_, what));
}

UopKernelBuilder& UopKernelBuilder::loop_begin(uint32_t extent, uint32_t dst_factor,
                                               uint32_t src_factor, uint32_t wgt_factor) {
  if (finished_) fail("loop_begin after finish");
  if (!kernel_.uops_.empty() || closed_any_)
    fail("loop_begin after a micro-op or a loop_end: loops enclose the whole body");
  if (kernel_.loops_.size() == UopKernel::kMaxLoops)
    fail(fmt::format("more than {} loops (GEMM and ALU have iter_out and iter_in only)",
                     UopKernel::kMaxLoops));
  if (extent == 0) fail("a loop of extent 0");
  if (kernel_.kind_ == KernelKind::kAlu && wgt_factor != 0)
    fail("an ALU loop has no weight index (wgt_factor must be 0)");
  kernel_.loops_.push_back({extent, dst_factor, src_factor, wgt_factor});
  ++open_loops_;
  return *this;
}

UopKernelBuilder& UopKernelBuilder::loop_end() {
  if (open_loops_ == 0) fail("loop_end without an open loop");
  --open_loops_;
  closed_any_ = true;
  return *this;
}

UopKernelBuilder& UopKernelBuilder::push(uint32_t dst, uint32_t src, uint32_t wgt) {
  if (finished_) fail("push after finish");
  if (closed_any_) fail("push after loop_end: micro-ops sit in the innermost loop body");
  if (kernel_.kind_ == KernelKind::kAlu && wgt != 0)
    fail("an ALU micro-op has no weight index (wgt must be 0)");
  kernel_.uops_.push_back({dst, src, wgt});
  return *this;
}

UopKernel UopKernelBuilder::finish() {
  if (finished_) fail("finish called twice");
  if (open_loops_ != 0) fail(fmt::format("{} loop(s) still open at finish", open_loops_));
  if (kernel_.uops_.empty()) fail("no micro-ops");
  finished_ = true;
  return std::move(kernel_);
}

}  // namespace kiln::runtime
