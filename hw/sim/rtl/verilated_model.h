#pragma once
// RtlModel for one Verilated configuration: V is the class Verilator generated for it
// (Vkiln_<name>). Included only by the generated per-configuration model_<name>.cc.

#include <memory>
#include <string>

#include "hw/sim/rtl/rtl_model.h"
#include "hw/sim/rtl/verilated_harness.h"

namespace kiln::sim {

template <class V>
class VerilatedModel final : public RtlModel {
 public:
  explicit VerilatedModel(const std::string& wave_file) : h_(wave_file, "kiln_top") {}

  void eval_low(const TopIn& in, TopOut& out) override {
    V& t = h_.top();
    t.rst_ni = in.rst_n;
    t.s_axil_awvalid = in.s_awvalid;
    t.s_axil_awaddr = in.s_awaddr;
    t.s_axil_wvalid = in.s_wvalid;
    t.s_axil_wdata = in.s_wdata;
    t.s_axil_wstrb = in.s_wstrb;
    t.s_axil_bready = in.s_bready;
    t.s_axil_arvalid = in.s_arvalid;
    t.s_axil_araddr = in.s_araddr;
    t.s_axil_rready = in.s_rready;
    t.m_axi_arready = in.m_arready;
    t.m_axi_rvalid = in.m_rvalid;
    t.m_axi_rid = in.m_rid;
    t.m_axi_rdata = in.m_rdata;
    t.m_axi_rresp = in.m_rresp;
    t.m_axi_rlast = in.m_rlast;
    t.m_axi_awready = in.m_awready;
    t.m_axi_wready = in.m_wready;
    t.m_axi_bvalid = in.m_bvalid;
    t.m_axi_bid = in.m_bid;
    t.m_axi_bresp = in.m_bresp;
    h_.eval_low();
    out.s_awready = t.s_axil_awready;
    out.s_wready = t.s_axil_wready;
    out.s_bvalid = t.s_axil_bvalid;
    out.s_arready = t.s_axil_arready;
    out.s_rvalid = t.s_axil_rvalid;
    out.s_rdata = t.s_axil_rdata;
    out.m_arvalid = t.m_axi_arvalid;
    out.m_arid = t.m_axi_arid;
    out.m_araddr = t.m_axi_araddr;
    out.m_arlen = t.m_axi_arlen;
    out.m_rready = t.m_axi_rready;
    out.m_awvalid = t.m_axi_awvalid;
    out.m_awaddr = t.m_axi_awaddr;
    out.m_awlen = t.m_axi_awlen;
    out.m_wvalid = t.m_axi_wvalid;
    out.m_wdata = t.m_axi_wdata;
    out.m_wstrb = t.m_axi_wstrb;
    out.m_wlast = t.m_axi_wlast;
    out.m_bready = t.m_axi_bready;
    out.dbg_state = t.dbg_state_o;
    out.dbg_tokens = t.dbg_tokens_o;
    out.dbg_queues = t.dbg_queues_o;
    out.dbg_progress = t.dbg_progress_o;
  }

  void posedge() override { h_.posedge(); }

 private:
  VerilatedHarness<V> h_;
};

}  // namespace kiln::sim
