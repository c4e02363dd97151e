#include "compiler/frontend/onnx/onnx_version.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <map>
#include <set>

#include "compiler/support/error.h"

namespace kiln::frontend {

int default_opset(const onnx::ModelProto& model) {
  int v = 0;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") v = static_cast<int>(o.version());
  return v;
}

namespace {

// ONNX's converter converts the nodes of the main graph only: a subgraph (a Loop's or
// Scan's body, an If branch) is kept as it is, which is right only when each of its
// operators means the same at both opsets.
// The rank of a value's declared type, or -1 where it has none.
int declared_rank(const onnx::TypeProto& t) {
  return t.has_tensor_type() && t.tensor_type().has_shape() ? t.tensor_type().shape().dim_size() : -1;
}

// ONNX's shape inference reads dimensions without checking the rank in two places, each
// a null dereference in libonnx found by tests/fuzz/onnx_fuzz (ONNX's Python inference
// crashes the same way): convolutions and pooling (convPoolShapeInference) on data of
// rank below 3 (a Conv of a [1, 8] input), and Gemm before opset 9 on operands that are
// not matrices (a Gemm of a rank-0 input). Ranks known before inference (inputs,
// initializers, value_info, and through rank-keeping elementwise ops) are checked here,
// so such a model is refused by name.
void check_ranks(const onnx::GraphProto& g, const std::string& source) {
  static const std::set<std::string> windowed = {"Conv", "ConvInteger", "QLinearConv", "ConvTranspose",
                                                 "MaxPool", "AveragePool", "LpPool"};
  static const std::set<std::string> rank_keeping = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "Identity", "Dropout",
                                                     "Abs", "Neg", "Exp", "Log", "Sqrt", "Elu", "Selu", "HardSigmoid",
                                                     "HardSwish", "Softplus", "Erf", "Cast", "BatchNormalization"};
  std::map<std::string, int> rank;
  for (const auto& v : g.input()) rank[v.name()] = declared_rank(v.type());
  for (const auto& v : g.value_info()) rank[v.name()] = declared_rank(v.type());
  for (const auto& t : g.initializer()) rank[t.name()] = t.dims_size();
  auto rank_of = [&](const std::string& name) {
    auto it = rank.find(name);
    return it == rank.end() ? -1 : it->second;
  };
  for (const auto& n : g.node()) {
    if (n.input_size() == 0) continue;
    // QLinearConv's data is input 0, its weight input 3; the others' weight is input 1.
    int data = rank_of(n.input(0));
    if (windowed.count(n.op_type()) && n.domain().empty()) {
      if (data >= 0 && data < 3)
        throw CompileError(fmt::format("{}: node '{}' ({}) needs data of rank 3 or more (N, C, spatial axes), '{}' has rank {}",
                                       source, n.name(), n.op_type(), n.input(0), data));
      int w_index = n.op_type() == "QLinearConv" ? 3 : 1;
      bool has_weight = n.op_type().find("Conv") != std::string::npos && n.input_size() > w_index;
      int weight = has_weight ? rank_of(n.input(w_index)) : -1;
      if (data >= 0 && weight >= 0 && weight != data)
        throw CompileError(fmt::format("{}: node '{}' ({}): the weight '{}' has rank {}, the data '{}' rank {}; they must match",
                                       source, n.name(), n.op_type(), n.input(w_index), weight, n.input(0), data));
    }
    if (n.op_type() == "Gemm" && n.domain().empty()) {
      for (int k = 0; k < 2 && k < n.input_size(); ++k) {
        int r = rank_of(n.input(k));
        if (r >= 0 && r != 2)
          throw CompileError(fmt::format("{}: node '{}' (Gemm) multiplies matrices, but input {} ('{}') has rank {}", source,
                                         n.name(), k, n.input(k), r));
      }
    }
    if (rank_keeping.count(n.op_type()) && n.output_size() > 0 && !rank.count(n.output(0))) rank[n.output(0)] = data;
  }
}

void check_subgraph(const onnx::GraphProto& g, int from, int to, const std::string& source) {
  auto& registry = *onnx::OpSchemaRegistry::Instance();
  for (const auto& n : g.node()) {
    const auto* a = registry.GetSchema(n.op_type(), from, n.domain());
    const auto* b = registry.GetSchema(n.op_type(), to, n.domain());
    if (!a || !b || a->since_version() != b->since_version())
      throw CompileError(fmt::format("{}: node '{}' ({}) in a subgraph changed between opsets {} and {}; ONNX's version "
                                     "converter leaves subgraphs as they are, so this model is not converted",
                                     source, n.name(), n.op_type(), from, to));
    for (const auto& at : n.attribute()) {
      if (at.has_g()) check_subgraph(at.g(), from, to, source);
      for (const auto& sub : at.graphs()) check_subgraph(sub, from, to, source);
    }
  }
}

}  // namespace

