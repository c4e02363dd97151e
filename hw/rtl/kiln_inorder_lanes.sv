// The in-order core's lane pipeline: a GEMM or an ALU micro-op walks an accumulator
// row lane by lane (kiln_inorder_top's LANE state feeds one lane a cycle). Stage 1 (the
// caller's LANE cycle) registers lane l's operands; stage 2 registers the lane's
// BLOCK_IN exact products (on DSPs) and, inside kiln_alu, the ALU's results; stage 3
// sums the products as a tree (exact in TW bits) and registers the ALU's selection;
// stage 4 hands the lane's result back (wb_*), which the caller writes into its result
// row. Each stage is one multiplier, one adder tree, one ALU or one add deep: iCE40
// timing.
module kiln_inorder_lanes #(
  parameter int LW = (kiln_cfg_pkg::BATCH * kiln_cfg_pkg::BLOCK_OUT > 1) ?
                     $clog2(kiln_cfg_pkg::BATCH * kiln_cfg_pkg::BLOCK_OUT) : 1
) (
  input  logic clk_i,
  input  logic rst_ni,
  // Stage 1: lane lane_i's operands are on the scratchpads' read ports this cycle
  input  logic                                   s1_valid_i,
  input  logic [LW-1:0]                          lane_i,
  input  logic [kiln_cfg_pkg::ACC_ELEM_BITS-1:0] acc_rdata_i,
  input  logic [kiln_cfg_pkg::INP_ELEM_BITS-1:0] inp_rdata_i,
  input  logic [kiln_cfg_pkg::WGT_ELEM_BITS-1:0] wgt_rdata_i,
  // The ALU's second operand: the immediate, or lane l of the tensor operand row
  input  logic                                   use_imm_i,
  input  logic [kiln_cfg_pkg::ALU_IMM_WIDTH-1:0] imm_i,
  input  logic [kiln_cfg_pkg::ACC_ELEM_BITS-1:0] row_i,
  input  kiln_cfg_pkg::alu_op_e                  alu_op_i,
  input  logic                                   is_alu_i,
  // Stage 4: lane wb_lane_o's result
  output logic                                   wb_valid_o,
  output logic [LW-1:0]                          wb_lane_o,
  output logic [kiln_cfg_pkg::ACC_WIDTH-1:0]     wb_data_o,
  output logic                                   done_o  // no lane is in the pipeline
);
  localparam int AW = kiln_cfg_pkg::ACC_WIDTH;
  localparam int BI = kiln_cfg_pkg::BLOCK_IN;
  localparam int BO = kiln_cfg_pkg::BLOCK_OUT;
  localparam int IW = kiln_cfg_pkg::INP_WIDTH;
  localparam int WW = kiln_cfg_pkg::WGT_WIDTH;
  localparam int PW = IW + WW;
  localparam int TW = PW + $clog2(BI);

  logic s2_valid_q, s3_valid_q, s4_valid_q;
  logic [LW-1:0] s2_lane_q, s3_lane_q, s4_lane_q;
  logic [AW-1:0] s2_acc_q, s2_b_q;
  logic [BI*IW-1:0] s2_inp_q;
  logic [BI*WW-1:0] s2_wgt_q;
  logic [LW-1:0] s1_b, s1_o;  // batch row and output column of the lane
  assign s1_b = LW'(32'(lane_i) / BO);
  assign s1_o = LW'(32'(lane_i) % BO);
  logic [AW-1:0] imm_ext;
  assign imm_ext = AW'($signed(imm_i));
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      s2_valid_q <= 1'b0;
      s3_valid_q <= 1'b0;
      s4_valid_q <= 1'b0;
    end else begin
      s2_valid_q <= s1_valid_i;
      s3_valid_q <= s2_valid_q;
      s4_valid_q <= s3_valid_q;
    end
    if (s1_valid_i) begin
      s2_lane_q <= lane_i;
      s2_acc_q <= acc_rdata_i[32'(lane_i) * AW +: AW];
      s2_b_q <= use_imm_i ? imm_ext : row_i[32'(lane_i) * AW +: AW];
      s2_inp_q <= inp_rdata_i[32'(s1_b) * BI * IW +: BI * IW];
      s2_wgt_q <= wgt_rdata_i[32'(s1_o) * BI * WW +: BI * WW];
    end
  end

  logic [AW-1:0] alu_lane;
  kiln_alu #(.LANES(1), .PIPELINE(1)) alu (
    .clk_i, .op_i(alu_op_i), .a_i(s2_acc_q), .b_i(s2_b_q), .r_o(alu_lane));
  logic [AW-1:0] s3_acc_q, s4_acc_q, s4_alu_q;
  logic [BI*PW-1:0] s3_prod_q;
  logic [TW-1:0] s4_dot_q;
  always_ff @(posedge clk_i) begin
    if (s2_valid_q) begin
      for (int i = 0; i < BI; i++)
        s3_prod_q[i * PW +: PW] <=
            PW'($signed(s2_inp_q[i * IW +: IW]) * $signed(s2_wgt_q[i * WW +: WW]));
      s3_acc_q <= s2_acc_q;
      s3_lane_q <= s2_lane_q;
    end
  end
  // The products' sum as a balanced tree: in place, pairs at distance 1, 2, 4, ...
  logic [BI*TW-1:0] sum_v;
  always_comb begin
    for (int i = 0; i < BI; i++) sum_v[i * TW +: TW] = TW'($signed(s3_prod_q[i * PW +: PW]));
    for (int step = 1; step < BI; step = step * 2)
      for (int i = 0; i + step < BI; i = i + 2 * step)
        sum_v[i * TW +: TW] = sum_v[i * TW +: TW] + sum_v[(i + step) * TW +: TW];
  end
  always_ff @(posedge clk_i) begin
    if (s3_valid_q) begin
      s4_dot_q <= sum_v[TW-1:0];
      s4_acc_q <= s3_acc_q;
      s4_alu_q <= alu_lane;
      s4_lane_q <= s3_lane_q;
    end
  end

  assign wb_valid_o = s4_valid_q;
  assign wb_lane_o = s4_lane_q;
  assign wb_data_o = is_alu_i ? s4_alu_q : s4_acc_q + AW'($signed(s4_dot_q));
  assign done_o = !s2_valid_q && !s3_valid_q && !s4_valid_q;
endmodule
