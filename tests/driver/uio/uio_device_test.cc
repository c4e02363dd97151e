// The uio device against the register-level model of the board (uio_model.h): the
// mappings, the register map through them, address relocation, the timeout, the
// fingerprint check and the errors a user meets when setting a board up.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "examples/runtime/kernels.h"
#include "hw/driver/fsim_device.h"
#include "hw/driver/runtime/command_stream.h"
#include "hw/driver/runtime/device_buffer.h"
#include "hw/driver/uio/uio_device.h"
#include "hw/sim/testing/random_program.h"
#include "hw/spec/error.h"
#include "hw/spec/isa.h"
#include "hw/spec/regs.h"
#include "tests/driver/uio/uio_model.h"
#include "tests/support/hw_test.h"

namespace kiln::driver {
namespace {

namespace r = hw::regs;
using test::UioModel;

hw::Config config(std::string_view name) { return test::shipped_config(name); }

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const hw::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no hw::Error thrown";
  return "";
}

#define EXPECT_HAS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)

DeviceOptions small(const UioModel& m) {
  DeviceOptions o;
  o.dram_bytes = 4 << 20;
  return m.device_options(o);
}

// A small program that really uses DRAM: GEMM of random int8 matrices.
std::vector<int8_t> random_int8(size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(-128, 127);
  std::vector<int8_t> v(n);
  for (auto& x : v) x = static_cast<int8_t>(d(rng));
  return v;
}

TEST(UioDevice, RegistersRoundTripThroughTheMapping) {
  hw::Config cfg = config("default");
  UioModel model(cfg, {});
  UioDevice dev(cfg, small(model));
  EXPECT_EQ(dev.kind(), "uio");
  EXPECT_EQ(dev.bus_base(), model.bus_base());
  EXPECT_EQ(dev.read_reg(r::kVersion), r::kMapVersion);
  EXPECT_EQ(uint64_t{dev.read_reg(r::kFingerprintHi)} << 32 | dev.read_reg(r::kFingerprintLo),
            cfg.fingerprint());

  dev.write_reg(r::kInsnCount, 1234);
  EXPECT_EQ(model.reg(r::kInsnCount), 1234u);
  EXPECT_EQ(dev.read_reg(r::kInsnCount), 1234u);
  // The instruction address is a DevAddr to the device, a bus address to the hardware.
  dev.write_reg(r::kInsnAddrLo, 0x1040);
  dev.write_reg(r::kInsnAddrHi, 0);
  EXPECT_EQ(model.reg(r::kInsnAddrLo), model.bus_base() + 0x1040);
  EXPECT_EQ(model.reg(r::kInsnAddrHi), 0u);
  EXPECT_EQ(dev.read_reg(r::kInsnAddrLo), 0x1040u);

  model.set_reg(r::counter_lo(r::Counter::kGemmUops), 7);
  model.set_reg(r::counter_hi(r::Counter::kGemmUops), 1);
  EXPECT_EQ(dev.counters().at(r::Counter::kGemmUops), (uint64_t{1} << 32) | 7);
  EXPECT_TRUE(dev.has_counter(r::Counter::kCycles));

  EXPECT_HAS(error_of([&] { dev.write_reg(r::kFingerprintLo, 1); }), "not writable");
  EXPECT_HAS(error_of([&] { (void)dev.read_reg(0x24); }), "no register at 0x24");
  EXPECT_HAS(error_of([&] { (void)dev.read_reg(0x06); }), "no register");
}

TEST(UioDevice, MemoryCopiesAtAnyAlignment) {
  hw::Config cfg = config("tiny");
  UioModel model(cfg, {});
  UioDevice dev(cfg, small(model));
  std::mt19937 rng(7);
  for (uint64_t addr : {0u, 1u, 3u, 8u, 13u, 4091u}) {
    for (size_t len : {1u, 7u, 8u, 9u, 31u, 100u}) {
      std::vector<uint8_t> data(len);
      for (auto& b : data) b = static_cast<uint8_t>(rng());
      dev.write(addr, data);
      std::vector<uint8_t> back(len);
      dev.read(addr, back);
      EXPECT_EQ(back, data) << addr << " " << len;
    }
  }
  std::vector<uint8_t> bytes(8);
  EXPECT_HAS(error_of([&] { dev.write(dev.dram_bytes() - 4, bytes); }), "outside");
}

// The program runs on the model's bus addresses and gives fsim's results; the stream
// reads back as written (relocation is put back), and counters come from the registers.
TEST(UioDevice, RunsGemmWithBusAddressesLikeFsim) {
  hw::Config cfg = config("default");
  UioModel model(cfg, {});
  UioDevice dev(cfg, small(model));
  DeviceOptions ref_opts;
  ref_opts.dram_bytes = 4 << 20;
  FsimDevice ref(cfg, ref_opts);
  std::mt19937 rng(20261130);
  examples::GemmShape g{4, 32, 48};
  auto a = random_int8(size_t(g.m) * g.k, rng);
  auto b = random_int8(size_t(g.n) * g.k, rng);

  runtime::CommandStream s(dev);
  runtime::CommandStream s_ref(ref);
  std::vector<int8_t> c = examples::gemm_on_device(s, a, b, g, 6);
  EXPECT_EQ(c, examples::gemm_on_device(s_ref, a, b, g, 6));
  EXPECT_EQ(c, examples::gemm_reference(a, b, g, 6));
  EXPECT_GT(model.starts(), 0);

  uint64_t bus = model.last_insn_bus_addr();
  ASSERT_GE(bus, model.bus_base());
  ASSERT_LT(bus, model.bus_base() + dev.dram_bytes());
  std::vector<uint8_t> stream(s.last_program().size() * hw::kInsnBytes);
  dev.read(bus - model.bus_base(), stream);
  EXPECT_EQ(stream, hw::encode_program(hw::InsnLayout(cfg), s.last_program()));

  EXPECT_EQ(s.counters().at(r::Counter::kGemmUops), s_ref.counters().at(r::Counter::kGemmUops));
  EXPECT_EQ(s.counters().at(r::Counter::kDramReadBytes),
            s_ref.counters().at(r::Counter::kDramReadBytes));
}

// Random legal streams (every memory type, padding, strides, tokens) leave the same DRAM
// image on the uio device as on fsim. Replay one with its seed.
TEST(UioDevice, RandomStreamsMatchFsim) {
  for (const char* name : {"default", "tiny"}) {
    hw::Config cfg = config(name);
    UioModel model(cfg, {});
    UioDevice dev(cfg, small(model));
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      SCOPED_TRACE(testing::Message() << name << " seed " << seed);
      sim::testing::RandomProgram p = sim::testing::random_program(cfg, seed);
      ASSERT_LE(p.dram.size(), dev.dram_bytes());
      DeviceOptions ref_opts;
      ref_opts.dram_bytes = p.dram.size();
      FsimDevice ref(cfg, ref_opts);
      ref.write(0, p.dram);
      ref.run(p.insn_addr, p.insn_count);
      dev.write(0, p.dram);
      dev.run(p.insn_addr, p.insn_count);
      std::vector<uint8_t> want(p.dram.size()), got(p.dram.size());
      ref.read(0, want);
      dev.read(0, got);
      EXPECT_EQ(got, want);
      EXPECT_EQ(dev.counters().at(r::Counter::kStoreBytes), ref.counters().at(r::Counter::kStoreBytes));
    }
  }
}

