// The compiled-model file (.kiln):
//   "KILNMDL1"  magic, 8 bytes
//   uint64      length of the header (little-endian)
//   header      JSON: backend, target, buffers, inputs, outputs, kernels, and where
//               the constants' contents and the kernels' code lie in the payload;
//               with an accelerator also its target string and where its kernels lie
//   payload     the constants, then the backend's saved kernels, then the accelerator's
#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "compiler/graph/executor.h"
#include "compiler/support/error.h"
#include "support/file.h"
#include "support/json.h"

namespace kiln::graph {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'M', 'D', 'L', '1'};

using nlohmann::json;

json tensor_json(const ExecPlan::Tensor& t) {
  DataType d = t.type.dtype;
  return {{"name", t.name},
          {"dtype", {static_cast<int>(d.code()), d.bits(), d.lanes()}},
          {"shape", t.type.shape},
          {"buffer", t.buffer}};
}

ExecPlan::Tensor tensor_from(const json& j, const std::vector<ExecPlan::Buffer>& buffers) {
  ExecPlan::Tensor t;
  t.name = j.at("name").get<std::string>();
  auto d = json_integers<int>(j.at("dtype"), "dtype");
  if (d.size() != 3 || d[0] < 0 || d[0] > static_cast<int>(ir::TypeCode::Handle)) throw CompileError("bad data type");
  t.type.dtype = DataType(static_cast<ir::TypeCode>(d[0]), d[1], d[2]);
  t.type.shape = json_integers<int64_t>(j.at("shape"), "shape");
  t.buffer = json_integer<int>(j.at("buffer"), "buffer");
  if (t.buffer < 0 || static_cast<size_t>(t.buffer) >= buffers.size()) throw CompileError("tensor '" + t.name + "': bad buffer");
  // The executor copies a tensor's bytes into its buffer: they must fit.
  for (int64_t n : t.type.shape)
    if (n < 0) throw CompileError(fmt::format("tensor '{}': negative dimension in {}", t.name, t.type.to_string()));
  int64_t bytes = 0, capacity = buffers[static_cast<size_t>(t.buffer)].bytes;
  if (__builtin_mul_overflow(t.type.size(), int64_t{t.type.dtype.storage_bytes()}, &bytes) || bytes > capacity)
    throw CompileError(fmt::format("tensor '{}' ({}) does not fit its buffer {} of {} bytes", t.name, t.type.to_string(),
                                   t.buffer, capacity));
  return t;
}

}  // namespace

void save_model(const std::string& path, const Executor& ex, const std::string& backend, const std::string& target) {
  const ExecPlan& p = ex.plan();
  bool has_host = !p.signatures(false).empty();
  std::string code = has_host ? ex.kernels().save() : "";
  if (has_host && code.empty())
    throw CompileError("backend '" + backend + "' cannot save its kernels; compile for a backend that can (cpu)");
  std::string accel_code;
  if (ex.accelerator()) {
    accel_code = ex.accelerator()->save();
    if (accel_code.empty()) throw CompileError("the accelerator's backend (" + p.accelerator + ") cannot save its kernels");
  }
  json h;
  h["version"] = 1;
  h["backend"] = backend;
  h["target"] = target;
  // The payload is the buffers' initial data, the code and the accelerator's code, in
  // that order; each is written where it lies, not gathered into one string first (a
  // model's weights are hundreds of MB).
  std::vector<const std::string*> payload;
  size_t offset = 0;
  auto place = [&](const std::string& blob) {
    json where = {offset, blob.size()};
    payload.push_back(&blob);
    offset += blob.size();
    return where;
  };
  json buffers = json::array();
  for (const auto& b : p.buffers) {
    json jb{{"bytes", b.bytes}};
    if (b.init) jb["init"] = place(*b.init);
    buffers.push_back(jb);
  }
  h["buffers"] = buffers;
  for (const auto& t : p.inputs) h["inputs"].push_back(tensor_json(t));
  for (const auto& t : p.outputs) h["outputs"].push_back(tensor_json(t));
  for (const auto& k : p.kernels)
    h["kernels"].push_back({{"name", k.name}, {"args", k.args}, {"accelerator", k.on_accelerator}});
  h["code"] = place(code);
  if (ex.accelerator()) {
    h["accelerator"] = p.accelerator;
    h["accelerator_code"] = place(accel_code);
  }

  std::string header = h.dump();
  std::ofstream f(path, std::ios::binary);
  if (!f) throw CompileError(path + ": cannot write");
  uint64_t n = header.size();
  f.write(kMagic, 8);
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << header;
  for (const std::string* blob : payload) f.write(blob->data(), static_cast<std::streamsize>(blob->size()));
  if (!f) throw CompileError(path + ": write failed");
}

