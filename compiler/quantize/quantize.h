#pragma once
// Post-training quantization (`kiln quantize`): the float model runs on calibration
// inputs through the graph executor, every tensor a quantizable operator (Conv, Gemm,
// MatMul with a constant weight, a residual Add, MaxPool) reads is observed, and a
// standard QDQ ONNX model is written: QuantizeLinear/DequantizeLinear pairs on those
// tensors (int8, symmetric), int8 weights (per tensor or per output channel), int32
// biases at scale s_x * s_w. With power-of-two scales the realized graph
// (quantize_realize) requantizes by shifts, as the accelerator does.
#include <map>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"

namespace kiln::quantize {

enum class Method { Max, Percentile, KL };
// "max", "percentile" or "kl" (CompileError naming the choices otherwise).
Method parse_method(const std::string& s);

struct Options {
  Method method = Method::Max;
  double percentile = 99.99;  // of |x|, for Method::Percentile
  bool power2 = true;         // scales rounded up to powers of two
  bool per_channel = false;   // weight scales per output channel
  // Nodes (ONNX node names) left in float; empty: the first convolution (as TVM's
  // relay.quantize skips it).
  std::vector<std::string> skip;
  bool skip_given = false;    // an explicit (possibly empty) skip list
  std::string backend = "cpu";  // the executor's backend for the calibration runs
  // The folder the model's external data files are in (frontend::model_folder of its
  // path); empty: the model has none. The QDQ model written holds every tensor inline.
  std::string model_dir;
};

// What was done, for the command's summary.
struct Report {
  int quantized_nodes = 0;
  std::vector<std::string> skipped;
  int observed_tensors = 0;
  int samples = 0;
};

// `model_bytes`: a float ONNX model with one input; `samples`: calibration inputs, each
// of the model's input type. Returns the serialized QDQ model (checked by onnx::checker).
std::string quantize_onnx(const std::string& model_bytes, const std::vector<graph::ConstData>& samples,
                          const Options& options, const std::string& source, Report* report = nullptr);

// The absolute-value threshold of one tensor's calibration values by `method`.
double calibrate_threshold(const std::vector<float>& values, Method method, double percentile);

}  // namespace kiln::quantize
