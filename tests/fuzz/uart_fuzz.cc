// Fuzzes the host side of the UART host-link protocol (hw/driver/uart/host_link.h):
// the input plays the board. FuzzedDataProvider takes the host's operations and their
// arguments from the end of the input and the board's reply bytes from its front; a
// reply that runs out behaves as a link that stopped answering. Every bad reply must
// become hw::Error, and a read never writes past the caller's buffer.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <vector>

#include "hw/driver/uart/host_link.h"
#include "hw/spec/error.h"

namespace {

class FuzzLink : public kiln::driver::uart::ByteLink {
 public:
  explicit FuzzLink(FuzzedDataProvider& in) : in_(in) {}
  std::string name() const override { return "fuzz-link"; }
  void write(std::span<const uint8_t> bytes) override { written_ += bytes.size(); }
  void read(std::span<uint8_t> out) override {
    std::vector<uint8_t> b = in_.ConsumeBytes<uint8_t>(out.size());
    if (b.size() < out.size()) throw kiln::hw::Error("fuzz-link: the board stopped answering");
    std::copy(b.begin(), b.end(), out.begin());
  }
  void resync() override {}
  void run_started() override {}
  void pause() override {}
  std::string run_hung() override { return ""; }

 private:
  FuzzedDataProvider& in_;
  size_t written_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  FuzzLink link(in);
  kiln::driver::uart::HostLink host(link);
  for (int step = 0; step < 16 && in.remaining_bytes() > 0; ++step) {
    try {
      switch (in.ConsumeIntegralInRange<int>(0, 5)) {
        case 0: host.ping(); break;
        case 1: host.write_reg(in.ConsumeIntegral<uint8_t>(), in.ConsumeIntegral<uint32_t>()); break;
        case 2: (void)host.read_reg(in.ConsumeIntegral<uint8_t>()); break;
        case 3: {
          uint32_t addr = in.ConsumeIntegral<uint32_t>();
          std::vector<uint8_t> buf(in.ConsumeIntegralInRange<size_t>(0, 3 * kiln::driver::uart::kMaxFrameBytes));
          host.write_mem(addr, buf);
          break;
        }
        case 4: {
          uint32_t addr = in.ConsumeIntegral<uint32_t>();
          std::vector<uint8_t> buf(in.ConsumeIntegralInRange<size_t>(0, 3 * kiln::driver::uart::kMaxFrameBytes));
          host.read_mem(addr, buf);
          break;
        }
        default: host.reset_core(); break;
      }
    } catch (const kiln::hw::Error&) {
    }
  }
  return 0;
}
