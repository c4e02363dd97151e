// Verilog-2001 wrapper of kiln_top for a Vivado block design (module reference): AXI
// port names Vivado recognizes (s_axi_*, m_axi_*), a 4 KiB register window on the
// PS's general-purpose master (the register file decodes the low 8 bits), and the
// AXI4 signals kiln_top leaves implicit (cache, protection, lock, QoS) tied to
// defaults that the Zynq HP ports accept. Used by boards/*/vivado.tcl.
module kiln_zynq (
  (* X_INTERFACE_INFO = "xilinx.com:signal:clock:1.0 aclk CLK" *)
  (* X_INTERFACE_PARAMETER = "ASSOCIATED_BUSIF s_axi:m_axi, ASSOCIATED_RESET aresetn" *)
  input  wire        aclk,
  (* X_INTERFACE_INFO = "xilinx.com:signal:reset:1.0 aresetn RST" *)
  (* X_INTERFACE_PARAMETER = "POLARITY ACTIVE_LOW" *)
  input  wire        aresetn,
  input  wire [11:0] s_axi_awaddr,
  input  wire [2:0]  s_axi_awprot,
  input  wire        s_axi_awvalid,
  output wire        s_axi_awready,
  input  wire [31:0] s_axi_wdata,
  input  wire [3:0]  s_axi_wstrb,
  input  wire        s_axi_wvalid,
  output wire        s_axi_wready,
  output wire [1:0]  s_axi_bresp,
  output wire        s_axi_bvalid,
  input  wire        s_axi_bready,
  input  wire [11:0] s_axi_araddr,
  input  wire [2:0]  s_axi_arprot,
  input  wire        s_axi_arvalid,
  output wire        s_axi_arready,
  output wire [31:0] s_axi_rdata,
  output wire [1:0]  s_axi_rresp,
  output wire        s_axi_rvalid,
  input  wire        s_axi_rready,
  output wire [2:0]  m_axi_arid,
  output wire [31:0] m_axi_araddr,
  output wire [7:0]  m_axi_arlen,
  output wire [2:0]  m_axi_arsize,
  output wire [1:0]  m_axi_arburst,
  output wire        m_axi_arlock,
  output wire [3:0]  m_axi_arcache,
  output wire [2:0]  m_axi_arprot,
  output wire [3:0]  m_axi_arqos,
  output wire        m_axi_arvalid,
  input  wire        m_axi_arready,
  input  wire [2:0]  m_axi_rid,
  input  wire [63:0] m_axi_rdata,
  input  wire [1:0]  m_axi_rresp,
  input  wire        m_axi_rlast,
  input  wire        m_axi_rvalid,
  output wire        m_axi_rready,
  output wire [2:0]  m_axi_awid,
  output wire [31:0] m_axi_awaddr,
  output wire [7:0]  m_axi_awlen,
  output wire [2:0]  m_axi_awsize,
  output wire [1:0]  m_axi_awburst,
  output wire        m_axi_awlock,
  output wire [3:0]  m_axi_awcache,
  output wire [2:0]  m_axi_awprot,
  output wire [3:0]  m_axi_awqos,
  output wire        m_axi_awvalid,
  input  wire        m_axi_awready,
  output wire [63:0] m_axi_wdata,
  output wire [7:0]  m_axi_wstrb,
  output wire        m_axi_wlast,
  output wire        m_axi_wvalid,
  input  wire        m_axi_wready,
  input  wire [2:0]  m_axi_bid,
  input  wire [1:0]  m_axi_bresp,
  input  wire        m_axi_bvalid,
  output wire        m_axi_bready
);
  // Normal non-cacheable bufferable, unprivileged, no lock, no QoS: plain DMA traffic.
  assign m_axi_arlock = 1'b0;
  assign m_axi_awlock = 1'b0;
  assign m_axi_arcache = 4'b0011;
  assign m_axi_awcache = 4'b0011;
  assign m_axi_arprot = 3'b000;
  assign m_axi_awprot = 3'b000;
  assign m_axi_arqos = 4'b0000;
  assign m_axi_awqos = 4'b0000;

  wire [15:0] dbg_state;
  wire [63:0] dbg_tokens;
  wire [15:0] dbg_queues;
  wire        dbg_progress;
  kiln_top accel (
    .clk_i(aclk), .rst_ni(aresetn),
    .s_axil_awvalid(s_axi_awvalid), .s_axil_awready(s_axi_awready),
    .s_axil_awaddr(s_axi_awaddr[7:0]), .s_axil_wvalid(s_axi_wvalid),
    .s_axil_wready(s_axi_wready), .s_axil_wdata(s_axi_wdata), .s_axil_wstrb(s_axi_wstrb),
    .s_axil_bvalid(s_axi_bvalid), .s_axil_bready(s_axi_bready), .s_axil_bresp(s_axi_bresp),
    .s_axil_arvalid(s_axi_arvalid), .s_axil_arready(s_axi_arready),
    .s_axil_araddr(s_axi_araddr[7:0]), .s_axil_rvalid(s_axi_rvalid),
    .s_axil_rready(s_axi_rready), .s_axil_rdata(s_axi_rdata), .s_axil_rresp(s_axi_rresp),
    .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(m_axi_arready), .m_axi_arid(m_axi_arid),
    .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen), .m_axi_arsize(m_axi_arsize),
    .m_axi_arburst(m_axi_arburst), .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready),
    .m_axi_rid(m_axi_rid), .m_axi_rdata(m_axi_rdata), .m_axi_rresp(m_axi_rresp),
    .m_axi_rlast(m_axi_rlast), .m_axi_awvalid(m_axi_awvalid), .m_axi_awready(m_axi_awready),
    .m_axi_awid(m_axi_awid), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize), .m_axi_awburst(m_axi_awburst), .m_axi_wvalid(m_axi_wvalid),
    .m_axi_wready(m_axi_wready), .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb),
    .m_axi_wlast(m_axi_wlast), .m_axi_bvalid(m_axi_bvalid), .m_axi_bready(m_axi_bready),
    .m_axi_bid(m_axi_bid), .m_axi_bresp(m_axi_bresp),
    .dbg_state_o(dbg_state), .dbg_tokens_o(dbg_tokens), .dbg_queues_o(dbg_queues),
    .dbg_progress_o(dbg_progress));
endmodule