Executor load_model(const std::string& path) {
  const std::string data = read_file(path);
  if (data.size() < 16 || std::memcmp(data.data(), kMagic, 8) != 0) throw CompileError(path + ": not a compiled Kiln model");
  uint64_t n;
  std::memcpy(&n, data.data() + 8, 8);
  if (n > data.size() - 16) throw CompileError(path + ": truncated (the header is incomplete)");
  const char* payload = data.data() + 16 + n;
  size_t payload_size = data.size() - 16 - n;
  auto blob = [&](const json& where, const char* what) {
    std::vector<size_t> range = json_integers<size_t>(where, what);
    if (range.size() != 2) throw CompileError(fmt::format("'{}' must be [offset, size]", what));
    size_t off = range[0], size = range[1];
    if (off > payload_size || size > payload_size - off) throw CompileError("truncated (data past the end)");
    return std::string(payload + off, size);
  };
  try {
    json h = json::parse(data.begin() + 16, data.begin() + 16 + static_cast<std::ptrdiff_t>(n));
    if (json_integer<int>(h.at("version"), "version") != 1) throw CompileError("unsupported version");
    ExecPlan p;
    for (const auto& jb : h.at("buffers")) {
      ExecPlan::Buffer b{json_integer<int64_t>(jb.at("bytes"), "bytes"), nullptr};
      if (b.bytes < 0) throw CompileError(fmt::format("buffer {}: negative size {}", p.buffers.size(), b.bytes));
      if (jb.contains("init")) b.init = std::make_shared<const std::string>(blob(jb.at("init"), "init"));
      if (b.init && static_cast<uint64_t>(b.init->size()) > static_cast<uint64_t>(b.bytes))
        throw CompileError(fmt::format("buffer {}: {} bytes of initial data for {} bytes", p.buffers.size(), b.init->size(), b.bytes));
      p.buffers.push_back(b);
    }
    for (const auto& t : h.at("inputs")) p.inputs.push_back(tensor_from(t, p.buffers));
    for (const auto& t : h.at("outputs")) p.outputs.push_back(tensor_from(t, p.buffers));
    for (const auto& k : h.at("kernels")) {
      ExecPlan::Kernel pk{k.at("name").get<std::string>(), json_integers<int>(k.at("args"), "args"),
                          k.value("accelerator", false)};
      for (int a : pk.args)
        if (a < 0 || static_cast<size_t>(a) >= p.buffers.size()) throw CompileError("kernel '" + pk.name + "': bad buffer");
      p.kernels.push_back(std::move(pk));
    }
    std::unique_ptr<target::KernelModule> accel;
    if (h.contains("accelerator")) {
      p.accelerator = h["accelerator"].get<std::string>();
      target::Target t = target::Target::parse(p.accelerator);
      accel = target::make_backend(t.backend())->load(blob(h.at("accelerator_code"), "accelerator_code"), p.signatures(true));
    } else {
      for (const auto& k : p.kernels)
        if (k.on_accelerator) throw CompileError("kernel '" + k.name + "' runs on an accelerator the file does not name");
    }
    bool has_host = !p.signatures(false).empty();
    auto backend = target::make_backend(has_host ? h.at("backend").get<std::string>() : "interp");
    auto kernels = has_host ? backend->load(blob(h.at("code"), "code"), p.signatures()) : backend->build({}, "");
    return Executor(std::move(p), std::move(kernels), std::move(accel));
  } catch (const json::exception& e) {
    throw CompileError(fmt::format("{}: corrupt model header: {}", path, e.what()));
  } catch (const CompileError& e) {
    throw CompileError(fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace kiln::graph
