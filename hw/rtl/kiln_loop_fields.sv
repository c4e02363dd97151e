// The fields of a GEMM or ALU instruction (shared/ISA.md): the loop nest, its index
// factors and the ALU's operation. GEMM and ALU share the layout up to the dst
// factors; an ALU has no weight factors (zero here) and its own src factors.
module kiln_loop_fields (
  input  logic [kiln_cfg_pkg::INSN_BITS-1:0]              insn_i,
  output logic                                            is_alu_o,
  output logic                                            reset_o,
  output logic [kiln_cfg_pkg::GEMM_UOP_BGN_WIDTH-1:0]     uop_bgn_o,
  output logic [kiln_cfg_pkg::GEMM_UOP_END_WIDTH-1:0]     uop_end_o,
  output logic [kiln_cfg_pkg::GEMM_ITER_OUT_WIDTH-1:0]    iter_out_o,
  output logic [kiln_cfg_pkg::GEMM_ITER_IN_WIDTH-1:0]     iter_in_o,
  output logic [kiln_cfg_pkg::GEMM_DST_FACTOR_OUT_WIDTH-1:0] dst_factor_out_o,
  output logic [kiln_cfg_pkg::GEMM_DST_FACTOR_IN_WIDTH-1:0]  dst_factor_in_o,
  output logic [kiln_cfg_pkg::UOP_SRC_WIDTH-1:0]          src_factor_out_o,
  output logic [kiln_cfg_pkg::UOP_SRC_WIDTH-1:0]          src_factor_in_o,
  output logic [kiln_cfg_pkg::GEMM_WGT_FACTOR_OUT_WIDTH-1:0] wgt_factor_out_o,
  output logic [kiln_cfg_pkg::GEMM_WGT_FACTOR_IN_WIDTH-1:0]  wgt_factor_in_o,
  output kiln_cfg_pkg::alu_op_e                           alu_op_o,
  output logic                                            use_imm_o,
  output logic [kiln_cfg_pkg::ALU_IMM_WIDTH-1:0]          imm_o,
  output logic                                            empty_o  // no micro-op runs
);
  localparam int SRCW = kiln_cfg_pkg::UOP_SRC_WIDTH;
  // Two views of one instruction; each is read only for the fields this module decodes.
  /* verilator lint_off UNUSEDSIGNAL */
  kiln_cfg_pkg::gemm_insn_t gemm;
  kiln_cfg_pkg::alu_insn_t alu;
  /* verilator lint_on UNUSEDSIGNAL */
  assign gemm = insn_i;
  assign alu = insn_i;

  assign is_alu_o   = gemm.opcode == kiln_cfg_pkg::OP_ALU;
  assign reset_o    = gemm.reset;
  assign uop_bgn_o  = gemm.uop_bgn;
  assign uop_end_o  = gemm.uop_end;
  assign iter_out_o = gemm.iter_out;
  assign iter_in_o  = gemm.iter_in;
  assign dst_factor_out_o = gemm.dst_factor_out;
  assign dst_factor_in_o  = gemm.dst_factor_in;
  always_comb begin
    if (is_alu_o) begin
      src_factor_out_o = SRCW'(alu.src_factor_out);
      src_factor_in_o = SRCW'(alu.src_factor_in);
      wgt_factor_out_o = '0;
      wgt_factor_in_o = '0;
    end else begin
      src_factor_out_o = SRCW'(gemm.src_factor_out);
      src_factor_in_o = SRCW'(gemm.src_factor_in);
      wgt_factor_out_o = gemm.wgt_factor_out;
      wgt_factor_in_o = gemm.wgt_factor_in;
    end
  end
  assign alu_op_o  = alu.alu_opcode;
  assign use_imm_o = alu.use_imm;
  assign imm_o     = alu.imm;
  assign empty_o = uop_end_o <= {1'b0, uop_bgn_o} || iter_out_o == '0 || iter_in_o == '0;
endmodule
