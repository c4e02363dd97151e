// Random legal streams from hw/sim/testing run on fsim without error, on every
// configuration and with every generator option, and cover what they claim to.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "hw/sim/testing/random_program.h"
#include "hw/spec/error.h"
#include "tests/fsim/bench.h"

namespace kiln::sim::test {
namespace {

using testing::RandomProgram;
using testing::RandomProgramOptions;
using testing::random_program;
using Counter = hw::regs::Counter;

// Runs `p` on a fresh fsim and returns the final DRAM image.
std::vector<uint8_t> run_program(const hw::Config& cfg, const RandomProgram& p,
                                 Fsim** out = nullptr, uint64_t schedule_seed = 0) {
  static thread_local std::unique_ptr<Fsim> keep;
  static thread_local std::vector<uint8_t> dram;
  dram = p.dram;
  keep = std::make_unique<Fsim>(cfg, dram);
  keep->set_schedule_seed(schedule_seed);
  keep->run(p.insn_addr, p.insn_count);
  if (out) *out = keep.get();
  return dram;
}

void run_seeds(const hw::Config& cfg, const RandomProgramOptions& opts, uint64_t first,
               uint64_t count) {
  for (uint64_t seed = first; seed < first + count; ++seed) {
    SCOPED_TRACE(::testing::Message() << "config " << cfg.name() << " seed " << seed);
    RandomProgram p = random_program(cfg, seed, opts);
    Fsim* f = nullptr;
    std::vector<uint8_t> result;
    try {
      result = run_program(cfg, p, &f);
    } catch (const hw::Error& e) {
      std::string listing;
      for (size_t n = 0; n < p.insns.size(); ++n)
        listing += std::to_string(n) + ": " + testing::describe(p.insns[n]) + "\n";
      FAIL() << e.what() << "\n" << listing;
    }
    EXPECT_GT(f->counter(Counter::kStoreInsns), 0u);
    EXPECT_EQ(f->counter(Counter::kLoadInsns) + f->counter(Counter::kComputeInsns) +
                  f->counter(Counter::kStoreInsns),
              p.insn_count);
    // Everything outside the output regions is as it was.
    std::vector<bool> is_out(p.dram.size(), false);
    for (const auto& r : p.regions)
      if (r.output) std::fill(is_out.begin() + r.addr, is_out.begin() + r.addr + r.bytes, true);
    bool any_output = false;
    for (size_t a = 0; a < p.dram.size(); ++a) {
      if (!is_out[a]) {
        ASSERT_EQ(result[a], p.dram[a]) << "byte " << a << " outside the outputs";
      }
      any_output |= is_out[a] && result[a] != 0;
    }
    EXPECT_TRUE(any_output);
    // The tokens order every conflicting access: any interleaving gives the same DRAM.
    for (uint64_t schedule : {1, 2, 3}) {
      ASSERT_TRUE(run_program(cfg, p, nullptr, seed * 16 + schedule) == result)
          << "schedule " << seed * 16 + schedule << " gives another result: the stream races";
    }
  }
}

class RandomProgramTest : public ::testing::TestWithParam<std::string> {
 protected:
  hw::Config cfg_ = test_config(GetParam());
};

INSTANTIATE_TEST_SUITE_P(Configs, RandomProgramTest,
                         ::testing::Values("default", "tiny", "small", "wide", "narrow"));

TEST_P(RandomProgramTest, DefaultOptionsRunClean) { run_seeds(cfg_, {}, 1, 120); }

TEST_P(RandomProgramTest, EveryOptionRunsClean) {
  RandomProgramOptions o;
  o.padding = false;
  run_seeds(cfg_, o, 1000, 20);
  o = {};
  o.overlapping_dst = false;
  run_seeds(cfg_, o, 2000, 20);
  o = {};
  o.multi_tokens = false;
  o.groups = 1;
  o.max_phase_insns = 1;
  run_seeds(cfg_, o, 3000, 20);
  o = {};
  o.groups = 8;
  o.max_phase_insns = 12;
  o.max_iter = 8;
  o.max_uops = 8;
  o.max_window = 100000;  // the whole of every buffer (clamped)
  run_seeds(cfg_, o, 4000, 10);
  o = {};
  o.max_window = 1;
  run_seeds(cfg_, o, 5000, 20);
  o = {};
  o.queue_limits = true;
  run_seeds(cfg_, o, 6000, 20);
}

// The bursts fill a command queue exactly: each round's burst needs all of the queue, so
// one waiter more in any burst is refused as a deadlock naming that queue.
TEST_P(RandomProgramTest, QueueLimitBurstsFillTheQueueExactly) {
  RandomProgramOptions o;
  o.queue_limits = true;
  for (uint64_t seed = 7000; seed < 7010; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    RandomProgram p = random_program(cfg_, seed, o);
    // The first burst: the first run of kCmdQueueDepth + 1 or more token-only no-ops of
    // one module; one more of them makes the stream deadlock.
    const int depth = hw::Config::kCmdQueueDepth;
    size_t start = 0, len = 0;
    for (size_t n = 0; n < p.insns.size() && len <= static_cast<size_t>(depth); ++n) {
      const hw::Insn& in = p.insns[n];
      bool noop = in.opcode != hw::Opcode::kGemm && in.opcode != hw::Opcode::kAlu &&
                  in.opcode != hw::Opcode::kFinish && in.x_size == 0 && in.y_size == 0 &&
                  (in.pop_prev_dep || in.pop_next_dep);
      bool same = len > 0 && in.opcode == p.insns[start].opcode && in.memory_type == p.insns[start].memory_type;
      if (noop && same) {
        ++len;
      } else if (noop) {
        start = n, len = 1;
      } else {
        len = 0;
      }
    }
    ASSERT_GT(len, static_cast<size_t>(depth)) << "no burst found";
    while (start + len < p.insns.size() && p.insns[start + len] == p.insns[start]) ++len;
    std::vector<hw::Insn> longer = p.insns;
    longer.insert(longer.begin() + static_cast<std::ptrdiff_t>(start), p.insns[start]);
    RandomProgram q = p;
    std::vector<uint8_t> code = hw::encode_program(hw::InsnLayout(cfg_), longer);
    q.insns = longer;
    q.insn_count = static_cast<uint32_t>(longer.size());
    q.dram.resize(std::max<size_t>(q.dram.size(), q.insn_addr + code.size()));
    std::copy(code.begin(), code.end(), q.dram.begin() + static_cast<std::ptrdiff_t>(q.insn_addr));
    try {
      run_program(cfg_, q, nullptr);
      ADD_FAILURE() << "a burst one longer than the queue ran";
    } catch (const hw::Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("command queue, which is full"));
    }
  }
}

TEST_P(RandomProgramTest, NoOverlapMeansEveryDstOnce) {
  RandomProgramOptions o;
  o.overlapping_dst = false;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    RandomProgram p = random_program(cfg_, seed, o);
    std::map<uint32_t, hw::Uop> uops;  // uop buffer contents, replayed
    for (const hw::Insn& in : p.insns) {
      if (in.opcode == hw::Opcode::kLoad && in.memory_type == hw::MemType::kUop)
        for (uint32_t y = 0; y < in.y_size; ++y)
          for (uint32_t x = 0; x < in.x_size; ++x)
            uops[in.sram_base + y * in.x_size + x] = p.uops[in.dram_base + y * in.x_stride + x];
      if (in.opcode != hw::Opcode::kGemm && in.opcode != hw::Opcode::kAlu) continue;
      std::set<uint64_t> seen;
      for (uint64_t i = 0; i < in.iter_out; ++i)
        for (uint64_t j = 0; j < in.iter_in; ++j)
          for (uint32_t k = in.uop_bgn; k < in.uop_end; ++k) {
            uint64_t d = uops[k].dst_idx + i * in.dst_factor_out + j * in.dst_factor_in;
            ASSERT_TRUE(seen.insert(d).second) << "seed " << seed << ": " << testing::describe(in);
          }
    }
  }
}

