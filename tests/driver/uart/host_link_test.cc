// The board top's UART host link under Verilator: the protocol byte by byte (bad
// commands, broken frames, memory edges, range errors, checksums, registers) and the
// uart-sim Device's errors. The runtime suite runs on the same device next door
// (runtime_tests_uart_sim).

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hw/driver/device.h"
#include "hw/driver/uart/host_link.h"
#include "hw/driver/uart/serial_link.h"
#include "hw/driver/uart/sim_link.h"
#include "hw/driver/uart/uart_device.h"
#include "hw/spec/error.h"
#include "hw/spec/isa.h"
#include "hw/spec/regs.h"
#include "tests/support/hw_test.h"

namespace kiln::driver::uart {
namespace {

namespace r = hw::regs;

hw::Config config(std::string_view name) { return test::shipped_config(name); }

using test::expect_error;

class HostLinkTest : public ::testing::Test {
 protected:
  HostLinkTest() : link_(config("tiny"), {}, 100000), host_(link_) {}

  // Sends raw bytes and returns the board's first reply byte.
  uint8_t raw(std::vector<uint8_t> bytes) {
    link_.write(bytes);
    uint8_t reply = 0;
    link_.read(std::span(&reply, 1));
    return reply;
  }
  std::vector<uint8_t> random_bytes(size_t n) {
    std::vector<uint8_t> v(n);
    for (auto& b : v) b = static_cast<uint8_t>(rng_());
    return v;
  }
  uint64_t mem() { return host_.ping().mem_bytes; }

