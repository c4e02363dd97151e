#include "hw/sim/systemc/interconnect.h"

namespace kiln::sim::sc {

Interconnect::Interconnect(sc_core::sc_module_name name, sc_core::sc_time hop, int ports)
    : sc_module(name), targets("targets"), to_memory("to_memory"), hop_(hop),
      traffic_(static_cast<size_t>(ports)) {
  targets.register_nb_transport_fw(this, &Interconnect::nb_transport_fw);
  targets.register_b_transport(this, &Interconnect::b_transport);
  targets.register_transport_dbg(this, &Interconnect::transport_dbg);
}

void Interconnect::count(int port, const tlm::tlm_generic_payload& p) {
  PortTraffic& t = traffic_.at(static_cast<size_t>(port));
  if (p.is_write()) {
    ++t.write_bursts;
    t.write_bytes += p.get_data_length();
  } else {
    ++t.read_bursts;
    t.read_bytes += p.get_data_length();
  }
}

tlm::tlm_sync_enum Interconnect::nb_transport_fw(int port, tlm::tlm_generic_payload& p,
                                                 tlm::tlm_phase& phase, sc_core::sc_time& delay) {
  if (phase == tlm::BEGIN_REQ) {
    count(port, p);
    delay += hop_;
  }
  tlm::tlm_sync_enum s = to_memory->nb_transport_fw(p, phase, delay);
  if (s == tlm::TLM_COMPLETED) delay += hop_;  // the response crosses back
  return s;
}

void Interconnect::b_transport(int port, tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  count(port, p);
  delay += hop_;
  to_memory->b_transport(p, delay);
  delay += hop_;
}

unsigned Interconnect::transport_dbg(int, tlm::tlm_generic_payload& p) {
  return to_memory->transport_dbg(p);
}

}  // namespace kiln::sim::sc
