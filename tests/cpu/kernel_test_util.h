#pragma once
// What the CPU's kernel suites share (conv_kernels_test, gemm_kernels_test, winograd_test): random
// constant weights, a graph compiled and run on one input, and the targets they compile
// for: the host, AVX2's 16 registers and SSE; where a kernel's prefetches reach, its
// buffers and its parallel loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/graph/executor.h"
#include "compiler/ir/analyzer.h"
#include "compiler/ir/functor.h"
#include "tests/e2e/test_util.h"

namespace kiln::graph::test_util {

inline ConstData random_constant(std::vector<int64_t> shape, uint32_t seed) {
  auto b = std::make_shared<interp::HostBuffer>(ir::DataType::Float(32), shape);
  auto v = test::random_floats(b->size(), seed);
  std::memcpy(b->data(), v.data(), v.size() * sizeof(float));
  return b;
}

// Output `output` of `g` on input x: compiled for `target` on the cpu backend, or
// interpreted unoptimized ("interp"). `compiled`, when given, receives the model.
inline std::vector<float> run_graph(const Graph& g, const std::vector<float>& x, const std::string& backend,
                                    const std::string& target, size_t output = 0, CompiledModel* compiled = nullptr) {
  CompileOptions o;
  if (backend == "cpu") o.target = target::Target::parse(target);
  else o.optimize = false;
  CompiledModel m = compile(g, o);
  Executor ex = make_executor(m, backend, backend == "cpu" ? target : "");
  ex.set_input(0, x.data(), static_cast<int64_t>(x.size() * sizeof(float)));
  ex.run();
  std::vector<float> out(static_cast<size_t>(ex.output_bytes(output) / sizeof(float)));
  std::memcpy(out.data(), ex.output(output), out.size() * sizeof(float));
  if (compiled) *compiled = std::move(m);
  return out;
}

inline const std::vector<std::string> kKernelTargets = {"llvm", "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell",
                                                        "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64"};

inline std::string kernel_target_name(const ::testing::TestParamInfo<std::string>& i) {
  static const char* const names[] = {"host", "avx2", "sse"};
  return names[i.index];
}

// The lowest and highest element each prefetch of a kernel can name, and its buffer's
// size, with every loop variable over its range; the divisions and remainders its
// addresses compute (integer work on the FMAs' ports, at every step).
struct PrefetchReach {
  int count = 0;
  int64_t lowest = INT64_MAX, highest = INT64_MIN, size = 0;
  int divisions = 0;
};

inline PrefetchReach prefetch_reach(const schedule::LoweredFunc& f) {
  class Walk : public ir::IRVisitor {
   public:
    Walk(const schedule::LoweredFunc& f, PrefetchReach* r) : f_(f), r_(r) {}
    using IRVisitor::visit;

   protected:
    void visit_(const ir::ForNode* op) override {
      an_.bind(op->var, ir::Range(op->min, op->extent));
      IRVisitor::visit_(op);
    }
    void visit_(const ir::CallNode* op) override {
      IRVisitor::visit_(op);
      if (op->name != "prefetch") return;
      const auto* ld = op->args.at(0).as<ir::LoadNode>();
      ASSERT_NE(ld, nullptr);
      ir::ConstBound b = an_.const_bound(ld->index);
      r_->count++;
      r_->lowest = std::min(r_->lowest, b.min);
      r_->highest = std::max(r_->highest, b.max);
      ir::post_order_visit(ld->index, [&](const ir::Node* n) {
        if (n->kind == ir::NodeKind::Div || n->kind == ir::NodeKind::Mod) r_->divisions++;
      });
      for (const ir::Buffer& a : f_.args) {
        if (a->data.get() != ld->buffer_var.get()) continue;
        r_->size = 1;
        for (const ir::Expr& d : a->shape) r_->size *= *ir::as_const_int(d);
      }
    }

   private:
    const schedule::LoweredFunc& f_;
    PrefetchReach* r_;
    ir::Analyzer an_;
  };
  PrefetchReach r;
  Walk(f, &r).visit(f.body);
  return r;
}

// The allocation of a kernel's buffer named `name` (elements 0 if none), and whether it
// sits inside a parallel loop.
struct Allocation {
  int64_t elements = 0;
  bool in_parallel_loop = false;
};

inline Allocation allocation(const schedule::LoweredFunc& f, const std::string& name) {
  class Walk : public ir::IRVisitor {
   public:
    Walk(const std::string& name, Allocation* a) : name_(name), a_(a) {}
    using IRVisitor::visit;

   protected:
    void visit_(const ir::ForNode* op) override {
      bool parallel = op->for_kind == ir::ForKind::Parallel;
      parallel_ += parallel;
      IRVisitor::visit_(op);
      parallel_ -= parallel;
    }
    void visit_(const ir::AllocateNode* op) override {
      if (op->buffer_var.name() == name_ && ir::as_const_int(op->extent)) {
        a_->elements = *ir::as_const_int(op->extent);
        a_->in_parallel_loop = parallel_ > 0;
      }
      IRVisitor::visit_(op);
    }

   private:
    const std::string& name_;
    Allocation* a_;
    int parallel_ = 0;
  };
  Allocation a;
  Walk(name, &a).visit(f.body);
  return a;
}

// The extents of a kernel's parallel loops, outermost first.
inline std::vector<int64_t> parallel_extents(const schedule::LoweredFunc& f) {
  class Walk : public ir::IRVisitor {
   public:
    explicit Walk(std::vector<int64_t>* e) : e_(e) {}
    using IRVisitor::visit;

   protected:
    void visit_(const ir::ForNode* op) override {
      if (op->for_kind == ir::ForKind::Parallel) e_->push_back(ir::as_const_int(op->extent) ? *ir::as_const_int(op->extent) : -1);
      IRVisitor::visit_(op);
    }

   private:
    std::vector<int64_t>* e_;
  };
  std::vector<int64_t> e;
  Walk(&e).visit(f.body);
  return e;
}

}  // namespace kiln::graph::test_util