  SimLink link_;
  HostLink host_;
  std::mt19937 rng_{9};
};

TEST_F(HostLinkTest, PingSaysVersionAndMemorySize) {
  HostLink::Info info = host_.ping();
  EXPECT_EQ(info.version, kProtocolVersion);
  EXPECT_EQ(info.mem_bytes, 131072u);
  EXPECT_EQ(link_.sim().model().mem_bytes, 131072u);
}

TEST_F(HostLinkTest, RegisterRoundTrip) {
  hw::Config cfg = config("tiny");
  host_.write_reg(r::kInsnCount, 0xdeadbeef);
  host_.write_reg(r::kInsnAddrLo, 0x12345670);
  EXPECT_EQ(host_.read_reg(r::kInsnCount), 0xdeadbeefu);
  EXPECT_EQ(host_.read_reg(r::kInsnAddrLo), 0x12345670u);
  EXPECT_EQ(host_.read_reg(r::kVersion), r::kMapVersion);
  uint64_t fp = uint64_t{host_.read_reg(r::kFingerprintHi)} << 32 |
                host_.read_reg(r::kFingerprintLo);
  EXPECT_EQ(fp, cfg.fingerprint());
  EXPECT_EQ(host_.read_reg(r::kStatus) & (r::kStatusBusy | r::kStatusError), 0u);
  // A core reset clears the registers; memory stays.
  const uint8_t word[] = {1, 2, 3};
  host_.write_mem(40, word);
  host_.reset_core();
  EXPECT_EQ(host_.read_reg(r::kInsnCount), 0u);
  uint8_t back[3] = {};
  host_.read_mem(40, back);
  EXPECT_EQ(std::vector<uint8_t>(back, back + 3), std::vector<uint8_t>(word, word + 3));
}

TEST_F(HostLinkTest, BadCommandBytesAnsweredWithAnErrorAndTheLinkGoesOn) {
  for (uint8_t bad : {0x00, 0x07, 0x7f, 0x81, 0xe1, 0xff}) {
    SCOPED_TRACE(int(bad));
    EXPECT_EQ(raw({bad}), kErrCommand);
  }
  EXPECT_EQ(host_.ping().version, kProtocolVersion);
  EXPECT_EQ(host_.read_reg(r::kVersion), r::kMapVersion);
}

TEST_F(HostLinkTest, MemoryRoundTripAtTheEdgesOfDeviceMemory) {
  const uint64_t m = mem();
  // Word-aligned and not, short and across frames, at both ends of memory.
  struct Case {
    uint64_t addr;
    size_t n;
  };
  for (Case c : {Case{0, 1}, Case{0, 8}, Case{3, 13}, Case{7, 2}, Case{0, kMaxFrameBytes + 21},
                 Case{m - 8, 8}, Case{m - 1, 1}, Case{m - 13, 13},
                 Case{m - kMaxFrameBytes - 5, kMaxFrameBytes + 5}}) {
    SCOPED_TRACE(testing::Message() << "addr " << c.addr << " n " << c.n);
    std::vector<uint8_t> data = random_bytes(c.n);
    host_.write_mem(static_cast<uint32_t>(c.addr), data);
    std::vector<uint8_t> back(c.n);
    host_.read_mem(static_cast<uint32_t>(c.addr), back);
    EXPECT_EQ(back, data);
  }
  // Byte strobes: a write inside a word leaves its neighbours alone.
  std::vector<uint8_t> ones(16, 0x11);
  host_.write_mem(64, ones);
  const uint8_t mid[] = {0xaa, 0xbb};
  host_.write_mem(67, mid);
  std::vector<uint8_t> back(16);
  host_.read_mem(64, back);
  std::vector<uint8_t> expected = ones;
  expected[3] = 0xaa;
  expected[4] = 0xbb;
  EXPECT_EQ(back, expected);
}

TEST_F(HostLinkTest, OutOfRangeAccessRefusedClearly) {
  const uint64_t m = mem();
  std::vector<uint8_t> data(8, 0x5a);
  const uint8_t before[] = {0x01, 0x02, 0x03, 0x04};
  host_.write_mem(static_cast<uint32_t>(m - 4), before);
  // The board checks the range itself, before writing a byte.
  expect_error([&] { host_.write_mem(static_cast<uint32_t>(m - 4), data); },
               {"memory write of 8 bytes at 0x1fffc", "0xe2", "outside device memory"});
  expect_error([&] { host_.write_mem(0xfffffffcu, data); }, {"0xe2"});
  std::vector<uint8_t> back(8);
  expect_error([&] { host_.read_mem(static_cast<uint32_t>(m), back); },
               {"memory read of 8 bytes at 0x20000", "outside device memory"});
  expect_error([&] { host_.read_mem(0xffffffffu, std::span(back).first(2)); }, {"0xe2"});
  std::vector<uint8_t> tail(4);
  host_.read_mem(static_cast<uint32_t>(m - 4), tail);
  EXPECT_EQ(tail, std::vector<uint8_t>(before, before + 4));  // untouched
  EXPECT_EQ(host_.ping().version, kProtocolVersion);
}

TEST_F(HostLinkTest, ChecksumMismatchRefused) {
  std::vector<uint8_t> req = {kMemWrite, 0x10, 0, 0, 0, 3, 0, 7, 8, 9};
  req.push_back(7 + 8 + 9 + 1);
  EXPECT_EQ(raw(req), kErrChecksum);
  req.back() = 7 + 8 + 9;
  EXPECT_EQ(raw(req), kMemWrite | kAck);
  // Zero-length frames carry the sum of nothing.
  EXPECT_EQ(raw({kMemWrite, 0, 0, 0, 0, 0, 0, 0}), kMemWrite | kAck);
  EXPECT_EQ(raw({kMemRead, 0, 0, 0, 0, 0, 0}), kMemRead | kAck);
  uint8_t sum = 0xff;
  link_.read(std::span(&sum, 1));
  EXPECT_EQ(sum, 0);
}

TEST_F(HostLinkTest, IncompleteFrameTimesOutAndTheLinkGoesOn) {
  link_.write(std::vector<uint8_t>{kRegWrite, r::kInsnCount, 0x01});
  link_.sim().run(link_.sim().model().timeout_clks + 200);
  EXPECT_EQ(link_.sim().received(), 1u);
  uint8_t reply = 0;
  link_.read(std::span(&reply, 1));
  EXPECT_EQ(reply, kErrTimeout);
  EXPECT_EQ(host_.read_reg(r::kInsnCount), 0u);  // nothing was written
  // A frame that stops inside MEM_WRITE data as well.
  link_.write(std::vector<uint8_t>{kMemWrite, 0, 0, 0, 0, 16, 0, 1, 2, 3});
  link_.sim().run(10 * 10 * link_.sim().model().clks_per_bit);
  EXPECT_EQ(link_.sim().received(), 0u);  // no reply while the frame may still go on
  link_.sim().run(link_.sim().model().timeout_clks + 200);
  link_.read(std::span(&reply, 1));
  EXPECT_EQ(reply, kErrTimeout);
  EXPECT_EQ(host_.ping().version, kProtocolVersion);
}

TEST_F(HostLinkTest, FramingErrorAnswered) {
  link_.sim().send_bad_stop(kPing);
  uint8_t reply = 0;
  link_.read(std::span(&reply, 1));
  EXPECT_EQ(reply, kErrFraming);
  EXPECT_EQ(host_.ping().version, kProtocolVersion);
}

TEST_F(HostLinkTest, LinkOutOfStepIsResynchronized) {
  // A stale reply byte in the pipe: the next command sees it, says so, and resyncs.
  link_.write(std::vector<uint8_t>{kPing});
  link_.sim().run(2000);
  uint8_t skip = 0;
  link_.read(std::span(&skip, 1));  // take the ack, leave version and size in the pipe
  expect_error([&] { (void)host_.read_reg(r::kVersion); }, {"out of step", "resynchronized"});
  EXPECT_EQ(host_.read_reg(r::kVersion), r::kMapVersion);
}

// ---------------------------------------------------------------------------------
// The uart-sim Device

std::unique_ptr<Device> sim_device(const hw::Config& cfg, DeviceOptions opts = {}) {
  return make_device("uart-sim", cfg, opts);
}

TEST(UartSimDevice, MemoryIsTheBoardsWhateverTheOptionsSay) {
  DeviceOptions opts;
  opts.dram_bytes = 64 << 20;
  auto dev = sim_device(config("tiny"), opts);
  EXPECT_EQ(dev->kind(), "uart-sim");
  EXPECT_EQ(dev->dram_bytes(), 131072u);
  std::vector<uint8_t> bytes(16, 1);
  expect_error([&] { dev->write(dev->dram_bytes() - 8, bytes); }, {"outside", "131072"});
  expect_error([&] { dev->alloc(200000); }, {"out of DRAM"});
  expect_error([&] { dev->write_reg(r::kStatus, 1); }, {"not writable"});
  expect_error([&] { (void)dev->read_reg(0x3c); }, {"no register"});
}

TEST(UartSimDevice, ConfigurationWithoutBoardTopRefused) {
  const char* json = R"({"name": "odd", "LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3,
    "LOG_ACC_WIDTH": 5, "LOG_BATCH": 0, "LOG_BLOCK": 2, "LOG_UOP_BUFF_SIZE": 11,
    "LOG_INP_BUFF_SIZE": 10, "LOG_WGT_BUFF_SIZE": 12, "LOG_ACC_BUFF_SIZE": 12})";
  hw::Config odd = hw::Config::from_json(json, "odd");
  expect_error([&] { sim_device(odd); }, {"'odd'", "tiny", "KILN_UART_CONFIGS"});
}