void upgrade_opset(onnx::ModelProto& model, const OnnxOptions& options, const std::string& source) {
  int from = default_opset(model);
  if (from == 0 || (from >= kMinNativeOpset && from <= kMaxNativeOpset)) return;
  if (from > kMaxNativeOpset)
    throw CompileError(fmt::format("{}: opset {} is newer than the newest Kiln reads ({}); re-export the model at opset {} "
                                   "or older", source, from, kMaxNativeOpset, kMaxNativeOpset));
  const int to = kConvertTarget;
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  for (auto& vi : *model.mutable_graph()->mutable_input()) {
    if (!vi.type().has_tensor_type()) continue;
    auto given = options.input_shapes.find(vi.name());
    if (given != options.input_shapes.end()) {
      auto* shape = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
      shape->clear_dim();
      for (int64_t d : given->second) shape->add_dim()->set_dim_value(d);
      continue;
    }
    // The conversion needs the shapes the importer needs. An empty one made here would
    // declare a scalar (a Gemm of it crashed ONNX's shape inference, tests/fuzz/onnx_fuzz).
    if (!vi.type().tensor_type().has_shape()) {
      if (initializers.count(vi.name())) continue;
      throw CompileError(fmt::format("{}: input '{}' has no shape; give one", source, vi.name()));
    }
    for (auto& d : *vi.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
      if (!d.has_dim_value()) d.set_dim_value(options.symbolic_dim);
  }
  // ONNX's converter trusts its input (a graph output that nothing defines crashed it,
  // found by tests/fuzz/onnx_fuzz; ONNX's checker is stricter than exporters are, so the
  // structure it needs is checked here): each value a node reads is defined before it,
  // once, every graph output is defined, every node names its op, subgraphs hold only
  // operators that the conversion does not change.
  {
    std::set<std::string> defined;
    for (const auto& v : model.graph().input()) defined.insert(v.name());
    for (const auto& t : model.graph().initializer()) defined.insert(t.name());
    for (const auto& n : model.graph().node()) {
      if (n.op_type().empty()) throw CompileError(fmt::format("{}: a node '{}' has no op_type", source, n.name()));
      // Scan-8 has a batch axis and sequence_lens; the converter's result of it does
      // not compute what the model did (ONNX's test_scan_sum), so it is refused.
      if (n.op_type() == "Scan" && from < 9)
        throw CompileError(fmt::format("{}: node '{}' (Scan, opset {}): the batched Scan of opset 8 is not converted; "
                                       "export at opset 9 or later", source, n.name(), from));
      // ONNX's shape inference reads required attributes without looking (MaxPool with no
      // kernel_shape crashed it, found by tests/fuzz/onnx_fuzz).
      if (const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), from, n.domain())) {
        for (const auto& [name, attr] : schema->attributes()) {
          if (!attr.required) continue;
          bool given = false;
          for (const auto& a : n.attribute()) given = given || a.name() == name;
          if (!given)
            throw CompileError(fmt::format("{}: node '{}' ({}) lacks its required attribute '{}'", source, n.name(),
                                           n.op_type(), name));
        }
      }
      for (const auto& a : n.attribute()) {
        if (a.has_g()) check_subgraph(a.g(), from, to, source);
        for (const auto& g : a.graphs()) check_subgraph(g, from, to, source);
      }
      for (const auto& i : n.input())
        if (!i.empty() && !defined.count(i))
          throw CompileError(fmt::format("{}: node '{}' ({}) reads '{}', which nothing before it defines", source, n.name(),
                                         n.op_type(), i));
      for (const auto& o : n.output()) {
        if (o.empty()) continue;
        if (!defined.insert(o).second)
          throw CompileError(fmt::format("{}: value '{}' is defined twice (node '{}')", source, o, n.name()));
      }
    }
    for (const auto& o : model.graph().output())
      if (!defined.count(o.name()))
        throw CompileError(fmt::format("{}: graph output '{}' is not defined by any node or input", source, o.name()));
  }
  check_ranks(model.graph(), source);
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, /*data_prop=*/true));
  } catch (const std::exception& e) {
    throw CompileError(fmt::format("{}: ONNX's shape inference (opset {}): {}", source, from, e.what()));
  }
  try {
    model = onnx::version_conversion::ConvertVersion(model, to);
  } catch (const std::exception& e) {
    throw CompileError(fmt::format("{}: opset {} could not be converted to opset {} by ONNX's version converter: {}", source,
                                   from, to, e.what()));
  }
}

}  // namespace kiln::frontend
