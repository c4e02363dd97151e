#pragma once
// DeviceFuncs built by hand for the GPU backend's tests: each a function of flat
// buffers and one or more kernels, as split_host_device would make them.
#include <functional>
#include <string>
#include <vector>

#include "compiler/ir/node.h"
#include "compiler/ir/op.h"
#include "compiler/passes/split_host_device.h"

namespace kiln::gpu::testing {

// A function of argument buffers; kernels are added with kernel().
class FuncBuilder {
 public:
  explicit FuncBuilder(std::string name) { f_.name = std::move(name); }

  // An argument buffer (is_arg, arg_index in order of creation); returns its data var.
  ir::Var arg(const std::string& name, ir::DataType t, int64_t elements, bool written = false) {
    passes::DeviceBuffer b;
    b.data = ir::Var(name, ir::DataType::Handle());
    b.dtype = t;
    b.elements = elements;
    b.is_arg = true;
    b.arg_index = num_args_++;
    b.written = written;
    f_.buffers.push_back(b);
    return b.data;
  }
  // A global temporary between kernels.
  ir::Var temp(const std::string& name, ir::DataType t, int64_t elements) {
    passes::DeviceBuffer b;
    b.data = ir::Var(name, ir::DataType::Handle());
    b.dtype = t;
    b.elements = elements;
    b.written = true;
    f_.buffers.push_back(b);
    return b.data;
  }
  // A kernel over `params` (data vars of this function's buffers).
  passes::DeviceKernel& kernel(const std::vector<ir::Var>& params) {
    passes::DeviceKernel k;
    k.name = f_.name + "_kernel" + std::to_string(f_.kernels.size());
    for (const ir::Var& p : params)
      for (size_t i = 0; i < f_.buffers.size(); ++i)
        if (f_.buffers[i].data.same_as(p)) k.params.push_back(static_cast<int>(i));
    f_.kernels.push_back(k);
    return f_.kernels.back();
  }
  const passes::DeviceFunc& func() const { return f_; }

 private:
  passes::DeviceFunc f_;
  int num_args_ = 0;
};

// An axis of kernel `k`; returns the variable its body reads.
inline ir::Var axis(passes::DeviceKernel& k, const std::string& tag, int64_t extent) {
  passes::ThreadAxis a;
  a.tag = tag;
  a.var = ir::Var(tag == "blockIdx.x" ? "bx" : tag == "threadIdx.x" ? "tx" : tag, ir::DataType::Int(32));
  a.extent = extent;
  k.axes.push_back(a);
  return a.var;
}

inline ir::Stmt barrier() {
  return ir::make_evaluate(ir::make_call(ir::DataType::Int(32), passes::kBarrier, {ir::make_string("shared")}));
}

// The hand-built functions. Each names its arguments' expected host layout.
passes::DeviceFunc vector_add(int n);               // c = a + b (float32), 64 threads, guarded
passes::DeviceFunc shared_reverse(int blocks);      // out = each 64-block of in reversed (int32), shared + barrier
passes::DeviceFunc floor_divmod(ir::DataType t, int n);  // q = a / b, r = a % b
passes::DeviceFunc casts(int n);                    // float32 x -> int32, uint8, int8(wrap of int32), float64, bool
passes::DeviceFunc intrinsics(int n);               // float32 x, y -> 12 outputs (see the .cc)
passes::DeviceFunc int_ops(int n);                  // int32 x, y -> abs, shifts, bitwise, min, max, select
passes::DeviceFunc two_kernels(int n);              // tmp = a * 2; out = tmp + 1 (a temporary between kernels)
passes::DeviceFunc local_sum(int n);                // per-thread local array, a serial loop, a Let expression

}  // namespace kiln::gpu::testing
