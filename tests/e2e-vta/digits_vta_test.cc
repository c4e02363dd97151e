// The digits CNN (examples/models/digits.py, trained at test time on scikit-learn's
// load_digits: real handwritten digits) quantized by `kiln quantize` with power-of-two
// scales and run with the accelerator: on fsim over the whole held-out split, on the
// Verilated RTL and on the iCEBreaker's uart-sim board top over part of it, every
// output bit for bit the CPU's. The CPU's accuracy of the same model is held within a
// point of fp32 by tests/quant; equal outputs make it the accelerator's accuracy too,
// which this test computes and prints.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <iostream>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend-cpu/graph_backend.h"
#include "backend-cpu/runtime/tensor.h"
#include "backend-vta/graph_target.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "tests/support/command.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

fs::path dir() { return KILN_DIGITS_DIR; }

class DigitsVta : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cpu::register_graph_backend();
    vta::register_graph_target();
    fs::path q = dir() / "digits.vta.q.onnx";
    auto r = test::run_command(std::string(KILN_BIN) + " quantize " + (dir() / "digits.onnx").string() + " --calibrate " +
                               (dir() / "calibration").string() + " --scales power2 -o " + q.string());
    ASSERT_EQ(r.status, 0) << r.output;
  }

  // Logits of the first `n` test images on `target`.
  static std::vector<float> logits(const std::string& target, int64_t n, std::vector<graph::Placement>* placement = nullptr) {
    cpu::NDArray x = cpu::NDArray::load_npy((dir() / "digits_test_x.npy").string()).contiguous();
    n = std::min(n, x.shape()[0]);
    std::vector<int64_t> shape = x.shape();
    shape[0] = n;
    frontend::OnnxOptions opt;
    opt.input_shapes["x"] = shape;
    graph::CompileOptions co;
    co.target = target::Target::parse(target);
    graph::CompiledModel m = graph::compile(frontend::import_onnx_file((dir() / "digits.vta.q.onnx").string(), opt), co);
    if (placement) *placement = m.placement;
    graph::Executor ex = graph::make_executor(m, "cpu", "llvm");
    ex.set_input(0, x.data(), x.nbytes() / x.shape()[0] * n);
    ex.run();
    std::vector<float> out(static_cast<size_t>(ex.output_type(0).size()));
    std::memcpy(out.data(), ex.output(0), out.size() * sizeof(float));
    return out;
  }

  static double accuracy(const std::vector<float>& logits) {
    cpu::NDArray y = cpu::NDArray::load_npy((dir() / "digits_test_y.npy").string()).contiguous();
    int64_t n = static_cast<int64_t>(logits.size() / 10), correct = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float* row = logits.data() + i * 10;
      correct += std::max_element(row, row + 10) - row == y.data_as<int64_t>()[i];
    }
    return 100.0 * static_cast<double>(correct) / static_cast<double>(n);
  }
};

TEST_F(DigitsVta, WholeTestSplitOnFsimEqualsTheCpu) {
  std::vector<float> cpu = logits("cpu", 540);
  for (const char* config : {"default", "tiny"}) {
    std::vector<graph::Placement> placement;
    std::vector<float> vta = logits(fmt::format("vta -config={} -device=fsim", config), 540, &placement);
    // default takes the three quantized convolutions and the residual add; tiny's
    // 256-element buffers cannot hold the 540-image batch of one of them, which then
    // stays on the CPU with its reason.
    int placed = 0;
    std::string why;
    for (const auto& p : placement) {
      placed += p.target == "vta";
      if (p.target == "cpu") why += "\n  " + p.node + ": " + p.reason;
    }
    EXPECT_GE(placed, std::string(config) == "default" ? 4 : 3) << config << why;
    EXPECT_EQ(vta, cpu) << config;
    std::cout << "digits on vta " << config << " (fsim): accuracy " << accuracy(vta) << "% over " << vta.size() / 10
              << " test images, the CPU's " << accuracy(cpu) << "%\n";
  }
}

TEST_F(DigitsVta, RtlEqualsTheCpu) {
  std::vector<float> cpu = logits("cpu", 16);
  EXPECT_EQ(logits("vta -config=default -device=rtl", 16), cpu);
  EXPECT_EQ(logits("vta -config=tiny -device=rtl", 16), cpu);
}

