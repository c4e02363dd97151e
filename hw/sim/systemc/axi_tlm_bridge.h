#pragma once
// The AXI4 slave that answers kiln_top's master port and turns each burst into one
// TLM-2.0 transaction towards the interconnect, keeping AXI's timing: a read burst is
// requested when its address is taken and its beats go out one per cycle from the
// cycle the memory says its first data is ready (at the memory's rate); a write burst
// goes out when its last beat arrives and its response waits for the memory's answer.
// Up to 16 bursts are outstanding in each direction; responses come back in order.
// Optional random back-pressure drops the ready signals and delays the valid ones, as
// the rtl harness's DRAM model does (hw/sim/rtl/axi_dram.h).

#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "hw/sim/systemc/top_signals.h"

namespace kiln::sim::sc {

struct BridgeOccupancy {
  size_t reads = 0, writes = 0, responses = 0;
};

class AxiTlmBridge : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<AxiTlmBridge, 64> socket;

  SC_HAS_PROCESS(AxiTlmBridge);
  // `s` are the accelerator's signals (the bridge drives the slave side of m_*); the
  // master's address 0 is `dram_base` on the interconnect, and it may reach
  // `dram_bytes` from there (a burst beyond gets an error response, not another
  // accelerator's memory).
  AxiTlmBridge(sc_core::sc_module_name name, TopSignals& s, int bus_bytes, sc_core::sc_time period,
               uint64_t dram_base, uint64_t dram_bytes, bool backpressure, uint64_t seed);

  bool idle() const { return reads_.empty() && writes_.empty() && responses_.empty(); }
  BridgeOccupancy occupancy() const { return {reads_.size(), writes_.size(), responses_.size()}; }
  std::string describe() const;
  // The first burst the memory refused ("" if none), and the first AXI rule the master
  // broke ("" if none).
  const std::string& fault() const { return fault_; }
  const std::string& protocol_error() const { return protocol_; }
  void clear_errors() { fault_.clear(), protocol_.clear(); }

 private:
  struct ReadBurst {
    uint32_t id = 0;
    uint64_t addr = 0;
    int beats = 0;
    int beat = 0;
    double ready = 0;     // cycle of the first beat
    double interval = 1;  // cycles between beats
    bool error = false;
    std::vector<uint8_t> data;
  };
  struct WriteBurst {
    uint64_t addr = 0;
    int beats = 0;
    int beat = 0;
    std::vector<uint8_t> data, enable;
  };
  struct Response {
    double ready;
    uint32_t resp;
  };
  struct Drive {  // the slave's outputs this cycle
    bool arready = false, rvalid = false, rlast = false, awready = false, wready = false,
         bvalid = false;
    uint32_t rid = 0, rresp = 0, bresp = 0;
    uint64_t rdata = 0;
  };

  void on_clock();
  void update(double cycle);
  void drive(double cycle);
  void reset();
  // One TLM transaction; returns the cycle its data or response is ready.
  double transact(tlm::tlm_command cmd, uint64_t addr, std::vector<uint8_t>& data,
                  std::vector<uint8_t>* enable, bool& error, double cycle);
  void check_burst(const char* what, uint64_t addr, int beats, double cycle);

  TopSignals& s_;
  int bus_bytes_;
  sc_core::sc_time period_;
  uint64_t dram_base_, dram_bytes_;
  bool backpressure_;
  std::mt19937_64 rng_;
  std::deque<ReadBurst> reads_;
  std::deque<WriteBurst> writes_;
  std::deque<Response> responses_;
  Drive d_;
  tlm::tlm_generic_payload payload_;
  std::string fault_, protocol_;
  static constexpr size_t kMaxOutstanding = 16;
};

}  // namespace kiln::sim::sc
