// optimize(): the graph pipeline, top to bottom. KILN_DEBUG=graph prints the graph
// after every pass.
#include <iostream>

#include "compiler/graph/passes/passes.h"
#include "support/debug.h"

namespace kiln::graph {

namespace {

Graph logged(const char* pass, Graph g) {
  if (debug_enabled("graph")) std::cerr << "// after " << pass << " (" << g.num_ops() << " ops)\n" << g;
  return g;
}

}  // namespace

Graph optimize(const Graph& input, const target::MachineTraits& machine) {
  Graph g = logged("import", input);
  // A GPU computes half precision natively; the CPU's schedules are float32's.
  if (!machine.is_gpu() && has_half(g)) g = logged("promote_half", promote_half(g));
  if (has_quantization(g)) g = logged("quantize_realize", quantize_realize(g));
  g = logged("simplify_inference", simplify_inference(g));
  g = logged("fold_explicit_padding", fold_explicit_padding(g));
  g = logged("fold_constant", fold_constant(g));
  g = logged("fold_scale_axis", fold_scale_axis(g));
  // The scaled weights are constants again (the passes below take constant weights).
  g = logged("fold_constant", fold_constant(g));
  // The CPU's layouts (NCHWc blocks of vector width, packed weights, Winograd tiles);
  // a GPU's default schedules take the model's own layout.
  if (!machine.is_gpu()) {
    g = logged("conv3d_as_conv2d", conv3d_as_conv2d(g));
    g = logged("pad_channels", pad_channels(g, machine));
    g = logged("fold_constant", fold_constant(g));
    g = logged("alter_layout", alter_layout(g, machine));
    g = logged("carry_layout", carry_layout(g));
    g = logged("winograd_conv", winograd_conv(g));
    g = logged("sink_reshape", sink_reshape(g));
  }
  g = logged("dead_code_elimination", dead_code_elimination(g));
  g = logged("fold_constant", fold_constant(g));
  g = logged("common_subexpression_elimination", common_subexpression_elimination(g));
  g = logged("dead_code_elimination", dead_code_elimination(g));
  return g;
}

}  // namespace kiln::graph
