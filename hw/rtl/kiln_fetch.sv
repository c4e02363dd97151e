// The fetch module: reads the instruction stream from DRAM in chunks and routes each
// instruction (shared/ISA.md): LOAD of INP or WGT to load; LOAD of UOP or ACC, GEMM,
// ALU and FINISH to compute; STORE to store. A chunk is requested only when the
// prefetch queue has room for all of it, so fetch never holds the shared read-data
// channel while a module queue is full.
module kiln_fetch #(
  parameter int PREFETCH = 8,
  parameter int CHUNK = 4
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        start_i,
  input  logic [kiln_cfg_pkg::INSN_ADDR_BITS-1:0] insn_addr_i,
  input  logic [kiln_cfg_pkg::INSN_COUNT_BITS-1:0] insn_count_i,
  // Module command queues
  output logic         load_push_o,
  input  logic         load_full_i,
  output logic         compute_push_o,
  input  logic         compute_full_i,
  output logic         store_push_o,
  input  logic         store_full_i,
  output logic [kiln_cfg_pkg::INSN_BITS-1:0] insn_o,
  // AXI4 read client (kiln_dma_reader's)
  output kiln_cfg_pkg::rd_req_t                  rd_o,
  input  kiln_cfg_pkg::rd_rsp_t                  rd_i,
  input  logic [kiln_cfg_pkg::AXI_DATA_BITS-1:0] r_data_i,
  // Status
  output logic idle_o,
  output logic insn_read_o,  // an instruction arrived from DRAM this cycle
  output logic [kiln_cfg_pkg::DBG_FETCH_STATE_WIDTH-1:0] state_o
);
  localparam int AB = kiln_cfg_pkg::AXI_ADDR_BITS;
  localparam int CW = $clog2(PREFETCH + 1);
  localparam int IB = kiln_cfg_pkg::INSN_BITS;
  localparam int NB = kiln_cfg_pkg::INSN_COUNT_BITS;

  logic unused_addr_hi;  // DRAM addresses are AXI_ADDR_BITS wide
  assign unused_addr_hi = ^insn_addr_i;
  logic [NB-1:0] left_q;
  logic [AB-1:0] addr_q;
  logic [CW-1:0] outstanding_q, count;
  logic [NB-1:0] chunk, room;
  logic cmd_valid, cmd_ready;

  assign chunk = (left_q < NB'(CHUNK)) ? left_q : NB'(CHUNK);
  assign room = NB'(PREFETCH) - NB'(count) - NB'(outstanding_q);
  assign cmd_valid = left_q != '0 && room >= chunk;

  logic elem_valid, push, empty, pop, reader_busy_unused, prefetch_full_unused;
  logic [IB-1:0] elem;
  kiln_cfg_pkg::mem_insn_t head;  // routing reads the opcode and memory type
  assign push = elem_valid;  // room was reserved when the chunk was requested
  assign insn_read_o = elem_valid;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      left_q <= '0;
      addr_q <= '0;
      outstanding_q <= '0;
    end else if (start_i) begin
      left_q <= insn_count_i;
      addr_q <= AB'(insn_addr_i);
      outstanding_q <= '0;
    end else begin
      if (cmd_valid && cmd_ready) begin
        left_q <= left_q - chunk;
        addr_q <= addr_q + AB'(chunk * (IB / 8));
      end
      outstanding_q <= outstanding_q + ((cmd_valid && cmd_ready) ? CW'(chunk) : '0) - CW'(push);
    end
  end

  kiln_dma_reader #(.ELEM_BYTES(IB / 8)) reader (
    .clk_i, .rst_ni,
    .cmd_valid_i(cmd_valid), .cmd_ready_o(cmd_ready), .cmd_addr_i(addr_q),
    .cmd_count_i(kiln_cfg_pkg::MEM_X_SIZE_WIDTH'(chunk)),
    .elem_valid_o(elem_valid), .elem_ready_i(1'b1), .elem_data_o(elem),
    .rd_o, .rd_i, .r_data_i, .busy_o(reader_busy_unused));

  kiln_fifo #(.WIDTH(IB), .DEPTH(PREFETCH)) prefetch (
    .clk_i, .rst_ni, .push_i(push), .data_i(elem), .full_o(prefetch_full_unused),
    .pop_i(pop), .data_o(head), .empty_o(empty), .count_o(count));

  // Route the head.
  logic to_load, to_store, to_compute, target_full;
  assign to_load = head.opcode == kiln_cfg_pkg::OP_LOAD &&
                   (head.memory_type == kiln_cfg_pkg::MEM_INP || head.memory_type == kiln_cfg_pkg::MEM_WGT);
  assign to_store = head.opcode == kiln_cfg_pkg::OP_STORE;
  assign to_compute = !to_load && !to_store;
  assign target_full = (to_load && load_full_i) || (to_store && store_full_i) ||
                       (to_compute && compute_full_i);
  assign pop = !empty && !target_full;
  assign load_push_o = pop && to_load;
  assign store_push_o = pop && to_store;
  assign compute_push_o = pop && to_compute;
  assign insn_o = head;

  assign idle_o = left_q == '0 && outstanding_q == '0 && empty;
  assign state_o = {left_q != '0 || outstanding_q != '0, !empty && target_full};
endmodule
