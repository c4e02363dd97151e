// kiln_inorder_top behind kiln_top's ports: the same AXI4-Lite register file and an
// AXI4 master to DRAM, one single-beat transfer at a time. This is how the rtl device
// (and a part with an AXI memory system) runs the in-order core; on an iCE40 the board
// top (kiln_uart_top) joins the core's memory port to SPRAM directly.
module kiln_inorder_axi #(
  parameter int PARITY = 0  // kiln_inorder_top's
) (
  input  logic clk_i,
  input  logic rst_ni,
  // kiln_top's: the AXI4-Lite register file and the AXI4 master to DRAM (64-bit data;
  // single beats)
  input  kiln_cfg_pkg::axil_req_t s_axil_i,
  output kiln_cfg_pkg::axil_rsp_t s_axil_o,
  output kiln_cfg_pkg::axi_req_t  m_axi_o,
  input  kiln_cfg_pkg::axi_rsp_t  m_axi_i,
  // Simulation view (kiln_top's; the in-order core has no queues)
  output logic [kiln_cfg_pkg::DBG_STATE_BITS-1:0]  dbg_state_o,  // an inorder_dbg_state_t
  output logic [kiln_cfg_pkg::DBG_TOKENS_BITS-1:0] dbg_tokens_o,
  output logic [kiln_cfg_pkg::DBG_QUEUES_BITS-1:0] dbg_queues_o,
  output logic                                     dbg_progress_o
);
  if (kiln_cfg_pkg::AXI_DATA_BITS != 64) begin : g_width_check
    $error("kiln_inorder_axi: the in-order core's memory words are 64 bits; AXI_DATA_BITS must be 64");
  end

  kiln_cfg_pkg::mem_req_t mem;
  kiln_cfg_pkg::mem_rsp_t mem_rsp;
  kiln_inorder_top #(.PARITY(PARITY)) core (
    .clk_i, .rst_ni, .s_axil_i, .s_axil_o, .mem_o(mem), .mem_i(mem_rsp), .dbg_state_o,
    .dbg_progress_o);

  // Single-beat bursts of one device-memory word.
  localparam logic [kiln_cfg_pkg::AXI_SIZE_BITS-1:0] SZ =
      kiln_cfg_pkg::AXI_SIZE_BITS'($clog2(kiln_cfg_pkg::MEM_DATA_BITS / 8));
  // Reads: the request is accepted with AR; the response is the word.
  assign m_axi_o.ar_valid = mem.valid && !mem.we;
  assign m_axi_o.ar.id = '0;
  assign m_axi_o.ar.addr = kiln_cfg_pkg::AXI_ADDR_BITS'(mem.addr);
  assign m_axi_o.ar.len = '0;
  assign m_axi_o.ar.size = SZ;
  assign m_axi_o.ar.burst = kiln_cfg_pkg::AXI_BURST_INCR;
  assign m_axi_o.r_ready = 1'b1;
  assign mem_rsp.rvalid = m_axi_i.r_valid;
  assign mem_rsp.rdata = kiln_cfg_pkg::MEM_DATA_BITS'(m_axi_i.r.data);

  // Writes: AW and W may complete in either order; the request is accepted with B.
  logic aw_done_q, w_done_q;
  assign m_axi_o.aw_valid = mem.valid && mem.we && !aw_done_q;
  assign m_axi_o.aw.id = '0;
  assign m_axi_o.aw.addr = kiln_cfg_pkg::AXI_ADDR_BITS'(mem.addr);
  assign m_axi_o.aw.len = '0;
  assign m_axi_o.aw.size = SZ;
  assign m_axi_o.aw.burst = kiln_cfg_pkg::AXI_BURST_INCR;
  assign m_axi_o.w_valid = mem.valid && mem.we && !w_done_q;
  assign m_axi_o.w.data = kiln_cfg_pkg::AXI_DATA_BITS'(mem.wdata);
  assign m_axi_o.w.strb = (kiln_cfg_pkg::AXI_DATA_BITS/8)'(mem.wstrb);
  assign m_axi_o.w.last = 1'b1;
  assign m_axi_o.b_ready = 1'b1;
  always_ff @(posedge clk_i) begin
    if (!rst_ni || m_axi_i.b_valid) begin
      aw_done_q <= 1'b0;
      w_done_q <= 1'b0;
    end else begin
      if (m_axi_o.aw_valid && m_axi_i.aw_ready) aw_done_q <= 1'b1;
      if (m_axi_o.w_valid && m_axi_i.w_ready) w_done_q <= 1'b1;
    end
  end

  assign mem_rsp.ready = mem.we ? m_axi_i.b_valid : m_axi_i.ar_ready;
  assign mem_rsp.error = (mem.we && m_axi_i.b_valid && m_axi_i.b.resp[1]) ||
                         (m_axi_i.r_valid && m_axi_i.r.resp[1]);

  assign dbg_tokens_o = '0;
  assign dbg_queues_o = '0;
  logic unused_inputs;
  assign unused_inputs = ^{m_axi_i.r.id, m_axi_i.r.last, m_axi_i.b.id, m_axi_i.r.resp[0],
                          m_axi_i.b.resp[0]};
endmodule
