// The in-order accelerator: the ISA, register map and scratchpads of kiln_top, run by
// one sequencer that executes the instruction stream in program order, for parts too
// small for kiln_top's decoupled modules (an iCE40 UP5K). What kiln_top spends on its
// four modules' DMA engines, burst generators, command queues and token queues is one
// memory port, one element walker and four token counters here; the GEMM and the ALU
// walk an accumulator row lane by lane (kiln_cfg_pkg::BLOCK_IN multipliers, one ALU lane).
//
// Program order satisfies every dependency a token expresses, so tokens are counted,
// not waited for: a pop with no token pushed before it (a stream that only a decoupled
// machine could run, or none), a count past TOKEN_MAX, an opcode or memory type the
// ISA lacks and a stream without FINISH stop the run with the error bit and a cause
// (hw/spec/regs.h ErrorCause); so does a memory access that the memory refuses.
//
// Memory: one 64-bit word per request, at most one read outstanding (device memory on
// chip, e.g. SPRAM behind kiln_uart_top).
module kiln_inorder_top #(
  parameter int CNT_BITS = 32,
  // Counters kept (hw/spec/regs.h kInorderCounterMask): cycles, instructions per
  // module, micro-ops.
  parameter logic [kiln_cfg_pkg::NUM_COUNTERS-1:0] CNT_MASK =
      kiln_cfg_pkg::NUM_COUNTERS'(kiln_cfg_pkg::INORDER_CNT_MASK),
  parameter int TOKEN_MAX = 255,
  // kiln_sram's PARITY: a scratchpad word read back wrong fails the run (ERR_PARITY)
  parameter int PARITY = 0
) (
  input  logic clk_i,
  input  logic rst_ni,
  // AXI4-Lite register file, and device memory: one 64-bit word a request at a byte
  // address 8-byte aligned; an error with an accepted request or a read's data says it
  // failed (hw/spec/bus_ports.h)
  input  kiln_cfg_pkg::axil_req_t s_axil_i,
  output kiln_cfg_pkg::axil_rsp_t s_axil_o,
  output kiln_cfg_pkg::mem_req_t  mem_o,
  input  kiln_cfg_pkg::mem_rsp_t  mem_i,
  // Simulation view
  output logic [kiln_cfg_pkg::DBG_STATE_BITS-1:0] dbg_state_o,
  output logic        dbg_progress_o
);
  localparam int UW = kiln_cfg_pkg::LOG_UOP_DEPTH;
  localparam int DSTW = kiln_cfg_pkg::LOG_ACC_DEPTH;
  localparam int INPW = kiln_cfg_pkg::LOG_INP_DEPTH;
  localparam int WGTW = kiln_cfg_pkg::LOG_WGT_DEPTH;
  localparam int SRCW = kiln_cfg_pkg::UOP_SRC_WIDTH;  // max(INPW, DSTW)
  localparam int AW = kiln_cfg_pkg::ACC_WIDTH;
  localparam int BO = kiln_cfg_pkg::BLOCK_OUT;
  localparam int LANES = kiln_cfg_pkg::BATCH * BO;
  localparam int LW = (LANES > 1) ? $clog2(LANES) : 1;
  localparam int SBW = kiln_cfg_pkg::MEM_SRAM_BASE_WIDTH;
  localparam int DBW = kiln_cfg_pkg::MEM_DRAM_BASE_WIDTH;  // DRAM element indices
  localparam int XW = kiln_cfg_pkg::MEM_X_SIZE_WIDTH;      // x_size, y_size, x_stride
  localparam int WTW = XW + 1;  // pad + size + pad: a pad is narrower than a size
  // The element assembly register: instructions and every element of 8 bytes or more
  // are shifted in a word at a time from the top.
  localparam int MAXB0 = (kiln_cfg_pkg::WGT_ELEM_BITS > kiln_cfg_pkg::ACC_ELEM_BITS) ? kiln_cfg_pkg::WGT_ELEM_BITS : kiln_cfg_pkg::ACC_ELEM_BITS;
  localparam int MAXB1 = (MAXB0 > kiln_cfg_pkg::INP_ELEM_BITS) ? MAXB0 : kiln_cfg_pkg::INP_ELEM_BITS;
  localparam int MAXB = (MAXB1 > kiln_cfg_pkg::INSN_BITS) ? MAXB1 : kiln_cfg_pkg::INSN_BITS;
  // Device memory: words of MDW bits (MWB bytes, LWB address bits within a word) at
  // MAB-bit byte addresses. An instruction is two words (fetch's w_q[0]).
  localparam int MDW = kiln_cfg_pkg::MEM_DATA_BITS;
  localparam int MWB = MDW / 8;
  localparam int LWB = $clog2(MWB);
  localparam int MAB = kiln_cfg_pkg::MEM_ADDR_BITS;

  // ---- Register file ---------------------------------------------------------------
  logic start_w, abort_w, running, finished, err_pulse;
  // The register file's start and abort, registered: they come straight from the host's
  // AXI4-Lite write, and the sequencer's enables are far from there.
  logic start, abort;
  always_ff @(posedge clk_i) begin
    start <= rst_ni && start_w;
    abort <= rst_ni && abort_w;
  end
  kiln_cfg_pkg::err_cause_t err_cause;
  kiln_cfg_pkg::status_where_t err_where;  // with ERR_PARITY: {module, memory type}
  logic [kiln_cfg_pkg::INSN_ADDR_BITS-1:0] insn_addr;
  logic [kiln_cfg_pkg::INSN_COUNT_BITS-1:0] insn_count;
  kiln_cfg_pkg::cnt_add_t cnt_add, cnt_add_q;  // registered: a cycle late
  kiln_regfile #(.CNT_BITS(CNT_BITS), .CNT_MASK(CNT_MASK)) regs (
    .clk_i, .rst_ni,
    .axil_i(s_axil_i), .axil_o(s_axil_o),
    .start_o(start_w), .abort_o(abort_w), .insn_addr_o(insn_addr), .insn_count_o(insn_count),
    .finished_i(finished), .error_i(err_pulse), .error_cause_i(err_cause),
    .error_where_i(err_where), .cnt_add_i(cnt_add_q), .busy_o(running));
  logic unused_addr_hi;  // device memory is addressed with MEM_ADDR_BITS
  assign unused_addr_hi = ^insn_addr[kiln_cfg_pkg::INSN_ADDR_BITS-1:kiln_cfg_pkg::MEM_ADDR_BITS];

  // ---- Scratchpads -------------------------------------------------------------------
  logic uop_we, inp_we, wgt_we, acc_we;
  logic uop_re, inp_re, wgt_re, acc_re;
  logic [UW-1:0] uop_waddr, uop_raddr;
  logic [INPW-1:0] inp_waddr, inp_raddr;
  logic [WGTW-1:0] wgt_waddr, wgt_raddr;
  logic [DSTW-1:0] acc_waddr, acc_raddr;
  logic [kiln_cfg_pkg::UOP_ELEM_BITS-1:0] uop_wdata;
  kiln_cfg_pkg::uop_t uop_rdata;
  logic [kiln_cfg_pkg::INP_ELEM_BITS-1:0] inp_wdata, inp_rdata;
  logic [kiln_cfg_pkg::WGT_ELEM_BITS-1:0] wgt_wdata, wgt_rdata;
  logic [kiln_cfg_pkg::ACC_ELEM_BITS-1:0] acc_wdata, acc_rdata;
  logic [kiln_cfg_pkg::OUT_ELEM_BITS-1:0] out_rdata;  // ACC's low bits: what STORE writes
  logic uop_perr, inp_perr, wgt_perr, acc_perr;
  kiln_sram #(.WIDTH(kiln_cfg_pkg::UOP_ELEM_BITS), .DEPTH(kiln_cfg_pkg::UOP_DEPTH), .PARITY(PARITY)) uop_buf (
    .clk_i, .we_i(uop_we), .waddr_i(uop_waddr), .wdata_i(uop_wdata),
    .re_i(uop_re), .raddr_i(uop_raddr), .rdata_o(uop_rdata), .perr_o(uop_perr));
  kiln_sram #(.WIDTH(kiln_cfg_pkg::INP_ELEM_BITS), .DEPTH(kiln_cfg_pkg::INP_DEPTH), .PARITY(PARITY)) inp_buf (
    .clk_i, .we_i(inp_we), .waddr_i(inp_waddr), .wdata_i(inp_wdata),
    .re_i(inp_re), .raddr_i(inp_raddr), .rdata_o(inp_rdata), .perr_o(inp_perr));
  kiln_sram #(.WIDTH(kiln_cfg_pkg::WGT_ELEM_BITS), .DEPTH(kiln_cfg_pkg::WGT_DEPTH), .PARITY(PARITY)) wgt_buf (
    .clk_i, .we_i(wgt_we), .waddr_i(wgt_waddr), .wdata_i(wgt_wdata),
    .re_i(wgt_re), .raddr_i(wgt_raddr), .rdata_o(wgt_rdata), .perr_o(wgt_perr));
  kiln_sram #(.WIDTH(kiln_cfg_pkg::ACC_ELEM_BITS), .DEPTH(kiln_cfg_pkg::ACC_DEPTH), .PARITY(PARITY)) acc_buf (
    .clk_i, .we_i(acc_we), .waddr_i(acc_waddr), .wdata_i(acc_wdata),
    .re_i(acc_re), .raddr_i(acc_raddr), .rdata_o(acc_rdata), .perr_o(acc_perr));
  // OUT is no buffer of its own: a STORE reads ACC (in ST_READ) and keeps the low
  // output-width bits of each accumulator.
  always_comb begin
    for (int l = 0; l < LANES; l++)
      out_rdata[l * kiln_cfg_pkg::OUT_WIDTH +: kiln_cfg_pkg::OUT_WIDTH] = acc_rdata[l * AW +: kiln_cfg_pkg::OUT_WIDTH];
  end

  // ---- State (kiln_cfg_pkg::inorder_state_e: hw/spec/debug_ports.h InorderState) ----
  // One-hot: Yosys recodes it (warning that the circuit might grow; it shrinks by about
  // 80 LUTs), and the states' decodes that sit on most enables become single bits.
  (* fsm_encoding = "one-hot" *) kiln_cfg_pkg::inorder_state_e state_q;
  logic [kiln_cfg_pkg::INSN_BITS-1:0] insn_q;
  logic [kiln_cfg_pkg::INSN_COUNT_BITS-1:0] pc_q;  // instructions fetched
  logic at_end_q;               // pc_q == insn_count, a cycle late (pc_q waits in DECODE)
  always_ff @(posedge clk_i) at_end_q <= start ? insn_count == '0 : pc_q == insn_count;
  logic [MAXB-MDW-1:0] buf_q;   // element assembly: the words read so far, at the top
  logic fail;                   // this cycle's instruction or access failed (below)

  // Memory port: a word request in flight waits for its response.
  logic rd_wait_q, mem_fire, rd_done;
  assign mem_fire = mem_o.valid && mem_i.ready;
  assign rd_done = rd_wait_q && mem_i.rvalid;

  // ---- Decode -------------------------------------------------------------------------
  // The instruction as a LOAD or STORE: the opcode and flags sit where every format
  // has them; kiln_loop_fields reads a GEMM's or an ALU's own fields.
  /* verilator lint_off UNUSEDSIGNAL */
  kiln_cfg_pkg::mem_insn_t mem;
  /* verilator lint_on UNUSEDSIGNAL */
  assign mem = insn_q;

  logic is_load, is_store, is_gemm, is_alu, is_finish, bad_insn, empty_xfer;
  kiln_cfg_pkg::module_e module_of;
  // Element bytes 2^le; an element of 8 bytes or more is nw + 1 words, a smaller one
  // is part of a word. Registered at DECODE (le_q, nw_q, sub_q, and the scratchpad a
  // LOAD writes, tgt_q: uop, inp, wgt, acc) for the walk's short paths.
  logic [3:0] le, le_q, tgt, tgt_q;
  logic [7:0] nw;
  logic sub_word, sub_q;
  kiln_inorder_decode decode (
    .insn_i(mem), .is_alu_i(is_alu), .is_load_o(is_load), .is_store_o(is_store),
    .is_gemm_o(is_gemm), .is_finish_o(is_finish), .module_o(module_of), .bad_o(bad_insn),
    .empty_xfer_o(empty_xfer), .le_o(le), .nw_o(nw), .sub_word_o(sub_word), .target_o(tgt));

  // Token counts (kiln_inorder_tokens): DECODE pops, RETIRE pushes, a start clears.
  logic tok_missing, tok_overflow;
  kiln_inorder_tokens #(.TOKEN_MAX(TOKEN_MAX)) tokens (
    .clk_i, .clear_i(!rst_ni || (start && !abort)), .hold_i(abort || err_pulse),
    .module_i(module_of), .insn_i(mem),
    .pop_i(state_q == kiln_cfg_pkg::INORDER_DECODE && !fail),
    .push_i(state_q == kiln_cfg_pkg::INORDER_RETIRE),
    .missing_o(tok_missing), .overflow_o(tok_overflow));

  // A GEMM's or an ALU's loop
  kiln_cfg_pkg::loop_t lf /*verilator split_var*/;
  kiln_loop_fields loop_fields (.insn_i(insn_q), .loop_o(lf));
  assign is_alu = lf.is_alu;

  // ---- LOAD and STORE walk ----------------------------------------------------------
  // A load writes (y_pad_0 + y_size + y_pad_1) x (x_pad_0 + x_size + x_pad_1) elements
  // from sram_base; a store reads y_size x x_size elements. elem_q is the DRAM element
  // index of the next data element, row_q's of the current data row.
  logic [WTW-1:0] r_q, c_q;
  // The data rows are [y_lo, y_hi) and the data columns [x_lo, x_hi); the walk turns
  // in_rows and in_cols on and off where r_q and c_q reach each bound less one (the
  // _m1 registers; all ones for a bound of 0, which r_q and c_q never reach), equality
  // compares without a carry chain.
  logic [WTW-1:0] y_lo_m1_q, y_hi_m1_q, x_lo_m1_q, x_hi_m1_q;
  logic x_lo_zero_q;
  // The walk's size (rows and columns with padding), and the flags that say whether the
  // current column and row are the last: each step sets them for the next element from
  // compares against the size less 2 (x_prev_q, y_prev_q), so no compare of c_q or r_q
  // sits on the walk's enables.
  logic [WTW-1:0] x_total, y_total, x_prev_q, y_prev_q;
  logic x_one_q, last_row;
  assign x_total = is_store ? WTW'(mem.x_size) : WTW'(mem.x_pad_0) + WTW'(mem.x_size) + WTW'(mem.x_pad_1);
  assign y_total = is_store ? WTW'(mem.y_size) : WTW'(mem.y_pad_0) + WTW'(mem.y_size) + WTW'(mem.y_pad_1);
  logic [SBW-1:0] idx_q;
  logic [DBW-1:0] elem_q, row_elem_q;
  logic [7:0] w_q;
  // Whether word w_q is the element's last (a sub-word element has one word), a flag
  // that each word step sets for the next from a compare with nwm1_q (the element's
  // words less 2), as the walk's flags are kept.
  logic [7:0] nwm1_q;
  logic w_last, nw0_q;
  // Whether the current row and column hold data, kept as flags that each step of the
  // walk sets for the next element (the compares stay off the enable paths).
  logic in_rows, in_cols, is_pad, last_col, last_elem;
  logic [WTW-1:0] r_next, c_next;
  assign r_next = r_q + 1'b1;
  assign c_next = c_q + 1'b1;
  assign is_pad = !(in_rows && in_cols);
  assign last_elem = last_col && last_row;

  logic [MAB-1:0] elem_byte, word_addr;
  assign elem_byte = elem_q << le_q;
  assign word_addr = sub_q ? {elem_byte[MAB-1:LWB], LWB'(0)} : elem_byte + (MAB'(w_q) << LWB);

  // The element just read: sub-word elements from their place in the word.
  logic [MDW-1:0] sub_elem;
  always_comb begin
    case (le_q)
      4'd0: sub_elem = MDW'(mem_i.rdata[elem_byte[LWB-1:0] * 8 +: 8]);
      4'd1: sub_elem = MDW'(mem_i.rdata[elem_byte[LWB-1:1] * 16 +: 16]);
      default: sub_elem = MDW'(mem_i.rdata[elem_byte[LWB-1:2] * 32 +: 32]);
    endcase
  end
  logic [MAXB-1:0] shifted;  // buf_q with the response shifted in from the top
  assign shifted = {mem_i.rdata, buf_q};

  // Scratchpad writes of a LOAD: a padding element, or the element completed this cycle.
  // An element of 8 bytes or more is the top of `shifted` after its last word.
  logic ld_write, ld_data_done;
  assign ld_data_done = state_q == kiln_cfg_pkg::INORDER_XFER && !is_pad && rd_done && w_last;
  assign ld_write = state_q == kiln_cfg_pkg::INORDER_XFER && is_load && (is_pad || ld_data_done);
  logic [kiln_cfg_pkg::UOP_ELEM_BITS-1:0] uop_elem;
  logic [kiln_cfg_pkg::INP_ELEM_BITS-1:0] inp_elem;
  logic [kiln_cfg_pkg::WGT_ELEM_BITS-1:0] wgt_elem;
  logic [kiln_cfg_pkg::ACC_ELEM_BITS-1:0] acc_elem;
  assign uop_elem = is_pad ? '0 : kiln_cfg_pkg::UOP_ELEM_BITS'(sub_elem);
  assign inp_elem = is_pad ? '0 : (kiln_cfg_pkg::INP_ELEM_BYTES < MWB) ? kiln_cfg_pkg::INP_ELEM_BITS'(sub_elem)
                                                       : shifted[MAXB-1 -: kiln_cfg_pkg::INP_ELEM_BITS];
  assign wgt_elem = is_pad ? '0 : (kiln_cfg_pkg::WGT_ELEM_BYTES < MWB) ? kiln_cfg_pkg::WGT_ELEM_BITS'(sub_elem)
                                                       : shifted[MAXB-1 -: kiln_cfg_pkg::WGT_ELEM_BITS];
  assign acc_elem = is_pad ? '0 : (kiln_cfg_pkg::ACC_ELEM_BYTES < MWB) ? kiln_cfg_pkg::ACC_ELEM_BITS'(sub_elem)
                                                       : shifted[MAXB-1 -: kiln_cfg_pkg::ACC_ELEM_BITS];

  // ---- GEMM and ALU loop (kiln_inorder_loop) and lanes (kiln_inorder_lanes) ---------
  logic [DSTW-1:0] d_idx, d_q;
  logic [SRCW-1:0] s_idx;
  logic [WGTW-1:0] w_idx;
  logic loop_last, lanes_done;
  kiln_inorder_loop loop (
    .clk_i, .load_i(state_q == kiln_cfg_pkg::INORDER_DECODE),
    .step_i(state_q == kiln_cfg_pkg::INORDER_WRITE && lanes_done && !loop_last),
    .loop_i(lf),
    .uop_raddr_o(uop_raddr), .uop_i(uop_rdata), .dst_idx_o(d_idx), .src_idx_o(s_idx),
    .wgt_idx_o(w_idx), .last_o(loop_last));
  logic tensor_alu;
  assign tensor_alu = is_alu && !lf.use_imm && !lf.reset;

  // res_q holds the tensor operand row (ALU) until each lane's result overwrites it.
  logic [kiln_cfg_pkg::ACC_ELEM_BITS-1:0] res_q;
  logic [LW-1:0] lane_q, wb_lane;
  logic s1_valid, wb_valid;
  logic [AW-1:0] wb_data;
  assign s1_valid = state_q == kiln_cfg_pkg::INORDER_LANE && !lf.reset;
  kiln_inorder_lanes #(.LW(LW)) lanes (
    .clk_i, .rst_ni, .s1_valid_i(s1_valid), .lane_i(lane_q), .acc_rdata_i(acc_rdata),
    .inp_rdata_i(inp_rdata), .wgt_rdata_i(wgt_rdata), .use_imm_i(lf.use_imm), .imm_i(lf.imm),
    .row_i(res_q), .alu_op_i(lf.alu_op), .is_alu_i(is_alu), .wb_valid_o(wb_valid),
    .wb_lane_o(wb_lane), .wb_data_o(wb_data), .done_o(lanes_done));

  // ---- Memory requests ---------------------------------------------------------------
  localparam bit ST_SUB = kiln_cfg_pkg::OUT_ELEM_BYTES < MWB;  // an OUT element is part of a word
  logic [MDW-1:0] st_wdata;
  logic [MWB-1:0] st_wstrb;
  if (ST_SUB) begin : g_st_part  // the element in every slot, enabled in its own
    assign st_wdata = {(MWB / kiln_cfg_pkg::OUT_ELEM_BYTES){out_rdata}};
    assign st_wstrb = MWB'(((1 << kiln_cfg_pkg::OUT_ELEM_BYTES) - 1) << elem_byte[LWB-1:0]);
  end else begin : g_st_words     // word w_q of the element
    assign st_wdata = out_rdata[32'(w_q) * MDW +: MDW];
    assign st_wstrb = '1;
  end
  // A request is prepared a cycle before it is issued, so the port's outputs come from
  // registers: the address arithmetic and the memory's decode are then separate paths.
  logic want_req, req_q, req_we_q;
  logic perr_q;  // a scratchpad parity error waits for the port (below, the sequencer)
  kiln_cfg_pkg::status_where_t perr_where_q;
  logic [kiln_cfg_pkg::MEM_ADDR_BITS-1:0] req_addr_q;
  logic [MDW-1:0] req_wdata_q;
  logic [MWB-1:0] req_wstrb_q;
  // A write's acceptance is registered (wr_ack_q) before the walk moves on: the memory's
  // ready may come late in the cycle (the host link has priority there).
  logic wr_ack_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni || start || abort) wr_ack_q <= 1'b0;
    else wr_ack_q <= mem_fire && req_we_q;
  end
  assign want_req = !req_q && !rd_wait_q && !wr_ack_q && !perr_q &&
                    ((state_q == kiln_cfg_pkg::INORDER_FETCH && !at_end_q) || (state_q == kiln_cfg_pkg::INORDER_XFER && !is_pad) ||
                     state_q == kiln_cfg_pkg::INORDER_ST_WRITE);
  always_ff @(posedge clk_i) begin
    if (!rst_ni || start || abort || err_pulse) req_q <= 1'b0;
    else if (want_req) req_q <= 1'b1;
    else if (mem_fire) req_q <= 1'b0;
  end
  // The request's fields follow the state while none is pending (no enable from
  // want_req), and hold while one is.
  always_ff @(posedge clk_i) begin
    if (!req_q) begin
      req_we_q <= state_q == kiln_cfg_pkg::INORDER_ST_WRITE;
      req_addr_q <= state_q == kiln_cfg_pkg::INORDER_FETCH ? insn_addr[kiln_cfg_pkg::MEM_ADDR_BITS-1:0] + (pc_q << $clog2(kiln_cfg_pkg::INSN_BITS / 8)) + (MAB'(w_q[0]) << LWB)
                                     : word_addr;
      req_wdata_q <= st_wdata;
      req_wstrb_q <= st_wstrb;
    end
  end
  assign mem_o.valid = req_q;
  assign mem_o.we = req_we_q;
  assign mem_o.addr = req_addr_q;
  assign mem_o.wdata = req_wdata_q;
  assign mem_o.wstrb = req_wstrb_q;

  // ---- Scratchpad ports ------------------------------------------------------------
  always_comb begin
    uop_we = ld_write && tgt_q[0];
    inp_we = ld_write && tgt_q[1];
    wgt_we = ld_write && tgt_q[2];
    uop_waddr = UW'(idx_q);
    inp_waddr = INPW'(idx_q);
    wgt_waddr = WGTW'(idx_q);
    uop_wdata = uop_elem;
    inp_wdata = inp_elem;
    wgt_wdata = wgt_elem;

    uop_re = state_q == kiln_cfg_pkg::INORDER_UOP;
    inp_re = state_q == kiln_cfg_pkg::INORDER_ROW && !is_alu;
    inp_raddr = INPW'(s_idx);
    wgt_re = state_q == kiln_cfg_pkg::INORDER_ROW && !is_alu;
    wgt_raddr = w_idx;
    acc_re = state_q == kiln_cfg_pkg::INORDER_ROW || state_q == kiln_cfg_pkg::INORDER_SRC || state_q == kiln_cfg_pkg::INORDER_ST_READ;
    acc_raddr = (state_q == kiln_cfg_pkg::INORDER_ROW && tensor_alu) ? DSTW'(s_idx) :
                (state_q == kiln_cfg_pkg::INORDER_ROW ? d_idx : (state_q == kiln_cfg_pkg::INORDER_ST_READ ? DSTW'(idx_q) : d_q));

    acc_we = (ld_write && tgt_q[3]) || (state_q == kiln_cfg_pkg::INORDER_WRITE && lanes_done);
    acc_waddr = state_q == kiln_cfg_pkg::INORDER_WRITE ? d_q : DSTW'(idx_q);
    acc_wdata = state_q == kiln_cfg_pkg::INORDER_WRITE ? res_q : acc_elem;
  end

  // ---- Sequencer -------------------------------------------------------------------
  logic retire;
  assign retire = state_q == kiln_cfg_pkg::INORDER_RETIRE;
  // A failed access stops the run a cycle later (a register between the memory's
  // decode and the sequencer).
  logic mem_err_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni || start) mem_err_q <= 1'b0;
    else mem_err_q <= (mem_fire || rd_done) && mem_i.error;
  end
  localparam int ECB = kiln_cfg_pkg::ERR_CAUSE_BITS;
  kiln_cfg_pkg::err_cause_t fail_cause;
  kiln_cfg_pkg::status_where_t fail_where;
  // A parity error (PARITY) is kept until the memory port is idle: no new request goes
  // out, the one pending completes (a write's data may not be dropped), then the run
  // fails. A STORE reads ACC in ST_READ.
  logic acc_store_q;  // the last cycle's ACC read was a STORE's
  localparam int WMB = kiln_cfg_pkg::WHERE_MODULE_BITS, WTB = kiln_cfg_pkg::WHERE_MEM_BITS;
  always_ff @(posedge clk_i) acc_store_q <= state_q == kiln_cfg_pkg::INORDER_ST_READ;
  always_ff @(posedge clk_i) begin
    if (!rst_ni || start || abort || err_pulse) begin
      perr_q <= 1'b0;
      perr_where_q <= '0;
    end else if (!perr_q && (uop_perr || inp_perr || wgt_perr || acc_perr)) begin
      perr_q <= 1'b1;
      perr_where_q <= {acc_perr && acc_store_q ? WMB'(kiln_cfg_pkg::MODULE_STORE) : WMB'(kiln_cfg_pkg::MODULE_COMPUTE),
                       uop_perr ? WTB'(kiln_cfg_pkg::MEM_UOP) : inp_perr ? WTB'(kiln_cfg_pkg::MEM_INP)
                       : wgt_perr ? WTB'(kiln_cfg_pkg::MEM_WGT) : WTB'(kiln_cfg_pkg::MEM_ACC)};
    end
  end
  always_comb begin
    fail = 1'b0;
    fail_cause = '0;
    fail_where = '0;
    if (mem_err_q) begin
      fail = 1'b1;
      fail_cause = ECB'(kiln_cfg_pkg::ERR_DRAM);
    end else if (perr_q && !req_q && !rd_wait_q && !wr_ack_q) begin
      fail = 1'b1;  // a scratchpad word read back wrong, once the memory port is idle
      fail_cause = ECB'(kiln_cfg_pkg::ERR_PARITY);
      fail_where = perr_where_q;
    end else if (state_q == kiln_cfg_pkg::INORDER_FETCH && at_end_q && !rd_wait_q && !req_q) begin
      fail = 1'b1;  // the stream ended without FINISH
      fail_cause = ECB'(kiln_cfg_pkg::ERR_BAD_INSN);
    end else if (state_q == kiln_cfg_pkg::INORDER_DECODE) begin
      if (bad_insn) begin
        fail = 1'b1;
        fail_cause = ECB'(kiln_cfg_pkg::ERR_BAD_INSN);
      end else if (tok_missing) begin
        fail = 1'b1;
        fail_cause = ECB'(kiln_cfg_pkg::ERR_TOKEN_MISSING);
      end else if (tok_overflow) begin
        fail = 1'b1;
        fail_cause = ECB'(kiln_cfg_pkg::ERR_TOKEN_OVERFLOW);
      end
    end
  end
  // The sequencer stops a cycle after the failing one (a register off the long paths).
  logic fail_q;
  kiln_cfg_pkg::err_cause_t fail_cause_q;
  kiln_cfg_pkg::status_where_t fail_where_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni || start || abort || err_pulse) begin
      fail_q <= 1'b0;
      fail_cause_q <= '0;
      fail_where_q <= '0;
    end else if (fail && !fail_q) begin
      fail_q <= 1'b1;
      fail_cause_q <= fail_cause;
      fail_where_q <= fail_where;
    end
  end
  assign err_pulse = fail_q && state_q != kiln_cfg_pkg::INORDER_IDLE && state_q != kiln_cfg_pkg::INORDER_DONE;
  assign err_cause = fail_cause_q;
  assign err_where = fail_where_q;
  assign finished = state_q == kiln_cfg_pkg::INORDER_DONE && !start;  // not the last run's DONE while starting

  // The sequencer is two blocks: the state (which start, abort and a failure override)
  // and the datapath registers, which follow the state alone. A datapath step taken in
  // the cycle that aborts or fails is harmless: DECODE reloads every walk and loop
  // register, and a start clears the fetch's. Keeping start, abort and the failure
  // logic out of the datapath's enables keeps those paths short (iCE40 timing).
  kiln_cfg_pkg::inorder_state_e state_next;
  always_comb begin
    state_next = state_q;
    case (state_q)
      kiln_cfg_pkg::INORDER_IDLE, kiln_cfg_pkg::INORDER_DONE: ;
      kiln_cfg_pkg::INORDER_FETCH: if (rd_done && w_q[0]) state_next = kiln_cfg_pkg::INORDER_DECODE;
      kiln_cfg_pkg::INORDER_DECODE: if (!fail) begin
        if (is_finish) state_next = kiln_cfg_pkg::INORDER_DONE;
        else if (is_load || is_store) state_next = empty_xfer ? kiln_cfg_pkg::INORDER_RETIRE : (is_load ? kiln_cfg_pkg::INORDER_XFER : kiln_cfg_pkg::INORDER_ST_READ);
        else state_next = lf.empty ? kiln_cfg_pkg::INORDER_RETIRE : kiln_cfg_pkg::INORDER_UOP;
      end
      kiln_cfg_pkg::INORDER_XFER: if ((is_pad || rd_done) && (is_pad || w_last) && last_elem)
        state_next = kiln_cfg_pkg::INORDER_RETIRE;
      kiln_cfg_pkg::INORDER_ST_READ: state_next = kiln_cfg_pkg::INORDER_ST_WRITE;
      kiln_cfg_pkg::INORDER_ST_WRITE: if (wr_ack_q && w_last)
        state_next = last_elem ? kiln_cfg_pkg::INORDER_RETIRE : kiln_cfg_pkg::INORDER_ST_READ;
      kiln_cfg_pkg::INORDER_UOP: state_next = kiln_cfg_pkg::INORDER_ROW;
      kiln_cfg_pkg::INORDER_ROW: state_next = tensor_alu ? kiln_cfg_pkg::INORDER_SRC : kiln_cfg_pkg::INORDER_LANE;
      kiln_cfg_pkg::INORDER_SRC: state_next = kiln_cfg_pkg::INORDER_LANE;
      kiln_cfg_pkg::INORDER_LANE: if (lf.reset || lane_q == LW'(LANES - 1)) state_next = kiln_cfg_pkg::INORDER_WRITE;
      kiln_cfg_pkg::INORDER_WRITE: if (lanes_done) state_next = loop_last ? kiln_cfg_pkg::INORDER_RETIRE : kiln_cfg_pkg::INORDER_UOP;
      kiln_cfg_pkg::INORDER_RETIRE: state_next = kiln_cfg_pkg::INORDER_FETCH;
      default: state_next = kiln_cfg_pkg::INORDER_IDLE;
    endcase
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni || abort) begin
      state_q <= kiln_cfg_pkg::INORDER_IDLE;
      rd_wait_q <= 1'b0;
    end else if (start) begin
      state_q <= kiln_cfg_pkg::INORDER_FETCH;
      rd_wait_q <= 1'b0;
    end else if (err_pulse) begin
      state_q <= kiln_cfg_pkg::INORDER_DONE;
      rd_wait_q <= 1'b0;
    end else begin
      if (mem_fire && !mem_o.we) rd_wait_q <= 1'b1;
      if (rd_done) rd_wait_q <= 1'b0;
      state_q <= state_next;
    end
  end

  always_ff @(posedge clk_i) begin
    case (state_q)
      kiln_cfg_pkg::INORDER_FETCH: if (rd_done) begin
        buf_q <= shifted[MAXB-1:MDW];
        if (w_q[0]) begin
          insn_q <= shifted[MAXB-1 -: kiln_cfg_pkg::INSN_BITS];
          pc_q <= pc_q + 1'b1;
          w_q <= '0;
        end else begin
          w_q <= 8'd1;
        end
      end
      // The walk's and the loop's registers load unconditionally; a failing
      // instruction (its tokens, its opcode) waits here for err_pulse.
      kiln_cfg_pkg::INORDER_DECODE: begin
        r_q <= '0;
        c_q <= '0;
        w_q <= '0;
        idx_q <= mem.sram_base;
        elem_q <= mem.dram_base;
        row_elem_q <= mem.dram_base;
        le_q <= le;
        nwm1_q <= nw - 1'b1;
        nw0_q <= nw == '0;
        w_last <= nw == '0;
        sub_q <= sub_word;
        tgt_q <= tgt;
        in_rows <= is_store || mem.y_pad_0 == '0;
        in_cols <= is_store || mem.x_pad_0 == '0;
        y_lo_m1_q <= (is_store ? '0 : WTW'(mem.y_pad_0)) - 1'b1;
        y_hi_m1_q <= (is_store ? WTW'(mem.y_size) : WTW'(mem.y_pad_0) + WTW'(mem.y_size)) - 1'b1;
        y_prev_q <= y_total - WTW'(2);
        last_row <= y_total == WTW'(1);
        x_lo_m1_q <= (is_store ? '0 : WTW'(mem.x_pad_0)) - 1'b1;
        x_hi_m1_q <= (is_store ? WTW'(mem.x_size) : WTW'(mem.x_pad_0) + WTW'(mem.x_size)) - 1'b1;
        x_lo_zero_q <= is_store || mem.x_pad_0 == '0;
        x_prev_q <= x_total - WTW'(2);
        x_one_q <= x_total == WTW'(1);
        last_col <= x_total == WTW'(1);
      end
      // LOAD: one element per pass; data elements take nw + 1 word reads.
      kiln_cfg_pkg::INORDER_XFER: if (is_pad || rd_done) begin
        if (!is_pad) buf_q <= shifted[MAXB-1:MDW];
        if (is_pad || w_last) begin
          w_q <= '0;
          w_last <= nw0_q;
          idx_q <= idx_q + 1'b1;
          if (!is_pad) elem_q <= elem_q + 1'b1;
          if (last_col) begin
            c_q <= '0;
            r_q <= r_next;
            last_col <= x_one_q;
            last_row <= r_q == y_prev_q;
            in_cols <= x_lo_zero_q;
            if (r_q == y_lo_m1_q) in_rows <= 1'b1;
            else if (r_q == y_hi_m1_q) in_rows <= 1'b0;
            if (in_rows) begin
              row_elem_q <= row_elem_q + DBW'(mem.x_stride);
              elem_q <= row_elem_q + DBW'(mem.x_stride);
            end else begin
              elem_q <= row_elem_q;
            end
          end else begin
            c_q <= c_next;
            last_col <= c_q == x_prev_q;
            if (c_q == x_lo_m1_q) in_cols <= 1'b1;
            else if (c_q == x_hi_m1_q) in_cols <= 1'b0;
          end
        end else begin
          w_q <= w_q + 1'b1;
          w_last <= w_q == nwm1_q;
        end
      end
      // STORE: read the OUT element, then write its words.
      kiln_cfg_pkg::INORDER_ST_WRITE: if (wr_ack_q) begin
        if (w_last) begin
          w_q <= '0;
          w_last <= nw0_q;
          idx_q <= idx_q + 1'b1;
          elem_q <= elem_q + 1'b1;
          if (last_col) begin
            c_q <= '0;
            r_q <= r_next;
            last_col <= x_one_q;
            last_row <= r_q == y_prev_q;
            row_elem_q <= row_elem_q + DBW'(mem.x_stride);
            elem_q <= row_elem_q + DBW'(mem.x_stride);
          end else begin
            c_q <= c_next;
            last_col <= c_q == x_prev_q;
          end
        end else begin
          w_q <= w_q + 1'b1;
          w_last <= w_q == nwm1_q;
        end
      end
      // GEMM / ALU: read the micro-op, then its rows, then walk the lanes.
      kiln_cfg_pkg::INORDER_ROW: begin
        d_q <= d_idx;
        lane_q <= '0;
      end
      kiln_cfg_pkg::INORDER_SRC: res_q <= acc_rdata;  // the tensor operand; acc[d] is read now
      kiln_cfg_pkg::INORDER_LANE: begin
        if (lf.reset) res_q <= '0;
        else if (lane_q != LW'(LANES - 1)) lane_q <= lane_q + 1'b1;
      end
      default: ;
    endcase
    // Stage 4 of the lane pipeline
    if (wb_valid) res_q[32'(wb_lane) * AW +: AW] <= wb_data;
    // A start (or reset) begins the fetch at the stream's first word.
    if (!rst_ni || start) begin
      pc_q <= '0;
      w_q <= '0;
    end
  end

  // ---- Counters and the simulation view ---------------------------------------------
  localparam int CIB = kiln_cfg_pkg::CNT_INC_BITS;
  always_comb begin
    cnt_add = '0;
    cnt_add[kiln_cfg_pkg::CNT_CYCLES * CIB +: CIB] = CIB'(1);
    cnt_add[kiln_cfg_pkg::CNT_LOAD_INSNS * CIB +: CIB] = CIB'(retire && module_of == kiln_cfg_pkg::MODULE_LOAD);
    cnt_add[kiln_cfg_pkg::CNT_COMPUTE_INSNS * CIB +: CIB] = CIB'((retire && module_of == kiln_cfg_pkg::MODULE_COMPUTE) ||
                                                (state_q == kiln_cfg_pkg::INORDER_DECODE && is_finish && !fail));
    cnt_add[kiln_cfg_pkg::CNT_STORE_INSNS * CIB +: CIB] = CIB'(retire && module_of == kiln_cfg_pkg::MODULE_STORE);
    cnt_add[kiln_cfg_pkg::CNT_GEMM_UOPS * CIB +: CIB] = CIB'(state_q == kiln_cfg_pkg::INORDER_UOP && is_gemm);
    cnt_add[kiln_cfg_pkg::CNT_ALU_UOPS * CIB +: CIB] = CIB'(state_q == kiln_cfg_pkg::INORDER_UOP && is_alu);
  end
  // The last increment (FINISH's) lands in the DONE cycle, while the file still counts.
  always_ff @(posedge clk_i) cnt_add_q <= cnt_add;

  kiln_cfg_pkg::inorder_dbg_state_t dbg_state;
  always_comb begin
    dbg_state = '0;
    dbg_state.running = running;
    dbg_state.state = state_q;
    dbg_state.read_wait = rd_wait_q;
  end
  assign dbg_state_o = dbg_state;
  assign dbg_progress_o = mem_fire || rd_done || retire || state_q == kiln_cfg_pkg::INORDER_UOP;
endmodule
