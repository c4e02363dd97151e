// kiln_inorder_top behind kiln_top's ports: the same AXI4-Lite register file and an
// AXI4 master to DRAM, one single-beat transfer at a time. This is how the rtl device
// (and a part with an AXI memory system) runs the in-order core; on an iCE40 the board
// top (kiln_uart_top) joins the core's memory port to SPRAM directly.
module kiln_inorder_axi (
  input  logic clk_i,
  input  logic rst_ni,
  // AXI4-Lite register file
  input  logic        s_axil_awvalid,
  output logic        s_axil_awready,
  input  logic [7:0]  s_axil_awaddr,
  input  logic        s_axil_wvalid,
  output logic        s_axil_wready,
  input  logic [31:0] s_axil_wdata,
  input  logic [3:0]  s_axil_wstrb,
  output logic        s_axil_bvalid,
  input  logic        s_axil_bready,
  output logic [1:0]  s_axil_bresp,
  input  logic        s_axil_arvalid,
  output logic        s_axil_arready,
  input  logic [7:0]  s_axil_araddr,
  output logic        s_axil_rvalid,
  input  logic        s_axil_rready,
  output logic [31:0] s_axil_rdata,
  output logic [1:0]  s_axil_rresp,
  // AXI4 master to DRAM (64-bit data; single beats)
  output logic                                     m_axi_arvalid,
  input  logic                                     m_axi_arready,
  output logic [2:0]                               m_axi_arid,
  output logic [kiln_cfg_pkg::AXI_ADDR_BITS-1:0]   m_axi_araddr,
  output logic [7:0]                               m_axi_arlen,
  output logic [2:0]                               m_axi_arsize,
  output logic [1:0]                               m_axi_arburst,
  input  logic                                     m_axi_rvalid,
  output logic                                     m_axi_rready,
  input  logic [2:0]                               m_axi_rid,
  input  logic [kiln_cfg_pkg::AXI_DATA_BITS-1:0]   m_axi_rdata,
  input  logic [1:0]                               m_axi_rresp,
  input  logic                                     m_axi_rlast,
  output logic                                     m_axi_awvalid,
  input  logic                                     m_axi_awready,
  output logic [2:0]                               m_axi_awid,
  output logic [kiln_cfg_pkg::AXI_ADDR_BITS-1:0]   m_axi_awaddr,
  output logic [7:0]                               m_axi_awlen,
  output logic [2:0]                               m_axi_awsize,
  output logic [1:0]                               m_axi_awburst,
  output logic                                     m_axi_wvalid,
  input  logic                                     m_axi_wready,
  output logic [kiln_cfg_pkg::AXI_DATA_BITS-1:0]   m_axi_wdata,
  output logic [kiln_cfg_pkg::AXI_DATA_BITS/8-1:0] m_axi_wstrb,
  output logic                                     m_axi_wlast,
  input  logic                                     m_axi_bvalid,
  output logic                                     m_axi_bready,
  input  logic [2:0]                               m_axi_bid,
  input  logic [1:0]                               m_axi_bresp,
  // Simulation view (kiln_top's; the in-order core has no queues)
  output logic [kiln_cfg_pkg::DBG_STATE_BITS-1:0]  dbg_state_o,  // an inorder_dbg_state_t
  output logic [kiln_cfg_pkg::DBG_TOKENS_BITS-1:0] dbg_tokens_o,
  output logic [kiln_cfg_pkg::DBG_QUEUES_BITS-1:0] dbg_queues_o,
  output logic                                     dbg_progress_o
);
  if (kiln_cfg_pkg::AXI_DATA_BITS != 64) begin : g_width_check
    $error("kiln_inorder_axi: the in-order core's memory words are 64 bits; AXI_DATA_BITS must be 64");
  end

  logic mem_valid, mem_ready, mem_we, mem_rvalid, mem_error;
  logic [31:0] mem_addr;
  logic [63:0] mem_wdata, mem_rdata;
  logic [7:0] mem_wstrb;
  kiln_inorder_top core (
    .clk_i, .rst_ni,
    .s_axil_awvalid, .s_axil_awready, .s_axil_awaddr, .s_axil_wvalid, .s_axil_wready,
    .s_axil_wdata, .s_axil_wstrb, .s_axil_bvalid, .s_axil_bready, .s_axil_bresp,
    .s_axil_arvalid, .s_axil_arready, .s_axil_araddr, .s_axil_rvalid, .s_axil_rready,
    .s_axil_rdata, .s_axil_rresp,
    .mem_valid_o(mem_valid), .mem_ready_i(mem_ready), .mem_we_o(mem_we),
    .mem_addr_o(mem_addr), .mem_wdata_o(mem_wdata), .mem_wstrb_o(mem_wstrb),
    .mem_rvalid_i(mem_rvalid), .mem_rdata_i(mem_rdata), .mem_error_i(mem_error),
    .dbg_state_o, .dbg_progress_o);

  // Reads: the request is accepted with AR; the response is the word.
  assign m_axi_arvalid = mem_valid && !mem_we;
  assign m_axi_arid = '0;
  assign m_axi_araddr = kiln_cfg_pkg::AXI_ADDR_BITS'(mem_addr);
  assign m_axi_arlen = '0;
  assign m_axi_arsize = 3'd3;
  assign m_axi_arburst = 2'b01;
  assign m_axi_rready = 1'b1;
  assign mem_rvalid = m_axi_rvalid;
  assign mem_rdata = 64'(m_axi_rdata);

  // Writes: AW and W may complete in either order; the request is accepted with B.
  logic aw_done_q, w_done_q;
  assign m_axi_awvalid = mem_valid && mem_we && !aw_done_q;
  assign m_axi_awid = '0;
  assign m_axi_awaddr = kiln_cfg_pkg::AXI_ADDR_BITS'(mem_addr);
  assign m_axi_awlen = '0;
  assign m_axi_awsize = 3'd3;
  assign m_axi_awburst = 2'b01;
  assign m_axi_wvalid = mem_valid && mem_we && !w_done_q;
  assign m_axi_wdata = kiln_cfg_pkg::AXI_DATA_BITS'(mem_wdata);
  assign m_axi_wstrb = (kiln_cfg_pkg::AXI_DATA_BITS/8)'(mem_wstrb);
  assign m_axi_wlast = 1'b1;
  assign m_axi_bready = 1'b1;
  always_ff @(posedge clk_i) begin
    if (!rst_ni || m_axi_bvalid) begin
      aw_done_q <= 1'b0;
      w_done_q <= 1'b0;
    end else begin
      if (m_axi_awvalid && m_axi_awready) aw_done_q <= 1'b1;
      if (m_axi_wvalid && m_axi_wready) w_done_q <= 1'b1;
    end
  end

  assign mem_ready = mem_we ? m_axi_bvalid : m_axi_arready;
  assign mem_error = (mem_we && m_axi_bvalid && m_axi_bresp[1]) ||
                     (m_axi_rvalid && m_axi_rresp[1]);

  assign dbg_tokens_o = '0;
  assign dbg_queues_o = '0;
  logic unused_inputs;
  assign unused_inputs = ^{m_axi_rid, m_axi_rlast, m_axi_bid, m_axi_rresp[0], m_axi_bresp[0]};
endmodule
