// UART transmitter, 8N1, LSB first: takes a byte when idle (valid/ready) and shifts out
// the start bit, eight data bits and the stop bit, CLKS_PER_BIT cycles each; ready again
// when the stop bit's time has passed.
module kiln_uart_tx #(
  parameter int CLKS_PER_BIT = 260
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic       valid_i,
  output logic       ready_o,
  input  logic [7:0] data_i,
  output logic       tx_o     // the line, idle high
);
  localparam int CW = $clog2(CLKS_PER_BIT + 1);
  localparam logic [CW-1:0] FULL = CW'(CLKS_PER_BIT - 1);

  logic [8:0] shift_q;  // {stop, data}, shifted out from bit 0 after the start bit
  logic [3:0] bits_q;   // bits whose time on the line has not ended (start included)
  logic [CW-1:0] cnt_q;

  assign ready_o = bits_q == 4'd0;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      shift_q <= '1;
      bits_q <= '0;
      cnt_q <= '0;
      tx_o <= 1'b1;
    end else if (ready_o) begin
      tx_o <= !valid_i;  // the start bit
      if (valid_i) begin
        shift_q <= {1'b1, data_i};
        bits_q <= 4'd10;
        cnt_q <= FULL;
      end
    end else if (cnt_q != '0) begin
      cnt_q <= cnt_q - 1'b1;
    end else begin
      bits_q <= bits_q - 1'b1;
      if (bits_q != 4'd1) begin
        tx_o <= shift_q[0];
        shift_q <= {1'b1, shift_q[8:1]};
        cnt_q <= FULL;
      end
    end
  end
endmodule
