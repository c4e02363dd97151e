// The GEMM core's arithmetic: for each batch row b and output column o,
// acc[b][o] + sum_i inp[b][i] * wgt[o][i], wrapping in the accumulator width.
// BATCH x BLOCK_IN x BLOCK_OUT multiply-accumulates, combinational (the compute
// pipeline registers the result).
module kiln_gemm (
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

  always_comb begin
    for (int b = 0; b < BATCH; b++) begin
      for (int o = 0; o < BO; o++) begin
        logic [AW-1:0] sum;
        sum = acc_i[(b * BO + o) * AW +: AW];
        for (int i = 0; i < BI; i++) begin
          // An exact IW x WW-bit signed product, sign-extended into the accumulator.
          logic signed [IW+WW-1:0] prod;
          prod = $signed(inp_i[(b * BI + i) * IW +: IW]) * $signed(wgt_i[(o * BI + i) * WW +: WW]);
          sum = sum + AW'(prod);
        end
        acc_o[(b * BO + o) * AW +: AW] = sum;
      end
    end
  end
endmodule
