// A dependency-token queue between two modules. Tokens carry no data, so the queue is
// its occupancy counter; a push waits while it is full, a pop while it is empty.
module kiln_token_queue #(
  parameter int DEPTH = 65535,
  localparam int CW = $clog2(DEPTH + 1)
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  input  logic          clear_i,
  input  logic          push_i,
  output logic          full_o,
  input  logic          pop_i,
  output logic          empty_o,
  output logic [CW-1:0] count_o
);
  logic [CW-1:0] count_q;
  logic do_push, do_pop;

  assign full_o  = count_q == CW'(DEPTH);
  assign empty_o = count_q == '0;
  assign count_o = count_q;
  assign do_push = push_i && !full_o;
  assign do_pop  = pop_i && !empty_o;

  always_ff @(posedge clk_i) begin
    if (!rst_ni || clear_i) count_q <= '0;
    else count_q <= count_q + CW'(do_push) - CW'(do_pop);
  end
endmodule
