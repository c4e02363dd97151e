// Device memory shared by the host bridge and the core: MEM_BYTES bytes of 64-bit words
// (kiln_devmem_array), two request ports with kiln_inorder_top's memory handshake. The
// host port wins a cycle both ask for (it asks at most once per received or sent byte,
// so the core is never starved, and the host never waits). A request outside memory
// raises that port's error with its acceptance and touches nothing; a read still gets
// (zero) data a cycle later, so no client waits for it forever.
module kiln_devmem #(
  parameter int MEM_BYTES = 131072  // a power of two, at most 128 KiB under SYNTHESIS
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  // port 0: the host bridge
  input  logic        h_valid_i,
  output logic        h_ready_o,
  input  logic        h_we_i,
  input  logic [31:0] h_addr_i,
  input  logic [63:0] h_wdata_i,
  input  logic [7:0]  h_wstrb_i,
  output logic        h_rvalid_o,
  output logic [63:0] h_rdata_o,
  output logic        h_error_o,
  // port 1: the core
  input  logic        c_valid_i,
  output logic        c_ready_o,
  input  logic        c_we_i,
  input  logic [31:0] c_addr_i,
  input  logic [63:0] c_wdata_i,
  input  logic [7:0]  c_wstrb_i,
  output logic        c_rvalid_o,
  output logic [63:0] c_rdata_o,
  output logic        c_error_o
);
  localparam int WORDS = MEM_BYTES / 8;
  localparam int AW = $clog2(WORDS);

  // The core's request goes straight to memory (kiln_inorder_top registers its requests).
  // In range: the bits above the memory's are zero (MEM_BYTES is a power of two; an
  // OR, where a compare would be a carry chain in front of the SPRAMs' selects).
  logic c_ok, c_fire;
  assign c_ok = c_addr_i[31:AW+3] == '0;
  assign c_ready_o = !h_valid_i;
  assign c_fire = c_valid_i && c_ready_o;
  assign c_error_o = c_fire && !c_ok;

  logic h_ok;
  assign h_ok = h_addr_i[31:AW+3] == '0;
  assign h_ready_o = 1'b1;
  assign h_error_o = h_valid_i && !h_ok;

  logic host;  // the host port has this cycle's access
  logic [63:0] rdata;
  assign host = h_valid_i;
  kiln_devmem_array #(.WORDS(WORDS)) u_array (
    .clk_i,
    .en_i(host ? h_ok : c_fire && c_ok),
    .we_i(host ? h_we_i : c_we_i),
    .addr_i(host ? h_addr_i[AW+2:3] : c_addr_i[AW+2:3]),
    .wdata_i(host ? h_wdata_i : c_wdata_i),
    .wstrb_i(host ? h_wstrb_i : c_wstrb_i),
    .rdata_o(rdata)
  );

  // Which port's read (if any) was accepted last cycle, and whether it was in range.
  logic h_rd_q, c_rd_q, ok_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      h_rd_q <= 1'b0;
      c_rd_q <= 1'b0;
      ok_q <= 1'b0;
    end else begin
      h_rd_q <= h_valid_i && !h_we_i;
      c_rd_q <= c_fire && !c_we_i;
      ok_q <= host ? h_ok : c_ok;
    end
  end
  assign h_rvalid_o = h_rd_q;
  assign c_rvalid_o = c_rd_q;
  assign h_rdata_o = ok_q ? rdata : '0;
  assign c_rdata_o = ok_q ? rdata : '0;

  logic unused;
  assign unused = ^{h_addr_i[31:AW+3], h_addr_i[2:0], c_addr_i[31:AW+3], c_addr_i[2:0]};
endmodule
