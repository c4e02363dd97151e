// runtime_demo: what `make demo` runs. A blocked 256x256x256 int8 GEMM and a small
// int8 conv2d, built by hand with the runtime, run on a device and checked bit for
// bit against plain C++.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "examples/runtime/kernels.h"
#include "hw/driver/runtime/command_stream.h"
#include "hw/spec/error.h"
#include "hw/spec/regs.h"

namespace {

using namespace kiln;

std::vector<int8_t> random_int8(size_t count, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-128, 127);
  std::vector<int8_t> out(count);
  for (int8_t& v : out) v = static_cast<int8_t>(dist(rng));
  return out;
}

struct Result {
  std::string name;
  bool pass = false;
  size_t mismatches = 0;
  double seconds = 0;
  driver::Counters counters;
};

template <typename Run>
Result check(std::string name, driver::Device& dev, const std::vector<int8_t>& expected, Run run) {
  runtime::CommandStream stream(dev);
  auto start = std::chrono::steady_clock::now();
  std::vector<int8_t> got = run(stream);
  Result r;
  r.name = std::move(name);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t i = 0; i < expected.size(); ++i) r.mismatches += got.at(i) != expected[i];
  r.pass = got.size() == expected.size() && r.mismatches == 0;
  r.counters = stream.counters();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Kiln runtime demo: int8 GEMM and conv2d on the accelerator, checked bit-exact"};
  std::string device = "fsim";
  std::string config_path = "hw/config/default.json";
  bool json = false;
  app.add_option("--device", device, "device to run on")->capture_default_str();
  app.add_option("--config", config_path,
                 "accelerator configuration (relative paths from the source tree)")
      ->capture_default_str();
  app.add_flag("--json", json, "print the results as JSON");
  CLI11_PARSE(app, argc, argv);

  try {
    std::filesystem::path path(config_path);
    if (path.is_relative() && !std::filesystem::exists(path))
      path = std::filesystem::path(KILN_SOURCE_DIR) / path;
    hw::Config cfg = hw::Config::from_file(path);
    auto dev = driver::make_device(device, cfg);
    std::mt19937 rng(2026);

    std::vector<Result> results;
    examples::GemmShape g{256, 256, 256};
    const int gemm_shift = 10;
    auto a = random_int8(size_t(g.m) * g.k, rng), b = random_int8(size_t(g.n) * g.k, rng);
    results.push_back(check(fmt::format("gemm {}x{}x{}", g.m, g.n, g.k), *dev,
                            examples::gemm_reference(a, b, g, gemm_shift),
                            [&](runtime::CommandStream& s) {
                              return examples::gemm_on_device(s, a, b, g, gemm_shift);
                            }));

    examples::Conv2dShape c;  // 1x16x14x14, 16 outputs, 3x3, pad 1
    const int conv_shift = 8;
    auto in = random_int8(size_t(c.n) * c.c * c.h * c.w, rng);
    auto w = random_int8(size_t(c.o) * c.c * c.kh * c.kw, rng);
    results.push_back(check(fmt::format("conv2d {}x{}x{}x{} o{} {}x{} pad {}", c.n, c.c, c.h,
                                        c.w, c.o, c.kh, c.kw, c.pad),
                            *dev, examples::conv2d_reference(in, w, c, conv_shift),
                            [&](runtime::CommandStream& s) {
                              return examples::conv2d_on_device(s, in, w, c, conv_shift);
                            }));

    bool all = true;
    for (const Result& r : results) all &= r.pass;
    if (json) {
      nlohmann::ordered_json out;
      out["device"] = device;
      out["config"] = cfg.name();
      out["pass"] = all;
      for (const Result& r : results) {
        nlohmann::ordered_json j;
        j["name"] = r.name;
        j["pass"] = r.pass;
        j["mismatches"] = r.mismatches;
        j["seconds"] = r.seconds;
        for (const auto& info : hw::regs::kCounters)
          if (auto it = r.counters.find(info.id); it != r.counters.end())
            j["counters"][std::string(info.name)] = it->second;
        out["results"].push_back(j);
      }
      fmt::print("{}\n", out.dump(2));
    } else {
      fmt::print("Kiln runtime demo: {} device, configuration '{}'\n", device, cfg.name());
      for (const Result& r : results) {
        fmt::print("\n{:<40} {}  ({:.2f} s{})\n", r.name, r.pass ? "PASS" : "FAIL", r.seconds,
                   r.pass ? "" : fmt::format(", {} mismatching outputs", r.mismatches));
        for (const auto& info : hw::regs::kCounters)
          if (auto it = r.counters.find(info.id); it != r.counters.end())
            fmt::print("  {:<22} {}\n", info.name, it->second);
      }
      fmt::print("\n{}\n", all ? "PASS" : "FAIL");
    }
    return all ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "runtime_demo: {}\n", e.what());
    return 2;
  }
}
