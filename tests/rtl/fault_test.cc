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
// the ALU, stored to OUT at `out()`: 42 in every lane.
struct Bench {
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
  void program() {
    s->load_2d(MemType::kAcc, 0, buf->address(), 1, 1, 1);
    auto k = runtime::UopKernelBuilder::alu_imm("add1", hw::AluOp::kAdd, 1);
    k.push(0, 0);
    s->push_alu(k.finish());
    s->dep_push(Module::kCompute, Module::kStore);
    s->dep_pop(Module::kCompute, Module::kStore);
    s->store_2d(0, out(), 1, 1, 1);
  }
  bool correct() { return buf->read_elems<int8_t>(lanes, 1024) == std::vector<int8_t>(lanes, 42); }
};

class FaultTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Runs the program `healthy_runs` times, then once more expecting the injected
  // `fault` to fail it with a message holding each of `parts`; checks DRAM against
  // fsim's after the same program, then that the device runs the program correctly.
  void check(const std::string& fault, std::initializer_list<std::string_view> parts,
             int healthy_runs = 0) {
    SCOPED_TRACE(fault);
    Bench ref("fsim", options("decoupled", ""));
    for (int i = 0; i <= healthy_runs; ++i) {
      ref.program();
      ref.s->synchronize();
    }
    ASSERT_TRUE(ref.correct());

    Bench b("rtl", options(GetParam(), fault));
    for (int i = 0; i < healthy_runs; ++i) {
      b.program();
      ASSERT_NO_THROW(b.s->synchronize());
      ASSERT_TRUE(b.correct());
    }
    b.program();
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
    b.program();
    ASSERT_NO_THROW(b.s->synchronize());
    EXPECT_TRUE(b.correct());
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
