#pragma once
// Schedules: say how to compute. A schedule holds one stage per operation; the
// primitives of a stage transform its loop nest (split, fuse, reorder, annotate) or
// move where it is computed (compute_at, compute_inline, compute_root). Illegal
// requests throw a CompileError naming the stage, the axis and the reason.
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/ir/node.h"
#include "compiler/te/tensor.h"

namespace kiln::schedule {

using ir::Expr;
using ir::IterVar;
using ir::Range;
using te::Tensor;

struct TensorIntrin;  // tensorize.h

// outer * factor + inner == parent (parent's min added); or fused == outer * inner_extent + inner.
struct Relation {
  enum Kind { Split, Fuse } kind;
  IterVar parent;  // Split
  IterVar outer;
  IterVar inner;
  IterVar fused;  // Fuse
  Expr factor;    // Split: one of factor / nparts is defined
  Expr nparts;
};

struct IterAttr {
  ir::ForKind kind = ir::ForKind::Serial;
  std::string thread_tag;
  std::vector<std::pair<std::string, Expr>> pragmas;
  std::shared_ptr<const TensorIntrin> tensorize;
};

enum class AttachType { Root, Inline, Scope };

class ScheduleNode;
class Stage;

class StageNode {
 public:
  Tensor op;         // the current operation (rewritten by inline/cache primitives)
  Tensor origin_op;  // the operation the stage was made for
  std::vector<IterVar> all_iter_vars;
  std::vector<IterVar> leaf_iter_vars;
  std::vector<Relation> relations;
  std::unordered_map<const ir::IterVarNode*, IterAttr> iter_attrs;
  AttachType attach_type = AttachType::Root;
  std::weak_ptr<StageNode> attach_stage;
  IterVar attach_ivar;
  std::string scope = "global";
  bool double_buffer = false;
  bool is_output = false;
  ScheduleNode* schedule = nullptr;

  const std::string& name() const { return op->name; }
  std::vector<IterVar> root_iter_vars() const;
  bool is_placeholder() const { return op->is_placeholder(); }
};

class Stage {
 public:
  Stage() = default;
  explicit Stage(std::shared_ptr<StageNode> n) : node_(std::move(n)) {}
  StageNode* operator->() const { return node_.get(); }
  StageNode* get() const { return node_.get(); }
  const std::shared_ptr<StageNode>& node() const { return node_; }
  bool defined() const { return node_ != nullptr; }
  bool operator==(const Stage& o) const { return node_ == o.node_; }

  // Loop transformations. Each takes leaf axes of this stage.
  std::pair<IterVar, IterVar> split(const IterVar& parent, int factor);
  std::pair<IterVar, IterVar> split_nparts(const IterVar& parent, int nparts);
  // Returns {x.outer, y.outer, x.inner, y.inner} in that loop order.
  std::vector<IterVar> tile(const IterVar& x, const IterVar& y, int x_factor, int y_factor);
  IterVar fuse(const IterVar& outer, const IterVar& inner);
  void reorder(const std::vector<IterVar>& order);

  // Loop annotations.
  void vectorize(const IterVar& iv);
  void unroll(const IterVar& iv);
  void parallel(const IterVar& iv);
  void bind(const IterVar& iv, const std::string& thread_tag);  // "blockIdx.x", "threadIdx.y", "vthread"
  void pragma(const IterVar& iv, const std::string& key, Expr value = Expr(1));
  void tensorize(const IterVar& iv, std::shared_ptr<const TensorIntrin> intrin);

  // Where the stage is computed.
  void compute_at(const Stage& parent, const IterVar& iv);
  void compute_inline();
  void compute_root();

  // Storage.
  void set_scope(const std::string& scope);
  void double_buffer();

 private:
  void check_leaf(const IterVar& iv, const char* primitive) const;
  void check_schedulable(const char* primitive) const;
  size_t leaf_position(const IterVar& iv) const;
  IterAttr& attr(const IterVar& iv);
  std::shared_ptr<StageNode> node_;
};

class ScheduleNode {
 public:
  std::vector<Tensor> outputs;
  std::vector<Stage> stages;  // producers before consumers
  std::unordered_map<const te::OperationNode*, Stage> stage_map;  // every op a stage had
};

class Schedule {
 public:
  Schedule() = default;
  explicit Schedule(std::shared_ptr<ScheduleNode> n) : node_(std::move(n)) {}
  ScheduleNode* operator->() const { return node_.get(); }
  ScheduleNode* get() const { return node_.get(); }

  Stage operator[](const Tensor& t) const;
  Stage stage_of(const te::OperationNode* op) const;  // undefined if none

  // A stage that copies `t` into `scope` for `readers`, which then read the copy.
  Tensor cache_read(const Tensor& t, const std::string& scope, const std::vector<Tensor>& readers);
  // `t` is computed into a `scope` copy first; t's stage becomes the copy-out.
  Tensor cache_write(const Tensor& t, const std::string& scope);

 private:
  std::shared_ptr<ScheduleNode> node_;
};

Schedule create_schedule(const std::vector<Tensor>& outputs);

// Names an axis for messages: "'i.outer' of stage 'C'".
std::string describe(const IterVar& iv, const StageNode* stage);

}  // namespace kiln::schedule
