// The compute module: runs LOADs of UOP and ACC, GEMM, ALU and FINISH in order. It owns
// the micro-op and accumulator buffers. OUT is no buffer of its own: the store module
// reads ACC through a port this module lends it (and truncates what it reads).
//
// GEMM and ALU run the loop nest of shared/ISA.md through a four-stage pipeline, one
// micro-op per cycle (an ALU op with a tensor operand takes two: the accumulator
// buffer has one read port):
//   A  loop counters; read the micro-op
//   B  indices = micro-op + loop offsets; read INP, WGT and ACC
//   C  forward ACC from D and E; GEMM or ALU; register the result
//   D  write ACC                        (E: what D wrote a cycle ago, for forwarding)
// Read-after-write on ACC inside a loop is thereby resolved by forwarding, never by
// the compiler.
//
// ACC is two banks, its lower and upper half (the top index bit), each with one write
// and one read port. The store module's reads share the read ports: a store read is
// granted unless stage B reads the same bank in that cycle; while one waits, stage A
// holds for a cycle, so a conflicting read costs the loop one bubble. The compiler
// centres ACC allocations on the boundary, so the two virtual threads' copies of a tile
// sit in different banks, and the store of one thread does not wait for the other's
// GEMM or ALU (docs/hardware.md). Tokens keep the store away from rows that compute
// still writes, so the two never race on a row.
module kiln_compute #(
  parameter int GEMM_PAIR_PRODUCTS = 0,  // kiln_gemm's PAIR_PRODUCTS
  parameter int PARITY = 0            // kiln_sram's PARITY, for UOP and ACC
) (
  input  logic clk_i,
  input  logic rst_ni,
  input  logic start_i,
  // Command queue head
  input  logic         cmd_valid_i,
  input  logic [kiln_cfg_pkg::INSN_BITS-1:0] cmd_i,
  output logic         cmd_pop_o,
  // Tokens
  input  logic tok_from_load_i,
  output logic tok_from_load_pop_o,
  input  logic tok_from_store_i,
  output logic tok_from_store_pop_o,
  input  logic tok_to_load_full_i,
  output logic tok_to_load_push_o,
  input  logic tok_to_store_full_i,
  output logic tok_to_store_push_o,
  // Scratchpad read ports (INP, WGT) and the store module's read port on ACC
  output logic                                   inp_re_o,
  output logic [kiln_cfg_pkg::LOG_INP_DEPTH-1:0] inp_raddr_o,
  input  logic [kiln_cfg_pkg::INP_ELEM_BITS-1:0] inp_rdata_i,
  output logic                                   wgt_re_o,
  output logic [kiln_cfg_pkg::LOG_WGT_DEPTH-1:0] wgt_raddr_o,
  input  logic [kiln_cfg_pkg::WGT_ELEM_BITS-1:0] wgt_rdata_i,
  input  logic                                   st_re_i,      // request
  input  logic [kiln_cfg_pkg::LOG_ACC_DEPTH-1:0] st_raddr_i,
  output logic                                   st_gnt_o,     // granted: data next cycle
  output logic [kiln_cfg_pkg::ACC_ELEM_BITS-1:0] st_rdata_o,
  // Two AXI4 read clients (UOP, ACC) and the read data they share
  output kiln_cfg_pkg::rd_req_t                    uop_rd_o,
  input  kiln_cfg_pkg::rd_rsp_t                    uop_rd_i,
  output kiln_cfg_pkg::rd_req_t                    acc_rd_o,
  input  kiln_cfg_pkg::rd_rsp_t                    acc_rd_i,
  input  logic [kiln_cfg_pkg::AXI_DATA_BITS-1:0]   r_data_i,
  // Status
  output logic       idle_o,
  output logic       busy_o,
  output logic       stall_o,
  output logic       retire_o,
  output logic       finished_o,    // FINISH retired since start
  output logic       gemm_uop_o,
  output logic       alu_uop_o,
  output logic [1:0] elem_read_o,   // [acc, uop] element read from DRAM this cycle
  output kiln_cfg_pkg::seq_state_e state_o,
  // A UOP or ACC word read back with a parity error (with PARITY), and where:
  // {module that read it, memory type} as STATUS shows it (hw/spec/regs.h)
  output logic       perr_o,
  output kiln_cfg_pkg::status_where_t perr_where_o
);
  localparam int UW = kiln_cfg_pkg::LOG_UOP_DEPTH;
  localparam int DSTW = kiln_cfg_pkg::LOG_ACC_DEPTH;
  localparam int INPW = kiln_cfg_pkg::LOG_INP_DEPTH;
  localparam int WGTW = kiln_cfg_pkg::LOG_WGT_DEPTH;
  localparam int SRCW = kiln_cfg_pkg::UOP_SRC_WIDTH;  // max(INPW, DSTW)
  localparam int ACCB = kiln_cfg_pkg::ACC_ELEM_BITS;
  localparam int LANES = kiln_cfg_pkg::BATCH * kiln_cfg_pkg::BLOCK_OUT;
  localparam int IOW = kiln_cfg_pkg::GEMM_ITER_OUT_WIDTH;
  localparam int IIW = kiln_cfg_pkg::GEMM_ITER_IN_WIDTH;

  // ---- Instruction sequencing (kiln_token_seq): START starts a LOAD of UOP/ACC or a
  // GEMM/ALU loop, or neither (FINISH, an empty one): then it goes straight to PUSH.
  logic [kiln_cfg_pkg::INSN_BITS-1:0] insn_q;
  logic start, skip, run_done, run_loop_q, finished_q;
  logic start_uop, start_acc, start_loop, uop_busy, acc_busy, loop_done;
  kiln_token_seq #(
    .POP_PREV(kiln_cfg_pkg::COMPUTE_POP_PREV), .POP_NEXT(kiln_cfg_pkg::COMPUTE_POP_NEXT),
    .PUSH_PREV(kiln_cfg_pkg::COMPUTE_PUSH_PREV), .PUSH_NEXT(kiln_cfg_pkg::COMPUTE_PUSH_NEXT)
  ) seq (
    .clk_i, .rst_ni, .cmd_valid_i, .cmd_i, .cmd_pop_o, .insn_o(insn_q),
    .tok_prev_i(tok_from_load_i), .tok_next_i(tok_from_store_i),
    .pop_prev_o(tok_from_load_pop_o), .pop_next_o(tok_from_store_pop_o),
    .room_prev_i(!tok_to_load_full_i), .room_next_i(!tok_to_store_full_i),
    .push_prev_o(tok_to_load_push_o), .push_next_o(tok_to_store_push_o),
    .start_o(start), .skip_i(skip), .done_i(run_done),
    .idle_o, .busy_o, .stall_o, .retire_o, .state_o);

  // ---- Decode -------------------------------------------------------------------
  // The held instruction as a LOAD: the opcode and flags sit where every format has
  // them; kiln_loop_fields reads a GEMM's or an ALU's own fields.
  /* verilator lint_off UNUSEDSIGNAL */
  kiln_cfg_pkg::mem_insn_t mem;
  /* verilator lint_on UNUSEDSIGNAL */
  assign mem = insn_q;
  logic empty_load;
  assign empty_load = mem.x_size == '0 || mem.y_size == '0;
  kiln_cfg_pkg::loop_t lf /*verilator split_var*/;  // a GEMM's or an ALU's loop
  kiln_loop_fields loop_fields (.insn_i(insn_q), .loop_o(lf));

  // The immediate, sign-extended to every lane.
  logic [ACCB-1:0] imm_vec;
  assign imm_vec = {LANES{kiln_cfg_pkg::ACC_WIDTH'($signed(lf.imm))}};

  // ---- Buffers ------------------------------------------------------------------
  logic uop_we, uop_re;
  logic [UW-1:0] uop_waddr, uop_raddr;
  logic [kiln_cfg_pkg::UOP_ELEM_BITS-1:0] uop_wdata;
  kiln_cfg_pkg::uop_t uop_rdata;
  logic unused_uop_bits;  // bits above the three index fields are zero in a legal micro-op
  assign unused_uop_bits = ^uop_rdata;
  logic uop_perr;
  kiln_sram #(.WIDTH(kiln_cfg_pkg::UOP_ELEM_BITS), .DEPTH(kiln_cfg_pkg::UOP_DEPTH), .PARITY(PARITY)) uop_buf (
    .clk_i, .we_i(uop_we), .waddr_i(uop_waddr), .wdata_i(uop_wdata),
    .re_i(uop_re), .raddr_i(uop_raddr), .rdata_o(uop_rdata), .perr_o(uop_perr));

  // acc_* is compute's view: one write, one read, data a cycle later from the bank read.
  logic acc_we, acc_re;
  logic [DSTW-1:0] acc_waddr, acc_raddr;
  logic [ACCB-1:0] acc_wdata, acc_rdata;
  logic acc_rbank_q, st_rbank_q;   // the bank each side read last
  logic acc_rbank, st_rbank;       // the bank each side reads now
  logic acc_perr, acc_perr_store;  // an ACC parity error; the store module's read
  if (DSTW >= 2) begin : g_banks
    logic [1:0] bank_we, bank_re;
    logic [DSTW-2:0] bank_raddr [2];
    logic [ACCB-1:0] bank_rdata [2];
    logic [1:0] bank_perr;
    logic [1:0] bank_store_q;  // each bank's last read was the store module's
    assign acc_rbank = acc_raddr[DSTW-1];
    assign st_rbank = st_raddr_i[DSTW-1];
    for (genvar b = 0; b < 2; b++) begin : g_bank
      assign bank_we[b] = acc_we && acc_waddr[DSTW-1] == 1'(b);
      assign bank_re[b] = (acc_re && acc_rbank == 1'(b)) || (st_gnt_o && st_rbank == 1'(b));
      assign bank_raddr[b] = (acc_re && acc_rbank == 1'(b)) ? acc_raddr[DSTW-2:0] : st_raddr_i[DSTW-2:0];
      kiln_sram #(.WIDTH(ACCB), .DEPTH(kiln_cfg_pkg::ACC_DEPTH / 2), .PARITY(PARITY)) acc_buf (
        .clk_i, .we_i(bank_we[b]), .waddr_i(acc_waddr[DSTW-2:0]), .wdata_i(acc_wdata),
        .re_i(bank_re[b]), .raddr_i(bank_raddr[b]), .rdata_o(bank_rdata[b]),
        .perr_o(bank_perr[b]));
      always_ff @(posedge clk_i) begin
        if (bank_re[b]) bank_store_q[b] <= !(acc_re && acc_rbank == 1'(b));
      end
    end
    assign acc_rdata = bank_rdata[acc_rbank_q];
    assign st_rdata_o = bank_rdata[st_rbank_q];
    assign acc_perr = |bank_perr;
    assign acc_perr_store = bank_perr[0] ? bank_store_q[0] : bank_store_q[1];
  end else begin : g_one_bank  // a two-element ACC: one bank, shared
    logic [ACCB-1:0] rdata;
    assign acc_rbank = 1'b0;
    assign st_rbank = 1'b0;
    logic store_q;  // the last read was the store module's
    kiln_sram #(.WIDTH(ACCB), .DEPTH(kiln_cfg_pkg::ACC_DEPTH), .PARITY(PARITY)) acc_buf (
      .clk_i, .we_i(acc_we), .waddr_i(acc_waddr), .wdata_i(acc_wdata),
      .re_i(acc_re || st_gnt_o), .raddr_i(acc_re ? acc_raddr : st_raddr_i), .rdata_o(rdata),
      .perr_o(acc_perr));
    always_ff @(posedge clk_i) begin
      if (acc_re || st_gnt_o) store_q <= !acc_re;
    end
    assign acc_rdata = rdata;
    assign st_rdata_o = rdata;
    assign acc_perr_store = store_q;
  end
  assign perr_o = uop_perr || acc_perr;
  localparam int WMB = kiln_cfg_pkg::WHERE_MODULE_BITS, WTB = kiln_cfg_pkg::WHERE_MEM_BITS;
  assign perr_where_o = uop_perr ? {WMB'(kiln_cfg_pkg::MODULE_COMPUTE), WTB'(kiln_cfg_pkg::MEM_UOP)}
                      : {acc_perr_store ? WMB'(kiln_cfg_pkg::MODULE_STORE) : WMB'(kiln_cfg_pkg::MODULE_COMPUTE),
                         WTB'(kiln_cfg_pkg::MEM_ACC)};
  always_ff @(posedge clk_i) begin
    if (acc_re) acc_rbank_q <= acc_rbank;
    if (st_gnt_o) st_rbank_q <= st_rbank;
  end

  // ---- LOAD of UOP and ACC --------------------------------------------------------
  logic ld_acc_we;
  logic [DSTW-1:0] ld_acc_waddr;
  logic [ACCB-1:0] ld_acc_wdata;
  assign start_uop = start && mem.opcode == kiln_cfg_pkg::OP_LOAD && !empty_load &&
                     mem.memory_type == kiln_cfg_pkg::MEM_UOP;
  assign start_acc = start && mem.opcode == kiln_cfg_pkg::OP_LOAD && !empty_load &&
                     mem.memory_type != kiln_cfg_pkg::MEM_UOP;

  kiln_load_2d #(.ELEM_BYTES(4), .IDX_W(UW)) uop_ld (
    .clk_i, .rst_ni, .start_i(start_uop), .insn_i(insn_q), .busy_o(uop_busy),
    .we_o(uop_we), .waddr_o(uop_waddr), .wdata_o(uop_wdata), .elem_read_o(elem_read_o[0]),
    .rd_o(uop_rd_o), .rd_i(uop_rd_i), .r_data_i);
  kiln_load_2d #(.ELEM_BYTES(kiln_cfg_pkg::ACC_ELEM_BYTES), .IDX_W(DSTW)) acc_ld (
    .clk_i, .rst_ni, .start_i(start_acc), .insn_i(insn_q), .busy_o(acc_busy),
    .we_o(ld_acc_we), .waddr_o(ld_acc_waddr), .wdata_o(ld_acc_wdata), .elem_read_o(elem_read_o[1]),
    .rd_o(acc_rd_o), .rd_i(acc_rd_i), .r_data_i);

  // ---- Loop pipeline --------------------------------------------------------------
  // Loop state, held for the instruction.
  logic l_alu_q, l_reset_q, l_imm_q;
  kiln_cfg_pkg::alu_op_e l_op_q;
  logic [UW-1:0] l_bgn_q;
  logic [UW:0] l_end_q;
  logic [IOW-1:0] l_iout_q;
  logic [IIW-1:0] l_iin_q;
  logic [DSTW-1:0] l_dfo_q, l_dfi_q;
  logic [SRCW-1:0] l_sfo_q, l_sfi_q;
  logic [WGTW-1:0] l_wfo_q, l_wfi_q;
  logic [ACCB-1:0] l_imm_vec_q;

  // Stage A
  logic a_active_q;
  logic [UW:0] k_q;
  logic [IOW-1:0] i_q;
  logic [IIW-1:0] j_q;
  logic [DSTW-1:0] a_dst_base_q, a_dst_q;
  logic [SRCW-1:0] a_src_base_q, a_src_q;
  logic [WGTW-1:0] a_wgt_base_q, a_wgt_q;
  // Stage B
  logic b_valid_q, b_phase_q;
  logic [DSTW-1:0] b_dst_off_q;
  logic [SRCW-1:0] b_src_off_q;
  logic [WGTW-1:0] b_wgt_off_q;
  logic [DSTW-1:0] b_src_acc_q;   // the tensor operand's index, read in phase 0
  logic [ACCB-1:0] src_val_q;     // the tensor operand, captured in phase 1
  // Stage C, D, E
  logic c_valid_q, d_valid_q, e_valid_q;
  logic [DSTW-1:0] c_dst_q, d_dst_q, e_dst_q;
  logic [ACCB-1:0] d_res_q, e_res_q;

  logic tensor_alu, b_hold, a_fire, a_last;
  assign tensor_alu = l_alu_q && !l_imm_q && !l_reset_q;
  assign b_hold = b_valid_q && tensor_alu && !b_phase_q;
  logic st_conflict;  // the store's read and stage B's want the same bank
  assign st_conflict = st_re_i && b_valid_q && acc_rbank == st_rbank;
  assign a_fire = a_active_q && !b_hold && !st_conflict;
  assign a_last = k_q == l_end_q - 1'b1 && j_q == l_iin_q - 1'b1 && i_q == l_iout_q - 1'b1;
  assign uop_re = a_fire;
  assign uop_raddr = UW'(k_q);

  // Stage B: indices of the micro-op in flight.
  logic [DSTW-1:0] b_dst, b_src_acc;
  logic [SRCW-1:0] b_src;
  logic [WGTW-1:0] b_wgt;
  assign b_dst = DSTW'(uop_rdata.dst_idx) + b_dst_off_q;
  assign b_src = SRCW'(uop_rdata.src_idx) + b_src_off_q;
  assign b_wgt = WGTW'(uop_rdata.wgt_idx) + b_wgt_off_q;
  assign b_src_acc = DSTW'(b_src);
  assign inp_re_o = b_valid_q && !l_alu_q;
  assign inp_raddr_o = INPW'(b_src);
  assign wgt_re_o = b_valid_q && !l_alu_q;
  assign wgt_raddr_o = b_wgt;
  assign st_gnt_o = st_re_i && !st_conflict;
  assign acc_re = b_valid_q;
  assign acc_raddr = b_hold ? b_src_acc : b_dst;

  // Forwarding: a value read from ACC last cycle is stale if D writes it now or E
  // wrote it last cycle.
  logic [ACCB-1:0] c_acc, src_fwd;
  assign c_acc = (d_valid_q && d_dst_q == c_dst_q) ? d_res_q :
                 (e_valid_q && e_dst_q == c_dst_q) ? e_res_q : acc_rdata;
  assign src_fwd = (d_valid_q && d_dst_q == b_src_acc_q) ? d_res_q :
                   (e_valid_q && e_dst_q == b_src_acc_q) ? e_res_q : acc_rdata;

  // Stage C
  logic [ACCB-1:0] gemm_res, alu_res, c_res;
  kiln_gemm #(.PAIR_PRODUCTS(GEMM_PAIR_PRODUCTS)) gemm (
    .inp_i(inp_rdata_i), .wgt_i(wgt_rdata_i), .acc_i(c_acc), .acc_o(gemm_res));
  kiln_alu alu (.clk_i, .op_i(l_op_q), .a_i(c_acc), .b_i(l_imm_q ? l_imm_vec_q : src_val_q), .r_o(alu_res));
  assign c_res = l_reset_q ? '0 : (l_alu_q ? alu_res : gemm_res);

  // Stage D: the ACC write (the port is shared with the ACC loader, never at once).
  assign acc_we = ld_acc_we || d_valid_q;
  assign acc_waddr = ld_acc_we ? ld_acc_waddr : d_dst_q;
  assign acc_wdata = ld_acc_we ? ld_acc_wdata : d_res_q;

  assign start_loop = start &&
                      (mem.opcode == kiln_cfg_pkg::OP_GEMM || lf.is_alu) && !lf.empty;
  assign loop_done = !a_active_q && !b_valid_q && !c_valid_q && !d_valid_q;

  always_ff @(posedge clk_i) begin
    if (start_loop) begin
      l_alu_q <= lf.is_alu;
      l_reset_q <= lf.reset;
      l_imm_q <= lf.use_imm;
      l_op_q <= lf.alu_op;
      l_bgn_q <= lf.uop_bgn;
      l_end_q <= lf.uop_end;
      l_iout_q <= lf.iter_out;
      l_iin_q <= lf.iter_in;
      l_dfo_q <= lf.dst_factor_out;
      l_dfi_q <= lf.dst_factor_in;
      l_sfo_q <= lf.src_factor_out;
      l_sfi_q <= lf.src_factor_in;
      l_wfo_q <= lf.wgt_factor_out;
      l_wfi_q <= lf.wgt_factor_in;
      l_imm_vec_q <= imm_vec;
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      a_active_q <= 1'b0;
      k_q <= '0;
      i_q <= '0;
      j_q <= '0;
      a_dst_base_q <= '0;
      a_dst_q <= '0;
      a_src_base_q <= '0;
      a_src_q <= '0;
      a_wgt_base_q <= '0;
      a_wgt_q <= '0;
      b_valid_q <= 1'b0;
      b_phase_q <= 1'b0;
      c_valid_q <= 1'b0;
      d_valid_q <= 1'b0;
      e_valid_q <= 1'b0;
    end else begin
      // Stage A: k innermost, then j, then i.
      if (start_loop) begin
        a_active_q <= 1'b1;
        k_q <= {1'b0, lf.uop_bgn};
        i_q <= '0;
        j_q <= '0;
        a_dst_base_q <= '0;
        a_dst_q <= '0;
        a_src_base_q <= '0;
        a_src_q <= '0;
        a_wgt_base_q <= '0;
        a_wgt_q <= '0;
      end else if (a_fire) begin
        if (a_last) a_active_q <= 1'b0;
        if (k_q != l_end_q - 1'b1) begin
          k_q <= k_q + 1'b1;
        end else begin
          k_q <= {1'b0, l_bgn_q};
          if (j_q != l_iin_q - 1'b1) begin
            j_q <= j_q + 1'b1;
            a_dst_q <= a_dst_q + l_dfi_q;
            a_src_q <= a_src_q + l_sfi_q;
            a_wgt_q <= a_wgt_q + l_wfi_q;
          end else begin
            j_q <= '0;
            i_q <= i_q + 1'b1;
            a_dst_base_q <= a_dst_base_q + l_dfo_q;
            a_src_base_q <= a_src_base_q + l_sfo_q;
            a_wgt_base_q <= a_wgt_base_q + l_wfo_q;
            a_dst_q <= a_dst_base_q + l_dfo_q;
            a_src_q <= a_src_base_q + l_sfo_q;
            a_wgt_q <= a_wgt_base_q + l_wfo_q;
          end
        end
      end
      // Stage B
      if (b_hold) begin
        b_phase_q <= 1'b1;
      end else begin
        b_valid_q <= a_fire;
        b_phase_q <= 1'b0;
      end
      // Stage C, D, E
      c_valid_q <= b_valid_q && !b_hold;
      d_valid_q <= c_valid_q;
      e_valid_q <= d_valid_q;
    end
  end

  always_ff @(posedge clk_i) begin
    if (a_fire) begin
      b_dst_off_q <= a_dst_q;
      b_src_off_q <= a_src_q;
      b_wgt_off_q <= a_wgt_q;
    end
    if (b_hold) b_src_acc_q <= b_src_acc;
    if (b_valid_q && b_phase_q) src_val_q <= src_fwd;
    c_dst_q <= b_dst;
    d_dst_q <= c_dst_q;
    d_res_q <= c_res;
    e_dst_q <= d_dst_q;
    e_res_q <= d_res_q;
  end

  // ---- Sequencing: what START ran and when it is done; FINISH ----------------------
  assign skip = !start_uop && !start_acc && !start_loop;
  assign run_done = run_loop_q ? loop_done : !uop_busy && !acc_busy;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      run_loop_q <= 1'b0;
      finished_q <= 1'b0;
    end else begin
      if (start) run_loop_q <= !start_uop && !start_acc;
      if (start_i) finished_q <= 1'b0;
      if (start && mem.opcode == kiln_cfg_pkg::OP_FINISH) finished_q <= 1'b1;
    end
  end

  assign finished_o = finished_q;
  assign gemm_uop_o = c_valid_q && !l_alu_q;
  assign alu_uop_o = c_valid_q && l_alu_q;
endmodule
