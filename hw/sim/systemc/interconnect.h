#pragma once
// The interconnect between the accelerators' AXI-to-TLM bridges and the memory: every
// initiator reaches the one memory through it, after a hop latency, and it counts
// each initiator's traffic. Contention between initiators is the memory's: its data
// buses serve bursts in arrival order.

#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <vector>

namespace kiln::sim::sc {

struct PortTraffic {
  uint64_t read_bursts = 0, write_bursts = 0, read_bytes = 0, write_bytes = 0;
};

class Interconnect : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Interconnect, 64> targets;
  tlm_utils::simple_initiator_socket<Interconnect, 64> to_memory;

  Interconnect(sc_core::sc_module_name name, sc_core::sc_time hop, int ports);

  const std::vector<PortTraffic>& traffic() const { return traffic_; }

 private:
  tlm::tlm_sync_enum nb_transport_fw(int port, tlm::tlm_generic_payload& p, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  void b_transport(int port, tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  unsigned transport_dbg(int port, tlm::tlm_generic_payload& p);
  void count(int port, const tlm::tlm_generic_payload& p);

  sc_core::sc_time hop_;
  std::vector<PortTraffic> traffic_;
};

}  // namespace kiln::sim::sc
