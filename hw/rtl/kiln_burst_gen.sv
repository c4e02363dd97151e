// Splits a run of bus words into AXI4 INCR bursts: at most AXI_MAX_BURST beats, never
// crossing a 4 KiB boundary. One request (word address, beat count) at a time.
module kiln_burst_gen (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        req_valid_i,
  output logic        req_ready_o,
  input  logic [kiln_cfg_pkg::AXI_ADDR_BITS-1:0] req_addr_i,   // byte address, bus aligned
  input  logic [31:0] req_beats_i,                             // > 0
  output logic        a_valid_o,
  input  logic        a_ready_i,
  output logic [kiln_cfg_pkg::AXI_ADDR_BITS-1:0] a_addr_o,
  output logic [kiln_cfg_pkg::AXI_LEN_BITS-1:0] a_len_o,  // AXI encoding: beats - 1
  output logic        busy_o
);
  localparam int W = kiln_cfg_pkg::AXI_DATA_BITS / 8;
  localparam int LW = $clog2(W);
  localparam int AB = kiln_cfg_pkg::AXI_ADDR_BITS;
  localparam int WAB = AB - LW;
  localparam int PAGE_BEATS = 4096 / W;
  localparam int LPB = $clog2(PAGE_BEATS);

  logic        active_q;
  logic [WAB-1:0] wa_q;
  logic [31:0] left_q;
  logic [31:0] to_page, len;

  assign to_page = 32'(PAGE_BEATS) - 32'(wa_q[LPB-1:0]);
  always_comb begin
    len = left_q;
    if (len > 32'(kiln_cfg_pkg::AXI_MAX_BURST)) len = 32'(kiln_cfg_pkg::AXI_MAX_BURST);
    if (len > to_page) len = to_page;
  end

  logic unused_low;  // the request is bus aligned
  assign unused_low = ^req_addr_i[LW-1:0];
  assign req_ready_o = !active_q;
  assign a_valid_o   = active_q;
  assign a_addr_o    = {wa_q, LW'(0)};
  assign a_len_o     = kiln_cfg_pkg::AXI_LEN_BITS'(len - 1);
  assign busy_o      = active_q;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      active_q <= 1'b0;
      wa_q <= '0;
      left_q <= '0;
    end else if (!active_q) begin
      if (req_valid_i) begin
        active_q <= 1'b1;
        wa_q <= req_addr_i[AB-1:LW];
        left_q <= req_beats_i;
      end
    end else if (a_ready_i) begin
      wa_q <= wa_q + WAB'(len);
      left_q <= left_q - len;
      if (left_q == len) active_q <= 1'b0;
    end
  end
endmodule
