#include "compiler/schedule/lower.h"

#include <iostream>

#include "compiler/ir/printer.h"
#include "compiler/passes/passes.h"
#include "compiler/schedule/bound.h"
#include "compiler/schedule/schedule_ops.h"
#include "compiler/support/error.h"
#include "support/debug.h"

namespace kiln::schedule {

namespace {

// KILN_DEBUG=ir prints the IR after every pass.
ir::Stmt log_pass(const char* pass, ir::Stmt s) {
  if (debug_enabled("ir")) std::cerr << "// ---- after " << pass << "\n" << s;
  return s;
}

std::vector<ir::Buffer> arg_buffers(const Schedule& s, const ScheduledBody& sb, const std::vector<te::Tensor>& args) {
  std::vector<ir::Buffer> out;
  for (const te::Tensor& t : args) {
    Stage st = s.stage_of(t.get());
    if (!st.defined()) throw CompileError("lower: argument '" + t->name + "' is not part of the schedule");
    auto it = sb.buffers.find(st.get());
    if (it == sb.buffers.end()) throw CompileError("lower: argument '" + t->name + "' is not used by the outputs");
    out.push_back(it->second);
  }
  for (const auto& [stage, buf] : sb.buffers) {
    bool needs_arg = stage->is_placeholder() || stage->is_output;
    bool given = false;
    for (const ir::Buffer& b : out) given = given || b.same_as(buf);
    if (needs_arg && !given) {
      throw CompileError(std::string("lower: ") + (stage->is_output ? "output '" : "input '") + stage->name() +
                         "' must be one of the arguments");
    }
  }
  return out;
}

}  // namespace

LoweredFunc lower(const Schedule& s, const std::vector<te::Tensor>& args, const std::string& name) {
  Bounds bounds;
  infer_bound(s, &bounds);
  ScheduledBody sb = schedule_ops(s, &bounds);
  std::vector<ir::Buffer> buffers = arg_buffers(s, sb, args);
  ir::Stmt body = log_pass("schedule_ops", sb.body);
  body = log_pass("storage_flatten", passes::storage_flatten(body, buffers));
  body = log_pass("simplify", passes::simplify(body));
  body = log_pass("inject_prefetch", passes::inject_prefetch(body));
  body = log_pass("loop_partition", passes::loop_partition(body));
  body = log_pass("vectorize_loop", passes::vectorize_loop(body));
  body = log_pass("inject_virtual_thread", passes::inject_virtual_thread(body));
  body = log_pass("inject_double_buffer", passes::inject_double_buffer(body));
  body = log_pass("unroll_loop", passes::unroll_loop(body));
  body = log_pass("simplify", passes::simplify(body));
  body = log_pass("remove_no_op", passes::remove_no_op(body));
  return {name, buffers, body};
}

}  // namespace kiln::schedule
