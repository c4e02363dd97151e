// UART receiver, 8N1, LSB first. The line is synchronized (two flops), a start bit is
// confirmed at its middle and every bit sampled at its middle; a byte whose stop bit
// is low is dropped and reported as a framing error.
module kiln_uart_rx #(
  parameter int CLKS_PER_BIT = 260  // clock cycles per bit: f_clk / baud, at least 4
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic       rx_i,          // the line, idle high
  output logic       valid_o,       // one cycle: data_o holds a received byte
  output logic [7:0] data_o,
  output logic       frame_err_o    // one cycle: a byte with a low stop bit was dropped
);
  localparam int CW = $clog2(CLKS_PER_BIT + 1);
  localparam logic [CW-1:0] FULL = CW'(CLKS_PER_BIT - 1);
  localparam logic [CW-1:0] HALF = CW'(CLKS_PER_BIT / 2 - 1);

  typedef enum logic [1:0] {IDLE = 2'd0, START = 2'd1, DATA = 2'd2, STOP = 2'd3} state_e;
  state_e state_q;
  logic [1:0] sync_q;
  logic [CW-1:0] cnt_q;
  logic [2:0] bit_q;
  logic [7:0] shift_q;
  logic line;
  assign line = sync_q[1];

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      sync_q <= 2'b11;
      state_q <= IDLE;
      cnt_q <= '0;
      bit_q <= '0;
      shift_q <= '0;
      valid_o <= 1'b0;
      data_o <= '0;
      frame_err_o <= 1'b0;
    end else begin
      sync_q <= {sync_q[0], rx_i};
      valid_o <= 1'b0;
      frame_err_o <= 1'b0;
      case (state_q)
        IDLE: if (!line) begin
          state_q <= START;
          cnt_q <= HALF;
        end
        START: if (cnt_q != '0) cnt_q <= cnt_q - 1'b1;
          else if (line) state_q <= IDLE;  // a glitch, not a start bit
          else begin
            state_q <= DATA;
            cnt_q <= FULL;
            bit_q <= '0;
          end
        DATA: if (cnt_q != '0) cnt_q <= cnt_q - 1'b1;
          else begin
            shift_q <= {line, shift_q[7:1]};
            cnt_q <= FULL;
            bit_q <= bit_q + 1'b1;
            if (bit_q == 3'd7) state_q <= STOP;
          end
        STOP: if (cnt_q != '0) cnt_q <= cnt_q - 1'b1;
          else begin
            // Back to IDLE at the stop bit's middle: the next start edge is not missed.
            state_q <= IDLE;
            if (line) begin
              valid_o <= 1'b1;
              data_o <= shift_q;
            end else begin
              frame_err_o <= 1'b1;
            end
          end
        default: state_q <= IDLE;
      endcase
    end
  end
endmodule
