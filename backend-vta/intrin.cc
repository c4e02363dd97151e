#include "backend-vta/intrin.h"

#include "compiler/ir/op.h"
#include "compiler/te/tensor.h"

namespace kiln::vta {

std::shared_ptr<const schedule::TensorIntrin> gemm_intrin(const Env& env) {
  int b = env.batch(), bi = env.block_in(), bo = env.block_out();
  te::Tensor inp = te::placeholder({b, bi}, env.inp_dtype(), "inp");
  te::Tensor wgt = te::placeholder({bo, bi}, env.wgt_dtype(), "wgt");
  ir::IterVar k = te::reduce_axis(bi, "k");
  ir::DataType acc = env.acc_dtype();
  te::Tensor out = te::compute(
      {b, bo},
      [&](ir::Var i, ir::Var j) { return te::sum(ir::cast(acc, inp(i, k->var)) * ir::cast(acc, wgt(j, k->var)), {k}); },
      "gemm");
  return schedule::decl_tensor_intrin(
      "vta.gemm." + env.config().name(), out,
      [acc](const std::vector<schedule::BufferRegion>& in, const schedule::BufferRegion& o) {
        ir::Expr dst = o.load({0, 0});
        ir::Stmt reset = ir::make_evaluate(ir::make_call(acc, kGemmResetCall, {dst}));
        ir::Stmt update =
            ir::make_evaluate(ir::make_call(acc, kGemmCall, {dst, in[0].load({0, 0}), in[1].load({0, 0})}));
        return schedule::IntrinImpl{ir::make_seq({reset, update}), reset, update};
      });
}

}  // namespace kiln::vta
