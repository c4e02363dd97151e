// The fields of a GEMM or ALU instruction (shared/ISA.md): the loop nest, its index
// factors and the ALU's operation. GEMM and ALU share the layout up to the dst
// factors; an ALU has no weight factors (zero here) and its own src factors.
module kiln_loop_fields (
  input  logic [127:0]                                insn_i,
  output logic                                        is_alu_o,
  output logic                                        reset_o,
  output logic [kiln_cfg_pkg::LOG_UOP_DEPTH-1:0]      uop_bgn_o,
  output logic [kiln_cfg_pkg::LOG_UOP_DEPTH:0]        uop_end_o,
  output logic [13:0]                                 iter_out_o,
  output logic [13:0]                                 iter_in_o,
  output logic [kiln_cfg_pkg::LOG_ACC_DEPTH-1:0]      dst_factor_out_o,
  output logic [kiln_cfg_pkg::LOG_ACC_DEPTH-1:0]      dst_factor_in_o,
  output logic [kiln_cfg_pkg::UOP_SRC_WIDTH-1:0]      src_factor_out_o,
  output logic [kiln_cfg_pkg::UOP_SRC_WIDTH-1:0]      src_factor_in_o,
  output logic [kiln_cfg_pkg::LOG_WGT_DEPTH-1:0]      wgt_factor_out_o,
  output logic [kiln_cfg_pkg::LOG_WGT_DEPTH-1:0]      wgt_factor_in_o,
  output logic [2:0]                                  alu_op_o,
  output logic                                        use_imm_o,
  output logic [15:0]                                 imm_o,
  output logic                                        empty_o  // no micro-op runs
);
  localparam int SRCW = kiln_cfg_pkg::UOP_SRC_WIDTH;
  assign is_alu_o   = insn_i[kiln_cfg_pkg::GEMM_OPCODE_LSB +: 3] == 3'(kiln_cfg_pkg::OP_ALU);
  assign reset_o    = insn_i[kiln_cfg_pkg::GEMM_RESET_LSB];
  assign uop_bgn_o  = insn_i[kiln_cfg_pkg::GEMM_UOP_BGN_LSB +: kiln_cfg_pkg::GEMM_UOP_BGN_WIDTH];
  assign uop_end_o  = insn_i[kiln_cfg_pkg::GEMM_UOP_END_LSB +: kiln_cfg_pkg::GEMM_UOP_END_WIDTH];
  assign iter_out_o = insn_i[kiln_cfg_pkg::GEMM_ITER_OUT_LSB +: kiln_cfg_pkg::GEMM_ITER_OUT_WIDTH];
  assign iter_in_o  = insn_i[kiln_cfg_pkg::GEMM_ITER_IN_LSB +: kiln_cfg_pkg::GEMM_ITER_IN_WIDTH];
  assign dst_factor_out_o =
      insn_i[kiln_cfg_pkg::GEMM_DST_FACTOR_OUT_LSB +: kiln_cfg_pkg::GEMM_DST_FACTOR_OUT_WIDTH];
  assign dst_factor_in_o =
      insn_i[kiln_cfg_pkg::GEMM_DST_FACTOR_IN_LSB +: kiln_cfg_pkg::GEMM_DST_FACTOR_IN_WIDTH];
  always_comb begin
    if (is_alu_o) begin
      src_factor_out_o = SRCW'(insn_i[kiln_cfg_pkg::ALU_SRC_FACTOR_OUT_LSB +: kiln_cfg_pkg::ALU_SRC_FACTOR_OUT_WIDTH]);
      src_factor_in_o = SRCW'(insn_i[kiln_cfg_pkg::ALU_SRC_FACTOR_IN_LSB +: kiln_cfg_pkg::ALU_SRC_FACTOR_IN_WIDTH]);
      wgt_factor_out_o = '0;
      wgt_factor_in_o = '0;
    end else begin
      src_factor_out_o = SRCW'(insn_i[kiln_cfg_pkg::GEMM_SRC_FACTOR_OUT_LSB +: kiln_cfg_pkg::GEMM_SRC_FACTOR_OUT_WIDTH]);
      src_factor_in_o = SRCW'(insn_i[kiln_cfg_pkg::GEMM_SRC_FACTOR_IN_LSB +: kiln_cfg_pkg::GEMM_SRC_FACTOR_IN_WIDTH]);
      wgt_factor_out_o = insn_i[kiln_cfg_pkg::GEMM_WGT_FACTOR_OUT_LSB +: kiln_cfg_pkg::GEMM_WGT_FACTOR_OUT_WIDTH];
      wgt_factor_in_o = insn_i[kiln_cfg_pkg::GEMM_WGT_FACTOR_IN_LSB +: kiln_cfg_pkg::GEMM_WGT_FACTOR_IN_WIDTH];
    end
  end
  assign alu_op_o  = insn_i[kiln_cfg_pkg::ALU_ALU_OPCODE_LSB +: kiln_cfg_pkg::ALU_ALU_OPCODE_WIDTH];
  assign use_imm_o = insn_i[kiln_cfg_pkg::ALU_USE_IMM_LSB];
  assign imm_o     = insn_i[kiln_cfg_pkg::ALU_IMM_LSB +: kiln_cfg_pkg::ALU_IMM_WIDTH];
  assign empty_o = uop_end_o <= {1'b0, uop_bgn_o} || iter_out_o == '0 || iter_in_o == '0;
endmodule
