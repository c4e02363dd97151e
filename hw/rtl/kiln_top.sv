// The accelerator: fetch, load, compute and store joined by three command queues and
// four dependency-token queues; INP and WGT scratchpads between them (UOP and ACC live
// in compute, which lends ACC's read ports to store: OUT is ACC's low bits); one AXI4 master to DRAM shared by all, and the AXI4-Lite register
// file of hw/spec/regs.h. The dbg_* ports feed the simulation watchdog.
//
// Abort (CTRL bit 1 while busy, kiln_regfile's abort_o) ends a run that does not finish,
// such as a stream deadlocked on a token. The register file ends the run at once (done,
// error, ERR_ABORTED); the core then drains its AXI port before it resets: no new read
// or write address goes out (one offered and not yet taken stays offered, as AXI
// requires), read bursts in flight are accepted and dropped, the store module sends the
// data of the write bursts it has addressed, and their responses are taken. The memory
// always answers, so the drain ends; then a one-cycle synchronous reset clears every
// module, command queue and token queue (not the register file; the scratchpads keep
// their contents). A start taken meanwhile waits for that reset.
module kiln_top #(
  parameter int CMD_QUEUE_DEPTH = kiln_cfg_pkg::CMD_QUEUE_DEPTH,
  // Two GEMM products per multiplier (kiln_gemm): on for parts with 25x18 DSPs
  // (Xilinx), off for iCE40.
  parameter int GEMM_PAIR_PRODUCTS = 0,
  // A parity bit per scratchpad word, checked on every read (kiln_sram): a word read
  // back wrong ends the run with STATUS error ERR_PARITY, naming the module and buffer.
  // On in the Verilated models (the rtl device's fault injection); the board flows
  // leave it off unless they set it.
  parameter int PARITY = 0
) (
  input  logic clk_i,
  input  logic rst_ni,
  // AXI4-Lite register file, and the AXI4 master to DRAM (INCR bursts of full-width
  // beats): hw/spec/bus_ports.h
  input  kiln_cfg_pkg::axil_req_t s_axil_i,
  output kiln_cfg_pkg::axil_rsp_t s_axil_o,
  output kiln_cfg_pkg::axi_req_t  m_axi_o,
  input  kiln_cfg_pkg::axi_rsp_t  m_axi_i,
  // Debug view for the simulation watchdog (layout: hw/spec/debug_ports.h)
  output logic [kiln_cfg_pkg::DBG_STATE_BITS-1:0]  dbg_state_o,   // a dbg_state_t
  output logic [kiln_cfg_pkg::DBG_TOKENS_BITS-1:0] dbg_tokens_o,  // token queue occupancies
  output logic [kiln_cfg_pkg::DBG_QUEUES_BITS-1:0] dbg_queues_o,  // command queue occupancies
  output logic                                     dbg_progress_o // something moved this cycle
);
  localparam int DW = kiln_cfg_pkg::AXI_DATA_BITS;
  localparam int NCL = 5;  // read clients: fetch, inp, wgt, uop, acc
  localparam int QCW = $clog2(CMD_QUEUE_DEPTH + 1);

  // ---- Register file -----------------------------------------------------------------
  logic start, running, finished, dram_error, sram_error;
  kiln_cfg_pkg::status_where_t sram_where;
  logic abort, quiet;  // quiet: an abort's drain and reset (below) are under way
  logic [kiln_cfg_pkg::INSN_ADDR_BITS-1:0] insn_addr;
  logic [kiln_cfg_pkg::INSN_COUNT_BITS-1:0] insn_count;
  kiln_cfg_pkg::cnt_add_t cnt_add;
  kiln_regfile regs (
    .clk_i, .rst_ni,
    .axil_i(s_axil_i), .axil_o(s_axil_o),
    .start_o(start), .abort_o(abort), .insn_addr_o(insn_addr), .insn_count_o(insn_count),
    .finished_i(finished && !quiet), .error_i((dram_error || sram_error) && !quiet),
    .error_cause_i(kiln_cfg_pkg::ERR_CAUSE_BITS'(dram_error ? kiln_cfg_pkg::ERR_DRAM
                                                          : kiln_cfg_pkg::ERR_PARITY)),
    .error_where_i(dram_error ? '0 : sram_where),
    .cnt_add_i(cnt_add), .busy_o(running));

  // ---- Abort: drain the AXI port, then reset everything below the register file ------
  logic draining_q, clear_q, start_pend_q, drained, core_rst_n, core_start;
  logic aw_held_q, store_aw_valid, store_aw_ready, arb_r_ready, store_b_ready;
  // Read bursts addressed whose last beat has not arrived, and write bursts addressed
  // whose response has not arrived: as many as the memory may hold.
  localparam int RBW = 16, WBW = 8;
  logic [RBW-1:0] rd_bursts_q;
  logic [WBW-1:0] wr_bursts_q;
  assign quiet = draining_q || clear_q;
  assign drained = !m_axi_o.ar_valid && !m_axi_o.aw_valid && rd_bursts_q == '0 && wr_bursts_q == '0;
  assign core_rst_n = rst_ni && !clear_q;
  assign core_start = !quiet && (start || start_pend_q);
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      draining_q <= 1'b0;
      clear_q <= 1'b0;
      start_pend_q <= 1'b0;
      aw_held_q <= 1'b0;
      rd_bursts_q <= '0;
      wr_bursts_q <= '0;
    end else begin
      if (abort) draining_q <= 1'b1;
      else if (drained) draining_q <= 1'b0;
      clear_q <= draining_q && drained && !abort;
      if (abort || !quiet) start_pend_q <= 1'b0;
      else if (start) start_pend_q <= 1'b1;
      aw_held_q <= m_axi_o.aw_valid && !m_axi_i.aw_ready;
      rd_bursts_q <= rd_bursts_q + RBW'(m_axi_o.ar_valid && m_axi_i.ar_ready) -
                     RBW'(m_axi_i.r_valid && m_axi_o.r_ready && m_axi_i.r.last);
      wr_bursts_q <= wr_bursts_q + WBW'(m_axi_o.aw_valid && m_axi_i.aw_ready) -
                     WBW'(m_axi_i.b_valid && m_axi_o.b_ready);
    end
  end
  // While quiet the arbiter sees no requester and keeps only the address it holds.
  assign m_axi_o.aw_valid = store_aw_valid && (!quiet || aw_held_q);
  assign store_aw_ready = m_axi_i.aw_ready && (!quiet || aw_held_q);
  assign m_axi_o.r_ready = arb_r_ready || quiet;
  assign m_axi_o.b_ready = store_b_ready || quiet;

  // ---- Read arbitration ----------------------------------------------------------------
  // The read clients, in ARID order: fetch, load's INP and WGT, compute's UOP and ACC.
  kiln_cfg_pkg::rd_req_t fetch_rd_req, inp_rd_req, wgt_rd_req, uop_rd_req, acc_rd_req;
  kiln_cfg_pkg::rd_rsp_t fetch_rd_rsp, inp_rd_rsp, wgt_rd_rsp, uop_rd_rsp, acc_rd_rsp;
  kiln_axi_rd_arbiter #(.N(NCL), .IDW(kiln_cfg_pkg::AXI_ID_BITS)) rd_arb (
    .clk_i, .rst_ni(core_rst_n),
    // Masked, not `quiet ? '0 : ...`: Yosys 0.23 derives kiln_top twice (an internal
    // assertion) when that conditional sits in a port connection under -chparam.
    .c_ar_valid_i({acc_rd_req.ar_valid, uop_rd_req.ar_valid, wgt_rd_req.ar_valid,
                   inp_rd_req.ar_valid, fetch_rd_req.ar_valid} & {NCL{!quiet}}),
    .c_ar_ready_o({acc_rd_rsp.ar_ready, uop_rd_rsp.ar_ready, wgt_rd_rsp.ar_ready,
                   inp_rd_rsp.ar_ready, fetch_rd_rsp.ar_ready}),
    .c_ar_addr_i({acc_rd_req.ar_addr, uop_rd_req.ar_addr, wgt_rd_req.ar_addr,
                  inp_rd_req.ar_addr, fetch_rd_req.ar_addr}),
    .c_ar_len_i({acc_rd_req.ar_len, uop_rd_req.ar_len, wgt_rd_req.ar_len,
                 inp_rd_req.ar_len, fetch_rd_req.ar_len}),
    .c_r_valid_o({acc_rd_rsp.r_valid, uop_rd_rsp.r_valid, wgt_rd_rsp.r_valid,
                  inp_rd_rsp.r_valid, fetch_rd_rsp.r_valid}),
    .c_r_ready_i({acc_rd_req.r_ready, uop_rd_req.r_ready, wgt_rd_req.r_ready,
                  inp_rd_req.r_ready, fetch_rd_req.r_ready}),
    .ar_valid_o(m_axi_o.ar_valid), .ar_ready_i(m_axi_i.ar_ready), .ar_id_o(m_axi_o.ar.id),
    .ar_addr_o(m_axi_o.ar.addr), .ar_len_o(m_axi_o.ar.len),
    .r_valid_i(m_axi_i.r_valid), .r_ready_o(arb_r_ready), .r_id_i(m_axi_i.r.id));
  assign m_axi_o.ar.size = kiln_cfg_pkg::AXI_SIZE_BITS'($clog2(DW / 8));
  assign m_axi_o.ar.burst = kiln_cfg_pkg::AXI_BURST_INCR;
  assign m_axi_o.aw.size = kiln_cfg_pkg::AXI_SIZE_BITS'($clog2(DW / 8));
  assign m_axi_o.aw.burst = kiln_cfg_pkg::AXI_BURST_INCR;
  assign m_axi_o.aw.id = '0;

  // ---- Command queues ------------------------------------------------------------------
  localparam int IB = kiln_cfg_pkg::INSN_BITS;
  logic [IB-1:0] fetch_insn, load_cmd, compute_cmd, store_cmd;
  logic load_push, compute_push, store_push, load_full, compute_full, store_full;
  logic load_pop, compute_pop, store_pop, load_empty, compute_empty, store_empty;
  logic [QCW-1:0] load_count, compute_count, store_count;
  kiln_fifo #(.WIDTH(IB), .DEPTH(CMD_QUEUE_DEPTH)) load_q (
    .clk_i, .rst_ni(core_rst_n), .push_i(load_push), .data_i(fetch_insn), .full_o(load_full),
    .pop_i(load_pop), .data_o(load_cmd), .empty_o(load_empty), .count_o(load_count));
  kiln_fifo #(.WIDTH(IB), .DEPTH(CMD_QUEUE_DEPTH)) compute_q (
    .clk_i, .rst_ni(core_rst_n), .push_i(compute_push), .data_i(fetch_insn), .full_o(compute_full),
    .pop_i(compute_pop), .data_o(compute_cmd), .empty_o(compute_empty), .count_o(compute_count));
  kiln_fifo #(.WIDTH(IB), .DEPTH(CMD_QUEUE_DEPTH)) store_q (
    .clk_i, .rst_ni(core_rst_n), .push_i(store_push), .data_i(fetch_insn), .full_o(store_full),
    .pop_i(store_pop), .data_o(store_cmd), .empty_o(store_empty), .count_o(store_count));

  // ---- Token queues: load->compute, compute->load, compute->store, store->compute ----
  logic l2c_push, l2c_pop, l2c_full, l2c_empty;
  logic c2l_push, c2l_pop, c2l_full, c2l_empty;
  logic c2s_push, c2s_pop, c2s_full, c2s_empty;
  logic s2c_push, s2c_pop, s2c_full, s2c_empty;
  localparam int TQD = kiln_cfg_pkg::TOKEN_QUEUE_DEPTH;
  logic [kiln_cfg_pkg::DBG_TOKEN_COUNT_BITS-1:0] l2c_count, c2l_count, c2s_count, s2c_count;
  kiln_token_queue #(.DEPTH(TQD)) l2c (.clk_i, .rst_ni(core_rst_n), .clear_i(core_start),
                                    .push_i(l2c_push), .full_o(l2c_full), .pop_i(l2c_pop),
                                    .empty_o(l2c_empty), .count_o(l2c_count));
  kiln_token_queue #(.DEPTH(TQD)) c2l (.clk_i, .rst_ni(core_rst_n), .clear_i(core_start),
                                    .push_i(c2l_push), .full_o(c2l_full), .pop_i(c2l_pop),
                                    .empty_o(c2l_empty), .count_o(c2l_count));
  kiln_token_queue #(.DEPTH(TQD)) c2s (.clk_i, .rst_ni(core_rst_n), .clear_i(core_start),
                                    .push_i(c2s_push), .full_o(c2s_full), .pop_i(c2s_pop),
                                    .empty_o(c2s_empty), .count_o(c2s_count));
  kiln_token_queue #(.DEPTH(TQD)) s2c (.clk_i, .rst_ni(core_rst_n), .clear_i(core_start),
                                    .push_i(s2c_push), .full_o(s2c_full), .pop_i(s2c_pop),
                                    .empty_o(s2c_empty), .count_o(s2c_count));

  // ---- Scratchpads shared between modules -------------------------------------------
  logic inp_we, inp_re, wgt_we, wgt_re;
  logic [kiln_cfg_pkg::LOG_INP_DEPTH-1:0] inp_waddr, inp_raddr;
  logic [kiln_cfg_pkg::LOG_WGT_DEPTH-1:0] wgt_waddr, wgt_raddr;
  logic [kiln_cfg_pkg::INP_ELEM_BITS-1:0] inp_wdata, inp_rdata;
  logic [kiln_cfg_pkg::WGT_ELEM_BITS-1:0] wgt_wdata, wgt_rdata;
  logic inp_perr, wgt_perr;
  kiln_sram #(.WIDTH(kiln_cfg_pkg::INP_ELEM_BITS), .DEPTH(kiln_cfg_pkg::INP_DEPTH), .PARITY(PARITY)) inp_buf (
    .clk_i, .we_i(inp_we), .waddr_i(inp_waddr), .wdata_i(inp_wdata),
    .re_i(inp_re), .raddr_i(inp_raddr), .rdata_o(inp_rdata), .perr_o(inp_perr));
  kiln_sram #(.WIDTH(kiln_cfg_pkg::WGT_ELEM_BITS), .DEPTH(kiln_cfg_pkg::WGT_DEPTH), .PARITY(PARITY)) wgt_buf (
    .clk_i, .we_i(wgt_we), .waddr_i(wgt_waddr), .wdata_i(wgt_wdata),
    .re_i(wgt_re), .raddr_i(wgt_raddr), .rdata_o(wgt_rdata), .perr_o(wgt_perr));
  // OUT is ACC's low bits: the store module reads ACC through compute (no OUT buffer).
  logic st_re, st_gnt;
  logic [kiln_cfg_pkg::LOG_ACC_DEPTH-1:0] st_raddr;
  logic [kiln_cfg_pkg::ACC_ELEM_BITS-1:0] st_rdata;

  // ---- Modules ---------------------------------------------------------------------------
  logic fetch_idle, insn_read;
  logic [kiln_cfg_pkg::DBG_FETCH_STATE_WIDTH-1:0] fetch_state;
  kiln_fetch fetch (
    .clk_i, .rst_ni(core_rst_n), .start_i(core_start), .insn_addr_i(insn_addr),
    .insn_count_i(insn_count),
    .load_push_o(load_push), .load_full_i(load_full),
    .compute_push_o(compute_push), .compute_full_i(compute_full),
    .store_push_o(store_push), .store_full_i(store_full), .insn_o(fetch_insn),
    .rd_o(fetch_rd_req), .rd_i(fetch_rd_rsp), .r_data_i(m_axi_i.r.data), .idle_o(fetch_idle), .insn_read_o(insn_read), .state_o(fetch_state));

  logic load_idle, load_busy, load_stall, load_retire;
  logic [1:0] load_elem;
  logic [kiln_cfg_pkg::DBG_LOAD_STATE_WIDTH-1:0] load_state;
  kiln_load load (
    .clk_i, .rst_ni(core_rst_n), .cmd_valid_i(!load_empty), .cmd_i(load_cmd), .cmd_pop_o(load_pop),
    .tok_from_compute_i(!c2l_empty), .tok_from_compute_pop_o(c2l_pop),
    .tok_to_compute_full_i(l2c_full), .tok_to_compute_push_o(l2c_push),
    .inp_we_o(inp_we), .inp_waddr_o(inp_waddr), .inp_wdata_o(inp_wdata),
    .wgt_we_o(wgt_we), .wgt_waddr_o(wgt_waddr), .wgt_wdata_o(wgt_wdata),
    .inp_rd_o(inp_rd_req), .inp_rd_i(inp_rd_rsp), .wgt_rd_o(wgt_rd_req), .wgt_rd_i(wgt_rd_rsp),
    .r_data_i(m_axi_i.r.data), .idle_o(load_idle), .busy_o(load_busy), .stall_o(load_stall),
    .retire_o(load_retire), .elem_read_o(load_elem), .state_o(load_state));

  logic compute_idle, compute_busy, compute_stall, compute_retire, compute_finished;
  logic gemm_uop, alu_uop;
  logic [1:0] compute_elem;
  logic [kiln_cfg_pkg::DBG_COMPUTE_STATE_WIDTH-1:0] compute_state;
  logic compute_perr;
  kiln_cfg_pkg::status_where_t compute_perr_where;
  kiln_compute #(.GEMM_PAIR_PRODUCTS(GEMM_PAIR_PRODUCTS), .PARITY(PARITY)) compute (
    .clk_i, .rst_ni(core_rst_n), .start_i(core_start),
    .cmd_valid_i(!compute_empty), .cmd_i(compute_cmd), .cmd_pop_o(compute_pop),
    .tok_from_load_i(!l2c_empty), .tok_from_load_pop_o(l2c_pop),
    .tok_from_store_i(!s2c_empty), .tok_from_store_pop_o(s2c_pop),
    .tok_to_load_full_i(c2l_full), .tok_to_load_push_o(c2l_push),
    .tok_to_store_full_i(c2s_full), .tok_to_store_push_o(c2s_push),
    .inp_re_o(inp_re), .inp_raddr_o(inp_raddr), .inp_rdata_i(inp_rdata),
    .wgt_re_o(wgt_re), .wgt_raddr_o(wgt_raddr), .wgt_rdata_i(wgt_rdata),
    .st_re_i(st_re), .st_raddr_i(st_raddr), .st_gnt_o(st_gnt), .st_rdata_o(st_rdata),
    .uop_rd_o(uop_rd_req), .uop_rd_i(uop_rd_rsp), .acc_rd_o(acc_rd_req), .acc_rd_i(acc_rd_rsp),
    .r_data_i(m_axi_i.r.data), .idle_o(compute_idle), .busy_o(compute_busy),
    .stall_o(compute_stall), .retire_o(compute_retire), .finished_o(compute_finished),
    .gemm_uop_o(gemm_uop), .alu_uop_o(alu_uop), .elem_read_o(compute_elem),
    .state_o(compute_state), .perr_o(compute_perr), .perr_where_o(compute_perr_where));

  logic store_idle, store_busy, store_stall, store_retire, store_elem;
  logic [kiln_cfg_pkg::DBG_STORE_STATE_WIDTH-1:0] store_state;
  kiln_store store (
    .clk_i, .rst_ni(core_rst_n),
    .cmd_valid_i(!store_empty), .cmd_i(store_cmd), .cmd_pop_o(store_pop),
    .tok_from_compute_i(!c2s_empty), .tok_from_compute_pop_o(c2s_pop),
    .tok_to_compute_full_i(s2c_full), .tok_to_compute_push_o(s2c_push),
    .acc_re_o(st_re), .acc_raddr_o(st_raddr), .acc_gnt_i(st_gnt), .acc_rdata_i(st_rdata),
    .aw_valid_o(store_aw_valid), .aw_ready_i(store_aw_ready), .aw_addr_o(m_axi_o.aw.addr),
    .aw_len_o(m_axi_o.aw.len), .w_valid_o(m_axi_o.w_valid), .w_ready_i(m_axi_i.w_ready),
    .w_data_o(m_axi_o.w.data), .w_strb_o(m_axi_o.w.strb), .w_last_o(m_axi_o.w.last),
    .b_valid_i(m_axi_i.b_valid), .b_ready_o(store_b_ready),
    .idle_o(store_idle), .busy_o(store_busy), .stall_o(store_stall), .retire_o(store_retire),
    .elem_write_o(store_elem), .state_o(store_state));

  // ---- Completion, errors, counters ------------------------------------------------
  // Done once FINISH has retired and every module and queue is empty: all DRAM writes
  // have been acknowledged by then.
  assign finished = compute_finished && fetch_idle && load_idle && compute_idle && store_idle &&
                    load_empty && compute_empty && store_empty;
  // A DRAM error response marks the run as failed (status bit 2). The clients count
  // their own beats; RLAST serves only the abort's drain.
  assign dram_error = (m_axi_i.r_valid && m_axi_o.r_ready && m_axi_i.r.resp[1]) ||
                      (m_axi_i.b_valid && m_axi_o.b_ready && m_axi_i.b.resp[1]);
  // A scratchpad word read back with a parity error (PARITY): compute reads INP and WGT.
  assign sram_error = inp_perr || wgt_perr || compute_perr;
  localparam int WMB = kiln_cfg_pkg::WHERE_MODULE_BITS, WTB = kiln_cfg_pkg::WHERE_MEM_BITS;
  assign sram_where = inp_perr ? {WMB'(kiln_cfg_pkg::MODULE_COMPUTE), WTB'(kiln_cfg_pkg::MEM_INP)}
                    : wgt_perr ? {WMB'(kiln_cfg_pkg::MODULE_COMPUTE), WTB'(kiln_cfg_pkg::MEM_WGT)}
                    : compute_perr_where;
  logic unused_inputs;  // lint: names with "unused" are waived by default
  assign unused_inputs = (^m_axi_i.b.id) ^ m_axi_i.r.resp[0] ^ m_axi_i.b.resp[0] ^
                            s2c_full;

  localparam int CIB = kiln_cfg_pkg::CNT_INC_BITS;
  always_comb begin
    cnt_add = '0;
    cnt_add[kiln_cfg_pkg::CNT_CYCLES * CIB +: CIB] = CIB'(1);
    cnt_add[kiln_cfg_pkg::CNT_LOAD_INSNS * CIB +: CIB] = CIB'(load_retire);
    cnt_add[kiln_cfg_pkg::CNT_COMPUTE_INSNS * CIB +: CIB] = CIB'(compute_retire);
    cnt_add[kiln_cfg_pkg::CNT_STORE_INSNS * CIB +: CIB] = CIB'(store_retire);
    cnt_add[kiln_cfg_pkg::CNT_GEMM_UOPS * CIB +: CIB] = CIB'(gemm_uop);
    cnt_add[kiln_cfg_pkg::CNT_ALU_UOPS * CIB +: CIB] = CIB'(alu_uop);
    cnt_add[kiln_cfg_pkg::CNT_LOAD_UOP_BYTES * CIB +: CIB] = (compute_elem[0] ? CIB'(kiln_cfg_pkg::UOP_ELEM_BYTES) : '0);
    cnt_add[kiln_cfg_pkg::CNT_LOAD_WGT_BYTES * CIB +: CIB] = (load_elem[1] ? CIB'(kiln_cfg_pkg::WGT_ELEM_BYTES) : '0);
    cnt_add[kiln_cfg_pkg::CNT_LOAD_INP_BYTES * CIB +: CIB] = (load_elem[0] ? CIB'(kiln_cfg_pkg::INP_ELEM_BYTES) : '0);
    cnt_add[kiln_cfg_pkg::CNT_LOAD_ACC_BYTES * CIB +: CIB] = (compute_elem[1] ? CIB'(kiln_cfg_pkg::ACC_ELEM_BYTES) : '0);
    cnt_add[kiln_cfg_pkg::CNT_STORE_BYTES * CIB +: CIB] = (store_elem ? CIB'(kiln_cfg_pkg::OUT_ELEM_BYTES) : '0);
    cnt_add[kiln_cfg_pkg::CNT_DRAM_READ_BYTES * CIB +: CIB] =
        (insn_read ? CIB'(kiln_cfg_pkg::INSN_BITS / 8) : '0) +
        (compute_elem[0] ? CIB'(kiln_cfg_pkg::UOP_ELEM_BYTES) : '0) +
        (load_elem[1] ? CIB'(kiln_cfg_pkg::WGT_ELEM_BYTES) : '0) +
        (load_elem[0] ? CIB'(kiln_cfg_pkg::INP_ELEM_BYTES) : '0) +
        (compute_elem[1] ? CIB'(kiln_cfg_pkg::ACC_ELEM_BYTES) : '0);
    cnt_add[kiln_cfg_pkg::CNT_DRAM_WRITE_BYTES * CIB +: CIB] = (store_elem ? CIB'(kiln_cfg_pkg::OUT_ELEM_BYTES) : '0);
    cnt_add[kiln_cfg_pkg::CNT_LOAD_BUSY_CYCLES * CIB +: CIB] = CIB'(load_busy);
    cnt_add[kiln_cfg_pkg::CNT_LOAD_STALL_CYCLES * CIB +: CIB] = CIB'(load_stall);
    cnt_add[kiln_cfg_pkg::CNT_COMPUTE_BUSY_CYCLES * CIB +: CIB] = CIB'(compute_busy);
    cnt_add[kiln_cfg_pkg::CNT_COMPUTE_STALL_CYCLES * CIB +: CIB] = CIB'(compute_stall);
    cnt_add[kiln_cfg_pkg::CNT_STORE_BUSY_CYCLES * CIB +: CIB] = CIB'(store_busy);
    cnt_add[kiln_cfg_pkg::CNT_STORE_STALL_CYCLES * CIB +: CIB] = CIB'(store_stall);
    if (quiet) cnt_add = '0;  // a start that waits for the abort's drain counts from the reset
  end

  // ---- Debug view ---------------------------------------------------------------------
  kiln_cfg_pkg::dbg_state_t dbg_state;
  always_comb begin
    dbg_state = '0;
    dbg_state.running = running;
    dbg_state.fetch_state = fetch_state;
    dbg_state.load_state = load_state;
    dbg_state.compute_state = compute_state;
    dbg_state.store_state = store_state;
  end
  assign dbg_state_o = dbg_state;
  // Token queues in hw::TokenQueue order and command queues in hw::Module order, from bit 0.
  localparam int QB = kiln_cfg_pkg::DBG_QUEUE_COUNT_BITS;
  assign dbg_tokens_o = {s2c_count, c2s_count, c2l_count, l2c_count};
  assign dbg_queues_o = kiln_cfg_pkg::DBG_QUEUES_BITS'({QB'(store_count), QB'(compute_count),
                                                        QB'(load_count)});
  assign dbg_progress_o = (m_axi_i.r_valid && m_axi_o.r_ready) || (m_axi_o.w_valid && m_axi_i.w_ready) ||
                          (m_axi_i.b_valid && m_axi_o.b_ready) || load_retire || compute_retire ||
                          store_retire || gemm_uop || alu_uop;
endmodule
