#pragma once
// Binds a Verilated SystemC model of kiln_top (V, from verilator --sc of kiln_top_flat,
// which spreads its bus structs onto one port per signal; hw/spec/rtl_params.h) to the
// platform's signals. Included only by the generated per-configuration sc_model_<cfg>.cc.

#include <memory>

#include "hw/sim/systemc/top_signals.h"

namespace kiln::sim::sc {

template <class V>
std::unique_ptr<sc_core::sc_module> bind_model(const char* name, TopSignals& s) {
  auto v = std::make_unique<V>(name);
  v->clk_i(*s.clk);
  v->rst_ni(s.rst_n);
  v->s_axil_awvalid(s.s_awvalid);
  v->s_axil_awready(s.s_awready);
  v->s_axil_awaddr(s.s_awaddr);
  v->s_axil_wvalid(s.s_wvalid);
  v->s_axil_wready(s.s_wready);
  v->s_axil_wdata(s.s_wdata);
  v->s_axil_wstrb(s.s_wstrb);
  v->s_axil_bvalid(s.s_bvalid);
  v->s_axil_bready(s.s_bready);
  v->s_axil_bresp(s.s_bresp);
  v->s_axil_arvalid(s.s_arvalid);
  v->s_axil_arready(s.s_arready);
  v->s_axil_araddr(s.s_araddr);
  v->s_axil_rvalid(s.s_rvalid);
  v->s_axil_rready(s.s_rready);
  v->s_axil_rdata(s.s_rdata);
  v->s_axil_rresp(s.s_rresp);
  v->m_axi_arvalid(s.m_arvalid);
  v->m_axi_arready(s.m_arready);
  v->m_axi_arid(s.m_arid);
  v->m_axi_araddr(s.m_araddr);
  v->m_axi_arlen(s.m_arlen);
  v->m_axi_arsize(s.m_arsize);
  v->m_axi_arburst(s.m_arburst);
  v->m_axi_rvalid(s.m_rvalid);
  v->m_axi_rready(s.m_rready);
  v->m_axi_rid(s.m_rid);
  v->m_axi_rdata(s.m_rdata);
  v->m_axi_rresp(s.m_rresp);
  v->m_axi_rlast(s.m_rlast);
  v->m_axi_awvalid(s.m_awvalid);
  v->m_axi_awready(s.m_awready);
  v->m_axi_awid(s.m_awid);
  v->m_axi_awaddr(s.m_awaddr);
  v->m_axi_awlen(s.m_awlen);
  v->m_axi_awsize(s.m_awsize);
  v->m_axi_awburst(s.m_awburst);
  v->m_axi_wvalid(s.m_wvalid);
  v->m_axi_wready(s.m_wready);
  v->m_axi_wdata(s.m_wdata);
  v->m_axi_wstrb(s.m_wstrb);
  v->m_axi_wlast(s.m_wlast);
  v->m_axi_bvalid(s.m_bvalid);
  v->m_axi_bready(s.m_bready);
  v->m_axi_bid(s.m_bid);
  v->m_axi_bresp(s.m_bresp);
  v->dbg_state_o(s.dbg_state);
  v->dbg_tokens_o(s.dbg_tokens);
  v->dbg_queues_o(s.dbg_queues);
  v->dbg_progress_o(s.dbg_progress);
  return v;
}

}  // namespace kiln::sim::sc
