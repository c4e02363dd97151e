#pragma once
// The platform's memory: a TLM-2.0 target that holds device DRAM and times every
// burst. Timing is first order, in cycles of the platform clock: a latency from request
// to first data, a bandwidth per direction (or one bus shared by both, as on a DRAM's
// data pins), banks with one open row each (a row miss costs precharge + activate),
// and periodic refresh (all banks blocked for tRFC every tREFI, rows closed after).
// Presets name real memories (docs/systemc.md gives each one's sources).

#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kiln::sim::sc {

// Timing in platform clock cycles (fractions allowed).
struct MemoryTiming {
  std::string name = "rtl-default";
  double latency = 32;                // request to first data / write response
  double read_bytes_per_cycle = 8;
  double write_bytes_per_cycle = 8;
  bool shared_bus = false;            // reads and writes share one data bus
  int banks = 0;                      // 0: no bank model
  uint64_t row_bytes = 0;             // bytes of one row (page) across the rank
  double row_miss = 0;                // extra cycles for a closed or other row (tRP + tRCD)
  double refresh_interval = 0;        // tREFI (0: no refresh)
  double refresh_cycles = 0;          // tRFC
};

// A memory as its datasheet gives it, in nanoseconds and GB/s; timing() converts it
// at a clock.
struct MemoryPreset {
  const char* name;
  const char* description;
  double latency_ns;
  double read_gbps, write_gbps;       // 1e9 bytes per second
  bool shared_bus;
  int banks;
  uint64_t row_bytes;
  double row_miss_ns;
  double trefi_ns, trfc_ns;
  MemoryTiming timing(double clock_mhz) const;
};

std::span<const MemoryPreset> memory_presets();
// Throws hw::Error listing the presets when there is none of that name.
const MemoryPreset& memory_preset(const std::string& name);
// Throws hw::Error naming the field for a timing no memory has (zero bandwidth, ...).
void validate(const MemoryTiming& t);

// The memory's own view of a burst, given to the initiator through the payload.
struct BurstTiming : tlm::tlm_extension<BurstTiming> {
  double beat_interval = 1;  // cycles between beats of read data at the memory's rate
  tlm_extension_base* clone() const override { return new BurstTiming(*this); }
  void copy_from(const tlm_extension_base& e) override {
    beat_interval = static_cast<const BurstTiming&>(e).beat_interval;
  }
};

struct MemoryStats {
  uint64_t read_bursts = 0, write_bursts = 0, read_bytes = 0, write_bytes = 0;
  uint64_t row_hits = 0, row_misses = 0, refresh_stalls = 0;
  double read_busy = 0, write_busy = 0;  // cycles a data bus was transferring
};

class MemoryModel : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<MemoryModel, 64> socket;

  // `port_bytes` is the width of the initiators' data beats (the AXI data bus).
  MemoryModel(sc_core::sc_module_name name, std::span<uint8_t> storage, const MemoryTiming& t,
              sc_core::sc_time period, int port_bytes);

  const MemoryTiming& timing() const { return t_; }
  const MemoryStats& stats() const { return stats_; }
  // Forgets open rows and queued transfers (the platform was reset).
  void reset();

 private:
  // Base protocol, completed at once: the annotated delay is when the first data (a
  // read) or the write response is ready.
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& p, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  unsigned transport_dbg(tlm::tlm_generic_payload& p);
  // The cycle the access can start after refresh, and the row penalty.
  double access(uint64_t addr, double start);
  void serve(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);

  std::span<uint8_t> mem_;
  MemoryTiming t_;
  sc_core::sc_time period_;
  int port_bytes_;
  double rd_free_ = 0, wr_free_ = 0;  // cycle each data bus is free again
  std::vector<int64_t> open_row_;     // per bank, -1 closed
  int64_t refresh_epoch_ = 0;
  MemoryStats stats_;
};

}  // namespace kiln::sim::sc
