#pragma once
// A DRAM behind an AXI4 slave port, for the Verilator harness: a fixed latency from
// address to first data (or to the write response), a bandwidth in bytes per cycle
// for each direction, and an optional random back-pressure mode that drops the
// ready signals and delays the valid ones (keeping AXI's rule that a valid, once
// raised, stays up until accepted). Requests are served in order.

#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <string>

#include "hw/sim/rtl/fault.h"
#include "hw/sim/rtl/rtl_model.h"

namespace kiln::sim {

struct DramTiming {
  // Defaults: a Zynq-7000 HP port (64-bit AXI3/AXI4 at the fabric clock) in front of
  // DDR3; a read's first beat arrives about 32 fabric cycles after its address, and
  // the port moves one 8-byte beat per cycle in each direction.
  static constexpr int kDefaultLatency = 32;
  static constexpr int kDefaultBytesPerCycle = 8;
  int latency = kDefaultLatency;
  int bytes_per_cycle = kDefaultBytesPerCycle;
  bool backpressure = false;
  uint64_t seed = 1;
};

class AxiDram {
 public:
  // `fault` (kDramReadError, kDramHang; other kinds are not the DRAM's) fires once.
  AxiDram(std::span<uint8_t> mem, const DramTiming& timing, int bus_bytes,
          const InjectedFault& fault = {});

  // The slave's outputs for this cycle.
  void drive(TopIn& in);
  // Takes the handshakes of this cycle (inputs as driven, outputs as settled).
  void update(const TopIn& in, const TopOut& out);

  // Drops every outstanding transaction (the accelerator was reset).
  void reset();

  bool idle() const { return reads_.empty() && writes_.empty() && responses_.empty(); }
  // Outstanding transactions, for watchdog messages.
  std::string describe() const;
  // The first access outside DRAM or the injected read error ("" if none), reported
  // with an error response; fault_id() is the failed read's ARID (-1: a write or none).
  const std::string& fault() const { return fault_; }
  int fault_id() const { return fault_id_; }
  // Read beats served since the device's creation (what kDramHang counts).
  uint64_t read_beats() const { return read_beats_; }
  // An injected hang is under way: the slave answers nothing.
  bool hung() const { return hung_; }
  // The host's recovery (CTRL abort) ends an injected hang: the slave answers again.
  void end_hang() { hung_ = false; }
  // The first AXI rule the master broke ("" if none): a valid dropped, or its address
  // or data changed, before the handshake.
  const std::string& protocol_error() const { return protocol_; }

 private:
  struct Burst {
    uint8_t id;
    uint64_t addr;
    int beats;
    int beat = 0;
    uint64_t ready_at = 0;
    uint8_t resp = 0;  // 0 OKAY, 2 SLVERR
    bool injected = false;  // answered SLVERR by the injected fault
  };
  bool in_range(uint64_t addr) const { return addr + bus_bytes_ <= mem_.size(); }
  void note_fault(const char* what, uint64_t addr);

  std::span<uint8_t> mem_;
  DramTiming timing_;
  int bus_bytes_;
  std::mt19937_64 rng_;
  uint64_t cycle_ = 0;
  int64_t rd_budget_ = 0, wr_budget_ = 0;
  std::deque<Burst> reads_, writes_;
  std::deque<Burst> responses_;
  bool r_held_ = false, b_held_ = false;  // a valid raised last cycle, not yet taken
  // The master's requests left waiting last cycle, which must be offered again as they were.
  struct Offer {
    bool pending = false;
    uint64_t a = 0, b = 0;
  } ar_offer_, aw_offer_, w_offer_;
  void check_offer(Offer& o, const char* channel, bool valid, bool ready, uint64_t a, uint64_t b);
  std::string fault_, protocol_;
  int fault_id_ = -1;
  InjectedFault inject_;
  uint64_t read_bursts_ = 0, read_beats_ = 0;  // since the device's creation
  bool hung_ = false;
  static constexpr size_t kMaxOutstanding = 16;
};

}  // namespace kiln::sim
