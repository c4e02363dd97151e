// The code generator's output is pinned: programs for ResNet-18's convolutions, dense
// layers and residual adds (default knobs, and a sample of each knob space) hash to
// the values the code generator produced before it was split into passes
// (backend-vta/passes.h). A pass that changes one instruction, one token or one
// micro-op changes a hash; a deliberate change of the output updates the table.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include <fmt/format.h>

#include "backend-vta/codegen.h"
#include "backend-vta/ops.h"
#include "backend-vta/strategy.h"
#include "compiler/schedule/lower.h"

namespace kiln {
namespace {

hw::Config config(const std::string& name) {
  return hw::Config::from_file(std::filesystem::path(KILN_SOURCE_DIR) / "hw/config" / (name + ".json"));
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Everything codegen decides: ops with their relocations and tokens, kernels, args.
std::string hash_of(const vta::Program& p) { return fmt::format("{:016x}", fnv1a(p.to_json())); }

// Every nth knob setting of a space, so that tiles, threads and double buffering vary.
template <typename T>
std::vector<T> sample(const std::vector<T>& all, size_t count) {
  std::vector<T> out;
  if (all.empty()) return out;
  size_t step = std::max<size_t>(1, all.size() / count);
  for (size_t i = 0; i < all.size() && out.size() < count; i += step) out.push_back(all[i]);
  return out;
}

std::map<std::string, std::string> programs() {
  std::map<std::string, std::string> out;
  for (const char* cfg_name : {"default", "tiny"}) {
    hw::Config cfg = config(cfg_name);
    vta::Env env(cfg);
    const std::string c = cfg_name;
    for (const vta::Conv2DWorkload& wl : vta::resnet18_conv_workloads(cfg.batch())) {
      vta::Requant rq;
      out[c + "/" + wl.name + "/default"] = hash_of(vta::build_conv2d(env, wl, rq, vta::default_conv2d_knobs(env, wl, rq)));
    }
    // A sample of a small layer's whole knob space (threads, double buffering, tiles).
    if (c == "default") {
      vta::Conv2DWorkload wl = vta::resnet18_conv_workloads(cfg.batch())[9];
      vta::Requant rq{false, 6, false};
      int i = 0;
      for (const vta::Conv2DKnobs& k : sample(vta::conv2d_knob_space(env, wl, rq), 8))
        out[c + "/" + wl.name + "/space" + std::to_string(i++)] = hash_of(vta::build_conv2d(env, wl, rq, k));
    }
    for (auto [in, outc] : {std::pair{512, 1024}, std::pair{256, 64}}) {
      vta::Conv2DWorkload wl = vta::dense_workload(cfg.batch(), in, outc);
      vta::Requant rq{true, 9, false};
      out[c + "/dense" + std::to_string(in) + "x" + std::to_string(outc)] =
          hash_of(vta::build_conv2d(env, wl, rq, vta::default_conv2d_knobs(env, wl, rq)));
    }
    if (env.block_in() == env.block_out()) {
      for (auto [ch, hw] : {std::pair{64, 56}, std::pair{256, 14}, std::pair{512, 7}}) {
        vta::AddWorkload wl{"add", cfg.batch(), ch, hw, hw};
        std::string key = c + "/add" + std::to_string(ch) + "x" + std::to_string(hw);
        out[key] = hash_of(vta::build_add(env, wl, {false, 0, true}, vta::default_add_knobs(env, wl)));
        // Operands at different scales, as the graph's residual adds are.
        vta::AddOp op = vta::add_packed(env, wl, {false, 1, true}, vta::AddScales{1, -1, 1});
        schedule::Schedule s = vta::schedule_add(env, op, vta::default_add_knobs(env, wl));
        out[key + "/scaled"] = hash_of(vta::codegen(env, schedule::lower(s, op.args(), "add_scaled")));
      }
    }
  }
  return out;
}

// Computed by the single-function code generator (main before the passes).
const std::map<std::string, std::string> kGolden = {
    {"default/C10/default", "e84b93293c016d75"},
    {"default/C11/default", "47013f7f04d0a5aa"},
    {"default/C11/space0", "5cc0fcf07011dda6"},
    {"default/C11/space1", "d181f5d25851bc66"},
    {"default/C11/space2", "9df9255d676858bb"},
    {"default/C11/space3", "345f331233d8075f"},
    {"default/C11/space4", "d8eb0d4b7ac6271e"},
    {"default/C11/space5", "133b4c94c8717617"},
    {"default/C11/space6", "2eb7f8ad07ccb8c5"},
    {"default/C11/space7", "446f4f7f1ea578b2"},
    {"default/C12/default", "aa8b8896af41760b"},
    {"default/C2/default", "a327f905d2550584"},
    {"default/C3/default", "a3fea336ad90c9b7"},
    {"default/C4/default", "eb2f0032ca660066"},
    {"default/C5/default", "c6a249d454d1e43a"},
    {"default/C6/default", "3deaf931a3369b65"},
    {"default/C7/default", "b5b2ee2aa8ebf461"},
    {"default/C8/default", "51f4d39d8db2155f"},
    {"default/C9/default", "ded8148ddf3a55c2"},
    {"default/add256x14", "34a5d41cd7a55302"},
    {"default/add256x14/scaled", "02d5eac79690d0d6"},
    {"default/add512x7", "f88a564b9e44032d"},
    {"default/add512x7/scaled", "c4754b759d642f3d"},
    {"default/add64x56", "d673969e143737c5"},
    {"default/add64x56/scaled", "0e128efdb15a9d9b"},
    {"default/dense256x64", "c3c19ff71447dfe5"},
    {"default/dense512x1024", "2281476792e073d8"},
    {"tiny/C10/default", "bdf4c6875548a4ef"},
    {"tiny/C11/default", "1423248656dbdc9c"},
    {"tiny/C12/default", "4f352e010cf9c1dc"},
    {"tiny/C2/default", "67ab5f4adb027008"},
    {"tiny/C3/default", "84106603579e075c"},
    {"tiny/C4/default", "e4c093c900e79215"},
    {"tiny/C5/default", "7e5b9c01b5992361"},
    {"tiny/C6/default", "8db87fe29bf055a0"},
    {"tiny/C7/default", "795b4943ef278986"},
    {"tiny/C8/default", "ce2f8907c540d981"},
    {"tiny/C9/default", "accbb788a8b905f1"},
    {"tiny/add256x14", "253f1885c1d8db72"},
    {"tiny/add256x14/scaled", "e7ed11823bdaf2ea"},
    {"tiny/add512x7", "fb464e1fb3b349ef"},
    {"tiny/add512x7/scaled", "c137eb88ba9d724f"},
    {"tiny/add64x56", "4a8912119f4aa09e"},
    {"tiny/add64x56/scaled", "9d73bc893c08b782"},
    {"tiny/dense256x64", "31275830dcdc7ee2"},
    {"tiny/dense512x1024", "49ade72d61691e83"},
};

TEST(VtaCodegenGolden, ProgramsAreBitIdenticalToTheRecordedOnes) {
  std::map<std::string, std::string> got = programs();
  std::string table;
  for (const auto& [k, v] : got) table += fmt::format("    {{\"{}\", \"{}\"}},\n", k, v);
  EXPECT_EQ(got.size(), kGolden.size()) << "the table to record:\n" << table;
  for (const auto& [k, v] : got) {
    auto it = kGolden.find(k);
    if (it == kGolden.end()) {
      ADD_FAILURE() << k << " is not in the table";
      continue;
    }
    EXPECT_EQ(v, it->second) << k << " encodes differently";
  }
}

}  // namespace
}  // namespace kiln
