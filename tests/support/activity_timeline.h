#pragma once
// Activity timelines in tests (hw/sim/rtl/activity_trace.h): a double-buffered pipeline
// stream whose modules overlap and wait on each other's tokens, and a reader of the
// Chrome trace that checks the Trace Event Format on the way, with the totals the
// hardware's busy and stall counters must equal. The rtl and systemc suites use it.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hw/driver/device.h"
#include "hw/spec/assembly.h"
#include "hw/spec/isa.h"

namespace kiln::test {

using json = nlohmann::json;
using hw::regs::Counter;

// A double-buffered pipeline: load INP (load module), GEMM (compute), STORE (store),
// `n` rounds joined by tokens both ways, so the three modules overlap and wait on each
// other. Instruction 0 loads the micro-ops, 1 the weights; round k is 2 + 3k.. 4 + 3k.
struct Pipeline {
  std::vector<uint8_t> dram;
  uint64_t insn_addr = 0;
  uint32_t insn_count = 0;
  std::string text;
};

inline Pipeline pipeline(const hw::Config& cfg, int n, int rows) {
  const uint64_t uop_at = 0, wgt_at = 4096, inp_at = 8192, out_at = 65536, insn_at = 131072;
  auto el = [](uint64_t byte, int elem) { return byte / static_cast<uint64_t>(elem); };
  std::string s;
  s += fmt::format("uop dst_idx=0 src_idx=0 wgt_idx=0\nuop dst_idx={0} src_idx={0} wgt_idx=0\n",
                   rows);
  s += fmt::format("load memory_type=uop sram_base=0 dram_base={} y_size=1 x_size=2 x_stride=2\n",
                   el(uop_at, 4));
  s += fmt::format("load memory_type=wgt sram_base=0 dram_base={} y_size=1 x_size=1 x_stride=1\n",
                   el(wgt_at, cfg.wgt_elem_bytes()));
  for (int k = 0; k < n; ++k) {
    int b = k % 2;
    s += fmt::format(
        "load memory_type=inp sram_base={} dram_base={} y_size=1 x_size={} x_stride={}{} "
        "push_next_dep\n",
        b * rows, el(inp_at, cfg.inp_elem_bytes()) + static_cast<uint64_t>(k * rows), rows, rows,
        k >= 2 ? " pop_next_dep" : "");
    s += fmt::format(
        "gemm uop_bgn={} uop_end={} iter_out={} iter_in=1 dst_factor_out=1 src_factor_out=1 "
        "pop_prev_dep push_next_dep{}{}\n",
        b, b + 1, rows, k >= 2 ? " pop_next_dep" : "", k + 2 < n ? " push_prev_dep" : "");
    s += fmt::format(
        "store memory_type=out sram_base={} dram_base={} y_size=1 x_size={} x_stride={} "
        "pop_prev_dep{}\n",
        b * rows, el(out_at, cfg.out_elem_bytes()) + static_cast<uint64_t>(k * rows), rows, rows,
        (k + 2 < n || k == n - 1) ? " push_prev_dep" : "");
  }
  // FINISH pops no token: an empty GEMM waits for the last store first.
  s += "gemm uop_bgn=0 uop_end=0 iter_out=0 iter_in=0 pop_next_dep\nfinish\n";

  hw::AsmProgram prog = hw::assemble(s, cfg, "pipeline");
  hw::InsnLayout layout(cfg);
  std::vector<uint8_t> insns = hw::encode_program(layout, prog.insns);
  std::vector<uint8_t> uops = hw::encode_uops(layout, prog.uops);
  Pipeline p;
  p.dram.assign(insn_at + insns.size(), 0);
  std::copy(uops.begin(), uops.end(), p.dram.begin() + static_cast<std::ptrdiff_t>(uop_at));
  for (uint64_t i = inp_at; i < out_at; ++i) p.dram[i] = static_cast<uint8_t>(i * 7);
  std::copy(insns.begin(), insns.end(), p.dram.begin() + static_cast<std::ptrdiff_t>(insn_at));
  p.insn_addr = insn_at;
  p.insn_count = static_cast<uint32_t>(prog.insns.size());
  p.text = s;
  return p;
}

// The pipeline as `kiln sim` takes it, written into `dir`: its assembly (pipeline.s)
// and the DRAM image below the stream (in.bin); `kiln sim` places the program after it.
inline void write_sim_inputs(const Pipeline& p, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "pipeline.s") << p.text;
  std::ofstream(dir / "in.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(p.dram.data()), static_cast<std::streamsize>(p.insn_addr));
}

struct Interval {
  std::string name, state;
  int64_t insn = -1;
  uint64_t ts = 0, dur = 0;
};

// What a trace says, checked for the Trace Event Format on the way.
struct Timeline {
  std::map<int, std::string> threads;  // tid -> thread_name
  std::map<std::string, std::vector<Interval>> by_module;
  std::vector<Interval> runs;
};

// The events of process `pid` (every process when -1).
inline Timeline parse_timeline(const json& j, int pid = -1) {
  Timeline t;
  EXPECT_TRUE(j.is_object());
  EXPECT_TRUE(j.contains("traceEvents"));
  const json& events = j.at("traceEvents");
  EXPECT_TRUE(events.is_array());
  for (const json& e : events) {
    EXPECT_TRUE(e.contains("ph") && e["ph"].is_string()) << e.dump();
    EXPECT_TRUE(e.contains("name") && e["name"].is_string()) << e.dump();
    std::string ph = e["ph"];
    if (pid >= 0 && e.value("pid", -1) != pid) continue;
    if (ph == "M" && e["name"] == "thread_name") t.threads[e["tid"]] = e["args"]["name"];
  }
  for (const json& e : events) {
    if (e["ph"] != "X" || (pid >= 0 && e.value("pid", -1) != pid)) continue;
    EXPECT_TRUE(e["ts"].is_number_unsigned() && e["dur"].is_number_unsigned()) << e.dump();
    EXPECT_TRUE(e["pid"].is_number() && e["tid"].is_number()) << e.dump();
    Interval iv;
    iv.name = e["name"];
    iv.ts = e["ts"];
    iv.dur = e["dur"];
    if (e.contains("args") && e["args"].contains("insn")) iv.insn = e["args"]["insn"];
    if (e.contains("args") && e["args"].contains("state")) iv.state = e["args"]["state"];
    int tid = e["tid"];
    EXPECT_TRUE(t.threads.count(tid)) << "no thread_name for tid " << tid;
    if (t.threads[tid] == "runs") {
      t.runs.push_back(iv);
    } else {
      EXPECT_GT(iv.dur, 0u) << e.dump();
      t.by_module[t.threads[tid]].push_back(iv);
    }
  }
  for (auto& [module, ivs] : t.by_module)
    std::sort(ivs.begin(), ivs.end(),
              [](const Interval& a, const Interval& b) { return a.ts < b.ts; });
  return t;
}

// Intervals of one module within [begin, end): none overlaps the next, all inside.
inline void expect_disjoint_within(const Timeline& t, uint64_t begin, uint64_t end) {
  for (const auto& [module, ivs] : t.by_module) {
    for (size_t i = 0; i < ivs.size(); ++i) {
      if (ivs[i].ts < begin || ivs[i].ts >= end) continue;
      EXPECT_LE(ivs[i].ts + ivs[i].dur, end) << module << " " << ivs[i].name;
      if (i + 1 < ivs.size()) {
        EXPECT_LE(ivs[i].ts + ivs[i].dur, ivs[i + 1].ts)
            << module << " " << ivs[i].name << " overlaps " << ivs[i + 1].name;
      }
    }
  }
}

// Cycles of `module` in [begin, end) in the given states.
inline uint64_t total(const Timeline& t, const std::string& module, std::vector<std::string> states,
               uint64_t begin = 0, uint64_t end = ~uint64_t{0}) {
  uint64_t sum = 0;
  auto it = t.by_module.find(module);
  if (it == t.by_module.end()) return 0;
  for (const Interval& iv : it->second)
    if (iv.ts >= begin && iv.ts < end &&
        std::find(states.begin(), states.end(), iv.state) != states.end())
      sum += iv.dur;
  return sum;
}

// The busy and stall counters of a run equal the timeline's totals in [begin, end).
inline void expect_totals_match(const Timeline& t, driver::Counters c, uint64_t begin, uint64_t end) {
  const std::vector<std::string> stall = {"stall_token", "stall_queue"};
  EXPECT_EQ(total(t, "load", {"busy"}, begin, end), c[Counter::kLoadBusyCycles]);
  EXPECT_EQ(total(t, "compute", {"busy"}, begin, end), c[Counter::kComputeBusyCycles]);
  EXPECT_EQ(total(t, "store", {"busy"}, begin, end), c[Counter::kStoreBusyCycles]);
  EXPECT_EQ(total(t, "load", stall, begin, end), c[Counter::kLoadStallCycles]);
  EXPECT_EQ(total(t, "compute", stall, begin, end), c[Counter::kComputeStallCycles]);
  EXPECT_EQ(total(t, "store", stall, begin, end), c[Counter::kStoreStallCycles]);
}

}  // namespace kiln::test
