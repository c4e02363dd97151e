#pragma once
// One accelerator on the platform: kiln_top's SystemC model (verilator --sc), a TLM-2.0
// target socket for its AXI4-Lite register file (each access is driven cycle by cycle
// on the model's port, so it takes simulated time), and the AXI-to-TLM bridge whose
// initiator socket is its AXI4 master. A watchdog view: the cycle of the last progress.

#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <memory>

#include "hw/sim/rtl/rtl_model.h"
#include "hw/sim/systemc/axi_tlm_bridge.h"
#include "hw/sim/systemc/top_signals.h"

namespace kiln::sim::sc {

class Accelerator : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<Accelerator, 32> regs;

  SC_HAS_PROCESS(Accelerator);
  Accelerator(sc_core::sc_module_name name, const ScModelInfo& model, sc_core::sc_clock& clk,
              sc_core::sc_time period, uint64_t dram_base, uint64_t dram_bytes,
              bool backpressure, uint64_t seed);

  AxiTlmBridge& bridge() { return *bridge_; }
  const AxiTlmBridge& bridge() const { return *bridge_; }
  TopSignals& signals() { return s_; }
  // Clock edges seen, and the last one at which the model reported progress.
  uint64_t cycle() const { return cycle_; }
  uint64_t last_progress() const { return last_progress_; }
  // The model's debug outputs as the rtl harness sees them (for hang reports and traces).
  TopOut debug_view() const;
  // The AXI master is quiet: no request in flight nor offered.
  bool port_quiet() const;

 private:
  // AXI4-Lite: a 4-byte read or write at the register offset; TLM_GENERIC_ERROR_RESPONSE
  // when the register file does not answer.
  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  bool write_reg(uint32_t offset, uint32_t value);
  bool read_reg(uint32_t offset, uint32_t& value);
  void watch();

  sc_core::sc_time period_;
  TopSignals s_;
  std::unique_ptr<sc_core::sc_module> model_;
  std::unique_ptr<AxiTlmBridge> bridge_;
  uint64_t cycle_ = 0, last_progress_ = 0;
};

}  // namespace kiln::sim::sc
