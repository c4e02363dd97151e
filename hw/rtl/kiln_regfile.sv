// The host's register file (hw/spec/regs.h), an AXI4-Lite slave: control and status,
// the instruction stream's address and count, the configuration fingerprint, the map
// version and the performance counters, which every start clears. A small part may keep
// fewer and narrower counters (CNT_MASK, CNT_BITS); the others read as zero.
module kiln_regfile #(
  parameter int CNT_BITS = 64,  // 32 or 64
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
  output logic [63:0] insn_addr_o,
  output logic [31:0] insn_count_o,
  input  logic        finished_i,   // the run is complete
  input  logic        error_i,      // an error was seen (DRAM response, broken stream)
  input  logic [3:0]  error_cause_i,  // with error_i: STATUS[7:4] (hw/spec/regs.h)
  input  logic [7:0]  error_where_i,  // with error_i: STATUS[15:8], {module, memory type}
  input  logic [kiln_cfg_pkg::NUM_COUNTERS*32-1:0] cnt_add_i,  // per counter, per cycle
  output logic        busy_o
);
  localparam int NC = kiln_cfg_pkg::NUM_COUNTERS;
  // Offsets (regs.h)
  localparam logic [7:0] CTRL = 8'h00, STATUS = 8'h04, INSN_COUNT = 8'h08,
                         INSN_ADDR_LO = 8'h0c, INSN_ADDR_HI = 8'h10, FP_LO = 8'h14,
                         FP_HI = 8'h18, VERSION = 8'h1c, COUNTER_BASE = 8'h40;

  logic awready, wready, bvalid_q, arready, rvalid_q;
  logic [1:0] bresp, rresp;
  logic [31:0] rdata_q;
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
  assign unused_wstrb = ^axil_i.w_strb[3:1];
  logic busy_q, done_q, error_q;
  logic [3:0] cause_q;
  logic [7:0] where_q;
  logic [63:0] insn_addr_q;
  logic [31:0] insn_count_q;
  logic [NC*64-1:0] cnt_q;  // counter c at [64c +: 64]; bits above CNT_BITS stay zero

  // Writes: address and data together, one at a time, taken into registers and applied
  // the next cycle (wr_q), so that the bus's handshake and the address decode do not
  // reach the run's state and the accelerator's start in one cycle (iCE40 timing).
  logic wr_fire, wr_q, wr_ctrl_start_q, wr_ctrl_abort_q;
  logic [7:0] wr_addr_q;
  logic [31:0] wr_data_q;
  assign wr_fire = axil_i.aw_valid && axil_i.w_valid && !bvalid_q && !wr_q;
  assign awready = wr_fire;
  assign wready = wr_fire;
  assign bresp = 2'b00;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) wr_q <= 1'b0;
    else wr_q <= wr_fire;
    if (wr_fire) begin
      wr_addr_q <= axil_i.aw_addr;
      wr_data_q <= axil_i.w_data;
      wr_ctrl_start_q <= axil_i.aw_addr == CTRL && axil_i.w_strb[0] && axil_i.w_data[0];
      wr_ctrl_abort_q <= axil_i.aw_addr == CTRL && axil_i.w_strb[0] && axil_i.w_data[1];
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
          INSN_COUNT: insn_count_q <= wr_data_q;
          INSN_ADDR_LO: insn_addr_q[31:0] <= wr_data_q;
          INSN_ADDR_HI: insn_addr_q[63:32] <= wr_data_q;
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
      if (!error_q) cause_q <= 4'(kiln_cfg_pkg::ERR_ABORTED);
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

  always_ff @(posedge clk_i) begin
    for (int c = 0; c < NC; c++) begin
      if (!CNT_MASK[c] || !rst_ni || start_o) cnt_q[c * 64 +: 64] <= '0;
      else if (busy_q)
        cnt_q[c * 64 +: CNT_BITS] <= cnt_q[c * 64 +: CNT_BITS] + CNT_BITS'(cnt_add_i[c * 32 +: 32]);
    end
  end

  // Reads
  logic [31:0] rd;
  always_comb begin
    rd = '0;
    case (axil_i.ar_addr)
      STATUS: rd = {16'b0, where_q, cause_q, 1'b0, error_q, done_q, busy_q};
      INSN_COUNT: rd = insn_count_q;
      INSN_ADDR_LO: rd = insn_addr_q[31:0];
      INSN_ADDR_HI: rd = insn_addr_q[63:32];
      FP_LO: rd = kiln_cfg_pkg::FINGERPRINT[31:0];
      FP_HI: rd = kiln_cfg_pkg::FINGERPRINT[63:32];
      VERSION: rd = 32'(kiln_cfg_pkg::REG_MAP_VERSION);
      default: begin
        for (int c = 0; c < NC; c++) begin
          if (axil_i.ar_addr == COUNTER_BASE + 8'(8 * c)) rd = cnt_q[c * 64 +: 32];
          if (axil_i.ar_addr == COUNTER_BASE + 8'(8 * c + 4)) rd = cnt_q[c * 64 + 32 +: 32];
        end
      end
    endcase
  end

  assign arready = !rvalid_q;
  assign rresp = 2'b00;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      rvalid_q <= 1'b0;
      rdata_q <= '0;
    end else begin
      if (rvalid_q && axil_i.r_ready) rvalid_q <= 1'b0;
      if (axil_i.ar_valid && arready) begin
        rvalid_q <= 1'b1;
        rdata_q <= rd;
      end
    end
  end

  assign insn_addr_o = insn_addr_q;
  assign insn_count_o = insn_count_q;
  assign busy_o = busy_q;
endmodule
