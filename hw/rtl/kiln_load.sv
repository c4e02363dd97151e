// The load module: runs LOADs of INP and WGT in order. Each instruction pops a token
// from compute (WAR) if it asks, loads, then pushes a token to compute (RAW): the
// sequencing is kiln_token_seq's.
module kiln_load (
  input  logic clk_i,
  input  logic rst_ni,
  // Command queue head
  input  logic         cmd_valid_i,
  input  logic [kiln_cfg_pkg::INSN_BITS-1:0] cmd_i,
  output logic         cmd_pop_o,
  // Tokens: compute -> load (popped), load -> compute (pushed)
  input  logic         tok_from_compute_i,  // a token is there
  output logic         tok_from_compute_pop_o,
  input  logic         tok_to_compute_full_i,
  output logic         tok_to_compute_push_o,
  // Scratchpad write ports
  output logic                                  inp_we_o,
  output logic [kiln_cfg_pkg::LOG_INP_DEPTH-1:0] inp_waddr_o,
  output logic [kiln_cfg_pkg::INP_ELEM_BITS-1:0] inp_wdata_o,
  output logic                                  wgt_we_o,
  output logic [kiln_cfg_pkg::LOG_WGT_DEPTH-1:0] wgt_waddr_o,
  output logic [kiln_cfg_pkg::WGT_ELEM_BITS-1:0] wgt_wdata_o,
  // Two AXI4 read clients (INP, WGT) and the read data they share
  output kiln_cfg_pkg::rd_req_t                  inp_rd_o,
  input  kiln_cfg_pkg::rd_rsp_t                  inp_rd_i,
  output kiln_cfg_pkg::rd_req_t                  wgt_rd_o,
  input  kiln_cfg_pkg::rd_rsp_t                  wgt_rd_i,
  input  logic [kiln_cfg_pkg::AXI_DATA_BITS-1:0] r_data_i,
  // Status
  output logic       idle_o,
  output logic       busy_o,        // executing an instruction
  output logic       stall_o,       // waiting for a token or for room for one
  output logic       retire_o,      // an instruction finished
  output logic [1:0] elem_read_o,   // [wgt, inp] element read from DRAM this cycle
  output kiln_cfg_pkg::seq_state_e state_o
);
  logic start;
  kiln_cfg_pkg::mem_insn_t insn_q;
  logic inp_busy, wgt_busy;
  logic unused_pop_prev, unused_push_prev;  // load has no neighbour before it
  kiln_token_seq #(
    .POP_PREV(kiln_cfg_pkg::LOAD_POP_PREV), .POP_NEXT(kiln_cfg_pkg::LOAD_POP_NEXT),
    .PUSH_PREV(kiln_cfg_pkg::LOAD_PUSH_PREV), .PUSH_NEXT(kiln_cfg_pkg::LOAD_PUSH_NEXT)
  ) seq (
    .clk_i, .rst_ni, .cmd_valid_i, .cmd_i, .cmd_pop_o, .insn_o(insn_q),
    .tok_prev_i(1'b0), .tok_next_i(tok_from_compute_i), .pop_prev_o(unused_pop_prev),
    .pop_next_o(tok_from_compute_pop_o), .room_prev_i(1'b0),
    .room_next_i(!tok_to_compute_full_i), .push_prev_o(unused_push_prev), .push_next_o(tok_to_compute_push_o),
    .start_o(start), .skip_i(1'b0), .done_i(!inp_busy && !wgt_busy),
    .idle_o, .busy_o, .stall_o, .retire_o, .state_o);

  logic is_wgt, empty_load;
  assign is_wgt = insn_q.memory_type == kiln_cfg_pkg::MEM_WGT;
  assign empty_load = insn_q.x_size == '0 || insn_q.y_size == '0;

  logic start_inp, start_wgt;
  assign start_inp = start && !empty_load && !is_wgt;
  assign start_wgt = start && !empty_load && is_wgt;

  kiln_load_2d #(.ELEM_BYTES(kiln_cfg_pkg::INP_ELEM_BYTES), .IDX_W(kiln_cfg_pkg::LOG_INP_DEPTH)) inp (
    .clk_i, .rst_ni, .start_i(start_inp), .insn_i(insn_q), .busy_o(inp_busy),
    .we_o(inp_we_o), .waddr_o(inp_waddr_o), .wdata_o(inp_wdata_o), .elem_read_o(elem_read_o[0]),
    .rd_o(inp_rd_o), .rd_i(inp_rd_i), .r_data_i);
  kiln_load_2d #(.ELEM_BYTES(kiln_cfg_pkg::WGT_ELEM_BYTES), .IDX_W(kiln_cfg_pkg::LOG_WGT_DEPTH)) wgt (
    .clk_i, .rst_ni, .start_i(start_wgt), .insn_i(insn_q), .busy_o(wgt_busy),
    .we_o(wgt_we_o), .waddr_o(wgt_waddr_o), .wdata_o(wgt_wdata_o), .elem_read_o(elem_read_o[1]),
    .rd_o(wgt_rd_o), .rd_i(wgt_rd_i), .r_data_i);
endmodule
