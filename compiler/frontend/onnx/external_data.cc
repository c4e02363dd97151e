#include "compiler/frontend/onnx/external_data.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include "compiler/frontend/onnx/importer.h"
#include "compiler/support/error.h"

namespace kiln::frontend {

namespace {

namespace fs = std::filesystem;

class ExternalData {
 public:
  ExternalData(const std::string& dir, const std::string& source) : dir_(dir), source_(source) {}

  void model(onnx::ModelProto& m) {
    graph(*m.mutable_graph());
    for (auto& f : *m.mutable_functions())
      for (auto& n : *f.mutable_node()) node(n);
  }

 private:
  void graph(onnx::GraphProto& g) {
    for (auto& t : *g.mutable_initializer()) tensor(t);
    for (auto& s : *g.mutable_sparse_initializer()) sparse(s);
    for (auto& n : *g.mutable_node()) node(n);
  }
  void node(onnx::NodeProto& n) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) tensor(*a.mutable_t());
      for (auto& t : *a.mutable_tensors()) tensor(t);
      if (a.has_sparse_tensor()) sparse(*a.mutable_sparse_tensor());
      for (auto& s : *a.mutable_sparse_tensors()) sparse(s);
      if (a.has_g()) graph(*a.mutable_g());
      for (auto& g : *a.mutable_graphs()) graph(g);
    }
  }
  void sparse(onnx::SparseTensorProto& s) {
    if (s.has_values()) tensor(*s.mutable_values());
    if (s.has_indices()) tensor(*s.mutable_indices());
  }

  [[noreturn]] void fail(const onnx::TensorProto& t, const std::string& what) const {
    throw CompileError(fmt::format("{}: tensor '{}': {}", source_, t.name(), what));
  }

  int64_t number(const onnx::TensorProto& t, const std::string& key, const std::string& text) const {
    int64_t v = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < 0)
      fail(t, fmt::format("external data {} '{}' is not a whole number of bytes", key, text));
    return v;
  }

  void tensor(onnx::TensorProto& t) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
    std::optional<std::string> location;
    int64_t offset = 0;
    std::optional<int64_t> length;
    for (const auto& e : t.external_data()) {
      if (e.key() == "location") location = e.value();
      else if (e.key() == "offset") offset = number(t, "offset", e.value());
      else if (e.key() == "length") length = number(t, "length", e.value());
    }
    if (!location || location->empty()) fail(t, "its data is external but names no location");
    if (dir_.empty())
      fail(t, fmt::format("its data is in an external file ('{}'), read relative to the model's folder: give the "
                          "model as a file path, not as bytes",
                          *location));
    if (location->find('\0') != std::string::npos) fail(t, "external data location holds a NUL character");
    const fs::path rel(*location);
    if (rel.has_root_path())
      fail(t, fmt::format("external data location '{}' is not a path relative to the model's folder", *location));
    for (const fs::path& part : rel)
      if (part == "..") fail(t, fmt::format("external data location '{}' leaves the model's folder", *location));
    const fs::path path = fs::path(dir_) / rel;
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st)) fail(t, fmt::format("its external data file {} does not exist", path.string()));
    if (!fs::is_regular_file(st)) fail(t, fmt::format("its external data file {} is not a regular file", path.string()));
    const auto size = static_cast<int64_t>(fs::file_size(path, ec));
    if (ec) fail(t, fmt::format("cannot read the size of its external data file {}", path.string()));
    if (offset > size) fail(t, fmt::format("external data offset {} is past the end of {} ({} bytes)", offset, path.string(), size));
    const int64_t n = length.value_or(size - offset);
    if (n > size - offset)
      fail(t, fmt::format("external data of {} bytes at offset {} runs past the end of {} ({} bytes)", n, offset,
                          path.string(), size));
    // What the shape and type hold, checked before reading: a hostile model must not
    // read a large file once for every tensor.
    int64_t count = 1;
    for (int64_t d : t.dims()) {
      if (d < 0 || (d > 0 && count > (int64_t{1} << 40) / d)) fail(t, "implausible dimensions (corrupt?)");
      count *= d;
    }
    const DataType type = onnx_dtype(t.data_type());
    if (n != count * type.storage_bytes())
      fail(t, fmt::format("external data of {} bytes for {} values of {} ({} bytes expected)", n, count, dtype_name(type),
                          count * type.storage_bytes()));
    std::ifstream& in = open(path);
    std::string bytes(static_cast<size_t>(n), '\0');
    in.clear();
    in.seekg(offset);
    if (n > 0 && !in.read(bytes.data(), n)) fail(t, fmt::format("cannot read its external data from {}", path.string()));
    t.set_raw_data(std::move(bytes));
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
  }

  std::ifstream& open(const fs::path& path) {
    auto it = files_.find(path.string());
    if (it == files_.end()) {
      auto f = std::make_unique<std::ifstream>(path, std::ios::binary);
      if (!*f) throw CompileError(fmt::format("{}: cannot open the external data file {}", source_, path.string()));
      it = files_.emplace(path.string(), std::move(f)).first;
    }
    return *it->second;
  }

  std::string dir_;
  std::string source_;
  std::map<std::string, std::unique_ptr<std::ifstream>> files_;  // one stream per data file
};

}  // namespace

void load_external_data(onnx::ModelProto& model, const std::string& dir, const std::string& source) {
  ExternalData(dir, source).model(model);
}

}  // namespace kiln::frontend
