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

  // Bridge <-> register file, bridge and core <-> memory
  kiln_cfg_pkg::axil_req_t axil;
  kiln_cfg_pkg::axil_rsp_t axil_rsp;
  kiln_cfg_pkg::mem_req_t h_req, c_req;
  kiln_cfg_pkg::mem_rsp_t h_rsp, c_rsp;
  logic core_rst;

  kiln_host_bridge #(.MEM_BYTES(MEM_BYTES), .TIMEOUT_CLKS(TIMEOUT_CLKS)) u_bridge (
    .clk_i, .rst_ni,
    .rx_valid_i(rx_valid), .rx_data_i(rx_data), .rx_frame_err_i(rx_frame_err),
    .tx_valid_o(tx_valid), .tx_ready_i(tx_ready), .tx_data_o(tx_data),
    .m_axil_o(axil), .m_axil_i(axil_rsp), .mem_o(h_req), .mem_i(h_rsp),
    .core_rst_o(core_rst));

  kiln_devmem #(.MEM_BYTES(MEM_BYTES)) u_mem (
    .clk_i, .rst_ni,
    .h_i(h_req), .h_o(h_rsp), .c_i(c_req), .c_o(c_rsp));

  kiln_inorder_top u_core (
    .clk_i, .rst_ni(rst_ni && !core_rst),
    .s_axil_i(axil), .s_axil_o(axil_rsp), .mem_o(c_req), .mem_i(c_rsp),
    .dbg_state_o, .dbg_progress_o);
endmodule
