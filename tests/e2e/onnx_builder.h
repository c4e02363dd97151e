#pragma once
// Small ONNX models built with the ONNX protobuf API, for frontend and pass tests.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::test {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int opset = 13) {
    model_.set_ir_version(8);
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  void input(const std::string& name, std::vector<int64_t> shape, int elem = onnx::TensorProto::FLOAT) {
    value_info(model_.mutable_graph()->add_input(), name, shape, elem);
  }
  void output(const std::string& name) { model_.mutable_graph()->add_output()->set_name(name); }
  void initializer(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& data) {
    auto* t = add_initializer(name, shape, onnx::TensorProto::FLOAT);
    for (float v : data) t->add_float_data(v);
  }
  void initializer_i64(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>& data) {
    auto* t = add_initializer(name, shape, onnx::TensorProto::INT64);
    for (int64_t v : data) t->add_int64_data(v);
  }
  void initializer_bool(const std::string& name, std::vector<int64_t> shape, const std::vector<bool>& data) {
    auto* t = add_initializer(name, shape, onnx::TensorProto::BOOL);  // booleans live in int32_data
    for (bool v : data) t->add_int32_data(v);
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                        const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
    for (auto& s : in) n->add_input(s);
    for (auto& s : out) n->add_output(s);
    return n;
  }
  static void attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void attr(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  // A graph attribute (If's branches, Loop's and Scan's body): `body`'s graph.
  static void attr(onnx::NodeProto* n, const std::string& name, const OnnxBuilder& body) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = body.model_.graph();
  }
  // A graph input of type seq(tensor of `elem`).
  void sequence_input(const std::string& name, int elem = onnx::TensorProto::FLOAT) {
    auto* vi = model_.mutable_graph()->add_input();
    vi->set_name(name);
    vi->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(elem);
  }
  std::string bytes() const { return model_.SerializeAsString(); }
  onnx::ModelProto& model() { return model_; }

 private:
  onnx::TensorProto* add_initializer(const std::string& name, const std::vector<int64_t>& shape, int type) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : shape) t->add_dims(d);
    return t;
  }
  static void value_info(onnx::ValueInfoProto* vi, const std::string& name, const std::vector<int64_t>& shape, int elem) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* s = tt->mutable_shape();
    for (int64_t d : shape) {
      if (d < 0) s->add_dim()->set_dim_param("batch");
      else s->add_dim()->set_dim_value(d);
    }
  }
  onnx::ModelProto model_;
};

}  // namespace kiln::test