// The board's kiln_top has no watchdog: a stream that deadlocks keeps it busy, and the
// device gives up after its timeout, aborts the run (CTRL abort) and takes the next.
TEST(UioDevice, TimeoutAbortsARunThatNeverFinishes) {
  hw::Config cfg = config("tiny");
  UioModel model(cfg, {});
  DeviceOptions opts = small(model);
  opts.uio_timeout_s = 0.2;
  UioDevice dev(cfg, opts);
  runtime::CommandStream s(dev);
  runtime::DeviceBuffer buf(dev, 4096);
  s.dep_pop(hw::Module::kCompute, hw::Module::kLoad);  // a token never pushed
  s.load_2d(hw::MemType::kInp, 0, buf.address(), 1, 1, 1);
  auto t0 = std::chrono::steady_clock::now();
  std::string what = error_of([&] { s.synchronize(); });
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_HAS(what, "no done from the accelerator within 0.2 s");
  EXPECT_HAS(what, "deadlocks");
  EXPECT_HAS(what, "uio_timeout_s");
  EXPECT_HAS(what, "the run was aborted");
  EXPECT_GE(seconds, 0.2);
  EXPECT_LT(seconds, 5.0);
  EXPECT_EQ(model.starts(), 1);
  EXPECT_EQ(model.aborts(), 1);
  uint32_t status = dev.read_reg(r::kStatus);
  EXPECT_EQ(status & (r::kStatusBusy | r::kStatusDone | r::kStatusError),
            r::kStatusDone | r::kStatusError);
  EXPECT_EQ(r::status_cause(status), r::ErrorCause::kAborted);
  // The stream in DRAM is put back, and the accelerator takes the next run.
  uint64_t bus = model.last_insn_bus_addr();
  std::vector<uint8_t> stream(s.last_program().size() * hw::kInsnBytes);
  dev.read(bus - model.bus_base(), stream);
  EXPECT_EQ(stream, hw::encode_program(hw::InsnLayout(cfg), s.last_program()));
  s.load_2d(hw::MemType::kInp, 0, buf.address(), 1, 1, 1);
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(model.starts(), 2);
}

