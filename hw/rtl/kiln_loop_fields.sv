// The loop of a GEMM or ALU instruction (shared/ISA.md) as kiln_cfg_pkg::loop_t: the
// loop nest, its index factors and the ALU's operation. GEMM and ALU share the layout
// up to the dst factors; an ALU has no weight factors (zero here) and its own src
// factors.
module kiln_loop_fields (
  input  logic [kiln_cfg_pkg::INSN_BITS-1:0] insn_i,
  output kiln_cfg_pkg::loop_t                loop_o
);
  localparam int SRCW = kiln_cfg_pkg::UOP_SRC_WIDTH;
  // Two views of one instruction; each is read only for the fields this module decodes.
  /* verilator lint_off UNUSEDSIGNAL */
  kiln_cfg_pkg::gemm_insn_t gemm;
  kiln_cfg_pkg::alu_insn_t alu;
  /* verilator lint_on UNUSEDSIGNAL */
  assign gemm = insn_i;
  assign alu = insn_i;

  logic is_alu;  // read below from here, not from loop_o (one variable to Verilator)
  assign is_alu = gemm.opcode == kiln_cfg_pkg::OP_ALU;
  assign loop_o.is_alu   = is_alu;
  assign loop_o.reset    = gemm.reset;
  assign loop_o.uop_bgn  = gemm.uop_bgn;
  assign loop_o.uop_end  = gemm.uop_end;
  assign loop_o.iter_out = gemm.iter_out;
  assign loop_o.iter_in  = gemm.iter_in;
  assign loop_o.dst_factor_out = gemm.dst_factor_out;
  assign loop_o.dst_factor_in  = gemm.dst_factor_in;
  always_comb begin
    if (is_alu) begin
      loop_o.src_factor_out = SRCW'(alu.src_factor_out);
      loop_o.src_factor_in = SRCW'(alu.src_factor_in);
      loop_o.wgt_factor_out = '0;
      loop_o.wgt_factor_in = '0;
    end else begin
      loop_o.src_factor_out = SRCW'(gemm.src_factor_out);
      loop_o.src_factor_in = SRCW'(gemm.src_factor_in);
      loop_o.wgt_factor_out = gemm.wgt_factor_out;
      loop_o.wgt_factor_in = gemm.wgt_factor_in;
    end
  end
  assign loop_o.alu_op  = alu.alu_opcode;
  assign loop_o.use_imm = alu.use_imm;
  assign loop_o.imm     = alu.imm;
  assign loop_o.empty = gemm.uop_end <= {1'b0, gemm.uop_bgn} || gemm.iter_out == '0 ||
                        gemm.iter_in == '0;
endmodule
