// Device memory storage: WORDS words of MEM_DATA_BITS (64), one access per cycle, byte
// write enables, read data one cycle after the request. Under Yosys (SYNTHESIS) four
// iCE40 UP5K SB_SPRAM256KA side by side, each holding 16 bits of every word (16 K words,
// 128 KiB; the primitive's ports are 14 address and 16 data bits); otherwise
// (Verilator) a behavioural array with the same timing.
module kiln_devmem_array #(
  parameter int WORDS = 16384  // at most 16384 under SYNTHESIS (four SPRAMs)
) (
  input  logic                     clk_i,
  input  logic                     en_i,     // an access this cycle
  input  logic                     we_i,
  input  logic [$clog2(WORDS)-1:0] addr_i,   // word address
  input  logic [kiln_cfg_pkg::MEM_DATA_BITS-1:0]   wdata_i,
  input  logic [kiln_cfg_pkg::MEM_DATA_BITS/8-1:0] wstrb_i,
  output logic [kiln_cfg_pkg::MEM_DATA_BITS-1:0]   rdata_o  // the word read in the previous cycle
);
`ifdef SYNTHESIS
  for (genvar b = 0; b < 4; b++) begin : g_spram
    // MASKWREN enables nibbles: two per byte strobe.
    SB_SPRAM256KA u_spram (
      .ADDRESS(14'(addr_i)),
      .DATAIN(wdata_i[16 * b +: 16]),
      .MASKWREN({wstrb_i[2 * b + 1], wstrb_i[2 * b + 1], wstrb_i[2 * b], wstrb_i[2 * b]}),
      .WREN(we_i),
      .CHIPSELECT(en_i),
      .CLOCK(clk_i),
      .STANDBY(1'b0),
      .SLEEP(1'b0),
      .POWEROFF(1'b1),
      .DATAOUT(rdata_o[16 * b +: 16])
    );
  end
`else
  logic [kiln_cfg_pkg::MEM_DATA_BITS-1:0] mem_q [WORDS];
  always_ff @(posedge clk_i) begin
    if (en_i) begin
      if (we_i) begin
        for (int i = 0; i < kiln_cfg_pkg::MEM_DATA_BITS / 8; i++)
          if (wstrb_i[i]) mem_q[addr_i][8 * i +: 8] <= wdata_i[8 * i +: 8];
      end else begin
        rdata_o <= mem_q[addr_i];
      end
    end
  end
`endif
endmodule
