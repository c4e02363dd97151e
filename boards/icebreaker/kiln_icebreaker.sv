// The iCEBreaker (iCE40 UP5K) board top: the 12 MHz oscillator through the PLL to
// 30 MHz (PLL_DIVF, which the flow sets from board.json target_mhz), a reset from the PLL
// lock and the user button, kiln_uart_top on the FTDI FT2232H's channel B UART (1 Mbaud:
// 30 clocks per bit, board.json host_link) and two
// LEDs: green while bytes move on the link, red while the core makes progress.
// Pins: icebreaker.pcf.
module kiln_icebreaker #(
  // The PLL makes 12 MHz * (PLL_DIVF + 1) / 32 (DIVR 0, DIVQ 5; the VCO, 12 MHz *
  // (PLL_DIVF + 1), must stay within 533..1066 MHz): 79 gives 30 MHz, 71 gives 27 MHz,
  // 63 gives 24 MHz, 47 gives 18 MHz, each a whole number of clocks per bit at 1 Mbaud.
  // kiln synth sets it from board.json target_mhz (boards/flow/board.h pll_divf).
  parameter int PLL_DIVF = 79
) (
  input  logic clk_i,   // 12 MHz oscillator
  input  logic btn_ni,  // user button, active low: resets the board top
  input  logic rx_i,    // from the host (FTDI channel B TXD)
  output logic tx_o,    // to the host (FTDI channel B RXD)
  output logic led_rn,  // red LED, active low
  output logic led_gn   // green LED, active low
);
  localparam int CLK_HZ = 12_000_000 / 32 * (PLL_DIVF + 1);
  localparam int BAUD = 1_000_000;

  logic clk, locked;
`ifdef SYNTHESIS
  // As icepll -i 12 -o 30 has it: DIVR 0, DIVF 79, DIVQ 5, FILTER_RANGE 1 (12 * 80 / 32 =
  // 30.000 MHz); FILTER_RANGE 1 serves the 12 MHz reference at any DIVF.
  SB_PLL40_PAD #(
    .FEEDBACK_PATH("SIMPLE"),
    .DIVR(4'b0000),
    .DIVF(7'(PLL_DIVF)),
    .DIVQ(3'b101),
    .FILTER_RANGE(3'b001)
  ) u_pll (
    .PACKAGEPIN(clk_i),
    .PLLOUTGLOBAL(clk),
    .PLLOUTCORE(),
    .EXTFEEDBACK(1'b0),
    .DYNAMICDELAY(8'b0),
    .LOCK(locked),
    .BYPASS(1'b0),
    .RESETB(1'b1),
    .LATCHINPUTVALUE(1'b0),
    .SDO(),
    .SDI(1'b0),
    .SCLK(1'b0)
  );
`else
  assign clk = clk_i;
  assign locked = 1'b1;
`endif

  // Reset: held while the PLL is not locked or the button is down, and 15 cycles after.
  logic [1:0] btn_q;
  logic [3:0] rst_cnt_q;
  logic rst_n;  // a register: the reset's fan-out starts at a flip-flop, not at logic
  always_ff @(posedge clk) begin
    btn_q <= {btn_q[0], btn_ni};
    if (!locked || !btn_q[1]) rst_cnt_q <= '0;
    else if (rst_cnt_q != 4'hf) rst_cnt_q <= rst_cnt_q + 1'b1;
    rst_n <= rst_cnt_q == 4'hf;
  end

  logic link_active, progress;
  logic [kiln_cfg_pkg::DBG_STATE_BITS-1:0] unused_state;
  kiln_uart_top #(
    .CLKS_PER_BIT(CLK_HZ / BAUD),
    .MEM_BYTES(131072),
    .TIMEOUT_CLKS(CLK_HZ / 10)  // 100 ms
  ) u_top (
    .clk_i(clk), .rst_ni(rst_n),
    .uart_rx_i(rx_i), .uart_tx_o(tx_o), .link_active_o(link_active),
    .dbg_state_o(unused_state), .dbg_progress_o(progress));

  // LEDs stay on about 35 ms after the last activity, so that a blink is visible.
  logic [19:0] link_led_q, core_led_q;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      link_led_q <= '0;
      core_led_q <= '0;
    end else begin
      link_led_q <= link_active ? '1 : link_led_q - (link_led_q != '0 ? 20'd1 : 20'd0);
      core_led_q <= progress ? '1 : core_led_q - (core_led_q != '0 ? 20'd1 : 20'd0);
    end
  end
  assign led_gn = link_led_q == '0;
  assign led_rn = core_led_q == '0;

  logic unused;
  assign unused = ^unused_state;
endmodule
