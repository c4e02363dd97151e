// One scratchpad: a simple dual-port RAM (one write port, one registered read port),
// written so that Yosys and FPGA tools infer block RAM. The read data holds its value
// while re_i is low.
//
// With PARITY, each word has a parity bit beside it, written with the word and read
// with it: perr_o rises with the read data (the cycle after re_i) when the word's bits
// no longer match their parity, as after a stuck-at or flipped cell (docs/testing.md,
// "Injected faults"). Both arrays start at zero, as block RAM does, so a word never
// written reads back without an error.
module kiln_sram #(
  parameter int WIDTH = 8,
  parameter int DEPTH = 16,
  parameter int PARITY = 0,
  localparam int AW = $clog2(DEPTH)
) (
  input  logic             clk_i,
  input  logic             we_i,
  input  logic [AW-1:0]    waddr_i,
  input  logic [WIDTH-1:0] wdata_i,
  input  logic             re_i,
  input  logic [AW-1:0]    raddr_i,
  output logic [WIDTH-1:0] rdata_o,
  output logic             perr_o
);
  logic [WIDTH-1:0] mem [DEPTH];

  always_ff @(posedge clk_i) begin
    if (we_i) mem[waddr_i] <= wdata_i;
  end

  // Read-during-write to the same address returns the old data; compute forwards.
  always_ff @(posedge clk_i) begin
    if (re_i) rdata_o <= mem[raddr_i];
  end

  if (PARITY != 0) begin : g_parity
    logic par [DEPTH];
    logic rpar_q, read_q;
    always_ff @(posedge clk_i) begin
      if (we_i) par[waddr_i] <= ^wdata_i;
    end
    always_ff @(posedge clk_i) begin
      read_q <= re_i;
      if (re_i) rpar_q <= par[raddr_i];
    end
    assign perr_o = read_q && (^rdata_o != rpar_q);
  end else begin : g_no_parity
    assign perr_o = 1'b0;
  end
endmodule
