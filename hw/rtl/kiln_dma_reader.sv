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
  // This client's share of the AXI4 read channels (kiln_axi_rd_arbiter), and the read
  // data of the R channel
  output kiln_cfg_pkg::rd_req_t   rd_o,
  input  kiln_cfg_pkg::rd_rsp_t   rd_i,
  input  logic [DW-1:0]           r_data_i,
  output logic                    busy_o
);
  localparam int W = DW / 8;
  localparam int EB = ELEM_BYTES * 8;
  localparam bit WIDE = ELEM_BYTES >= W;  // an element spans whole beats
  localparam int EPB = WIDE ? 1 : W / ELEM_BYTES;     // elements per beat
  localparam int BPE = WIDE ? ELEM_BYTES / W : 1;     // beats per element
  localparam int LEPB = (EPB > 1) ? $clog2(EPB) : 1;

  // Commands: bursts on AR, and rows (count, first lane) for the unpacker.
  logic row_valid, u_pop, cmd_busy;
  logic [CW-1:0] row_count;
  logic [LEPB-1:0] row_lane;
  logic unused_lane;  // wide elements always start a beat
  assign unused_lane = ^row_lane;
  kiln_dma_cmd #(.ELEM_BYTES(ELEM_BYTES), .CMD_DEPTH(CMD_DEPTH)) cmds (
    .clk_i, .rst_ni, .cmd_valid_i, .cmd_ready_o, .cmd_addr_i, .cmd_count_i,
    .a_valid_o(rd_o.ar_valid), .a_ready_i(rd_i.ar_ready), .a_addr_o(rd_o.ar_addr),
    .a_len_o(rd_o.ar_len), .row_valid_o(row_valid), .row_pop_i(u_pop),
    .row_count_o(row_count), .row_lane_o(row_lane), .busy_o(cmd_busy));

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
    assign rd_o.r_ready = active_q && (!out_valid_q || elem_ready_i);
    assign r_fire = rd_i.r_valid && rd_o.r_ready;
    assign complete = r_fire && nbeat_q == $bits(nbeat_q)'(BPE - 1);
    assign elem_valid_o = out_valid_q;
    assign elem_data_o = gather_q;
    assign u_pop = !active_q && row_valid;

    always_ff @(posedge clk_i) begin
      if (!rst_ni) begin
        active_q <= 1'b0;
        left_q <= '0;
        nbeat_q <= '0;
        out_valid_q <= 1'b0;
      end else begin
        if (u_pop) begin
          active_q <= 1'b1;
          left_q <= row_count;
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
    assign rd_o.r_ready = active_q && (!beat_valid_q || release_beat) &&
                          !(release_beat && left_q == CW'(1));
    assign r_fire = rd_i.r_valid && rd_o.r_ready;
    assign elem_valid_o = beat_valid_q;
    assign elem_data_o = beat_q[lane_q * EB +: EB];
    assign u_pop = !active_q && row_valid;

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
          left_q <= row_count;
          lane_q <= row_lane;
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

  assign busy_o = active_q || cmd_busy;
endmodule
