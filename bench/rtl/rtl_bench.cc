// kiln_bench_rtl: how the RTL performs under Verilator, for docs/performance.md.
//   1. GEMM and ALU throughput in steady state: micro-ops per cycle, measured as the
//      difference between two runs that differ only in loop length (so fetch, loads and
//      pipeline fill cancel out).
//   2. A load -> compute -> store pipeline with dependency tokens, double-buffered
//      against single-buffered: total cycles and each module's busy cycles (their sum
//      exceeding the total is the overlap).
//   3. Simulation speed: simulated cycles per wall-clock second, and per second of this
//      thread's CPU time (what the simulation costs whatever else shares the machine).
// Usage: kiln_bench_rtl [--config NAME ...] [--json] (default: every built configuration).

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/support/cpu_time.h"
#include "hw/driver/fsim_device.h"
#include "hw/driver/rtl/rtl_device.h"
#include "hw/sim/rtl/rtl_sim.h"
#include "hw/spec/error.h"
#include "hw/spec/isa.h"

namespace kiln {
namespace {

using hw::Insn;
using hw::MemType;
using hw::Opcode;
using hw::regs::Counter;

Insn mem(Opcode op, MemType m, uint32_t sram, uint32_t dram, uint32_t y, uint32_t x) {
  Insn i;
  i.opcode = op;
  i.memory_type = m;
  i.sram_base = sram;
  i.dram_base = dram;
  i.y_size = y;
  i.x_size = x;
  i.x_stride = x;
  return i;
}

Insn loop(Opcode op, uint32_t uops, uint32_t iter_out, uint32_t iter_in) {
  Insn i;
  i.opcode = op;
  i.uop_bgn = 0;
  i.uop_end = uops;
  i.iter_out = iter_out;
  i.iter_in = iter_in;
  return i;
}

struct Result {
  driver::Counters counters;
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // this thread's CPU time
};

using bench_support::thread_cpu_seconds;

// Runs a stream on a fresh rtl device (micro-ops at DRAM 0, the stream at 64 KiB) and
// on fsim, which checks that the stream is legal; their DRAM images must agree.
Result run(const hw::Config& cfg, const std::vector<Insn>& insns, const std::vector<hw::Uop>& uops) {
  driver::DeviceOptions opts;
  opts.dram_bytes = 16 << 20;
  driver::RtlDevice dev(cfg, opts);
  driver::FsimDevice golden(cfg, opts);
  hw::InsnLayout layout(cfg);
  const uint64_t insn_addr = 64 << 10;
  for (driver::Device* d : {static_cast<driver::Device*>(&dev), static_cast<driver::Device*>(&golden)}) {
    d->write(0, hw::encode_uops(layout, uops));
    d->write(insn_addr, hw::encode_program(layout, insns));
  }
  golden.run(insn_addr, static_cast<uint32_t>(insns.size()));
  auto t0 = std::chrono::steady_clock::now();
  double c0 = thread_cpu_seconds();
  dev.run(insn_addr, static_cast<uint32_t>(insns.size()));
  double c1 = thread_cpu_seconds();
  auto t1 = std::chrono::steady_clock::now();
  std::vector<uint8_t> a(opts.dram_bytes), b(opts.dram_bytes);
  dev.read(0, a);
  golden.read(0, b);
  if (a != b) throw hw::Error("the rtl device's DRAM differs from fsim's after a bench stream");
  return {dev.counters(), std::chrono::duration<double>(t1 - t0).count(), c1 - c0};
}

// Steady-state micro-ops per cycle of one GEMM or ALU loop.
struct Throughput {
  double uops_per_cycle;
  uint64_t uops, cycles;
  double sim_cycles_per_s, sim_cycles_per_cpu_s;
};

Throughput loop_throughput(const hw::Config& cfg, Opcode op, bool use_imm, uint32_t long_iters) {
  // Four micro-ops on distinct accumulators, re-used every inner iteration (so each
  // accumulator is read three cycles after it was written: forwarding, no stall).
  const uint32_t kUops = 4;
  std::vector<hw::Uop> uops;
  for (uint32_t k = 0; k < kUops; ++k) uops.push_back({k, op == Opcode::kAlu ? k + 4 : 0, 0});
  auto stream = [&](uint32_t iter_out) {
    Insn ld_uop = mem(Opcode::kLoad, MemType::kUop, 0, 0, 1, kUops);
    Insn ld_wgt = mem(Opcode::kLoad, MemType::kWgt, 0, 2048, 1, 1);
    ld_wgt.push_next_dep = true;
    Insn ld_inp = mem(Opcode::kLoad, MemType::kInp, 0, 2048, 1, 1);
    Insn body = loop(op, kUops, iter_out, 64);
    body.pop_prev_dep = true;
    if (op == Opcode::kAlu) {
      body.alu_opcode = hw::AluOp::kAdd;
      body.use_imm = use_imm;
      body.imm = 3;
    }
    return std::vector<Insn>{ld_uop, ld_inp, ld_wgt, body, Insn{}};
  };
  Result a = run(cfg, stream(long_iters / 2), uops), b = run(cfg, stream(long_iters), uops);
  Counter uc = op == Opcode::kGemm ? Counter::kGemmUops : Counter::kAluUops;
  uint64_t du = b.counters[uc] - a.counters[uc];
  uint64_t dc = b.counters[Counter::kCycles] - a.counters[Counter::kCycles];
  double cycles = double(b.counters[Counter::kCycles]);
  return {double(du) / double(dc), du, dc, cycles / b.seconds, cycles / b.cpu_seconds};
}

// A tiled GEMM: per tile, load 16 input rows and 16 weight blocks, reset and
// accumulate 16x16 outputs, store them. With two buffers per scratchpad the modules
// overlap; with one, the tokens serialize each tile behind the previous one.
Result pipeline(const hw::Config& cfg, int tiles, int buffers) {
  // n rows of INP and n blocks of WGT per tile give n x n output elements.
  const uint32_t n = cfg.acc_depth() >= 512 ? 16 : 8;
  // One micro-op per buffer, pointing at that buffer's slice of INP, WGT and ACC. The
  // ACC slices sit in ACC's two banks (its halves), as the VTA backend places virtual
  // threads: the store of one buffer then never waits for compute on the other.
  const uint32_t acc_half = cfg.acc_depth() / 2;
  std::vector<hw::Uop> uops = {{0, 0, 0}, {acc_half, n, n}};
  const uint32_t inp_bytes = cfg.inp_elem_bytes(), wgt_bytes = cfg.wgt_elem_bytes();
  const uint32_t out_bytes = cfg.out_elem_bytes();
  const uint64_t data = 1 << 20, outputs = 8 << 20;  // DRAM byte addresses
  std::vector<Insn> s;
  s.push_back(mem(Opcode::kLoad, MemType::kUop, 0, 0, 1, 2));
  for (int t = 0; t < tiles; ++t) {
    uint32_t b = t % buffers;
    uint64_t base = data + uint64_t(t) * n * (inp_bytes + wgt_bytes);
    Insn li = mem(Opcode::kLoad, MemType::kInp, b * n, base / inp_bytes, 1, n);
    li.pop_next_dep = t >= buffers;
    Insn lw = mem(Opcode::kLoad, MemType::kWgt, b * n, (base + n * inp_bytes) / wgt_bytes, 1, n);
    lw.push_next_dep = true;
    s.push_back(li);
    s.push_back(lw);
    for (int reset = 1; reset >= 0; --reset) {
      Insn g = loop(Opcode::kGemm, 1, n, n);
      g.uop_bgn = b;
      g.uop_end = b + 1;
      g.reset = reset;
      g.dst_factor_out = n, g.dst_factor_in = 1;
      g.src_factor_out = 1, g.wgt_factor_in = 1;
      if (reset) {
        g.pop_prev_dep = true;
        g.pop_next_dep = t >= buffers;
      } else {
        g.push_prev_dep = true;
        g.push_next_dep = true;
      }
      s.push_back(g);
    }
    Insn so = mem(Opcode::kStore, MemType::kOut, b * acc_half, outputs / out_bytes + t * n * n, 1,
                  n * n);
    so.pop_prev_dep = true;
    so.push_prev_dep = true;
    s.push_back(so);
  }
  // FINISH only after the last stores: pop their tokens first.
  for (int t = std::max(0, tiles - buffers); t < tiles; ++t) {
    Insn wait = loop(Opcode::kGemm, 0, 0, 0);
    wait.pop_next_dep = true;
    s.push_back(wait);
  }
  s.push_back(Insn{});
  return run(cfg, s, uops);
}

hw::Config config_named(const std::string& name) {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  std::filesystem::path root = src ? src : KILN_SOURCE_DIR_DEFAULT;
  return hw::Config::from_file(root / "hw" / "config" / (name + ".json"));
}

// Runs every measurement on one configuration; prints a line each unless `quiet`, and
// returns the figures as one JSON object.
nlohmann::ordered_json bench(const std::string& name, bool quiet) {
  hw::Config cfg = config_named(name);
  nlohmann::ordered_json out;
  out["config"] = name;
  out["dram_latency_cycles"] = sim::DramTiming::kDefaultLatency;
  out["dram_bytes_per_cycle"] = sim::DramTiming::kDefaultBytesPerCycle;
  auto say = [quiet](const std::string& line) {
    if (!quiet) fmt::print("{}\n", line);
  };
  say(fmt::format("== configuration {} ({}x{}x{}), DRAM model: latency {} cycles, {} bytes/cycle",
                  name, cfg.batch(), cfg.block_in(), cfg.block_out(),
                  sim::DramTiming::kDefaultLatency, sim::DramTiming::kDefaultBytesPerCycle));
  struct Kind {
    const char* name;
    const char* key;
    Opcode op;
    bool imm;
  };
  for (Kind k : {Kind{"gemm", "gemm", Opcode::kGemm, false},
                 Kind{"alu add imm", "alu_imm", Opcode::kAlu, true},
                 Kind{"alu add tensor", "alu_tensor", Opcode::kAlu, false}}) {
    Throughput t = loop_throughput(cfg, k.op, k.imm, 64);
    out["uops_per_cycle"][k.key] = t.uops_per_cycle;
    say(fmt::format("{:<15} steady state: {:.4f} micro-ops/cycle ({} micro-ops in {} cycles); "
                    "simulation {:.0f} cycles/s",
                    k.name, t.uops_per_cycle, t.uops, t.cycles, t.sim_cycles_per_s));
  }
  // Simulation speed on a long GEMM-bound run (about a million cycles).
  Throughput t = loop_throughput(cfg, Opcode::kGemm, false, 4096);
  out["sim_cycles_per_s"] = t.sim_cycles_per_s;
  out["sim_cycles_per_cpu_s"] = t.sim_cycles_per_cpu_s;
  say(fmt::format("simulation speed: {:.0f} simulated cycles/s, {:.0f} per CPU second ({} "
                  "cycles, GEMM-bound)",
                  t.sim_cycles_per_s, t.sim_cycles_per_cpu_s, t.cycles * 2));
  const int tiles = 8;
  for (int buffers : {1, 2}) {
    Result r = pipeline(cfg, tiles, buffers);
    auto c = [&](Counter id) { return r.counters[id]; };
    uint64_t busy = c(Counter::kLoadBusyCycles) + c(Counter::kComputeBusyCycles) +
                    c(Counter::kStoreBusyCycles);
    double overlap = double(busy) / double(c(Counter::kCycles));
    nlohmann::ordered_json row;
    row["tiles"] = tiles;
    row["buffers"] = buffers;
    row["cycles"] = c(Counter::kCycles);
    row["busy_cycles"] = {{"load", c(Counter::kLoadBusyCycles)},
                          {"compute", c(Counter::kComputeBusyCycles)},
                          {"store", c(Counter::kStoreBusyCycles)}};
    row["stall_cycles"] = {{"load", c(Counter::kLoadStallCycles)},
                           {"compute", c(Counter::kComputeStallCycles)},
                           {"store", c(Counter::kStoreStallCycles)}};
    row["busy_sum_over_total"] = overlap;
    out["pipeline"].push_back(row);
    say(fmt::format("pipeline {} tiles, {} buffer(s): {} cycles; busy load {} compute {} store {} "
                    "(sum {:.2f}x the total); stalls load {} compute {} store {}; {:.0f} cycles/s",
                    tiles, buffers, c(Counter::kCycles), c(Counter::kLoadBusyCycles),
                    c(Counter::kComputeBusyCycles), c(Counter::kStoreBusyCycles), overlap,
                    c(Counter::kLoadStallCycles), c(Counter::kComputeStallCycles),
                    c(Counter::kStoreStallCycles), double(c(Counter::kCycles)) / r.seconds));
  }
  return out;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  std::vector<std::string> configs;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) {
      configs.push_back(argv[++i]);
    } else if (a == "--json") {
      json = true;
    } else {
      fmt::print(stderr, "usage: kiln_bench_rtl [--config NAME ...] [--json]\n");
      return 2;
    }
  }
  if (configs.empty()) configs = kiln::sim::rtl_model_names();
  try {
    nlohmann::ordered_json all;
    for (const auto& c : configs) all["configs"].push_back(kiln::bench(c, json));
    if (json) fmt::print("{}\n", all.dump(2));
  } catch (const std::exception& e) {
    fmt::print(stderr, "kiln_bench_rtl: {}\n", e.what());
    return 1;
  }
  return 0;
}
