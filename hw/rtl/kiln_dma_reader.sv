// Reads rows of ELEM_BYTES-byte elements from DRAM and delivers them in order, one per
// cycle. A command is (byte address, element count > 0); the address is a multiple of
// ELEM_BYTES. Commands queue up so that bursts of the next row are in flight while
// this one drains. Elements narrower than the bus are picked out of each beat.
module kiln_dma_reader #(
  parameter int ELEM_BYTES = 16,
  parameter int CMD_DEPTH = 4,
  localparam int AB = kiln_cfg_pkg::AXI_ADDR_BITS,
  localparam int DW = kiln_cfg_pkg::AXI_DATA_BITS,
  localparam int CW = kiln_cfg_pkg::MEM_X_SIZE_WIDTH  // element count: a row of a LOAD or STORE
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,
  // Commands
  input  logic                    cmd_valid_i,
  output logic                    cmd_ready_o,
  input  logic [AB-1:0]           cmd_addr_i,
  input  logic [CW-1:0]           cmd_count_i,
  // Elements
  output logic                    elem_valid_o,
  input  logic                    elem_ready_i,
  output logic [ELEM_BYTES*8-1:0] elem_data_o,
  // AXI4 read address and data channels (this client's share)
  output logic                    ar_valid_o,
  input  logic                    ar_ready_i,
  output logic [AB-1:0]           ar_addr_o,
  output logic [kiln_cfg_pkg::AXI_LEN_BITS-1:0] ar_len_o,
  input  logic                    r_valid_i,
  output logic                    r_ready_o,
  input  logic [DW-1:0]           r_data_i,
  output logic                    busy_o
);
  localparam int W = DW / 8;
  localparam int LW = $clog2(W);
  localparam int EB = ELEM_BYTES * 8;
  localparam bit WIDE = ELEM_BYTES >= W;  // an element spans whole beats
  localparam int EPB = WIDE ? 1 : W / ELEM_BYTES;     // elements per beat
  localparam int BPE = WIDE ? ELEM_BYTES / W : 1;     // beats per element
  localparam int LEPB = (EPB > 1) ? $clog2(EPB) : 1;
  localparam int LE = $clog2(ELEM_BYTES);

  // Each command goes to the burst generator (as a run of beats) and to the unpacker
  // (as the first element's lane and the element count).
  logic [31:0] beats;
  logic [LEPB-1:0] skip;
  always_comb begin
    if (WIDE) begin
      beats = 32'(cmd_count_i) * 32'(BPE);
      skip = '0;
    end else begin
      beats = (32'(cmd_addr_i[LW-1:0]) + (32'(cmd_count_i) << LE) + 32'(W - 1)) >> LW;
      skip = LEPB'(32'(cmd_addr_i[LW-1:0]) >> LE);
    end
  end

  logic a_full, a_empty, u_full, u_empty;
  logic [$clog2(CMD_DEPTH + 1)-1:0] a_count_unused, u_count_unused;
  logic a_pop, u_pop;
  logic [AB+31:0] a_head;
  logic [LEPB+CW-1:0] u_head;
  assign cmd_ready_o = !a_full && !u_full;
  logic unused_skip;  // wide elements always start a beat
  assign unused_skip = ^u_head;

  kiln_fifo #(.WIDTH(AB + 32), .DEPTH(CMD_DEPTH)) a_fifo (
    .clk_i, .rst_ni, .push_i(cmd_valid_i && cmd_ready_o),
    .data_i({{cmd_addr_i[AB-1:LW], LW'(0)}, beats}), .full_o(a_full),
    .pop_i(a_pop), .data_o(a_head), .empty_o(a_empty), .count_o(a_count_unused));
  kiln_fifo #(.WIDTH(LEPB + CW), .DEPTH(CMD_DEPTH)) u_fifo (
    .clk_i, .rst_ni, .push_i(cmd_valid_i && cmd_ready_o), .data_i({skip, cmd_count_i}),
    .full_o(u_full), .pop_i(u_pop), .data_o(u_head), .empty_o(u_empty), .count_o(u_count_unused));

  logic bg_ready, bg_busy;
  assign a_pop = !a_empty && bg_ready;
  kiln_burst_gen bursts (
    .clk_i, .rst_ni, .req_valid_i(!a_empty), .req_ready_o(bg_ready),
    .req_addr_i(a_head[AB+31:32]), .req_beats_i(a_head[31:0]),
    .a_valid_o(ar_valid_o), .a_ready_i(ar_ready_i), .a_addr_o(ar_addr_o), .a_len_o(ar_len_o),
    .busy_o(bg_busy));

  // Unpacker: the element count left in the current command.
  logic        active_q;
  logic [CW-1:0] left_q;
  logic        elem_fire;
  assign elem_fire = elem_valid_o && elem_ready_i;

  if (WIDE) begin : g_wide
    // Gather BPE beats into one element, first beat in the low bytes.
    logic [EB-1:0] gather_q;
    logic [$clog2(BPE + 1)-1:0] nbeat_q;
    logic out_valid_q;
    logic r_fire, complete;
    assign r_ready_o = active_q && (!out_valid_q || elem_ready_i);
    assign r_fire = r_valid_i && r_ready_o;
    assign complete = r_fire && nbeat_q == $bits(nbeat_q)'(BPE - 1);
    assign elem_valid_o = out_valid_q;
    assign elem_data_o = gather_q;
    assign u_pop = !active_q && !u_empty;

    always_ff @(posedge clk_i) begin
      if (!rst_ni) begin
        active_q <= 1'b0;
        left_q <= '0;
        nbeat_q <= '0;
        out_valid_q <= 1'b0;
      end else begin
        if (u_pop) begin
          active_q <= 1'b1;
          left_q <= u_head[CW-1:0];
        end
        if (elem_fire) out_valid_q <= 1'b0;
        if (r_fire) begin
          nbeat_q <= complete ? '0 : nbeat_q + 1'b1;
          if (complete) begin
            out_valid_q <= 1'b1;
            left_q <= left_q - 1'b1;
            if (left_q == CW'(1)) active_q <= 1'b0;
          end
        end
      end
    end

    if (BPE == 1) begin : g_one
      always_ff @(posedge clk_i) if (r_fire) gather_q <= r_data_i;
    end else begin : g_many
      always_ff @(posedge clk_i) if (r_fire) gather_q <= {r_data_i, gather_q[EB-1:DW]};
    end
  end else begin : g_narrow
    // Hold one beat and hand out its elements from lane `skip` on.
    logic [DW-1:0] beat_q;
    logic beat_valid_q;
    logic [LEPB-1:0] lane_q;
    logic first_q;
    logic last_lane, release_beat, r_fire;
    assign last_lane = lane_q == LEPB'(EPB - 1) || left_q == CW'(1);
    assign release_beat = elem_fire && last_lane;
    assign r_ready_o = active_q && (!beat_valid_q || release_beat) && !(release_beat && left_q == CW'(1));
    assign r_fire = r_valid_i && r_ready_o;
    assign elem_valid_o = beat_valid_q;
    assign elem_data_o = beat_q[lane_q * EB +: EB];
    assign u_pop = !active_q && !u_empty;

    always_ff @(posedge clk_i) begin
      if (!rst_ni) begin
        active_q <= 1'b0;
        left_q <= '0;
        beat_valid_q <= 1'b0;
        lane_q <= '0;
        first_q <= 1'b0;
        beat_q <= '0;
      end else begin
        if (u_pop) begin
          active_q <= 1'b1;
          left_q <= u_head[CW-1:0];
          lane_q <= u_head[LEPB+CW-1:CW];
          first_q <= 1'b1;
        end
        if (elem_fire) begin
          left_q <= left_q - 1'b1;
          lane_q <= lane_q + 1'b1;
          if (last_lane) beat_valid_q <= 1'b0;
          if (left_q == CW'(1)) active_q <= 1'b0;
        end
        if (r_fire) begin
          beat_q <= r_data_i;
          beat_valid_q <= 1'b1;
          first_q <= 1'b0;
          if (!first_q) lane_q <= '0;
        end
      end
    end
  end

  assign busy_o = active_q || !a_empty || !u_empty || bg_busy;
endmodule