TEST_F(DigitsVta, IcebreakerBoardTopOverItsUartEqualsTheCpu) {
  // tiny.json on the uart-sim device: the iCEBreaker's board top, Verilated, driven
  // through its UART host link.
  EXPECT_EQ(logits("vta -config=tiny -device=uart-sim", 2), logits("cpu", 2));
}

TEST_F(DigitsVta, TunedOnTinyTheRecordsApplyOnTinyOnly) {
  // kiln tune --target vta tunes the convolutions the placement puts on the
  // accelerator; kiln run --records applies them on that configuration, and on another
  // one (another fingerprint) warns and keeps the defaults.
  fs::path records = fs::temp_directory_path() / fmt::format("kiln_digits_vta_{}.jsonl", ::getpid());
  fs::remove(records);
  std::string model = (dir() / "digits.vta.q.onnx").string();
  auto tune = test::run_command(std::string(KILN_BIN) + " tune " + model + " --target vta --config tiny -n 2 --tuner random -r " +
                                records.string());
  ASSERT_EQ(tune.status, 0) << tune.output;
  EXPECT_NE(tune.output.find("kiln tune: 2 tasks"), std::string::npos) << tune.output;
  EXPECT_NE(tune.output.find("cycles on rtl (vta -config=tiny -fingerprint="), std::string::npos) << tune.output;
  std::string run = std::string(KILN_BIN) + " run " + model + " --target vta --device fsim --records " + records.string();
  auto on_tiny = test::run_command(run + " --config tiny");
  ASSERT_EQ(on_tiny.status, 0) << on_tiny.output;
  // The first convolution stays on the host, so it has no accelerator record to miss.
  EXPECT_EQ(on_tiny.output.find("on vta -config=tiny -fingerprint="), std::string::npos) << on_tiny.output;
  auto on_default = test::run_command(run + " --config default");
  ASSERT_EQ(on_default.status, 0) << on_default.output;
  EXPECT_NE(on_default.output.find("no tuning record in " + records.string() + " for conv2d:N=1,C=16,H=8,W=8,O=16"),
            std::string::npos)
      << on_default.output;
  EXPECT_NE(on_default.output.find("on vta -config=default -fingerprint="), std::string::npos) << on_default.output;
  fs::remove(records);
}

