// The command side of kiln_dma_reader and kiln_dma_writer. A row command (byte address,
// element count > 0, the address a multiple of ELEM_BYTES) becomes bursts of full-width
// beats on an AXI4 address channel (kiln_burst_gen) and, in the same order, a row for
// the data side: its element count and the lane of its first element in the first beat
// (0 where an element fills a beat or more). CMD_DEPTH commands queue on each side, so
// the bursts of the next row are in flight while the data side works on this one.
module kiln_dma_cmd #(
  parameter int ELEM_BYTES = 16,
  parameter int CMD_DEPTH = 4,
  localparam int AB = kiln_cfg_pkg::AXI_ADDR_BITS,
  localparam int W = kiln_cfg_pkg::AXI_DATA_BITS / 8,
  localparam int CW = kiln_cfg_pkg::MEM_X_SIZE_WIDTH,  // element count: a row of a LOAD or STORE
  localparam bit WIDE = ELEM_BYTES >= W,
  localparam int EPB = WIDE ? 1 : W / ELEM_BYTES,      // elements per beat
  localparam int LEPB = (EPB > 1) ? $clog2(EPB) : 1
) (
  input  logic            clk_i,
  input  logic            rst_ni,
  // Commands
  input  logic            cmd_valid_i,
  output logic            cmd_ready_o,
  input  logic [AB-1:0]   cmd_addr_i,
  input  logic [CW-1:0]   cmd_count_i,
  // Bursts (AR or AW)
  output logic            a_valid_o,
  input  logic            a_ready_i,
  output logic [AB-1:0]   a_addr_o,
  output logic [kiln_cfg_pkg::AXI_LEN_BITS-1:0] a_len_o,
  // Rows for the data side, taken by row_pop_i
  output logic            row_valid_o,
  input  logic            row_pop_i,
  output logic [CW-1:0]   row_count_o,
  output logic [LEPB-1:0] row_lane_o,
  output logic            busy_o  // commands or bursts not yet handed on
);
  localparam int LW = $clog2(W);
  localparam int LE = $clog2(ELEM_BYTES);
  localparam int BPE = WIDE ? ELEM_BYTES / W : 1;  // beats per element

  logic [31:0] beats;
  logic [LEPB-1:0] lane;
  always_comb begin
    if (WIDE) begin
      beats = 32'(cmd_count_i) * 32'(BPE);
      lane = '0;
    end else begin
      beats = (32'(cmd_addr_i[LW-1:0]) + (32'(cmd_count_i) << LE) + 32'(W - 1)) >> LW;
      lane = LEPB'(32'(cmd_addr_i[LW-1:0]) >> LE);
    end
  end

  logic a_full, a_empty, r_full, r_empty, a_pop;
  logic [$clog2(CMD_DEPTH + 1)-1:0] a_count_unused, r_count_unused;
  logic [AB+31:0] a_head;
  assign cmd_ready_o = !a_full && !r_full;
  kiln_fifo #(.WIDTH(AB + 32), .DEPTH(CMD_DEPTH)) a_fifo (
    .clk_i, .rst_ni, .push_i(cmd_valid_i && cmd_ready_o),
    .data_i({{cmd_addr_i[AB-1:LW], LW'(0)}, beats}), .full_o(a_full),
    .pop_i(a_pop), .data_o(a_head), .empty_o(a_empty), .count_o(a_count_unused));
  kiln_fifo #(.WIDTH(LEPB + CW), .DEPTH(CMD_DEPTH)) r_fifo (
    .clk_i, .rst_ni, .push_i(cmd_valid_i && cmd_ready_o), .data_i({lane, cmd_count_i}),
    .full_o(r_full), .pop_i(row_pop_i), .data_o({row_lane_o, row_count_o}), .empty_o(r_empty),
    .count_o(r_count_unused));
  assign row_valid_o = !r_empty;

  logic bg_ready, bg_busy;
  assign a_pop = !a_empty && bg_ready;
  kiln_burst_gen bursts (
    .clk_i, .rst_ni, .req_valid_i(!a_empty), .req_ready_o(bg_ready),
    .req_addr_i(a_head[AB+31:32]), .req_beats_i(a_head[31:0]),
    .a_valid_o, .a_ready_i, .a_addr_o, .a_len_o, .busy_o(bg_busy));

  assign busy_o = !a_empty || !r_empty || bg_busy;
endmodule
