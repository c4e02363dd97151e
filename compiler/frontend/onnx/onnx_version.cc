#include "compiler/frontend/onnx/onnx_version.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include "compiler/support/error.h"

namespace kiln::frontend {

int default_opset(const onnx::ModelProto& model) {
  int v = 0;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") v = static_cast<int>(o.version());
  return v;
}

void upgrade_opset(onnx::ModelProto& model, const std::map<std::string, std::vector<int64_t>>& input_shapes,
                   const std::string& source) {
  int from = default_opset(model);
  if (from == 0 || (from >= kMinNativeOpset && from <= kMaxNativeOpset)) return;
  int newest = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN).second;
  if (from > newest)
    throw CompileError(fmt::format("{}: opset {} is newer than the newest this ONNX library knows ({})", source, from, newest));
  int to = from < kMinNativeOpset ? kConvertTarget : kMaxNativeOpset;
  for (auto& vi : *model.mutable_graph()->mutable_input()) {
    auto given = input_shapes.find(vi.name());
    if (given == input_shapes.end() || !vi.type().has_tensor_type()) continue;
    auto* shape = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : given->second) shape->add_dim()->set_dim_value(d);
  }
  try {
    onnx::shape_inference::InferShapes(model);
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
