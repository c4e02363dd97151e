// kiln quantize: post-training int8 quantization with calibration (compiler/quantize).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend-cpu/runtime/tensor.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/quantize/quantize.h"
#include "compiler/support/error.h"
#include "support/file.h"
#include "tools/kiln/common.h"

namespace kiln::cli {

namespace {

namespace fs = std::filesystem;

struct QuantizeArgs {
  std::string model, calibrate, method = "max", scales = "power2", skip, output;
  bool per_channel = false;
  bool skip_given = false;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> r;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) r.push_back(item);
  return r;
}

// Every .npy file of `dir` (sorted by name): one input of the model's type, or a stack
// of them along a leading axis ([N, ...] for an input [1, ...] or [...]).
std::vector<graph::ConstData> load_calibration(const std::string& dir, const graph::TensorType& type) {
  if (!fs::is_directory(dir)) throw CompileError("--calibrate: '" + dir + "' is not a directory");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".npy") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw CompileError("--calibrate: '" + dir + "' holds no .npy files");
  std::vector<int64_t> one = type.shape;
  if (!one.empty() && one[0] == 1) one.erase(one.begin());
  std::vector<graph::ConstData> samples;
  for (const fs::path& f : files) {
    cpu::NDArray a = cpu::NDArray::load_npy(f.string()).contiguous();
    std::vector<int64_t> s = a.shape();
    int64_t count = 0;
    if (s == type.shape) count = 1;
    else if (!s.empty() && std::vector<int64_t>(s.begin() + 1, s.end()) == one) count = s[0];
    else if (!s.empty() && std::vector<int64_t>(s.begin() + 1, s.end()) == type.shape) count = s[0];
    if (a.dtype() != type.dtype || count == 0)
      throw CompileError(fmt::format("--calibrate: {} holds {}[{}]; the model's input is {} (give one input, or a stack "
                                     "of them along a first axis)",
                                     f.string(), a.dtype().to_string(), fmt::join(s, ", "), type.to_string()));
    int64_t bytes = type.size() * type.dtype.storage_bytes();
    for (int64_t k = 0; k < count; ++k) {
      auto b = std::make_shared<interp::HostBuffer>(type.dtype, type.shape);
      std::memcpy(b->data(), static_cast<const char*>(a.data()) + k * bytes, static_cast<size_t>(bytes));
      samples.push_back(b);
    }
  }
  return samples;
}

void quantize_model(const QuantizeArgs& a) {
  quantize::Options opt;
  opt.method = quantize::parse_method(a.method);
  if (a.scales != "power2" && a.scales != "float") throw CompileError("--scales takes power2 or float, not '" + a.scales + "'");
  opt.power2 = a.scales == "power2";
  opt.per_channel = a.per_channel;
  opt.skip = split_list(a.skip);
  opt.skip_given = a.skip_given;
  quantize::Report r;
  std::string out = quantize_file(a.model, a.calibrate, opt, &r);
  std::ofstream o(a.output, std::ios::binary);
  if (!o || !o.write(out.data(), static_cast<std::streamsize>(out.size()))) throw CompileError("cannot write " + a.output);
  fmt::print("{}: {} nodes quantized ({} scales), {} tensors calibrated on {} inputs ({}), skipped: {} -> {}\n", a.model,
             r.quantized_nodes, a.scales, r.observed_tensors, r.samples, a.method,
             r.skipped.empty() ? "none" : fmt::format("{}", fmt::join(r.skipped, ", ")), a.output);
}

}  // namespace

std::string quantize_file(const std::string& model, const std::string& calibrate_dir, const quantize::Options& opt,
                          quantize::Report* report) {
  graph::Graph g = frontend::import_onnx_file(model);
  if (g.inputs().size() != 1)
    throw CompileError(fmt::format("{}: the model has {} inputs; kiln quantize takes models with one", model, g.inputs().size()));
  std::vector<graph::ConstData> samples = load_calibration(calibrate_dir, g.type(g.inputs()[0]));
  quantize::Options o = opt;
  o.model_dir = frontend::model_folder(model);
  return quantize::quantize_onnx(read_file(model), samples, o, model, report);
}

void add_quantize_command(CLI::App& app) {
  auto q = std::make_shared<QuantizeArgs>();
  CLI::App* c = app.add_subcommand("quantize", "post-training int8 quantization with calibration; writes a QDQ ONNX model");
  c->add_option("model", q->model, "MODEL.onnx (float32, one input, opset 13 or later)")->required();
  c->add_option("--calibrate", q->calibrate, "DIR of .npy calibration inputs")->required();
  c->add_option("--method", q->method, "max, percentile (99.99% of |x|) or kl (entropy)")->capture_default_str();
  c->add_option("--scales", q->scales, "power2 (requantization by shifts, for the accelerator) or float")->capture_default_str();
  c->add_flag("--per-channel", q->per_channel, "weight scales per output channel");
  c->add_option("--skip", q->skip, "NODE,NODE: ONNX nodes left in float (default: the first convolution)")
      ->each([q](const std::string&) { q->skip_given = true; });
  c->add_option("-o,--output", q->output, "MODEL.q.onnx to write")->required();
  c->callback([q] { quantize_model(*q); });
}

}  // namespace kiln::cli
