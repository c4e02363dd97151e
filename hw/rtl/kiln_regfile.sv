// The host's register file (hw/spec/regs.h), an AXI4-Lite slave: control and status,
// the instruction stream's address and count, the configuration fingerprint, the map
// version and the performance counters, which every start clears. A small part may keep
// fewer and narrower counters (CNT_MASK, CNT_BITS); the others read as zero.
module kiln_regfile #(
  parameter int CNT_BITS = kiln_cfg_pkg::COUNTER_BITS,  // or fewer
  parameter logic [kiln_cfg_pkg::NUM_COUNTERS-1:0] CNT_MASK = '1  // counters kept
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  // AXI4-Lite slave
  input  kiln_cfg_pkg::axil_req_t axil_i,
  output kiln_cfg_pkg::axil_rsp_t axil_o,
  // To and from the accelerator
  output logic        start_o,
  output logic        abort_o,      // CTRL bit 1 while busy: reset everything but this file
  output logic [kiln_cfg_pkg::INSN_ADDR_BITS-1:0] insn_addr_o,
  output logic [kiln_cfg_pkg::INSN_COUNT_BITS-1:0] insn_count_o,
  input  logic        finished_i,   // the run is complete
  input  logic        error_i,      // an error was seen (DRAM response, broken stream)
  input  kiln_cfg_pkg::err_cause_t error_cause_i,  // with error_i: STATUS's cause
  input  kiln_cfg_pkg::status_where_t error_where_i,  // with error_i: STATUS's where
  input  kiln_cfg_pkg::cnt_add_t cnt_add_i,  // per counter, per cycle
  output logic        busy_o
);
  localparam int NC = kiln_cfg_pkg::NUM_COUNTERS;
  localparam int RW = kiln_cfg_pkg::REG_DATA_BITS;
  localparam int CW = kiln_cfg_pkg::COUNTER_BITS;
  localparam int AW = kiln_cfg_pkg::INSN_ADDR_BITS;
  localparam int CIB = kiln_cfg_pkg::CNT_INC_BITS;

  logic awready, wready, bvalid_q, arready, rvalid_q;
  logic [kiln_cfg_pkg::AXI_RESP_BITS-1:0] bresp, rresp;
  logic [RW-1:0] rdata_q;
  always_comb begin
    axil_o = '0;
    axil_o.aw_ready = awready;
    axil_o.w_ready = wready;
    axil_o.b_valid = bvalid_q;
    axil_o.b_resp = bresp;
    axil_o.ar_ready = arready;
    axil_o.r_valid = rvalid_q;
    axil_o.r_data = rdata_q;
    axil_o.r_resp = rresp;
  end
  logic unused_wstrb;  // only CTRL's start bit looks at the strobes
  assign unused_wstrb = ^axil_i.w_strb[RW/8-1:1];
  logic busy_q, done_q, error_q;
  kiln_cfg_pkg::err_cause_t cause_q;
  kiln_cfg_pkg::status_where_t where_q;
  logic [AW-1:0] insn_addr_q;
  logic [kiln_cfg_pkg::INSN_COUNT_BITS-1:0] insn_count_q;
  // Counter c: cnt[c], a register of its own (bits above CNT_BITS stay zero).
  (* mem2reg *) logic [CW-1:0] cnt [NC];

  // Writes: address and data together, one at a time, taken into registers and applied
  // the next cycle (wr_q), so that the bus's handshake and the address decode do not
  // reach the run's state and the accelerator's start in one cycle (iCE40 timing).
  logic wr_fire, wr_q, wr_ctrl_start_q, wr_ctrl_abort_q;
  kiln_cfg_pkg::reg_addr_t wr_addr_q;
  logic [RW-1:0] wr_data_q;
  assign wr_fire = axil_i.aw_valid && axil_i.w_valid && !bvalid_q && !wr_q;
  assign awready = wr_fire;
  assign wready = wr_fire;
  assign bresp = kiln_cfg_pkg::AXI_RESP_OKAY;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) wr_q <= 1'b0;
    else wr_q <= wr_fire;
    if (wr_fire) begin
      wr_addr_q <= axil_i.aw_addr;
      wr_data_q <= axil_i.w_data;
      wr_ctrl_start_q <= axil_i.aw_addr == kiln_cfg_pkg::REG_CTRL && axil_i.w_strb[0] &&
                         axil_i.w_data[kiln_cfg_pkg::CTRL_START_BIT];
      wr_ctrl_abort_q <= axil_i.aw_addr == kiln_cfg_pkg::REG_CTRL && axil_i.w_strb[0] &&
                         axil_i.w_data[kiln_cfg_pkg::CTRL_ABORT_BIT];
    end
  end
  assign start_o = wr_q && wr_ctrl_start_q && !busy_q;
  assign abort_o = wr_q && wr_ctrl_abort_q && busy_q;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      bvalid_q <= 1'b0;
      insn_addr_q <= '0;
      insn_count_q <= '0;
    end else begin
      if (bvalid_q && axil_i.b_ready) bvalid_q <= 1'b0;
      if (wr_q) begin
        bvalid_q <= 1'b1;
        case (wr_addr_q)
          kiln_cfg_pkg::REG_INSN_COUNT: insn_count_q <= wr_data_q;
          kiln_cfg_pkg::REG_INSN_ADDR_LO: insn_addr_q[RW-1:0] <= wr_data_q;
          kiln_cfg_pkg::REG_INSN_ADDR_HI: insn_addr_q[AW-1 -: RW] <= wr_data_q;
          default: ;
        endcase
      end
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      busy_q <= 1'b0;
      done_q <= 1'b0;
      error_q <= 1'b0;
      cause_q <= '0;
      where_q <= '0;
    end else if (start_o) begin
      busy_q <= 1'b1;
      done_q <= 1'b0;
      error_q <= 1'b0;
      cause_q <= '0;
      where_q <= '0;
    end else if (abort_o) begin  // the run ends with an error that says so
      busy_q <= 1'b0;
      done_q <= 1'b1;
      error_q <= 1'b1;
      if (!error_q) cause_q <= kiln_cfg_pkg::ERR_CAUSE_BITS'(kiln_cfg_pkg::ERR_ABORTED);
    end else if (busy_q) begin
      if (error_i) error_q <= 1'b1;
      if (error_i && !error_q) begin  // the first error names the run's
        cause_q <= error_cause_i;
        where_q <= error_where_i;
      end
      if (finished_i) begin
        busy_q <= 1'b0;
        done_q <= 1'b1;
      end
    end
  end

  for (genvar c = 0; c < NC; c++) begin : g_cnt
    if (CNT_MASK[c]) begin : g_kept
      logic [CNT_BITS-1:0] q;
      always_ff @(posedge clk_i) begin
        if (!rst_ni || start_o) q <= '0;
        else if (busy_q) q <= q + CNT_BITS'(cnt_add_i[c * CIB +: CIB]);
      end
      assign cnt[c] = CW'(q);
    end else begin : g_none
      assign cnt[c] = '0;
      logic unused_add;
      assign unused_add = ^cnt_add_i[c * CIB +: CIB];
    end
  end

  // Reads: the register at the read address, taken when the address is accepted. The
  // decode sits in the clocked block, under the acceptance, so that a simulator decodes
  // only the addresses the host reads (Verilator evaluates combinational logic on the
  // bus inputs twice per cycle).
  kiln_cfg_pkg::status_t status;
  always_comb begin
    status = '0;
    status.where = where_q;
    status.cause = cause_q;
    status.error = error_q;
    status.done = done_q;
    status.busy = busy_q;
  end
  // Counter c: its low word at COUNTER_BASE + 2 c words, the high word after it.
  localparam int CB = RW / 8;  // bytes in a register
  assign arready = !rvalid_q;
  assign rresp = kiln_cfg_pkg::AXI_RESP_OKAY;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      rvalid_q <= 1'b0;
      rdata_q <= '0;
    end else begin
      if (rvalid_q && axil_i.r_ready) rvalid_q <= 1'b0;
      if (axil_i.ar_valid && arready) begin
        rvalid_q <= 1'b1;
        rdata_q <= '0;
        case (axil_i.ar_addr)
          kiln_cfg_pkg::REG_STATUS: rdata_q <= status;
          kiln_cfg_pkg::REG_INSN_COUNT: rdata_q <= RW'(insn_count_q);
          kiln_cfg_pkg::REG_INSN_ADDR_LO: rdata_q <= insn_addr_q[RW-1:0];
          kiln_cfg_pkg::REG_INSN_ADDR_HI: rdata_q <= insn_addr_q[AW-1 -: RW];
          kiln_cfg_pkg::REG_FP_LO: rdata_q <= kiln_cfg_pkg::FINGERPRINT[RW-1:0];
          kiln_cfg_pkg::REG_FP_HI: rdata_q <= kiln_cfg_pkg::FINGERPRINT[2*RW-1 -: RW];
          kiln_cfg_pkg::REG_VERSION: rdata_q <= RW'(kiln_cfg_pkg::REG_MAP_VERSION);
          default: begin
            for (int c = 0; c < NC; c++) begin
              if (axil_i.ar_addr == kiln_cfg_pkg::REG_COUNTER_BASE + kiln_cfg_pkg::REG_ADDR_BITS'(2 * CB * c))
                rdata_q <= cnt[c][RW-1:0];
              if (axil_i.ar_addr == kiln_cfg_pkg::REG_COUNTER_BASE + kiln_cfg_pkg::REG_ADDR_BITS'(2 * CB * c + CB))
                rdata_q <= cnt[c][CW-1 -: RW];
            end
          end
        endcase
      end
    end
  end

  assign insn_addr_o = insn_addr_q;
  assign insn_count_o = insn_count_q;
  assign busy_o = busy_q;
endmodule
