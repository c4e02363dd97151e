// Writes rows of ELEM_BYTES-byte elements to DRAM. A command is (byte address, element
// count > 0), the address a multiple of ELEM_BYTES; the elements follow in order.
// Elements narrower than the bus are packed into beats with byte strobes.
module kiln_dma_writer #(
  parameter int ELEM_BYTES = 16,
  parameter int CMD_DEPTH = 4,
  localparam int AB = kiln_cfg_pkg::AXI_ADDR_BITS,
  localparam int DW = kiln_cfg_pkg::AXI_DATA_BITS,
  localparam int CW = kiln_cfg_pkg::MEM_X_SIZE_WIDTH  // element count: a row of a LOAD or STORE
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,
  input  logic                    cmd_valid_i,
  output logic                    cmd_ready_o,
  input  logic [AB-1:0]           cmd_addr_i,
  input  logic [CW-1:0]           cmd_count_i,
  input  logic                    elem_valid_i,
  output logic                    elem_ready_o,
  input  logic [ELEM_BYTES*8-1:0] elem_data_i,
  // AXI4 write channels
  output logic                    aw_valid_o,
  input  logic                    aw_ready_i,
  output logic [AB-1:0]           aw_addr_o,
  output logic [kiln_cfg_pkg::AXI_LEN_BITS-1:0] aw_len_o,
  output logic                    w_valid_o,
  input  logic                    w_ready_i,
  output logic [DW-1:0]           w_data_o,
  output logic [DW/8-1:0]         w_strb_o,
  output logic                    w_last_o,
  input  logic                    b_valid_i,
  output logic                    b_ready_o,
  output logic                    busy_o
);
  localparam int W = DW / 8;
  localparam int EB = ELEM_BYTES * 8;
  localparam bit WIDE = ELEM_BYTES >= W;
  localparam int EPB = WIDE ? 1 : W / ELEM_BYTES;
  localparam int BPE = WIDE ? ELEM_BYTES / W : 1;
  localparam int LEPB = (EPB > 1) ? $clog2(EPB) : 1;

  logic row_valid, u_pop, cmd_busy;
  logic [CW-1:0] row_count;
  logic [LEPB-1:0] row_lane;
  logic [2:0] len_count_unused;
  logic unused_lane;  // wide elements always start a beat
  assign unused_lane = ^row_lane;

  // Write responses outstanding (fewer than 2^PW bursts).
  localparam int PW = 8;
  logic [PW-1:0] pending_q;

  // Address channel: bursts, whose lengths the data channel follows for WLAST.
  logic bg_valid, len_full, len_empty, len_pop;
  logic [kiln_cfg_pkg::AXI_LEN_BITS-1:0] bg_len, len_head;
  kiln_dma_cmd #(.ELEM_BYTES(ELEM_BYTES), .CMD_DEPTH(CMD_DEPTH)) cmds (
    .clk_i, .rst_ni, .cmd_valid_i, .cmd_ready_o, .cmd_addr_i, .cmd_count_i,
    .a_valid_o(bg_valid), .a_ready_i(aw_valid_o && aw_ready_i), .a_addr_o(aw_addr_o),
    .a_len_o(bg_len), .row_valid_o(row_valid), .row_pop_i(u_pop),
    .row_count_o(row_count), .row_lane_o(row_lane), .busy_o(cmd_busy));
  assign aw_valid_o = bg_valid && !len_full && pending_q != '1;
  assign aw_len_o = bg_len;
  kiln_fifo #(.WIDTH(kiln_cfg_pkg::AXI_LEN_BITS), .DEPTH(4)) len_fifo (
    .clk_i, .rst_ni, .push_i(aw_valid_o && aw_ready_i), .data_i(bg_len), .full_o(len_full),
    .pop_i(len_pop), .data_o(len_head), .empty_o(len_empty), .count_o(len_count_unused));

  // Data channel: a beat waits for its burst's address to be issued (for WLAST).
  logic beat_valid, w_fire;
  logic [kiln_cfg_pkg::AXI_LEN_BITS-1:0] nbeat_q;  // the beat in its burst
  assign w_valid_o = beat_valid && !len_empty;
  assign w_fire = w_valid_o && w_ready_i;
  assign w_last_o = nbeat_q == len_head;
  assign len_pop = w_fire && w_last_o;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) nbeat_q <= '0;
    else if (w_fire) nbeat_q <= w_last_o ? '0 : nbeat_q + 1'b1;
  end

  logic active_q;
  logic [CW-1:0] left_q;
  logic elem_fire;
  assign elem_fire = elem_valid_i && elem_ready_o;
  assign u_pop = !active_q && row_valid;

  if (WIDE) begin : g_wide
    // Hold one element and send it as BPE beats, low bytes first.
    logic [EB-1:0] hold_q;
    logic held_q;
    logic [$clog2(BPE + 1)-1:0] part_q;
    logic last_part;
    assign last_part = part_q == $bits(part_q)'(BPE - 1);
    assign beat_valid = held_q;
    assign w_data_o = hold_q[32'(part_q) * DW +: DW];
    assign w_strb_o = '1;
    assign elem_ready_o = active_q && (!held_q || (w_fire && last_part));
    always_ff @(posedge clk_i) begin
      if (!rst_ni) begin
        held_q <= 1'b0;
        part_q <= '0;
        active_q <= 1'b0;
        left_q <= '0;
        hold_q <= '0;
      end else begin
        if (u_pop) begin
          active_q <= 1'b1;
          left_q <= row_count;
        end
        if (w_fire) begin
          part_q <= last_part ? '0 : part_q + 1'b1;
          if (last_part) held_q <= 1'b0;
        end
        if (elem_fire) begin
          hold_q <= elem_data_i;
          held_q <= 1'b1;
          left_q <= left_q - 1'b1;
          if (left_q == CW'(1)) active_q <= 1'b0;
        end
      end
    end
  end else begin : g_narrow
    // Pack elements into a beat from lane `skip` on; the beat leaves when its last
    // lane or the row's last element is filled.
    logic [DW-1:0] pack_q;
    logic [W-1:0] strb_q;
    logic full_q;
    logic [LEPB-1:0] lane_q;
    assign beat_valid = full_q;
    assign w_data_o = pack_q;
    assign w_strb_o = strb_q;
    assign elem_ready_o = active_q && !full_q;
    always_ff @(posedge clk_i) begin
      if (!rst_ni) begin
        pack_q <= '0;
        strb_q <= '0;
        full_q <= 1'b0;
        lane_q <= '0;
        active_q <= 1'b0;
        left_q <= '0;
      end else begin
        if (u_pop) begin
          active_q <= 1'b1;
          left_q <= row_count;
          lane_q <= row_lane;
        end
        if (w_fire) begin
          full_q <= 1'b0;
          strb_q <= '0;
        end
        if (elem_fire) begin
          pack_q[32'(lane_q) * EB +: EB] <= elem_data_i;
          strb_q[32'(lane_q) * ELEM_BYTES +: ELEM_BYTES] <= '1;
          lane_q <= lane_q + 1'b1;
          left_q <= left_q - 1'b1;
          if (lane_q == LEPB'(EPB - 1) || left_q == CW'(1)) full_q <= 1'b1;
          if (left_q == CW'(1)) active_q <= 1'b0;
        end
      end
    end
  end

  assign b_ready_o = 1'b1;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) pending_q <= '0;
    else pending_q <= pending_q + PW'(aw_valid_o && aw_ready_i) - PW'(b_valid_i);
  end

  assign busy_o = active_q || cmd_busy || !len_empty || beat_valid ||
                  pending_q != 0;
endmodule