TEST(UioDevice, WrongFingerprintRefusedBeforeStart) {
  UioModel model(config("tiny"), {});  // the board carries tiny's bitstream
  hw::Config cfg = config("default");
  UioDevice dev(cfg, small(model));
  runtime::CommandStream s(dev);
  runtime::DeviceBuffer buf(dev, 4096);
  s.load_2d(hw::MemType::kInp, 0, buf.address(), 1, 1, 1);
  std::string what = error_of([&] { s.synchronize(); });
  EXPECT_HAS(what, "fingerprint");
  EXPECT_HAS(what, "'default'");
  EXPECT_EQ(model.starts(), 0);
}

// An error the hardware reports: STATUS's error bit and cause, here a LOAD beyond the
// end of memory (the stream is written by hand: the runtime refuses to emit it).
TEST(UioDevice, DeviceErrorReportedWithItsCause) {
  hw::Config cfg = config("default");
  UioModel model(cfg, {});
  UioDevice dev(cfg, small(model));
  hw::Insn load;
  load.opcode = hw::Opcode::kLoad;
  load.memory_type = hw::MemType::kInp;
  load.dram_base = static_cast<uint32_t>(dev.dram_bytes() / cfg.inp_elem_bytes());
  load.y_size = load.x_size = load.x_stride = 1;
  std::vector<hw::Insn> program = {load, hw::Insn{}};  // then FINISH
  std::vector<uint8_t> bytes = hw::encode_program(hw::InsnLayout(cfg), program);
  dev.write(0x1000, bytes);
  std::string what = error_of([&] { dev.run(0x1000, 2); });
  EXPECT_HAS(what, "stopped with an error (STATUS 0x0016)");
  EXPECT_HAS(what, "a memory access outside device memory");
  EXPECT_HAS(what, "fsim or rtl device");
  std::vector<uint8_t> back(bytes.size());
  dev.read(0x1000, back);
  EXPECT_EQ(back, bytes);  // the relocated stream was put back

  // The accelerator is not busy after an error: the next run goes.
  program = {hw::Insn{}};
  dev.write(0x1000, hw::encode_program(hw::InsnLayout(cfg), program));
  EXPECT_NO_THROW(dev.run(0x1000, 1));
}

TEST(UioDevice, MissingNodesNamed) {
  hw::Config cfg = config("tiny");
  UioModel model(cfg, {});
  DeviceOptions opts = small(model);
  opts.uio_registers = "/nonexistent/uio7";
  std::string what = error_of([&] { UioDevice dev(cfg, opts); });
  EXPECT_HAS(what, "register file /nonexistent/uio7");
  EXPECT_HAS(what, "No such file");
  EXPECT_HAS(what, "docs/uio-device.md");

  opts = small(model);
  opts.uio_buffer = "/nonexistent/udmabuf3";
  what = error_of([&] { UioDevice dev(cfg, opts); });
  EXPECT_HAS(what, "DMA buffer /nonexistent/udmabuf3");
}

TEST(UioDevice, SetupMistakesExplained) {
  hw::Config cfg = config("default");
  UioModel model(cfg, {});
  DeviceOptions opts = small(model);

  opts.uio_buffer_phys.reset();  // a plain file has no u-dma-buf sysfs entry
  std::string what = error_of([&] { UioDevice dev(cfg, opts); });
  EXPECT_HAS(what, "bus address");
  EXPECT_HAS(what, "uio_buffer_phys");

  opts = small(model);
  opts.uio_buffer_phys = model.bus_base() + 64;  // WGT elements are 256 bytes
  EXPECT_HAS(error_of([&] { UioDevice dev(cfg, opts); }), "not aligned to the 256-byte wgt");

  opts = small(model);
  opts.dram_bytes = 8 << 20;
  EXPECT_HAS(error_of([&] { UioDevice dev(cfg, opts); }), "fewer than the 8388608 bytes");

  opts = small(model);
  opts.uio_buffer_phys = 0xfff00000;
  EXPECT_HAS(error_of([&] { UioDevice dev(cfg, opts); }), "32-bit AXI master");

  model.set_reg(r::kVersion, 0xffffffff);  // no bitstream: reads float high
  opts = small(model);
  what = error_of([&] { UioDevice dev(cfg, opts); });
  EXPECT_HAS(what, "version 0xffffffff");
  EXPECT_HAS(what, "bitstream");
}

}  // namespace
}  // namespace kiln::driver
