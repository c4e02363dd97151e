#include "hw/sim/systemc/accelerator.h"

#include <cstring>

namespace kiln::sim::sc {

namespace {
// AXI4-Lite accesses answer within a few cycles; more means a broken register file.
constexpr int kRegTimeout = 1000;
}  // namespace

Accelerator::Accelerator(sc_core::sc_module_name name, const ScModelInfo& model,
                         sc_core::sc_clock& clk, sc_core::sc_time period, uint64_t dram_base, uint64_t dram_bytes,
                         bool backpressure, uint64_t seed)
    : sc_module(name), regs("regs"), period_(period) {
  s_.clk = &clk;
  model_ = model.make("kiln_top", s_);
  bridge_ = std::make_unique<AxiTlmBridge>("bridge", s_, model.axi_data_bits / 8, period,
                                           dram_base, dram_bytes, backpressure, seed);
  regs.register_b_transport(this, &Accelerator::b_transport);
  SC_METHOD(watch);
  sensitive << clk.posedge_event();
  dont_initialize();
}

void Accelerator::watch() {
  ++cycle_;
  if (s_.dbg_progress.read()) last_progress_ = cycle_;
}

TopOut Accelerator::debug_view() const {
  TopOut o;
  o.dbg_state = static_cast<uint16_t>(s_.dbg_state.read());
  o.dbg_tokens = s_.dbg_tokens.read();
  o.dbg_queues = static_cast<uint16_t>(s_.dbg_queues.read());
  o.dbg_progress = s_.dbg_progress.read();
  return o;
}

bool Accelerator::port_quiet() const {
  return bridge_->idle() && !s_.m_arvalid.read() && !s_.m_awvalid.read() && !s_.m_wvalid.read();
}

// Signals written here take effect after this edge, as a flop's output would; what is
// read is what the edge sampled.
bool Accelerator::write_reg(uint32_t offset, uint32_t value) {
  s_.s_awvalid.write(true);
  s_.s_wvalid.write(true);
  s_.s_awaddr.write(offset);
  s_.s_wdata.write(value);
  s_.s_wstrb.write(0xf);
  s_.s_bready.write(true);
  bool aw_done = false, w_done = false, b_done = false;
  bool awvalid = true, wvalid = true;
  for (int i = 0; i < kRegTimeout && !b_done; ++i) {
    wait(s_.clk->posedge_event());
    b_done = aw_done && w_done && s_.s_bvalid.read();
    if (awvalid && s_.s_awready.read()) aw_done = true, awvalid = false, s_.s_awvalid.write(false);
    if (wvalid && s_.s_wready.read()) w_done = true, wvalid = false, s_.s_wvalid.write(false);
  }
  s_.s_awvalid.write(false);
  s_.s_wvalid.write(false);
  s_.s_bready.write(false);
  return b_done;
}

bool Accelerator::read_reg(uint32_t offset, uint32_t& value) {
  s_.s_arvalid.write(true);
  s_.s_araddr.write(offset);
  s_.s_rready.write(true);
  bool ar_done = false, arvalid = true;
  for (int i = 0; i < kRegTimeout; ++i) {
    wait(s_.clk->posedge_event());
    bool r_fire = ar_done && s_.s_rvalid.read();
    value = s_.s_rdata.read();
    if (arvalid && s_.s_arready.read()) ar_done = true, arvalid = false, s_.s_arvalid.write(false);
    if (r_fire) {
      s_.s_rready.write(false);
      return true;
    }
  }
  s_.s_arvalid.write(false);
  s_.s_rready.write(false);
  return false;
}

void Accelerator::b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  // Loosely timed callers: catch up with their annotated time first.
  if (delay > sc_core::SC_ZERO_TIME) wait(delay);
  delay = sc_core::SC_ZERO_TIME;
  if (p.get_data_length() != 4 || p.get_address() > 0xff) {
    p.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  auto offset = static_cast<uint32_t>(p.get_address());
  uint32_t value = 0;
  bool ok;
  if (p.is_write()) {
    std::memcpy(&value, p.get_data_ptr(), 4);
    ok = write_reg(offset, value);
  } else {
    ok = read_reg(offset, value);
    std::memcpy(p.get_data_ptr(), &value, 4);
  }
  p.set_response_status(ok ? tlm::TLM_OK_RESPONSE : tlm::TLM_GENERIC_ERROR_RESPONSE);
}

}  // namespace kiln::sim::sc
