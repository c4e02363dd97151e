// The in-order core's GEMM/ALU loop: micro-op k from uop_bgn to uop_end - 1 innermost,
// then j below iter_in, then i below iter_out (shared/ISA.md), and the scratchpad
// indices of the current micro-op: its dst, src and wgt indices plus the offsets
// dst/src/wgt_factor_out * i + _in * j, kept as running sums. kiln_inorder_top loads the
// loop when it decodes the instruction (load_i) and steps it after each micro-op's row
// is written (step_i); whether the loop is at its last micro-op (last_o) is registered,
// as are the wraps of k and j: they change only in a step, and the next step is at
// least three cycles later.
module kiln_inorder_loop (
  input  logic clk_i,
  input  logic load_i,
  input  logic step_i,
  // The instruction's loop (kiln_loop_fields); the ALU's fields are not this module's
  /* verilator lint_off UNUSEDSIGNAL */
  input  kiln_cfg_pkg::loop_t                          loop_i,
  /* verilator lint_on UNUSEDSIGNAL */
  // The micro-op at k (read from UOP at uop_raddr_o) and its indices
  output logic [kiln_cfg_pkg::LOG_UOP_DEPTH-1:0]       uop_raddr_o,
  input  kiln_cfg_pkg::uop_t                           uop_i,
  output logic [kiln_cfg_pkg::LOG_ACC_DEPTH-1:0]       dst_idx_o,
  output logic [kiln_cfg_pkg::UOP_SRC_WIDTH-1:0]       src_idx_o,
  output logic [kiln_cfg_pkg::LOG_WGT_DEPTH-1:0]       wgt_idx_o,
  output logic                                         last_o
);
  localparam int UW = kiln_cfg_pkg::LOG_UOP_DEPTH;
  localparam int DSTW = kiln_cfg_pkg::LOG_ACC_DEPTH;
  localparam int SRCW = kiln_cfg_pkg::UOP_SRC_WIDTH;
  localparam int WGTW = kiln_cfg_pkg::LOG_WGT_DEPTH;
  localparam int IOW = kiln_cfg_pkg::GEMM_ITER_OUT_WIDTH;
  localparam int IIW = kiln_cfg_pkg::GEMM_ITER_IN_WIDTH;

  logic [UW:0] k_q, k_last_q;
  logic [IOW-1:0] i_q, i_last_q;
  logic [IIW-1:0] j_q, j_last_q;
  logic [DSTW-1:0] dst_base_q, dst_off_q;
  logic [SRCW-1:0] src_base_q, src_off_q;
  logic [WGTW-1:0] wgt_base_q, wgt_off_q;
  logic k_wrap, j_wrap;
  always_ff @(posedge clk_i) begin
    k_wrap <= k_q == k_last_q;
    j_wrap <= j_q == j_last_q;
    last_o <= k_q == k_last_q && j_q == j_last_q && i_q == i_last_q;
  end

  always_ff @(posedge clk_i) begin
    if (load_i) begin
      k_q <= {1'b0, loop_i.uop_bgn};
      i_q <= '0;
      j_q <= '0;
      k_last_q <= loop_i.uop_end - 1'b1;
      j_last_q <= loop_i.iter_in - 1'b1;
      i_last_q <= loop_i.iter_out - 1'b1;
      dst_base_q <= '0;
      dst_off_q <= '0;
      src_base_q <= '0;
      src_off_q <= '0;
      wgt_base_q <= '0;
      wgt_off_q <= '0;
    end else if (step_i) begin  // advance k innermost, then j, then i
      if (!k_wrap) begin
        k_q <= k_q + 1'b1;
      end else begin
        k_q <= {1'b0, loop_i.uop_bgn};
        if (!j_wrap) begin
          j_q <= j_q + 1'b1;
          dst_off_q <= dst_off_q + loop_i.dst_factor_in;
          src_off_q <= src_off_q + loop_i.src_factor_in;
          wgt_off_q <= wgt_off_q + loop_i.wgt_factor_in;
        end else begin
          j_q <= '0;
          i_q <= i_q + 1'b1;
          dst_base_q <= dst_base_q + loop_i.dst_factor_out;
          src_base_q <= src_base_q + loop_i.src_factor_out;
          wgt_base_q <= wgt_base_q + loop_i.wgt_factor_out;
          dst_off_q <= dst_base_q + loop_i.dst_factor_out;
          src_off_q <= src_base_q + loop_i.src_factor_out;
          wgt_off_q <= wgt_base_q + loop_i.wgt_factor_out;
        end
      end
    end
  end

  assign uop_raddr_o = UW'(k_q);
  assign dst_idx_o = DSTW'(uop_i.dst_idx) + dst_off_q;
  assign src_idx_o = SRCW'(uop_i.src_idx) + src_off_q;
  assign wgt_idx_o = WGTW'(uop_i.wgt_idx) + wgt_off_q;
  logic unused_uop_bits;  // bits above the three index fields are zero in a legal micro-op
  assign unused_uop_bits = ^uop_i;
endmodule
