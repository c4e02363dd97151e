// Injected hardware faults on the rtl device (`--fault`, hw/sim/rtl/fault.h), on each
// core: every fault is reported as a device error that names it, the module that waited
// or whose read failed, and the run's counters; the same device then runs a correct
// program; and device DRAM, host memory here, holds outside the failed run's output
// exactly what a healthy run leaves there.

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "hw/driver/device.h"
#include "hw/driver/device_settings.h"
#include "hw/driver/rtl/rtl_device.h"
#include "hw/driver/runtime/command_stream.h"
#include "hw/driver/runtime/device_buffer.h"
#include "hw/driver/runtime/uop_kernel.h"
#include "hw/spec/error.h"
#include "tests/support/hw_test.h"

namespace kiln {
namespace {

using hw::MemType;
using hw::Module;
using runtime::CommandStream;
using runtime::DeviceBuffer;

constexpr uint64_t kDramBytes = 1 << 20;
constexpr uint8_t kFill = 0xa5;  // every DRAM byte before the run, so stray writes show

driver::DeviceOptions options(const std::string& core, const std::string& fault) {
  driver::DeviceOptions o;
  o.dram_bytes = kDramBytes;
  o.core = core;
  o.fault = fault;
  o.watchdog_cycles = 3000;
  return o;
}

std::vector<uint8_t> dram_of(driver::Device& dev) {
  std::vector<uint8_t> v(dev.dram_bytes());
  dev.read(0, v);
  return v;
}

// One device, its buffer and stream, and the program: ACC <- 41 in every lane, plus 1 by
// the ALU, stored to OUT at `out()`: 42 in every lane. With `gemm`, a GEMM adds INP word
// 0 times WGT word 0 (DRAM's fill bytes) to ACC before the ALU, so that compute reads
// INP and WGT too.
struct Bench {
  static constexpr uint64_t kInpAt = 2048, kWgtAt = 2304;  // in the buffer, element-aligned
  std::unique_ptr<driver::Device> dev;
  std::unique_ptr<DeviceBuffer> buf;
  std::unique_ptr<CommandStream> s;
  size_t lanes = 0;

  Bench(std::string_view kind, const driver::DeviceOptions& opts) {
    dev = driver::make_device(kind, test::shipped_config("default"), opts);
    dev->write(0, std::vector<uint8_t>(dev->dram_bytes(), kFill));
    buf = std::make_unique<DeviceBuffer>(*dev, 4096);
    s = std::make_unique<CommandStream>(*dev);
    const hw::Config& cfg = dev->config();
    lanes = size_t(cfg.batch()) * cfg.block_out();
    buf->write_elems<int32_t>(std::vector<int32_t>(lanes, 41));
  }
  uint64_t out() const { return buf->address() + 1024; }
  void program(bool gemm = false) {
    s->load_2d(MemType::kAcc, 0, buf->address(), 1, 1, 1);
    if (gemm) {
      s->load_2d(MemType::kInp, 0, buf->address() + kInpAt, 1, 1, 1);
      s->load_2d(MemType::kWgt, 0, buf->address() + kWgtAt, 1, 1, 1);
      s->dep_push(Module::kLoad, Module::kCompute);
      s->dep_pop(Module::kLoad, Module::kCompute);
      s->push_gemm(runtime::UopKernelBuilder::gemm("mac").push(0, 0, 0).finish());
    }
    auto k = runtime::UopKernelBuilder::alu_imm("add1", hw::AluOp::kAdd, 1);
    k.push(0, 0);
    s->push_alu(k.finish());
    s->dep_push(Module::kCompute, Module::kStore);
    s->dep_pop(Module::kCompute, Module::kStore);
    s->store_2d(0, out(), 1, 1, 1);
  }
  std::vector<int8_t> output() { return buf->read_elems<int8_t>(lanes, 1024); }
  bool correct() { return output() == std::vector<int8_t>(lanes, 42); }
};

class FaultTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Runs the program `healthy_runs` times, then once more expecting the injected
  // `fault` to fail it with a message holding each of `parts`; checks DRAM against
  // fsim's after the same program, then that the device runs the program correctly.
  // With `gemm`, the program has the GEMM (Bench).
  void check(const std::string& fault, std::initializer_list<std::string_view> parts,
             int healthy_runs = 0, bool gemm = false) {
    SCOPED_TRACE(fault);
    Bench ref("fsim", options("decoupled", ""));
    for (int i = 0; i <= healthy_runs; ++i) {
      ref.program(gemm);
      ref.s->synchronize();
    }
    if (!gemm) {
      ASSERT_TRUE(ref.correct());
    }

    Bench b("rtl", options(GetParam(), fault));
    for (int i = 0; i < healthy_runs; ++i) {
      b.program(gemm);
      ASSERT_NO_THROW(b.s->synchronize());
      ASSERT_EQ(b.output(), ref.output());
    }
    b.program(gemm);
    message_.clear();
    try {
      b.s->synchronize();
      ADD_FAILURE() << "the run with the fault succeeded";
    } catch (const hw::Error& e) {
      message_ = e.what();
    }
    for (std::string_view p : parts)
      EXPECT_NE(message_.find(p), std::string::npos) << "'" << p << "' not in: " << message_;

    // Outside the failed run's output, DRAM is what the healthy run leaves.
    std::vector<uint8_t> got = dram_of(*b.dev), want = dram_of(*ref.dev);
    size_t out_bytes = b.lanes;  // one int8 OUT block
    size_t mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != want[i] && (i < b.out() || i >= b.out() + out_bytes)) ++mismatches;
    EXPECT_EQ(mismatches, 0u) << "DRAM bytes changed outside the run's output";

