// The in-order core's dependency tokens, counted rather than waited for (program order
// satisfies them): one count per token queue, up to TOKEN_MAX. An instruction's module pops and
// pushes through its prev and next flags into the queues of the package's link table
// (hw::token_links: kiln_cfg_pkg::<MODULE>_POP_PREV, ...; -1, no such neighbour). A pop
// from an empty count (missing_o) or a push onto TOKEN_MAX (overflow_o) is an error of
// the instruction; whether each count is 0 or TOKEN_MAX is registered with it, so the
// compares stay off kiln_inorder_top's fail path.
module kiln_inorder_tokens #(
  parameter int TOKEN_MAX = 255
) (
  input  logic clk_i,
  input  logic clear_i,  // the counts go to zero (reset, start)
  input  logic hold_i,   // no count moves (abort, a failed run)
  input  kiln_cfg_pkg::module_e module_i,  // the instruction's module
  /* verilator lint_off UNUSEDSIGNAL */
  input  kiln_cfg_pkg::mem_insn_t insn_i,  // its flags sit where every format has them
  /* verilator lint_on UNUSEDSIGNAL */
  input  logic pop_i,    // the instruction pops its tokens (decoded, not failed)
  input  logic push_i,   // it pushes its tokens (retired)
  output logic missing_o,
  output logic overflow_o
);
  localparam int NTQ = kiln_cfg_pkg::NUM_TOKEN_QUEUES;
  localparam int TQW = $clog2(NTQ);
  localparam int CB = $clog2(TOKEN_MAX + 1);  // bits of a count

  // The queues the instruction pops and pushes through its prev (a) and next (b) flags.
  logic [TQW-1:0] pop_a, pop_b, push_a, push_b;
  logic has_pop_a, has_pop_b, has_push_a, has_push_b;
  always_comb begin
    pop_a = '0; pop_b = '0; push_a = '0; push_b = '0;
    has_pop_a = 1'b0; has_pop_b = 1'b0; has_push_a = 1'b0; has_push_b = 1'b0;
    if (module_i == kiln_cfg_pkg::MODULE_LOAD) begin  // load has no prev
      has_pop_b = insn_i.pop_next_dep;   pop_b = TQW'(kiln_cfg_pkg::LOAD_POP_NEXT);
      has_push_b = insn_i.push_next_dep; push_b = TQW'(kiln_cfg_pkg::LOAD_PUSH_NEXT);
    end else if (module_i == kiln_cfg_pkg::MODULE_STORE) begin  // store has no next
      has_pop_a = insn_i.pop_prev_dep;   pop_a = TQW'(kiln_cfg_pkg::STORE_POP_PREV);
      has_push_a = insn_i.push_prev_dep; push_a = TQW'(kiln_cfg_pkg::STORE_PUSH_PREV);
    end else begin
      has_pop_a = insn_i.pop_prev_dep;   pop_a = TQW'(kiln_cfg_pkg::COMPUTE_POP_PREV);
      has_pop_b = insn_i.pop_next_dep;   pop_b = TQW'(kiln_cfg_pkg::COMPUTE_POP_NEXT);
      has_push_a = insn_i.push_prev_dep; push_a = TQW'(kiln_cfg_pkg::COMPUTE_PUSH_PREV);
      has_push_b = insn_i.push_next_dep; push_b = TQW'(kiln_cfg_pkg::COMPUTE_PUSH_NEXT);
    end
  end
  logic [NTQ-1:0] pops, pushes;
  always_comb begin
    for (int t = 0; t < NTQ; t++) begin
      pops[t] = (has_pop_a && pop_a == TQW'(t)) || (has_pop_b && pop_b == TQW'(t));
      pushes[t] = (has_push_a && push_a == TQW'(t)) || (has_push_b && push_b == TQW'(t));
    end
  end

  // The counts' next values (queue t at [CB t +: CB]).
  logic [NTQ*CB-1:0] tok_q, tok_d;
  logic [NTQ-1:0] empty_q, max_q;
  always_comb begin
    tok_d = tok_q;
    if (clear_i) begin
      tok_d = '0;
    end else if (!hold_i) begin
      for (int t = 0; t < NTQ; t++) begin
        if (pop_i && pops[t]) tok_d[t * CB +: CB] = tok_q[t * CB +: CB] - 1'b1;
        if (push_i && pushes[t]) tok_d[t * CB +: CB] = tok_q[t * CB +: CB] + 1'b1;
      end
    end
  end
  always_ff @(posedge clk_i) begin
    tok_q <= tok_d;
    for (int t = 0; t < NTQ; t++) begin
      empty_q[t] <= tok_d[t * CB +: CB] == '0;
      max_q[t] <= tok_d[t * CB +: CB] == CB'(TOKEN_MAX);
    end
  end
  assign missing_o = |(pops & empty_q);
  assign overflow_o = |(pushes & max_q);
endmodule
