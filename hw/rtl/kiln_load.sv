// The load module: runs LOADs of INP and WGT in order. Each instruction pops a token
// from compute (WAR) if it asks, loads, then pushes a token to compute (RAW).
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
  // Two AXI4 read clients (INP, WGT), packed [wgt, inp]
  output logic [1:0]                                 ar_valid_o,
  input  logic [1:0]                                 ar_ready_i,
  output logic [2*kiln_cfg_pkg::AXI_ADDR_BITS-1:0]   ar_addr_o,
  output logic [15:0]                                ar_len_o,
  input  logic [1:0]                                 r_valid_i,
  output logic [1:0]                                 r_ready_o,
  input  logic [kiln_cfg_pkg::AXI_DATA_BITS-1:0]     r_data_i,
  // Status
  output logic       idle_o,
  output logic       busy_o,        // executing an instruction
  output logic       stall_o,       // waiting for a token or for room for one
  output logic       retire_o,      // an instruction finished
  output logic [1:0] elem_read_o,   // [wgt, inp] element read from DRAM this cycle
  output logic [kiln_cfg_pkg::DBG_LOAD_STATE_WIDTH-1:0] state_o
);
  typedef enum logic [2:0] {
    IDLE = 3'd0, POP = 3'd1, START = 3'd2, RUN = 3'd3, PUSH = 3'd4
  } state_e;
  state_e state_q;
  kiln_cfg_pkg::mem_insn_t insn_q;

  logic pop_next, push_next, is_wgt, empty_load;
  assign pop_next  = insn_q.pop_next_dep;
  assign push_next = insn_q.push_next_dep;
  assign is_wgt = insn_q.memory_type == kiln_cfg_pkg::MEM_WGT;
  assign empty_load = insn_q.x_size == '0 || insn_q.y_size == '0;

  logic inp_busy, wgt_busy;
  logic start_inp, start_wgt;
  assign start_inp = state_q == START && !empty_load && !is_wgt;
  assign start_wgt = state_q == START && !empty_load && is_wgt;

  kiln_load_2d #(.ELEM_BYTES(kiln_cfg_pkg::INP_ELEM_BYTES), .IDX_W(kiln_cfg_pkg::LOG_INP_DEPTH)) inp (
    .clk_i, .rst_ni, .start_i(start_inp), .insn_i(insn_q), .busy_o(inp_busy),
    .we_o(inp_we_o), .waddr_o(inp_waddr_o), .wdata_o(inp_wdata_o), .elem_read_o(elem_read_o[0]),
    .ar_valid_o(ar_valid_o[0]), .ar_ready_i(ar_ready_i[0]),
    .ar_addr_o(ar_addr_o[0 +: kiln_cfg_pkg::AXI_ADDR_BITS]), .ar_len_o(ar_len_o[7:0]),
    .r_valid_i(r_valid_i[0]), .r_ready_o(r_ready_o[0]), .r_data_i);
  kiln_load_2d #(.ELEM_BYTES(kiln_cfg_pkg::WGT_ELEM_BYTES), .IDX_W(kiln_cfg_pkg::LOG_WGT_DEPTH)) wgt (
    .clk_i, .rst_ni, .start_i(start_wgt), .insn_i(insn_q), .busy_o(wgt_busy),
    .we_o(wgt_we_o), .waddr_o(wgt_waddr_o), .wdata_o(wgt_wdata_o), .elem_read_o(elem_read_o[1]),
    .ar_valid_o(ar_valid_o[1]), .ar_ready_i(ar_ready_i[1]),
    .ar_addr_o(ar_addr_o[kiln_cfg_pkg::AXI_ADDR_BITS +: kiln_cfg_pkg::AXI_ADDR_BITS]),
    .ar_len_o(ar_len_o[15:8]),
    .r_valid_i(r_valid_i[1]), .r_ready_o(r_ready_o[1]), .r_data_i);

  assign cmd_pop_o = state_q == IDLE && cmd_valid_i;
  assign tok_from_compute_pop_o = state_q == POP && pop_next && tok_from_compute_i;
  assign tok_to_compute_push_o = state_q == PUSH && push_next && !tok_to_compute_full_i;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      state_q <= IDLE;
      insn_q <= '0;
    end else begin
      case (state_q)
        IDLE: if (cmd_valid_i) begin
          insn_q <= cmd_i;
          state_q <= POP;
        end
        POP: if (!pop_next || tok_from_compute_i) state_q <= START;
        START: state_q <= RUN;
        RUN: if (!inp_busy && !wgt_busy) state_q <= PUSH;
        PUSH: if (!push_next || !tok_to_compute_full_i) state_q <= IDLE;
        default: state_q <= IDLE;
      endcase
    end
  end

  assign idle_o = state_q == IDLE;
  assign busy_o = state_q == START || state_q == RUN;
  assign stall_o = (state_q == POP && pop_next && !tok_from_compute_i) ||
                   (state_q == PUSH && push_next && tok_to_compute_full_i);
  assign retire_o = state_q == PUSH && (!push_next || !tok_to_compute_full_i);
  assign state_o = state_q;
endmodule
