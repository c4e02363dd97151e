#include "explore/workload.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "hw/spec/error.h"
#include "tuner/vta_templates.h"
#include "tuner/workload.h"

namespace kiln::explore {

namespace {

std::string conv_key(const vta::Conv2DWorkload& c) {
  return fmt::format("conv2d:N={},C={},H={},W={},O={},KH={},KW={},stride={},pad={}", c.batch, c.in_channels, c.height,
                     c.width, c.out_channels, c.kernel_h, c.kernel_w, c.stride_h, c.pad_h);
}

vta::Conv2DWorkload conv_of_key(const std::string& key) {
  try {
    return tuner::vta_workload(tuner::parse_workload(key));
  } catch (const std::exception& e) {
    throw hw::Error(fmt::format("layer '{}': {}", key, e.what()));
  }
}

}  // namespace

int64_t ExploreWorkload::macs() const {
  int64_t n = 0;
  for (const Layer& l : layers) n += l.count * l.conv.macs();
  return n;
}

std::string ExploreWorkload::text() const {
  std::string s;
  for (const Layer& l : layers) {
    if (!s.empty()) s += ';';
    s += conv_key(l.conv);
    if (l.count != 1) s += fmt::format("*{}", l.count);
  }
  return s;
}

ExploreWorkload ExploreWorkload::from_text(const std::string& name, const std::string& text) {
  ExploreWorkload w{name, {}};
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ';')) {
    Layer l;
    auto star = part.find('*');
    if (star != std::string::npos) {
      try {
        l.count = std::stoi(part.substr(star + 1));
      } catch (const std::exception&) {
        l.count = 0;
      }
      if (l.count < 1) throw hw::Error(fmt::format("layer '{}': the count after '*' must be a positive integer", part));
    }
    l.conv = conv_of_key(part.substr(0, star));
    l.conv.name = fmt::format("L{}", w.layers.size() + 1);
    w.layers.push_back(l);
  }
  if (w.layers.empty()) throw hw::Error("a workload needs at least one layer");
  return w;
}

ExploreWorkload resnet18_table() {
  ExploreWorkload w{"resnet18", {}};
  for (const vta::Conv2DWorkload& c : vta::resnet18_conv_workloads(1)) w.layers.push_back({c, 1});
  return w;
}

ExploreWorkload workload_of_ops(const std::vector<std::string>& specs) {
  ExploreWorkload w{"op", {}};
  for (const std::string& s : specs) {
    Layer l{conv_of_key(s), 1};
    l.conv.name = fmt::format("L{}", w.layers.size() + 1);
    w.layers.push_back(l);
  }
  if (w.layers.empty()) throw hw::Error("--op: give at least one layer");
  return w;
}

ExploreWorkload workload_of_model(const std::string& onnx_path, int channel_multiple) {
  graph::Graph g = frontend::import_onnx_file(onnx_path);
  std::map<std::string, int> counts;
  std::vector<std::string> order;
  for (graph::NodeId id = 0; id < static_cast<graph::NodeId>(g.nodes().size()); ++id) {
    std::optional<tuner::Workload> t = tuner::workload_of(g, id);
    if (!t || t->op != "conv2d_nchw" || t->at("groups") != 1) continue;
    if (t->at("C") % channel_multiple != 0 || t->at("O") % channel_multiple != 0) continue;
    vta::Conv2DWorkload c;
    c.batch = static_cast<int>(t->at("N"));
    c.in_channels = static_cast<int>(t->at("C"));
    c.height = static_cast<int>(t->at("H"));
    c.width = static_cast<int>(t->at("W"));
    c.out_channels = static_cast<int>(t->at("O"));
    c.kernel_h = static_cast<int>(t->at("KH"));
    c.kernel_w = static_cast<int>(t->at("KW"));
    c.stride_h = c.stride_w = static_cast<int>(t->at("stride"));
    c.pad_h = c.pad_w = static_cast<int>(t->at("pad"));
    std::string key = conv_key(c);
    if (counts[key]++ == 0) order.push_back(key);
  }
  if (order.empty())
    throw hw::Error(fmt::format("{}: no convolution with group 1 and channels in multiples of {} (what the searched "
                                "accelerators take)",
                                onnx_path, channel_multiple));
  ExploreWorkload w{std::filesystem::path(onnx_path).stem().string(), {}};
  for (const std::string& key : order) {
    Layer l{conv_of_key(key), counts[key]};
    l.conv.name = fmt::format("L{}", w.layers.size() + 1);
    w.layers.push_back(l);
  }
  return w;
}

}  // namespace kiln::explore
