// Shares the AXI4 read channels among N clients: round-robin on the address channel,
// the client index as ARID, and read data routed back by RID. Every client accepts its
// data without waiting on another client, so a stalled beat cannot deadlock the port.
// A presented address stays granted until it is taken (AXI: ARVALID and ARADDR are
// stable until ARREADY); clients hold their requests likewise.
module kiln_axi_rd_arbiter #(
  parameter int N = 5,
  parameter int IDW = 3,
  localparam int AB = kiln_cfg_pkg::AXI_ADDR_BITS,
  localparam int LB = kiln_cfg_pkg::AXI_LEN_BITS
) (
  input  logic            clk_i,
  input  logic            rst_ni,
  input  logic [N-1:0]    c_ar_valid_i,
  output logic [N-1:0]    c_ar_ready_o,
  input  logic [N*AB-1:0] c_ar_addr_i,
  input  logic [N*LB-1:0] c_ar_len_i,
  output logic [N-1:0]    c_r_valid_o,
  input  logic [N-1:0]    c_r_ready_i,
  // The master port
  output logic            ar_valid_o,
  input  logic            ar_ready_i,
  output logic [IDW-1:0]  ar_id_o,
  output logic [AB-1:0]   ar_addr_o,
  output logic [LB-1:0]   ar_len_o,
  input  logic            r_valid_i,
  output logic            r_ready_o,
  input  logic [IDW-1:0]  r_id_i
);
  localparam int LN = (N > 1) ? $clog2(N) : 1;
  logic [LN-1:0] last_q, grant, held_q;
  logic found, hold_q;

  // The request left waiting last cycle, else the first requester after the last
  // one granted.
  always_comb begin
    grant = last_q;
    found = 1'b0;
    if (hold_q) begin
      grant = held_q;
      found = 1'b1;
    end
    for (int k = 1; k <= N; k++) begin
      logic [LN-1:0] c;
      c = LN'((32'(last_q) + k) % N);
      if (!found && c_ar_valid_i[c]) begin
        grant = c;
        found = 1'b1;
      end
    end
  end

  assign ar_valid_o = found;
  assign ar_id_o    = IDW'(grant);
  assign ar_addr_o  = c_ar_addr_i[32'(grant) * AB +: AB];
  assign ar_len_o   = c_ar_len_i[32'(grant) * LB +: LB];
  always_comb begin
    c_ar_ready_o = '0;
    c_ar_ready_o[grant] = found && ar_ready_i;
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      last_q <= LN'(N - 1);
      hold_q <= 1'b0;
      held_q <= '0;
    end else begin
      if (found && ar_ready_i) last_q <= grant;
      hold_q <= found && !ar_ready_i;
      held_q <= grant;
    end
  end

  always_comb begin
    c_r_valid_o = '0;
    r_ready_o = 1'b0;
    for (int c = 0; c < N; c++) begin
      if (r_id_i == IDW'(c)) begin
        c_r_valid_o[c] = r_valid_i;
        r_ready_o = c_r_ready_i[c];
      end
    end
  end
endmodule
