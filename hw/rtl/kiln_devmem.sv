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
  // port 0: the host bridge; port 1: the core (hw/spec/bus_ports.h)
  input  kiln_cfg_pkg::mem_req_t h_i,
  output kiln_cfg_pkg::mem_rsp_t h_o,
  input  kiln_cfg_pkg::mem_req_t c_i,
  output kiln_cfg_pkg::mem_rsp_t c_o
);
  localparam int MWB = kiln_cfg_pkg::MEM_DATA_BITS / 8;  // bytes in a word
  localparam int LWB = $clog2(MWB);
  localparam int MAB = kiln_cfg_pkg::MEM_ADDR_BITS;
  localparam int WORDS = MEM_BYTES / MWB;
  localparam int AW = $clog2(WORDS);

  // The core's request goes straight to memory (kiln_inorder_top registers its requests).
  // In range: the bits above the memory's are zero (MEM_BYTES is a power of two; an
  // OR, where a compare would be a carry chain in front of the SPRAMs' selects).
  logic c_ok, c_ready, c_fire;
  assign c_ok = c_i.addr[MAB-1:AW+LWB] == '0;
  assign c_ready = !h_i.valid;
  assign c_o.ready = c_ready;
  assign c_fire = c_i.valid && c_ready;
  assign c_o.error = c_fire && !c_ok;

  logic h_ok;
  assign h_ok = h_i.addr[MAB-1:AW+LWB] == '0;
  assign h_o.ready = 1'b1;
  assign h_o.error = h_i.valid && !h_ok;

  logic host;  // the host port has this cycle's access
  logic [kiln_cfg_pkg::MEM_DATA_BITS-1:0] rdata;
  assign host = h_i.valid;
  kiln_devmem_array #(.WORDS(WORDS)) u_array (
    .clk_i,
    .en_i(host ? h_ok : c_fire && c_ok),
    .we_i(host ? h_i.we : c_i.we),
    .addr_i(host ? h_i.addr[AW+LWB-1:LWB] : c_i.addr[AW+LWB-1:LWB]),
    .wdata_i(host ? h_i.wdata : c_i.wdata),
    .wstrb_i(host ? h_i.wstrb : c_i.wstrb),
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
      h_rd_q <= h_i.valid && !h_i.we;
      c_rd_q <= c_fire && !c_i.we;
      ok_q <= host ? h_ok : c_ok;
    end
  end
  assign h_o.rvalid = h_rd_q;
  assign c_o.rvalid = c_rd_q;
  assign h_o.rdata = ok_q ? rdata : '0;
  assign c_o.rdata = ok_q ? rdata : '0;

  logic unused;
  assign unused = ^{h_i.addr[MAB-1:AW+LWB], h_i.addr[LWB-1:0], c_i.addr[MAB-1:AW+LWB],
                   c_i.addr[LWB-1:0]};
endmodule
