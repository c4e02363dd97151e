// Runs one 2D LOAD (shared/ISA.md) into one scratchpad: rows of x_size elements from
// DRAM at (dram_base + y * x_stride) * ELEM_BYTES, surrounded by zero padding, written
// row after row from sram_base. The caller skips loads with x_size or y_size zero.
module kiln_load_2d #(
  parameter int ELEM_BYTES = 16,
  parameter int IDX_W = 8,
  localparam int AB = kiln_cfg_pkg::AXI_ADDR_BITS,
  localparam int DW = kiln_cfg_pkg::AXI_DATA_BITS
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,
  input  logic                    start_i,
  input  logic [kiln_cfg_pkg::INSN_BITS-1:0] insn_i,
  output logic                    busy_o,
  // Scratchpad write port
  output logic                    we_o,
  output logic [IDX_W-1:0]        waddr_o,
  output logic [ELEM_BYTES*8-1:0] wdata_o,
  output logic                    elem_read_o,  // an element came from DRAM this cycle
  // AXI4 read client (kiln_dma_reader's)
  output kiln_cfg_pkg::rd_req_t   rd_o,
  input  kiln_cfg_pkg::rd_rsp_t   rd_i,
  input  logic [DW-1:0]           r_data_i
);
  localparam int LE = $clog2(ELEM_BYTES);
  localparam int SW = kiln_cfg_pkg::MEM_X_SIZE_WIDTH;   // y_size, x_size and x_stride
  localparam int PW = kiln_cfg_pkg::MEM_X_PAD_0_WIDTH;  // each pad
  localparam int TW = SW + 1;  // pad + size + pad: a pad is narrower than a size
  // Element addresses in DRAM: dram_base + (y_size - 1) * x_stride + x_size.
  localparam int EW = kiln_cfg_pkg::MEM_DRAM_BASE_WIDTH + 2;

  // Instruction fields; the others are the caller's, and sram_base may exceed IDX_W.
  /* verilator lint_off UNUSEDSIGNAL */
  kiln_cfg_pkg::mem_insn_t insn;
  /* verilator lint_on UNUSEDSIGNAL */
  assign insn = insn_i;

  // The instruction is held for the whole load.
  logic [SW-1:0] y_size_q, x_size_q, x_stride_q;
  logic [PW-1:0] y_pad_0_q, x_pad_0_q;
  logic [TW-1:0] y_total_q, x_total_q;

  // Row requests to the reader.
  logic        req_active_q;
  logic [SW-1:0] req_row_q;
  logic [EW-1:0] req_elem_q;  // element address of the row in DRAM
  logic        cmd_ready;
  logic [AB-1:0] req_addr;
  assign req_addr = AB'(req_elem_q << LE);

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      req_active_q <= 1'b0;
      req_row_q <= '0;
      req_elem_q <= '0;
    end else if (start_i) begin
      req_active_q <= 1'b1;
      req_row_q <= '0;
      req_elem_q <= EW'(insn.dram_base);
    end else if (req_active_q && cmd_ready) begin
      req_row_q <= req_row_q + 1'b1;
      req_elem_q <= req_elem_q + EW'(x_stride_q);
      if (req_row_q == y_size_q - 1'b1) req_active_q <= 1'b0;
    end
  end

  logic elem_valid, elem_ready, reader_busy_unused;
  logic [ELEM_BYTES*8-1:0] elem_data;
  kiln_dma_reader #(.ELEM_BYTES(ELEM_BYTES)) reader (
    .clk_i, .rst_ni,
    .cmd_valid_i(req_active_q), .cmd_ready_o(cmd_ready), .cmd_addr_i(req_addr),
    .cmd_count_i(x_size_q),
    .elem_valid_o(elem_valid), .elem_ready_i(elem_ready), .elem_data_o(elem_data),
    .rd_o, .rd_i, .r_data_i, .busy_o(reader_busy_unused));

  // Scratchpad writes: one element per cycle, zeros in the padding.
  logic        wr_active_q;
  logic [TW-1:0] row_q, col_q;
  logic [IDX_W-1:0] idx_q;
  logic in_rows, in_cols, is_data;
  assign in_rows = row_q >= TW'(y_pad_0_q) && row_q < TW'(y_pad_0_q) + TW'(y_size_q);
  assign in_cols = col_q >= TW'(x_pad_0_q) && col_q < TW'(x_pad_0_q) + TW'(x_size_q);
  assign is_data = in_rows && in_cols;
  assign elem_ready = wr_active_q && is_data;
  assign we_o = wr_active_q && (!is_data || elem_valid);
  assign waddr_o = idx_q;
  assign wdata_o = is_data ? elem_data : '0;
  assign elem_read_o = elem_valid && elem_ready;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      wr_active_q <= 1'b0;
      row_q <= '0;
      col_q <= '0;
      idx_q <= '0;
      y_size_q <= '0;
      x_size_q <= '0;
      x_stride_q <= '0;
      y_pad_0_q <= '0;
      x_pad_0_q <= '0;
      y_total_q <= '0;
      x_total_q <= '0;
    end else if (start_i) begin
      wr_active_q <= 1'b1;
      row_q <= '0;
      col_q <= '0;
      idx_q <= IDX_W'(insn.sram_base);
      y_size_q <= insn.y_size;
      x_size_q <= insn.x_size;
      x_stride_q <= insn.x_stride;
      y_pad_0_q <= insn.y_pad_0;
      x_pad_0_q <= insn.x_pad_0;
      y_total_q <= TW'(insn.y_pad_0) + TW'(insn.y_size) + TW'(insn.y_pad_1);
      x_total_q <= TW'(insn.x_pad_0) + TW'(insn.x_size) + TW'(insn.x_pad_1);
    end else if (we_o) begin
      idx_q <= idx_q + 1'b1;
      if (col_q == x_total_q - 1'b1) begin
        col_q <= '0;
        row_q <= row_q + 1'b1;
        if (row_q == y_total_q - 1'b1) wr_active_q <= 1'b0;
      end else begin
        col_q <= col_q + 1'b1;
      end
    end
  end

  assign busy_o = wr_active_q || req_active_q;
endmodule
