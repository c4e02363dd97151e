// ONNX external data (compiler/frontend/onnx/external_data.h): a model whose tensors
// live in a file beside it imports as the same model inline; locations that leave the
// model's folder, files that are missing or too short, and external tensors in a model
// given as bytes are errors naming the tensor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/support/error.h"
#include "tests/e2e/onnx_builder.h"
#include "tests/e2e/onnx_import_util.h"
#include "tests/e2e/test_util.h"

namespace kiln::frontend {
namespace {

namespace fs = std::filesystem;
using test::OnnxBuilder;

const std::vector<float> kWeight = {1, 2, 3, 4, 5, 6};  // [3, 2]
const std::vector<float> kShift = {0.5f, -0.5f};        // [2], a Constant node's value

// y = x[2, 3] @ w[3, 2] + shift; w and the Constant's shift stored inline.
OnnxBuilder inline_model() {
  OnnxBuilder b(13);
  b.input("x", {2, 3});
  b.initializer("w", {3, 2}, kWeight);
  b.node("MatMul", {"x", "w"}, {"m"});
  auto* c = b.node("Constant", {}, {"shift"});
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(2);
  for (float v : kShift) a->mutable_t()->add_float_data(v);
  b.node("Add", {"m", "shift"}, {"y"});
  b.output("y");
  return b;
}

// `t` moved to external data: location, and offset / length unless empty.
void externalize(onnx::TensorProto& t, const std::string& location, const std::string& offset = "",
                 const std::string& length = "") {
  t.clear_float_data();
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const std::string& k, const std::string& v) {
    auto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  if (!offset.empty()) add("offset", offset);
  if (!length.empty()) add("length", length);
  add("checksum", "not checked");
}

class OnnxExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_external_data_" + std::to_string(getpid()));
    fs::create_directories(dir_ / "sub");
    // weights.bin: 8 bytes of padding, the weight (24 bytes), the shift (8 bytes).
    std::ofstream f(dir_ / "weights.bin", std::ios::binary);
    f.write("padding!", 8);
    f.write(reinterpret_cast<const char*>(kWeight.data()), 24);
    f.write(reinterpret_cast<const char*>(kShift.data()), 8);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The model with w at `location` (offset, length as given), the shift at offset 32 of
  // weights.bin; written as model.onnx in `folder` (under the test's folder).
  std::string write(const std::string& location, const std::string& offset, const std::string& length,
                    const std::string& folder = "") {
    OnnxBuilder b = inline_model();
    externalize(*b.model().mutable_graph()->mutable_initializer(0), location, offset, length);
    externalize(*b.model().mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_t(),
                folder.empty() ? "weights.bin" : "../weights.bin", "32");
    fs::path p = dir_ / folder / "model.onnx";
    std::ofstream(p, std::ios::binary) << b.bytes();
    return p.string();
  }
  std::string error(const std::string& path) {
    try {
      import_onnx_file(path);
    } catch (const CompileError& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(OnnxExternalData, ImportsAsTheSameModelInline) {
  const std::vector<float> x = {1, 0, -1, 2, 0.5f, 1};
  const std::vector<float> want = test::run_graph(import_onnx_bytes(inline_model().bytes()), {x});
  ASSERT_EQ(want.size(), 4u);
  EXPECT_EQ(test::run_graph(import_onnx_file(write("weights.bin", "8", "24")), {x}), want);
  // Without a length: the rest of the file, too long for w's 6 values.
  std::string e = error(write("weights.bin", "8", ""));
  EXPECT_NE(e.find("tensor 'w': external data of 32 bytes for 6 values of float32 (24 bytes expected)"), std::string::npos) << e;
  // Relative to the model's folder, from a bare file name too.
  const fs::path cwd = fs::current_path();
  write("weights.bin", "8", "24");
  fs::current_path(dir_);
  std::vector<float> got = test::run_graph(import_onnx_file("model.onnx"), {x});
  fs::current_path(cwd);
  EXPECT_EQ(got, want);
}

TEST_F(OnnxExternalData, LocationsStayInTheModelsFolder) {
  struct Case {
    std::string location, offset, length, folder, message;
  };
  const std::vector<Case> cases = {
      {"/etc/passwd", "", "", "", "tensor 'w': external data location '/etc/passwd' is not a path relative to the model's folder"},
      {"../weights.bin", "8", "24", "sub", "tensor 'w': external data location '../weights.bin' leaves the model's folder"},
      {"sub/../../x.bin", "", "", "", "external data location 'sub/../../x.bin' leaves the model's folder"},
      {"missing.bin", "", "", "", "its external data file " + (dir_ / "missing.bin").string() + " does not exist"},
      {"sub", "", "", "", "its external data file " + (dir_ / "sub").string() + " is not a regular file"},
      {"weights.bin", "41", "", "", "external data offset 41 is past the end of"},
      {"weights.bin", "8", "40", "", "external data of 40 bytes at offset 8 runs past the end of"},
      {"weights.bin", "8", "16", "", "tensor 'w': external data of 16 bytes for 6 values of float32 (24 bytes expected)"},
      {"weights.bin", "-8", "", "", "external data offset '-8' is not a whole number of bytes"},
      {"weights.bin", "8", "2x", "", "external data length '2x' is not a whole number of bytes"},
      {"", "", "", "", "tensor 'w': its data is external but names no location"},
      {std::string("weights.bin\0/../x", 17), "", "", "", "tensor 'w': external data location holds a NUL character"},
  };
  for (const Case& c : cases) {
    std::string path = write(c.location, c.offset, c.length, c.folder);
    std::string e = error(path);
    EXPECT_NE(e.find(path + ": "), std::string::npos) << c.location << ": " << e;
    EXPECT_NE(e.find(c.message), std::string::npos) << c.location << ": " << e;
  }
}

TEST_F(OnnxExternalData, ModelBytesHaveNoFolderToReadFrom) {
  std::ifstream f(write("weights.bin", "8", "24"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string e = test::import_error(bytes);
  EXPECT_NE(e.find("model.onnx: tensor 'w': its data is in an external file ('weights.bin'), read relative to the "
                   "model's folder: give the model as a file path, not as bytes"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace kiln::frontend