    // The device is usable: the same stream runs the program correctly.
    b.program(gemm);
    ASSERT_NO_THROW(b.s->synchronize());
    EXPECT_EQ(b.output(), ref.output());
  }
  bool inorder() const { return GetParam() == "inorder"; }
  std::string message_;  // the last check's error
  std::string_view counters() const { return "Counters of the run: cycles "; }
};

TEST_P(FaultTest, DramReadErrorNamesTheReader) {
  // Burst 1 is the first instruction fetch, on both cores.
  check("dram-read-error:1",
        {"SLVERR", "injected fault dram-read-error:1", "read burst #1",
         inorder() ? "the read of the in-order core" : "the read of fetch (instructions)",
         counters()});
  // A later burst: a load or compute read (the decoupled core names which).
  check("dram-read-error:3", {"SLVERR", "read burst #3", "the read of ", counters()});
}

TEST_P(FaultTest, DramHangIsReportedByTheWatchdogAndAborted) {
  check("dram-hang:2",
        {"rtl watchdog: no progress", "the DRAM slave has stopped answering",
         "injected fault dram-hang:2", inorder() ? "in-order core: " : "fetch: ", counters()});
  // The decoupled core's abort drains the port and keeps the model; the in-order core's
  // drops a pending read address, which the harness answers with a reset.
  EXPECT_EQ(message_.find("the model was reset") == std::string::npos, !inorder()) << message_;
}

TEST_P(FaultTest, DramHangAfterHealthyRuns) {
  // The fault counts beats from the device's creation: two healthy runs take `beats`,
  // so this one lands in the third run.
  Bench probe("rtl", options(GetParam(), ""));
  for (int i = 0; i < 2; ++i) {
    probe.program();
    probe.s->synchronize();
  }
  uint64_t beats = dynamic_cast<driver::RtlDevice&>(*probe.dev).sim().dram().read_beats();
  std::string fault = "dram-hang:" + std::to_string(beats + 3);
  check(fault, {"rtl watchdog", "stopped answering", fault, counters()}, 2);
}

TEST_P(FaultTest, LostStartIsReportedBeforeAnyRun) {
  check("reg-drop:ctrl", {"the run did not start", "register ctrl", "neither busy nor done",
                          "lost register write"});
}

TEST_P(FaultTest, LostStartAfterARunIsNotTakenForItsEnd) {
  // The second run's start is the device's second CTRL write; STATUS still shows the
  // first run done.
  check("reg-drop:ctrl:2", {"the run did not start", "register ctrl", "an earlier run's"}, 1);
}

TEST_P(FaultTest, LostAddressAndCountWritesAreReadBack) {
  check("reg-drop:insn_count", {"register insn_count (0x08)", "lost register write",
                                "not started"});
  check("reg-drop:insn_addr_lo", {"register insn_addr_lo (0x0c)", "lost register write"});
}

// A stuck-at cell in each scratchpad: the word's parity bit (kiln_sram PARITY, on in
// the rtl device's models) no longer matches, and the read that finds it ends the run
// with ERR_PARITY naming the module that read and the buffer. DRAM's fill byte 0xa5
// and ACC's 41 have bit 1 clear, so a cell stuck at 1 there differs from what the load
// wrote.
TEST_P(FaultTest, StuckScratchpadBitIsAParityError) {
  constexpr std::string_view kParity = "a scratchpad word read back with a parity error";
  check("sram-stuck:acc:0:1:1", {kParity, "(the compute module, the acc buffer)",
                                 "injected fault sram-stuck:acc:0:1:1", "stuck at 1", counters()});
  // Bit 0: the load writes 41 (bit 0 set, as stuck), the ALU reads it unharmed and writes
  // 42 (bit 0 clear): the store's read finds the error.
  check("sram-stuck:acc:0:0:1", {kParity, "(the store module, the acc buffer)", counters()});
  // The add's micro-op (dst 0, src 0) is word 0 of UOP: all zero bits.
  check("sram-stuck:uop:0:0:1", {kParity, "(the compute module, the uop buffer)", counters()});
  check("sram-stuck:inp:0:1:1", {kParity, "(the compute module, the inp buffer)", counters()}, 0, true);
  check("sram-stuck:wgt:0:1:1", {kParity, "(the compute module, the wgt buffer)", counters()}, 0, true);
  // In the second run only: the first is healthy.
  check("sram-stuck:acc:0:1:1:2", {kParity, "(the compute module, the acc buffer)"}, 1);
}