TEST(RandomProgram, DeterministicFromTheSeed) {
  hw::Config cfg = hw::Config::vta_default();
  RandomProgram a = random_program(cfg, 42), b = random_program(cfg, 42),
                c = random_program(cfg, 43);
  EXPECT_EQ(a.insns, b.insns);
  EXPECT_EQ(a.dram, b.dram);
  EXPECT_EQ(a.insn_addr, b.insn_addr);
  EXPECT_NE(a.dram, c.dram);
  EXPECT_EQ(run_program(cfg, a), run_program(cfg, b));
}

// The schedule check above finds races: a GEMM that reads INP without waiting for
// the load that writes it gives different results under different schedules.
TEST(RandomProgram, ScheduleSeedsExposeARacyStream) {
  hw::Config cfg = hw::Config::vta_default();
  Bench b(cfg);
  b.put(0, std::vector<int64_t>(16, 3), 8);
  b.put(256, std::vector<int64_t>(256, 1), 8);
  b.put_uops(4096, {hw::Uop{0, 0, 0}});
  b.run(serialize({load(hw::MemType::kWgt, 0, 1, 1, 1), load(hw::MemType::kUop, 0, 1024, 1, 1)}));
  std::set<int64_t> results;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    b.run(serialize({gemm({}, true)}));
    b.fsim.set_schedule_seed(seed);
    b.run({load(hw::MemType::kInp, 0, 0, 1, 1), gemm({}), finish()});  // no tokens: a race
    b.fsim.set_schedule_seed(0);
    results.insert(b.fsim.acc(0)[0]);
    // Clear INP again so the next race starts from zeros.
    b.put(8192, std::vector<int64_t>(16, 0), 8);
    b.run(serialize({load(hw::MemType::kInp, 0, 512, 1, 1)}));
  }
  EXPECT_EQ(results, (std::set<int64_t>{0, 48}));
}

