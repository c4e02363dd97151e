// The store module: runs STOREs in order. Each instruction pops a token from compute
// (RAW on OUT) if it asks, writes y_size rows of x_size OUT elements to DRAM, waits for
// the write responses, then pushes a token to compute (WAR) if it asks (kiln_token_seq). An OUT element
// is the low output-width bits of each accumulator of an ACC element: the module reads
// ACC through the compute module's read ports (a request is granted unless compute's
// pipeline reads the same ACC bank in that cycle) and truncates.
module kiln_store (
  input  logic clk_i,
  input  logic rst_ni,
  input  logic         cmd_valid_i,
  input  logic [kiln_cfg_pkg::INSN_BITS-1:0] cmd_i,
  output logic         cmd_pop_o,
  input  logic         tok_from_compute_i,
  output logic         tok_from_compute_pop_o,
  input  logic         tok_to_compute_full_i,
  output logic         tok_to_compute_push_o,
  // ACC read port, lent by the compute module
  output logic                                   acc_re_o,
  output logic [kiln_cfg_pkg::LOG_ACC_DEPTH-1:0] acc_raddr_o,
  input  logic                                   acc_gnt_i,
  input  logic [kiln_cfg_pkg::ACC_ELEM_BITS-1:0] acc_rdata_i,
  // AXI4 write channels
  output logic                                       aw_valid_o,
  input  logic                                       aw_ready_i,
  output logic [kiln_cfg_pkg::AXI_ADDR_BITS-1:0]     aw_addr_o,
  output logic [kiln_cfg_pkg::AXI_LEN_BITS-1:0] aw_len_o,
  output logic                                       w_valid_o,
  input  logic                                       w_ready_i,
  output logic [kiln_cfg_pkg::AXI_DATA_BITS-1:0]     w_data_o,
  output logic [kiln_cfg_pkg::AXI_DATA_BITS/8-1:0]   w_strb_o,
  output logic                                       w_last_o,
  input  logic                                       b_valid_i,
  output logic                                       b_ready_o,
  // Status
  output logic       idle_o,
  output logic       busy_o,
  output logic       stall_o,
  output logic       retire_o,
  output logic       elem_write_o,  // an element went to DRAM this cycle
  output kiln_cfg_pkg::seq_state_e state_o
);
  localparam int AB = kiln_cfg_pkg::AXI_ADDR_BITS;
  localparam int OB = kiln_cfg_pkg::OUT_ELEM_BITS;
  localparam int OW = kiln_cfg_pkg::LOG_ACC_DEPTH;
  localparam int LE = $clog2(kiln_cfg_pkg::OUT_ELEM_BYTES);
  localparam int YW = kiln_cfg_pkg::MEM_Y_SIZE_WIDTH;
  localparam int XW = kiln_cfg_pkg::MEM_X_SIZE_WIDTH;
  // Element addresses in DRAM: dram_base + (y_size - 1) * x_stride + x_size.
  localparam int EW = kiln_cfg_pkg::MEM_DRAM_BASE_WIDTH + 2;

  // A STORE reads its DMA fields; fetch routed it here.
  /* verilator lint_off UNUSEDSIGNAL */
  kiln_cfg_pkg::mem_insn_t insn_q;
  /* verilator lint_on UNUSEDSIGNAL */
  logic start, run_done;
  logic unused_pop_next, unused_push_next;  // store has no neighbour after it
  kiln_token_seq #(
    .POP_PREV(kiln_cfg_pkg::STORE_POP_PREV), .POP_NEXT(kiln_cfg_pkg::STORE_POP_NEXT),
    .PUSH_PREV(kiln_cfg_pkg::STORE_PUSH_PREV), .PUSH_NEXT(kiln_cfg_pkg::STORE_PUSH_NEXT)
  ) seq (
    .clk_i, .rst_ni, .cmd_valid_i, .cmd_i, .cmd_pop_o, .insn_o(insn_q),
    .tok_prev_i(tok_from_compute_i), .tok_next_i(1'b0), .pop_prev_o(tok_from_compute_pop_o),
    .pop_next_o(unused_pop_next), .room_prev_i(!tok_to_compute_full_i), .room_next_i(1'b0),
    .push_prev_o(tok_to_compute_push_o), .push_next_o(unused_push_next),
    .start_o(start), .skip_i(1'b0), .done_i(run_done),
    .idle_o, .busy_o, .stall_o, .retire_o, .state_o);

  logic [YW-1:0] y_size;
  logic [XW-1:0] x_size;
  assign y_size = insn_q.y_size;
  assign x_size = insn_q.x_size;
  logic start_run;
  assign start_run = start && x_size != '0 && y_size != '0;

  // Row commands to the writer.
  logic        req_active_q;
  logic [YW-1:0] req_row_q;
  logic [EW-1:0] req_elem_q;
  logic        cmd_ready;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      req_active_q <= 1'b0;
      req_row_q <= '0;
      req_elem_q <= '0;
    end else if (start_run) begin
      req_active_q <= 1'b1;
      req_row_q <= '0;
      req_elem_q <= EW'(insn_q.dram_base);
    end else if (req_active_q && cmd_ready) begin
      req_row_q <= req_row_q + 1'b1;
      req_elem_q <= req_elem_q + EW'(insn_q.x_stride);
      if (req_row_q == y_size - 1'b1) req_active_q <= 1'b0;
    end
  end

  // ACC reads, in SRAM order (rows are contiguous there), into a small queue; a read
  // is requested only when the queue has room for its data, and moves on when granted.
  logic        rd_active_q, rd_inflight_q;
  logic [YW+XW-1:0] rd_left_q;
  logic [OW-1:0] rd_idx_q;
  logic q_empty, q_pop, q_full_unused;
  logic [2:0] q_count;
  logic [OB-1:0] q_data, out_elem;
  logic rd_fire;
  assign acc_re_o = rd_active_q && (32'(q_count) + 32'(rd_inflight_q)) < 32'd4;
  assign acc_raddr_o = rd_idx_q;
  assign rd_fire = acc_re_o && acc_gnt_i;
  always_comb begin
    for (int l = 0; l < kiln_cfg_pkg::BATCH * kiln_cfg_pkg::BLOCK_OUT; l++)
      out_elem[l * kiln_cfg_pkg::OUT_WIDTH +: kiln_cfg_pkg::OUT_WIDTH] =
          acc_rdata_i[l * kiln_cfg_pkg::ACC_WIDTH +: kiln_cfg_pkg::OUT_WIDTH];
  end
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      rd_active_q <= 1'b0;
      rd_inflight_q <= 1'b0;
      rd_left_q <= '0;
      rd_idx_q <= '0;
    end else begin
      rd_inflight_q <= rd_fire;
      if (start_run) begin
        rd_active_q <= 1'b1;
        rd_left_q <= (YW+XW)'(y_size) * (YW+XW)'(x_size);
        rd_idx_q <= OW'(insn_q.sram_base);
      end else if (rd_fire) begin
        rd_idx_q <= rd_idx_q + 1'b1;
        rd_left_q <= rd_left_q - 1'b1;
        if (rd_left_q == (YW+XW)'(1)) rd_active_q <= 1'b0;
      end
    end
  end
  kiln_fifo #(.WIDTH(OB), .DEPTH(4)) q (
    .clk_i, .rst_ni, .push_i(rd_inflight_q), .data_i(out_elem), .full_o(q_full_unused),
    .pop_i(q_pop), .data_o(q_data), .empty_o(q_empty), .count_o(q_count));

  logic elem_ready, wr_busy;
  assign q_pop = !q_empty && elem_ready;
  assign elem_write_o = q_pop;
  kiln_dma_writer #(.ELEM_BYTES(kiln_cfg_pkg::OUT_ELEM_BYTES)) writer (
    .clk_i, .rst_ni,
    .cmd_valid_i(req_active_q), .cmd_ready_o(cmd_ready), .cmd_addr_i(AB'(req_elem_q << LE)),
    .cmd_count_i(x_size),
    .elem_valid_i(!q_empty), .elem_ready_o(elem_ready), .elem_data_i(q_data),
    .aw_valid_o, .aw_ready_i, .aw_addr_o, .aw_len_o,
    .w_valid_o, .w_ready_i, .w_data_o, .w_strb_o, .w_last_o,
    .b_valid_i, .b_ready_o, .busy_o(wr_busy));

  assign run_done = !req_active_q && !rd_active_q && !rd_inflight_q && q_empty && !wr_busy;
endmodule