// kiln run --trace on `device`: the device's module tracks and one run per accelerator
// kernel, and a host track with the host's kernels, in plan order, none overlapping.
// `accelerator` is the device's process name; `memory`, when not empty, a process of
// counters beside it (systemc's memory).
void expect_inference_trace(const fs::path& model, const std::string& device_kind, const std::string& accelerator,
                            const std::string& memory) {
  fs::path trace = fs::temp_directory_path() / fmt::format("kiln_digits_trace_{}_{}.json", device_kind, ::getpid());
  auto r = test::run_command(std::string(KILN_BIN) + " run " + model.string() + " --target vta --config tiny --device " +
                             device_kind + " --json --trace " + trace.string());
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json report = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  size_t accel_kernels = report.at("accelerator").at("layers").size();
  ASSERT_GT(accel_kernels, 0u);
  std::ifstream in(trace);
  nlohmann::json t = nlohmann::json::parse(in);
  std::map<int, std::string> process;
  std::map<std::pair<int, int>, std::string> thread;
  for (const auto& e : t.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "process_name") process[e.at("pid")] = e.at("args").at("name");
    else if (e.at("ph") == "M" && e.at("name") == "thread_name") thread[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
  int host = -1, device = -1, mem = -1;
  for (const auto& [pid, name] : process) {
    if (name == "host CPU") host = pid;
    if (name == accelerator) device = pid;
    if (!memory.empty() && name == memory) mem = pid;
  }
  ASSERT_GE(host, 0);
  ASSERT_GE(device, 0) << "no process named " << accelerator;
  EXPECT_EQ(process.size(), memory.empty() ? 2u : 3u);
  std::map<std::string, int> busy;  // events per device track
  std::vector<std::pair<double, double>> timeline;  // host kernels and device runs
  size_t runs = 0, host_kernels = 0, memory_counters = 0;
  for (const auto& e : t.at("traceEvents")) {
    if (e.at("ph") == "C" && e.at("pid") == mem) ++memory_counters;
    if (e.at("ph") != "X") continue;
    int pid = e.at("pid"), tid = e.at("tid");
    if (pid == device) ++busy[thread[{pid, tid}]];
    bool run = pid == device && thread[{pid, tid}] == "runs";
    if (run || pid == host) timeline.push_back({e.at("ts").get<double>(), e.at("dur").get<double>()});
    runs += run;
    host_kernels += pid == host;
  }
  EXPECT_EQ(runs, accel_kernels);
  EXPECT_GT(host_kernels, 0u);
  if (!memory.empty()) {
    EXPECT_GT(memory_counters, 0u) << "no counters of " << memory;
  }
  for (const char* module : {"fetch", "load", "compute", "store"}) EXPECT_GT(busy[module], 0) << module;
  std::sort(timeline.begin(), timeline.end());
  for (size_t k = 1; k < timeline.size(); ++k)
    EXPECT_GE(timeline[k].first + 1e-6, timeline[k - 1].first + timeline[k - 1].second) << "event " << k << " overlaps";
  fs::remove(trace);
}

TEST_F(DigitsVta, TraceIsOneTimelineOfHostAndAccelerator) {
  expect_inference_trace(dir() / "digits.vta.q.onnx", "rtl", "kiln rtl (tiny)", "");
}

#ifdef KILN_HAVE_SYSTEMC
TEST_F(DigitsVta, TraceOnTheSystemcPlatform) {
  expect_inference_trace(dir() / "digits.vta.q.onnx", "systemc", "accelerator 0 (tiny)", "memory (rtl-default)");
}
#endif

TEST_F(DigitsVta, RunQuantizesOnTheFlyWithCalibrate) {
  // kiln run MODEL.onnx --calibrate DIR is kiln quantize's default model, run: the same
  // output as the file kiln quantize wrote (the same random input: kiln run's is seeded).
  fs::path a = fs::temp_directory_path() / fmt::format("kiln_digits_fly_{}.npy", ::getpid());
  fs::path b = fs::temp_directory_path() / fmt::format("kiln_digits_file_{}.npy", ::getpid());
  std::string run = std::string(KILN_BIN) + " run --target vta --device fsim ";
  auto fly = test::run_command(run + (dir() / "digits.onnx").string() + " --calibrate " + (dir() / "calibration").string() +
                               " -o " + a.string());
  ASSERT_EQ(fly.status, 0) << fly.output;
  EXPECT_NE(fly.output.find("quantized on the fly: 6 nodes"), std::string::npos) << fly.output;
  auto file = test::run_command(run + (dir() / "digits.vta.q.onnx").string() + " -o " + b.string());
  ASSERT_EQ(file.status, 0) << file.output;
  // The same placement.
  auto placement = [](const std::string& out) {
    size_t at = out.find("placement on ");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_NE(placement(fly.output), "") << fly.output;
  EXPECT_EQ(placement(fly.output), placement(file.output));
  cpu::NDArray x = cpu::NDArray::load_npy(a.string()), y = cpu::NDArray::load_npy(b.string());
  ASSERT_EQ(x.nbytes(), y.nbytes());
  EXPECT_EQ(std::memcmp(x.data(), y.data(), static_cast<size_t>(x.nbytes())), 0);
  // A calibration directory of the wrong shape is a clear error.
  auto bad = test::run_command(run + (dir() / "digits.onnx").string() + " --calibrate " + dir().string());
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("--calibrate"), std::string::npos) << bad.output;
  fs::remove(a);
  fs::remove(b);
}

TEST_F(DigitsVta, InputShapeFixesTheSymbolicBatch) {
  // The exported digits CNN has a symbolic batch; --input-shape gives it (else 1).
  std::string run = std::string(KILN_BIN) + " run " + (dir() / "digits.onnx").string() + " -n 1 ";
  auto three = test::run_command(run + "--input-shape x=3x1x8x8");
  ASSERT_EQ(three.status, 0) << three.output;
  EXPECT_NE(three.output.find("output 'logits': float32[3, 10]"), std::string::npos) << three.output;
  auto one = test::run_command(run);
  ASSERT_EQ(one.status, 0) << one.output;
  EXPECT_NE(one.output.find("output 'logits': float32[1, 10]"), std::string::npos) << one.output;
  auto unknown = test::run_command(run + "--input-shape y=3x1x8x8");
  EXPECT_NE(unknown.status, 0);
  EXPECT_NE(unknown.output.find("has no input 'y'"), std::string::npos) << unknown.output;
  auto malformed = test::run_command(run + "--input-shape x=3x1xx8");
  EXPECT_NE(malformed.status, 0);
  EXPECT_NE(malformed.output.find("'' is not a positive dimension"), std::string::npos) << malformed.output;
}

}  // namespace
}  // namespace kiln