// A LOAD beyond device memory: the core stops with cause 1, the message says so, and
// the next run on the same device works.
TEST(UartSimDevice, CoreErrorCauseInTheMessage) {
  hw::Config cfg = config("tiny");
  auto dev = sim_device(cfg);
  hw::InsnLayout layout(cfg);
  hw::Insn load;
  load.opcode = hw::Opcode::kLoad;
  load.memory_type = hw::MemType::kInp;
  load.dram_base = static_cast<uint32_t>(dev->dram_bytes() / cfg.inp_elem_bytes() + 10);
  load.y_size = 1;
  load.x_size = 1;
  load.x_stride = 1;
  hw::Insn finish;
  std::vector<hw::Insn> prog = {load, finish};
  std::vector<uint8_t> bytes = hw::encode_program(layout, prog);
  dev->write(0, bytes);
  expect_error([&] { dev->run(0, 2); }, {"uart-sim device", "outside device memory"});
  std::vector<hw::Insn> ok = {finish};
  bytes = hw::encode_program(layout, ok);
  dev->write(0, bytes);
  EXPECT_NO_THROW(dev->run(0, 1));
  Counters c = dev->counters();
  EXPECT_EQ(c.at(r::Counter::kComputeInsns), 1u);
  EXPECT_GT(c.at(r::Counter::kCycles), 0u);
  EXPECT_EQ(c.count(r::Counter::kLoadInpBytes), 0u);
}

