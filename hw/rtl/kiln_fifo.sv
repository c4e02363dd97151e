// A synchronous first-in first-out queue with an occupancy view. Reads are
// combinational from the head (a register file, not block RAM: the queues are short).
module kiln_fifo #(
  parameter int WIDTH = 8,
  parameter int DEPTH = 4,
  localparam int AW = (DEPTH > 1) ? $clog2(DEPTH) : 1,
  localparam int CW = $clog2(DEPTH + 1)
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             push_i,
  input  logic [WIDTH-1:0] data_i,
  output logic             full_o,
  input  logic             pop_i,
  output logic [WIDTH-1:0] data_o,
  output logic             empty_o,
  output logic [CW-1:0]    count_o
);
  logic [WIDTH-1:0] mem_q [DEPTH];
  logic [AW-1:0] rd_q, wr_q;
  logic [CW-1:0] count_q;

  assign full_o  = count_q == CW'(DEPTH);
  assign empty_o = count_q == '0;
  assign count_o = count_q;
  assign data_o  = mem_q[rd_q];

  logic do_push, do_pop;
  assign do_push = push_i && !full_o;
  assign do_pop  = pop_i && !empty_o;

  logic [AW-1:0] rd_next, wr_next;
  assign rd_next = (rd_q == AW'(DEPTH - 1)) ? '0 : rd_q + 1'b1;
  assign wr_next = (wr_q == AW'(DEPTH - 1)) ? '0 : wr_q + 1'b1;

  always_ff @(posedge clk_i) begin
    if (do_push) mem_q[wr_q] <= data_i;
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      rd_q <= '0;
      wr_q <= '0;
      count_q <= '0;
    end else begin
      if (do_push) wr_q <= wr_next;
      if (do_pop) rd_q <= rd_next;
      count_q <= count_q + CW'(do_push) - CW'(do_pop);
    end
  end
endmodule
