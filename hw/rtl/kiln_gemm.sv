// The GEMM core's arithmetic: for each batch row b and output column o,
// acc[b][o] + sum_i inp[b][i] * wgt[o][i], wrapping in the accumulator width.
// BATCH x BLOCK_IN x BLOCK_OUT multiply-accumulates, combinational (the compute
// pipeline registers the result).
//
// PAIR_PRODUCTS computes the two products inp[b][i] * wgt[o][i] and
// inp[b][i] * wgt[o+1][i], which share their input, on one multiplier:
// (wgt[o+1][i] * 2^PW + wgt[o][i]) * inp[b][i], PW = INP_WIDTH + WGT_WIDTH. The low PW
// bits are the first product exactly (it fits PW signed bits); the bits above, plus the
// sign of the low part (which borrowed from them), are the second. For int8 that is a
// 25 x 8 multiply, which a Xilinx DSP48 (25 x 18) holds: half the DSPs for the same
// results. iCE40's 16 x 16 SB_MAC16 cannot hold it, so iCE40 builds leave it off.
module kiln_gemm #(
  parameter int PAIR_PRODUCTS = 0
) (
  input  logic [kiln_cfg_pkg::INP_ELEM_BITS-1:0] inp_i,
  input  logic [kiln_cfg_pkg::WGT_ELEM_BITS-1:0] wgt_i,
  input  logic [kiln_cfg_pkg::ACC_ELEM_BITS-1:0] acc_i,
  output logic [kiln_cfg_pkg::ACC_ELEM_BITS-1:0] acc_o
);
  localparam int BATCH = kiln_cfg_pkg::BATCH;
  localparam int BI = kiln_cfg_pkg::BLOCK_IN;
  localparam int BO = kiln_cfg_pkg::BLOCK_OUT;
  localparam int IW = kiln_cfg_pkg::INP_WIDTH;
  localparam int WW = kiln_cfg_pkg::WGT_WIDTH;
  localparam int AW = kiln_cfg_pkg::ACC_WIDTH;
  localparam int PW = IW + WW;  // an exact product's width

  // Every product, exact and sign-extended to the accumulator's width:
  // prods[(b * BO + o) * BI + i]. An array of wires (for Yosys a list of registers:
  // mem2reg), not one wide vector: the simulator rebuilt such a vector by a chain of wide
  // concatenations every cycle (two thirds of default's simulation time). Each product is
  // declared AW bits wide, so that Verilator extends it once, where it is made (synthesis
  // keeps the multiplier at the operands' widths: the product of IW and WW signed bits
  // needs PW).
  (* mem2reg *) logic [AW-1:0] prods [BATCH*BO*BI];
  for (genvar b = 0; b < BATCH; b++) begin : g_batch
    for (genvar i = 0; i < BI; i++) begin : g_in
      logic signed [IW-1:0] x;
      assign x = inp_i[(b * BI + i) * IW +: IW];
      if (PAIR_PRODUCTS != 0 && BO % 2 == 0) begin : g_paired
        for (genvar o = 0; o < BO; o = o + 2) begin : g_out
          // One bit more than w1 * 2^PW needs: w1 = -2^(WW-1) with w0 < 0 goes below it.
          logic signed [WW-1:0] w0, w1;
          logic signed [WW+PW:0] packed_w;
          logic signed [2*PW:0] p;  // the whole product of packed_w and x
          assign w0 = wgt_i[(o * BI + i) * WW +: WW];
          assign w1 = wgt_i[((o + 1) * BI + i) * WW +: WW];
          assign packed_w = {w1[WW-1], w1, PW'(0)} + (WW+PW+1)'(w0);
          assign p = packed_w * x;
          logic signed [PW-1:0] p0, p1;
          assign p0 = p[PW-1:0];
          assign p1 = p[2*PW-1:PW] + PW'(p[PW-1]);
          assign prods[(b * BO + o) * BI + i] = AW'(p0);
          assign prods[(b * BO + o + 1) * BI + i] = AW'(p1);
          logic unused_sign;  // the second product fits PW bits: the top bit only extends it
          assign unused_sign = p[2*PW];
        end
      end else begin : g_single
        for (genvar o = 0; o < BO; o++) begin : g_out
          logic signed [WW-1:0] w;
          logic signed [AW-1:0] p;
          assign w = wgt_i[(o * BI + i) * WW +: WW];
          assign p = w * x;
          assign prods[(b * BO + o) * BI + i] = p;
        end
      end
    end
  end

  always_comb begin
    for (int b = 0; b < BATCH; b++) begin
      for (int o = 0; o < BO; o++) begin
        logic [AW-1:0] sum;
        sum = acc_i[(b * BO + o) * AW +: AW];
        for (int i = 0; i < BI; i++)
          sum = sum + prods[(b * BO + o) * BI + i];
        acc_o[(b * BO + o) * AW +: AW] = sum;
      end
    end
  end
endmodule