// A run without progress for watchdog_cycles: the device aborts the run (CTRL abort),
// says so, and runs the next stream. (The in-order core reports its own errors at once, so a long
// GEMM against a watchdog of 0 cycles stands in for a hang: the core's lane-by-lane
// walk has cycles without progress between micro-ops.)
TEST(UartSimDevice, WatchdogAbortsTheRun) {
  hw::Config cfg = config("tiny");
  DeviceOptions opts;
  opts.watchdog_cycles = 0;
  auto dev = sim_device(cfg, opts);
  hw::InsnLayout layout(cfg);
  std::vector<hw::Uop> uops(1);
  dev->write(4096, hw::encode_uops(layout, uops));
  hw::Insn load_uop;
  load_uop.opcode = hw::Opcode::kLoad;
  load_uop.memory_type = hw::MemType::kUop;
  load_uop.dram_base = 4096 / 4;
  load_uop.y_size = load_uop.x_size = load_uop.x_stride = 1;
  hw::Insn gemm;
  gemm.opcode = hw::Opcode::kGemm;
  gemm.uop_end = 1;
  gemm.iter_out = gemm.iter_in = 16383;
  std::vector<hw::Insn> prog = {load_uop, gemm, hw::Insn{}};
  dev->write(0, hw::encode_program(layout, prog));
  expect_error([&] { dev->run(0, 3); }, {"uart-sim watchdog: no progress for", "run was aborted"});
  uint32_t status = dev->read_reg(r::kStatus);
  EXPECT_EQ(status & (r::kStatusBusy | r::kStatusDone), r::kStatusDone);
  EXPECT_EQ(r::status_cause(status), r::ErrorCause::kAborted);
  std::vector<hw::Insn> finish(1);
  dev->write(0, hw::encode_program(layout, finish));
  EXPECT_NO_THROW(dev->run(0, 1));
}

TEST(UartSimDevice, SerialPortThatIsNotThereNamed) {
  DeviceOptions opts;
  opts.uart_port = "/nonexistent/ttyKiln";
  expect_error([&] { make_device("uart", config("tiny"), opts); },
               {"/nonexistent/ttyKiln", "cannot open"});
  opts.uart_baud = 12345;
  expect_error([&] { make_device("uart", config("tiny"), opts); }, {"12345"});
}

// The uart device's serial port code (termios, poll, resync) against the simulated
// board: a pseudo-terminal stands in for the FTDI chip, a thread moves its bytes to and
// from the Verilated board top's UART lines.
class PtyBoard {
 public:
  explicit PtyBoard(const hw::Config& cfg) : sim_(cfg) {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0)
      throw hw::Error("no pseudo-terminal for the test");
    ::fcntl(master_, F_SETFL, O_NONBLOCK);
    path_ = ::ptsname(master_);
    thread_ = std::thread([this] { serve(); });
  }
  ~PtyBoard() {
    stop_ = true;
    thread_.join();
    ::close(master_);
  }
  const std::string& path() const { return path_; }

 private:
  void serve() {
    std::vector<uint8_t> buf(4096);
    while (!stop_) {
      ssize_t n = ::read(master_, buf.data(), buf.size());
      if (n > 0) sim_.send(std::span(buf.data(), static_cast<size_t>(n)));
      sim_.run(2000);
      if (size_t got = sim_.received(); got > 0) {
        std::vector<uint8_t> out(got);
        sim_.receive(out, 0);
        for (size_t done = 0; done < out.size();) {
          ssize_t w = ::write(master_, out.data() + done, out.size() - done);
          if (w > 0) done += static_cast<size_t>(w);
        }
      }
      if (n <= 0 && !sim_.queued()) {
        pollfd p{master_, POLLIN, 0};
        ::poll(&p, 1, 1);
      }
    }
  }

  sim::UartSim sim_;
  int master_ = -1;
  std::string path_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(UartSerialDevice, RunsThroughASerialPort) {
  hw::Config cfg = config("tiny");
  PtyBoard board(cfg);
  auto link = std::make_unique<SerialLink>(board.path(), 1000000, 5.0, 0.01);
  UartDevice dev("uart", cfg, DeviceOptions{}, std::move(link));
  EXPECT_EQ(dev.dram_bytes(), 131072u);
  std::vector<uint8_t> data(6000);
  std::iota(data.begin(), data.end(), uint8_t{3});
  dev.write(100, data);
  std::vector<uint8_t> back(data.size());
  dev.read(100, back);
  EXPECT_EQ(back, data);
  hw::InsnLayout layout(cfg);
  std::vector<hw::Insn> finish(1);
  dev.write(0, hw::encode_program(layout, finish));
  EXPECT_NO_THROW(dev.run(0, 1));
  EXPECT_EQ(dev.counters().at(r::Counter::kComputeInsns), 1u);
}

}  // namespace
}  // namespace kiln::driver::uart
