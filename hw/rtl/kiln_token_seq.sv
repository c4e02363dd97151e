// The instruction sequencer of a decoupled module (kiln_load, kiln_compute, kiln_store):
// take the command queue's head, pop the dependency tokens it waits for (all at once, when
// every one is there), run it, push the tokens it signals (all at once, when every queue
// has room), retire it. "prev" and "next" are the module's neighbours in the
// load -> compute -> store pipeline; a module without one passes -1 for its queue
// (kiln_cfg_pkg::<MODULE>_POP_PREV, ... from hw/spec/isa.h token_links), and the
// instruction's flags towards it are ignored. States: kiln_cfg_pkg::seq_state_e
// (hw/spec/debug_ports.h), which the simulation harness decodes from dbg_state_o.
module kiln_token_seq #(
  parameter int POP_PREV = -1,
  parameter int POP_NEXT = -1,
  parameter int PUSH_PREV = -1,
  parameter int PUSH_NEXT = -1
) (
  input  logic clk_i,
  input  logic rst_ni,
  // Command queue head
  input  logic                               cmd_valid_i,
  input  logic [kiln_cfg_pkg::INSN_BITS-1:0] cmd_i,
  output logic                               cmd_pop_o,
  // The held instruction, from the cycle after its pop to its retirement
  output logic [kiln_cfg_pkg::INSN_BITS-1:0] insn_o,
  // Tokens: a token waits in the queue from prev/next; the queue to prev/next has room
  input  logic tok_prev_i,
  input  logic tok_next_i,
  output logic pop_prev_o,
  output logic pop_next_o,
  input  logic room_prev_i,
  input  logic room_next_i,
  output logic push_prev_o,
  output logic push_next_o,
  // Running: start_o for the one cycle in START; then done_i ends RUN. skip_i in START
  // says the instruction has nothing to run: it goes straight to PUSH.
  output logic start_o,
  input  logic skip_i,
  input  logic done_i,
  // Status
  output logic idle_o,
  output logic busy_o,     // START or RUN
  output logic stall_o,    // waiting for a token or for room for one
  output logic retire_o,   // an instruction finished
  output kiln_cfg_pkg::seq_state_e state_o
);
  kiln_cfg_pkg::seq_state_e state_q;
  /* verilator lint_off UNUSEDSIGNAL */
  kiln_cfg_pkg::mem_insn_t insn_q;  // the flags sit where every format has them
  /* verilator lint_on UNUSEDSIGNAL */

  logic pop_prev, pop_next, push_prev, push_next, tokens_ready, room_ready;
  assign pop_prev = POP_PREV >= 0 && insn_q.pop_prev_dep;
  assign pop_next = POP_NEXT >= 0 && insn_q.pop_next_dep;
  assign push_prev = PUSH_PREV >= 0 && insn_q.push_prev_dep;
  assign push_next = PUSH_NEXT >= 0 && insn_q.push_next_dep;
  assign tokens_ready = (!pop_prev || tok_prev_i) && (!pop_next || tok_next_i);
  assign room_ready = (!push_prev || room_prev_i) && (!push_next || room_next_i);

  assign cmd_pop_o = state_q == kiln_cfg_pkg::SEQ_IDLE && cmd_valid_i;
  assign pop_prev_o = state_q == kiln_cfg_pkg::SEQ_POP && tokens_ready && pop_prev;
  assign pop_next_o = state_q == kiln_cfg_pkg::SEQ_POP && tokens_ready && pop_next;
  assign push_prev_o = state_q == kiln_cfg_pkg::SEQ_PUSH && room_ready && push_prev;
  assign push_next_o = state_q == kiln_cfg_pkg::SEQ_PUSH && room_ready && push_next;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      state_q <= kiln_cfg_pkg::SEQ_IDLE;
      insn_q <= '0;
    end else begin
      case (state_q)
        kiln_cfg_pkg::SEQ_IDLE: if (cmd_valid_i) begin
          insn_q <= cmd_i;
          state_q <= kiln_cfg_pkg::SEQ_POP;
        end
        kiln_cfg_pkg::SEQ_POP: if (tokens_ready) state_q <= kiln_cfg_pkg::SEQ_START;
        kiln_cfg_pkg::SEQ_START: state_q <= skip_i ? kiln_cfg_pkg::SEQ_PUSH : kiln_cfg_pkg::SEQ_RUN;
        kiln_cfg_pkg::SEQ_RUN: if (done_i) state_q <= kiln_cfg_pkg::SEQ_PUSH;
        kiln_cfg_pkg::SEQ_PUSH: if (room_ready) state_q <= kiln_cfg_pkg::SEQ_IDLE;
        default: state_q <= kiln_cfg_pkg::SEQ_IDLE;
      endcase
    end
  end

  assign insn_o = insn_q;
  assign start_o = state_q == kiln_cfg_pkg::SEQ_START;
  assign idle_o = state_q == kiln_cfg_pkg::SEQ_IDLE;
  assign busy_o = state_q == kiln_cfg_pkg::SEQ_START || state_q == kiln_cfg_pkg::SEQ_RUN;
  assign stall_o = (state_q == kiln_cfg_pkg::SEQ_POP && !tokens_ready) ||
                   (state_q == kiln_cfg_pkg::SEQ_PUSH && !room_ready);
  assign retire_o = state_q == kiln_cfg_pkg::SEQ_PUSH && room_ready;
  assign state_o = state_q;

  logic unused_neighbours;  // a module without a neighbour ties its token inputs
  assign unused_neighbours = tok_prev_i ^ tok_next_i ^ room_prev_i ^ room_next_i;
endmodule