TEST(RandomProgram, RejectsImpossibleOptions) {
  RandomProgramOptions o;
  o.groups = 0;
  EXPECT_THROW(random_program(hw::Config::vta_default(), 1, o), hw::Error);
}

// Across a few hundred seeds the streams cover every feature the RTL must match.
TEST(RandomProgram, CoversEveryFeature) {
  hw::Config cfg = test_config("tiny");
  std::set<std::string> seen;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    RandomProgram p = random_program(cfg, seed);
    int load_pushes = 0;
    for (const hw::Insn& in : p.insns) {
      std::string m(hw::mem_type_name(in.memory_type));
      switch (in.opcode) {
        case hw::Opcode::kLoad:
          if (in.y_pad_0) seen.insert(m + " y_pad_0");
          if (in.y_pad_1) seen.insert(m + " y_pad_1");
          if (in.x_pad_0) seen.insert(m + " x_pad_0");
          if (in.x_pad_1) seen.insert(m + " x_pad_1");
          if (in.x_size == 0 || in.y_size == 0) seen.insert("noop load");
          if (in.memory_type == hw::MemType::kUop && in.y_size > 1) seen.insert("2d uop load");
          if (in.x_stride < in.x_size) seen.insert("overlapping rows");
          if (in.push_next_dep) ++load_pushes;
          break;
        case hw::Opcode::kGemm:
          seen.insert(in.reset ? "gemm reset" : "gemm");
          if (in.iter_out == 0 || in.iter_in == 0) seen.insert("zero iterations");
          if (in.uop_end == in.uop_bgn) seen.insert("empty uop range");
          break;
        case hw::Opcode::kAlu:
          seen.insert(in.reset ? "alu reset"
                               : std::string(hw::alu_op_name(in.alu_opcode)) +
                                     (in.use_imm ? " imm" : " acc"));
          if (in.use_imm && (in.imm == -32768 || in.imm == 32767)) seen.insert("imm extreme");
          if (in.alu_opcode == hw::AluOp::kShr && in.use_imm && in.imm < 0) seen.insert("shl");
          break;
        case hw::Opcode::kStore:
          if (in.x_size == 0) seen.insert("noop store");
          break;
        default: break;
      }
      if (in.pop_prev_dep && in.pop_next_dep) seen.insert("two pops");
    }
    if (load_pushes > 4) seen.insert("multi tokens");  // 4 rounds, more than one each
  }
  std::vector<std::string> want = {"noop load", "2d uop load", "overlapping rows", "gemm",
                                   "gemm reset", "zero iterations", "empty uop range",
                                   "alu reset", "imm extreme", "shl", "noop store", "two pops",
                                   "multi tokens"};
  for (const char* m : {"inp", "wgt", "acc"})
    for (const char* side : {" y_pad_0", " y_pad_1", " x_pad_0", " x_pad_1"})
      want.push_back(std::string(m) + side);
  for (hw::AluOp op : hw::kAluOps)
    for (const char* kind : {" imm", " acc"}) want.push_back(std::string(hw::alu_op_name(op)) + kind);
  for (const std::string& w : want) EXPECT_TRUE(seen.count(w)) << "never generated: " << w;
}

}  // namespace
}  // namespace kiln::sim::test