TEST_P(FaultTest, StuckBitThatAgreesWithTheDataChangesNothing) {
  // Bit 5 is set in ACC's 41 (101001) and in the ALU's 42 (101010): a cell stuck at the
  // value every write gives it changes nothing, and no error is raised.
  Bench b("rtl", options(GetParam(), "sram-stuck:acc:0:5:1"));
  b.program();
  ASSERT_NO_THROW(b.s->synchronize());
  EXPECT_TRUE(b.correct());
}

TEST_P(FaultTest, StuckBitOutsideTheBufferIsRefused) {
  test::expect_error([&] { Bench b("rtl", options(GetParam(), "sram-stuck:inp:1000000:0:1")); },
                     {"--fault sram-stuck:inp:1000000:0:1", "inp buffer has 2048 words of 128 bits"});
  test::expect_error([&] { Bench b("rtl", options(GetParam(), "sram-stuck:uop:0:32:1")); },
                     {"uop buffer has 8192 words of 32 bits"});
}

TEST_P(FaultTest, LostWriteOfTheValueHeldChangesNothing) {
  // INSN_ADDR_HI is 0 for every stream in 32-bit device memory: losing its write
  // leaves the register right, and the run is correct.
  Bench b("rtl", options(GetParam(), "reg-drop:insn_addr_hi"));
  b.program();
  ASSERT_NO_THROW(b.s->synchronize());
  EXPECT_TRUE(b.correct());
}

std::vector<std::string> cores() {
#ifdef KILN_TEST_INORDER
  return {"decoupled", "inorder"};
#else
  return {"decoupled"};
#endif
}
INSTANTIATE_TEST_SUITE_P(Cores, FaultTest, ::testing::ValuesIn(cores()),
                         [](const auto& info) { return info.param; });

TEST(FaultSetting, ParsedOrRefusedByName) {
  using Kind = sim::InjectedFault::Kind;
  EXPECT_EQ(driver::parse_fault("").kind, Kind::kNone);
  sim::InjectedFault f = driver::parse_fault("dram-read-error:7");
  EXPECT_EQ(f.kind, Kind::kDramReadError);
  EXPECT_EQ(f.n, 7u);
  f = driver::parse_fault("reg-drop:insn_addr_hi:3");
  EXPECT_EQ(f.kind, Kind::kRegDrop);
  EXPECT_EQ(f.reg, hw::regs::kInsnAddrHi);
  EXPECT_EQ(f.n, 3u);
  EXPECT_EQ(driver::parse_fault("reg-drop:ctrl").n, 1u);
  SCOPED_TRACE("errors");
  test::expect_error([] { driver::parse_fault("dram-hang"); }, {"--fault dram-hang", "dram-hang:N"});
  SCOPED_TRACE("dram-hang:0");
  test::expect_error([] { driver::parse_fault("dram-hang:0"); }, {"at least 1"});
  SCOPED_TRACE("reg-drop:status");
  test::expect_error([] { driver::parse_fault("reg-drop:status"); }, {"'status'", "insn_count"});
  f = driver::parse_fault("sram-stuck:wgt:12:100:0:3");
  EXPECT_EQ(f.kind, Kind::kSramStuck);
  EXPECT_EQ(f.mem, static_cast<uint8_t>(hw::MemType::kWgt));
  EXPECT_EQ(f.word, 12u);
  EXPECT_EQ(f.bit, 100u);
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.n, 3u);
  EXPECT_EQ(driver::parse_fault("sram-stuck:acc:0:0:1").n, 1u);
  SCOPED_TRACE("sram-stuck errors");
  test::expect_error([] { driver::parse_fault("sram-stuck:inp:3"); }, {"sram-stuck:BUFFER:WORD:BIT:VALUE"});
  test::expect_error([] { driver::parse_fault("sram-stuck:out:0:0:1"); }, {"not 'out'", "acc"});
  test::expect_error([] { driver::parse_fault("sram-stuck:inp:0:0:2"); }, {"0 or 1, not '2'"});
  test::expect_error([] { driver::parse_fault("sram-stuck:inp:0:0:1:0"); }, {"at least 1"});
  SCOPED_TRACE("bitflip:3");
  test::expect_error([] { driver::parse_fault("bitflip:3"); }, {"no fault kind 'bitflip'", "dram-read-error:N"});
  driver::DeviceOptions o;
  const driver::DeviceSetting* s = driver::find_device_setting("fault");
  ASSERT_NE(s, nullptr);
  driver::apply_device_setting(o, "rtl", *s, "dram-hang:5", "--fault");
  EXPECT_EQ(o.fault, "dram-hang:5");
  test::expect_error([&] { driver::apply_device_setting(o, "fsim", *s, "dram-hang:5", "--fault"); },
                     {"--fault applies to --device rtl"});
}

}  // namespace
}  // namespace kiln
