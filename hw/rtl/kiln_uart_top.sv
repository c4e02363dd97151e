// A small FPGA's top: the in-order core (kiln_inorder_top), its device memory
// (kiln_devmem: SPRAM on the iCE40 UP5K) and a UART host link (kiln_uart_rx/tx, 8N1)
// whose protocol bridge (kiln_host_bridge) reads and writes the core's registers and
// memory and can reset the core. Board wrappers (boards/*/) add the clock and pins; the
// harness of hw/sim/uart drives the UART lines from C++ under Verilator.
module kiln_uart_top #(
  parameter int CLKS_PER_BIT = 260,       // f_clk / baud (30 MHz / 115200)
  parameter int MEM_BYTES = 131072,       // device memory
  parameter int TIMEOUT_CLKS = 3000000    // a frame's bytes may pause this long (100 ms)
) (
  input  logic        clk_i,
  input  logic        rst_ni,         // synchronous, active low
  input  logic        uart_rx_i,      // from the host
  output logic        uart_tx_o,      // to the host
  output logic        link_active_o,  // a byte came or went this cycle (for a LED)
  // Simulation view (the core's)
  output logic [kiln_cfg_pkg::DBG_STATE_BITS-1:0] dbg_state_o,
  output logic        dbg_progress_o
);
  // UART
  logic rx_valid, rx_frame_err, tx_valid, tx_ready;
  logic [7:0] rx_data, tx_data;
  kiln_uart_rx #(.CLKS_PER_BIT(CLKS_PER_BIT)) u_rx (
    .clk_i, .rst_ni, .rx_i(uart_rx_i),
    .valid_o(rx_valid), .data_o(rx_data), .frame_err_o(rx_frame_err));
  kiln_uart_tx #(.CLKS_PER_BIT(CLKS_PER_BIT)) u_tx (
    .clk_i, .rst_ni, .valid_i(tx_valid), .ready_o(tx_ready), .data_i(tx_data),
    .tx_o(uart_tx_o));
  assign link_active_o = rx_valid || (tx_valid && tx_ready);  // a byte came or went

  // Bridge <-> register file
  logic awvalid, awready, wvalid, wready, bvalid, bready, arvalid, arready, rvalid, rready;
  logic [7:0] awaddr, araddr;
  logic [31:0] wdata, rdata;
  logic [3:0] wstrb;
  logic [1:0] bresp, rresp;
  // Bridge and core <-> memory
  logic h_valid, h_ready, h_we, h_rvalid, h_error;
  logic [31:0] h_addr;
  logic [63:0] h_wdata, h_rdata;
  logic [7:0] h_wstrb;
  logic c_valid, c_ready, c_we, c_rvalid, c_error;
  logic [31:0] c_addr;
  logic [63:0] c_wdata, c_rdata;
  logic [7:0] c_wstrb;
  logic core_rst;

  kiln_host_bridge #(.MEM_BYTES(MEM_BYTES), .TIMEOUT_CLKS(TIMEOUT_CLKS)) u_bridge (
    .clk_i, .rst_ni,
    .rx_valid_i(rx_valid), .rx_data_i(rx_data), .rx_frame_err_i(rx_frame_err),
    .tx_valid_o(tx_valid), .tx_ready_i(tx_ready), .tx_data_o(tx_data),
    .m_awvalid_o(awvalid), .m_awready_i(awready), .m_awaddr_o(awaddr),
    .m_wvalid_o(wvalid), .m_wready_i(wready), .m_wdata_o(wdata), .m_wstrb_o(wstrb),
    .m_bvalid_i(bvalid), .m_bready_o(bready), .m_bresp_i(bresp),
    .m_arvalid_o(arvalid), .m_arready_i(arready), .m_araddr_o(araddr),
    .m_rvalid_i(rvalid), .m_rready_o(rready), .m_rdata_i(rdata), .m_rresp_i(rresp),
    .mem_valid_o(h_valid), .mem_ready_i(h_ready), .mem_we_o(h_we), .mem_addr_o(h_addr),
    .mem_wdata_o(h_wdata), .mem_wstrb_o(h_wstrb), .mem_rvalid_i(h_rvalid),
    .mem_rdata_i(h_rdata), .mem_error_i(h_error),
    .core_rst_o(core_rst));

  kiln_devmem #(.MEM_BYTES(MEM_BYTES)) u_mem (
    .clk_i, .rst_ni,
    .h_valid_i(h_valid), .h_ready_o(h_ready), .h_we_i(h_we), .h_addr_i(h_addr),
    .h_wdata_i(h_wdata), .h_wstrb_i(h_wstrb), .h_rvalid_o(h_rvalid), .h_rdata_o(h_rdata),
    .h_error_o(h_error),
    .c_valid_i(c_valid), .c_ready_o(c_ready), .c_we_i(c_we), .c_addr_i(c_addr),
    .c_wdata_i(c_wdata), .c_wstrb_i(c_wstrb), .c_rvalid_o(c_rvalid), .c_rdata_o(c_rdata),
    .c_error_o(c_error));

  kiln_inorder_top u_core (
    .clk_i, .rst_ni(rst_ni && !core_rst),
    .s_axil_awvalid(awvalid), .s_axil_awready(awready), .s_axil_awaddr(awaddr),
    .s_axil_wvalid(wvalid), .s_axil_wready(wready), .s_axil_wdata(wdata),
    .s_axil_wstrb(wstrb), .s_axil_bvalid(bvalid), .s_axil_bready(bready),
    .s_axil_bresp(bresp),
    .s_axil_arvalid(arvalid), .s_axil_arready(arready), .s_axil_araddr(araddr),
    .s_axil_rvalid(rvalid), .s_axil_rready(rready), .s_axil_rdata(rdata),
    .s_axil_rresp(rresp),
    .mem_valid_o(c_valid), .mem_ready_i(c_ready), .mem_we_o(c_we), .mem_addr_o(c_addr),
    .mem_wdata_o(c_wdata), .mem_wstrb_o(c_wstrb), .mem_rvalid_i(c_rvalid),
    .mem_rdata_i(c_rdata), .mem_error_i(c_error),
    .dbg_state_o, .dbg_progress_o);
endmodule
