#include "compiler/passes/storage_flatten.h"

#include <unordered_map>

#include "compiler/ir/analyzer.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln::passes {

namespace {

struct FlatBuffer {
  ir::Var data;
  std::vector<ir::Expr> mins;
  std::vector<ir::Expr> strides;
};

class Flattener : public ir::IRMutator {
 public:
  explicit Flattener(const std::vector<ir::Buffer>& args) {
    for (const ir::Buffer& b : args) {
      FlatBuffer f{b->data, {}, {}};
      ir::Expr stride = 1;
      f.strides.resize(b->shape.size());
      for (size_t d = b->shape.size(); d-- > 0;) {
        f.mins.insert(f.mins.begin(), ir::Expr(0));
        f.strides[d] = stride;
        stride = an_.simplify(stride * b->shape[d]);
      }
      map_[b.get()] = f;
    }
  }
  using IRMutator::mutate;

 protected:
  ir::Stmt mutate_(const ir::ForNode* op, const ir::Stmt& self) override {
    an_.bind(op->var, ir::Range(op->min, op->extent));
    return IRMutator::mutate_(op, self);
  }
  ir::Stmt mutate_(const ir::LetStmtNode* op, const ir::Stmt& self) override {
    an_.bind(op->var, an_.const_bound(op->value));
    return IRMutator::mutate_(op, self);
  }
  ir::Stmt mutate_(const ir::RealizeNode* op, const ir::Stmt& self) override {
    (void)self;
    const ir::Buffer& b = op->buffer;
    FlatBuffer f{b->data, {}, {}};
    std::vector<int64_t> sizes;
    for (size_t d = 0; d < op->bounds.size(); ++d) {
      ir::ConstBound e = an_.const_bound(op->bounds[d].extent);
      if (e.max == ir::ConstBound::kPosInf || e.max < 0) {
        throw CompileError("storage_flatten: buffer '" + b->name + "' has no constant bound in dimension " + std::to_string(d) +
                           " (extent " + ir::to_string(op->bounds[d].extent) + ")");
      }
      sizes.push_back(std::max<int64_t>(e.max, 1));
      f.mins.push_back(op->bounds[d].min);
    }
    int64_t stride = 1;
    f.strides.resize(sizes.size());
    for (size_t d = sizes.size(); d-- > 0;) {
      f.strides[d] = ir::make_int(stride);
      stride *= sizes[d];
    }
    map_[b.get()] = f;
    ir::Stmt body = mutate(op->body);
    return ir::make_allocate(b->data, b->dtype, ir::make_int(stride), b->scope, body);
  }
  ir::Expr mutate_(const ir::BufferLoadNode* op, const ir::Expr&) override {
    std::vector<ir::Expr> idx;
    mutate_all(op->indices, &idx);
    return ir::make_load(op->buffer->dtype, op->buffer->data, flat(op->buffer, idx));
  }
  ir::Stmt mutate_(const ir::BufferStoreNode* op, const ir::Stmt&) override {
    std::vector<ir::Expr> idx;
    mutate_all(op->indices, &idx);
    return ir::make_store(op->buffer->data, mutate(op->value), flat(op->buffer, idx));
  }

 private:
  ir::Expr flat(const ir::Buffer& b, const std::vector<ir::Expr>& idx) {
    auto it = map_.find(b.get());
    if (it == map_.end()) {
      throw CompileError("storage_flatten: buffer '" + b->name + "' is used but neither realized nor an argument");
    }
    const FlatBuffer& f = it->second;
    ir::Expr e = 0;
    for (size_t d = 0; d < idx.size(); ++d) e = e + (idx[d] - f.mins[d]) * f.strides[d];
    return an_.simplify(e);
  }

  ir::Analyzer an_;
  std::unordered_map<const ir::BufferNode*, FlatBuffer> map_;
};

}  // namespace

ir::Stmt storage_flatten(const ir::Stmt& s, const std::vector<ir::Buffer>& args) { return Flattener(args).mutate(s); }

}  // namespace kiln::passes
