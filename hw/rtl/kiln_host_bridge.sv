// The host link's protocol (docs/hardware.md, "Board top and UART host link"): commands
// arrive as bytes from the UART receiver, replies leave through the transmitter. The
// bridge is an AXI4-Lite master on the core's register file and a client of device
// memory, and can hold the core in reset. Every command is answered: its acknowledgement
// (command | 0x80, then data) or one error byte (0xE1..0xE6). An unknown command byte, a
// frame that stops arriving (TIMEOUT_CLKS without a byte) and a framing error end in an
// error reply and a bridge waiting for the next command: nothing locks it up.
module kiln_host_bridge #(
  parameter int MEM_BYTES = 131072,
  parameter int TIMEOUT_CLKS = 3000000  // idle cycles inside a frame before it is dropped
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  // bytes from and to the UART
  input  logic        rx_valid_i,
  input  logic [7:0]  rx_data_i,
  input  logic        rx_frame_err_i,
  output logic        tx_valid_o,
  input  logic        tx_ready_i,
  output logic [7:0]  tx_data_o,
  // AXI4-Lite master on the core's register file, and a client of device memory
  // (hw/spec/bus_ports.h)
  output kiln_cfg_pkg::axil_req_t m_axil_o,
  input  kiln_cfg_pkg::axil_rsp_t m_axil_i,
  output kiln_cfg_pkg::mem_req_t  mem_o,
  input  kiln_cfg_pkg::mem_rsp_t  mem_i,
  // the core's reset, while the host asks for it
  output logic        core_rst_o
);
  // Commands and replies: kiln_cfg_pkg::HL_* (hw/spec/host_link_protocol.h). The longest
  // arguments are MEM_*'s address and length; the longest reply an acknowledgement and a
  // register's value.
  localparam int AGB = kiln_cfg_pkg::HL_MEM_ADDR_BITS + kiln_cfg_pkg::HL_MEM_LEN_BITS;
  localparam int RPB = 8 + kiln_cfg_pkg::REG_DATA_BITS;
  localparam logic [7:0] LOG2_MEM_BYTES = 8'($clog2(MEM_BYTES));
  localparam int TW = $clog2(TIMEOUT_CLKS + 1);
  localparam int MW = $clog2(MEM_BYTES);           // memory address bits
  localparam int SW = (MW > 16 ? MW : 16) + 1;     // address + length without overflow

  typedef enum logic [3:0] {
    S_CMD = 4'd0,      // waiting for a command byte
    S_ARGS = 4'd1,     // receiving the command's fixed arguments
    S_EXEC = 4'd2,     // arguments complete: start the command
    S_REG_WR = 4'd3,   // AXI4-Lite write in flight
    S_REG_RD = 4'd4,   // AXI4-Lite read in flight
    S_WDATA = 4'd5,    // receiving MEM_WRITE data
    S_WMEM = 4'd6,     // writing a gathered word
    S_WSUM = 4'd7,     // receiving MEM_WRITE's checksum
    S_RMEM = 4'd8,     // asking for a word to send
    S_RWAIT = 4'd9,    // waiting for its data
    S_RSEND = 4'd10,   // sending its bytes
    S_SEND = 4'd11,    // sending the reply buffer, then going to after_q
    S_RESET = 4'd12,   // holding the core in reset
    S_RANGE = 4'd13    // arguments complete: check the MEM_* range (a cycle of its own)
  } state_e;

  state_e state_q, after_q;
  logic [7:0] cmd_q;
  logic [AGB-1:0] args_q;   // arguments, shifted in from the top
  localparam int ALW = $clog2(AGB / 8 + 1);
  logic [ALW-1:0] args_left_q;
  logic [RPB-1:0] reply_q;  // bytes to send, from bit 0
  logic [2:0] reply_n_q;
  logic [MW-1:0] addr_q;    // MEM_*: next byte address (the range is checked first)
  logic [kiln_cfg_pkg::HL_MEM_LEN_BITS-1:0] left_q;      // MEM_*: bytes left
  logic [7:0] sum_q;        // MEM_*: sum of the data bytes so far, modulo 256
  logic bad_range_q;        // MEM_WRITE: outside memory, data dropped
  logic [63:0] word_q;      // gathered (write) or fetched (read) word
  logic [7:0] strb_q;
  logic [MW-1:3] word_addr_q;  // MEM_WRITE: word_q's word address
  logic aw_done_q, w_done_q, ar_done_q;
  logic [TW-1:0] idle_q;    // cycles without a byte inside a frame
  logic [3:0] rst_cnt_q;

  logic receiving, timed_out;
  assign receiving = state_q == S_CMD || state_q == S_ARGS || state_q == S_WDATA ||
                     state_q == S_WSUM;
  assign timed_out = state_q != S_CMD && receiving && idle_q == TW'(TIMEOUT_CLKS);

  // MEM_* arguments: address and length; the range ends past memory?
  logic [kiln_cfg_pkg::HL_MEM_ADDR_BITS-1:0] arg_addr;
  logic [kiln_cfg_pkg::HL_MEM_LEN_BITS-1:0] arg_len;
  logic arg_out_of_range, out_of_range_q;  // registered in S_RANGE, used in S_EXEC
  assign arg_addr = args_q[kiln_cfg_pkg::HL_MEM_ADDR_BITS-1:0];
  assign arg_len = args_q[AGB-1 -: kiln_cfg_pkg::HL_MEM_LEN_BITS];
  assign arg_out_of_range = arg_addr[kiln_cfg_pkg::HL_MEM_ADDR_BITS-1:MW] != '0 ||
                            SW'(arg_addr[MW-1:0]) + SW'(arg_len) > SW'(MEM_BYTES);

  logic [7:0] rd_byte;  // the byte of word_q at addr_q
  assign rd_byte = word_q[8 * addr_q[2:0] +: 8];

  // Outputs
  assign tx_valid_o = state_q == S_SEND || state_q == S_RSEND;
  assign tx_data_o = state_q == S_RSEND ? rd_byte : reply_q[7:0];
  assign m_axil_o.aw_valid = state_q == S_REG_WR && !aw_done_q;
  assign m_axil_o.w_valid = state_q == S_REG_WR && !w_done_q;
  // REG_WRITE: offset, value; REG_READ: offset (the arguments end at the top)
  assign m_axil_o.aw_addr =
      args_q[AGB-kiln_cfg_pkg::REG_DATA_BITS-1 -: kiln_cfg_pkg::REG_ADDR_BITS];
  assign m_axil_o.w_data = args_q[AGB-1 -: kiln_cfg_pkg::REG_DATA_BITS];
  assign m_axil_o.w_strb = 4'hf;
  assign m_axil_o.b_ready = state_q == S_REG_WR;
  assign m_axil_o.ar_valid = state_q == S_REG_RD && !ar_done_q;
  assign m_axil_o.ar_addr = args_q[AGB-1 -: kiln_cfg_pkg::REG_ADDR_BITS];
  assign m_axil_o.r_ready = state_q == S_REG_RD;
  assign mem_o.valid = state_q == S_WMEM || state_q == S_RMEM;
  assign mem_o.we = state_q == S_WMEM;
  assign mem_o.addr = 32'({state_q == S_WMEM ? word_addr_q : addr_q[MW-1:3], 3'b0});
  assign mem_o.wdata = word_q;
  assign mem_o.wstrb = strb_q;
  assign core_rst_o = state_q == S_RESET;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      state_q <= S_CMD;
      after_q <= S_CMD;
      cmd_q <= '0;
      args_q <= '0;
      args_left_q <= '0;
      reply_q <= '0;
      reply_n_q <= '0;
      addr_q <= '0;
      left_q <= '0;
      sum_q <= '0;
      bad_range_q <= 1'b0;
      word_q <= '0;
      strb_q <= '0;
      word_addr_q <= '0;
      aw_done_q <= 1'b0;
      w_done_q <= 1'b0;
      ar_done_q <= 1'b0;
      idle_q <= '0;
      rst_cnt_q <= '0;
    end else begin
      if (!receiving || rx_valid_i) idle_q <= '0;
      else if (!timed_out) idle_q <= idle_q + 1'b1;

      if (timed_out || (receiving && rx_frame_err_i)) begin
        reply_q <= {{(RPB - 8){1'b0}}, timed_out ? kiln_cfg_pkg::HL_ERR_TIMEOUT
                                  : kiln_cfg_pkg::HL_ERR_FRAMING};
        reply_n_q <= 3'd1;
        after_q <= S_CMD;
        state_q <= S_SEND;
      end else begin
        case (state_q)
          S_CMD: if (rx_valid_i) begin
            cmd_q <= rx_data_i;
            reply_n_q <= 3'd1;
            after_q <= S_CMD;
            case (rx_data_i)
              kiln_cfg_pkg::HL_PING: begin
                reply_q <= {{(RPB - 24){1'b0}}, LOG2_MEM_BYTES, kiln_cfg_pkg::HL_PROTOCOL_VERSION,
                            kiln_cfg_pkg::HL_PING | kiln_cfg_pkg::HL_ACK};
                reply_n_q <= 3'd3;
                state_q <= S_SEND;
              end
              kiln_cfg_pkg::HL_REG_WRITE: begin
                args_left_q <= ALW'((kiln_cfg_pkg::REG_ADDR_BITS + kiln_cfg_pkg::REG_DATA_BITS) / 8);
                state_q <= S_ARGS;
              end
              kiln_cfg_pkg::HL_REG_READ: begin
                args_left_q <= ALW'(kiln_cfg_pkg::REG_ADDR_BITS / 8);
                state_q <= S_ARGS;
              end
              kiln_cfg_pkg::HL_MEM_WRITE, kiln_cfg_pkg::HL_MEM_READ: begin
                args_left_q <= ALW'(AGB / 8);
                state_q <= S_ARGS;
              end
              kiln_cfg_pkg::HL_RESET: begin
                rst_cnt_q <= '1;
                state_q <= S_RESET;
              end
              default: begin
                reply_q <= {{(RPB - 8){1'b0}}, kiln_cfg_pkg::HL_ERR_COMMAND};
                state_q <= S_SEND;
              end
            endcase
          end
          S_ARGS: if (rx_valid_i) begin
            args_q <= {rx_data_i, args_q[AGB-1:8]};
            args_left_q <= args_left_q - 1'b1;
            if (args_left_q == ALW'(1)) state_q <= S_RANGE;
          end
          // The range check's adder and compare end in a register, not in S_EXEC's
          // enables (iCE40 timing).
          S_RANGE: begin
            out_of_range_q <= arg_out_of_range;
            state_q <= S_EXEC;
          end
          S_EXEC: begin
            aw_done_q <= 1'b0;
            w_done_q <= 1'b0;
            ar_done_q <= 1'b0;
            addr_q <= arg_addr[MW-1:0];
            left_q <= arg_len;
            sum_q <= '0;
            strb_q <= '0;
            bad_range_q <= out_of_range_q;
            case (cmd_q)
              kiln_cfg_pkg::HL_REG_WRITE: state_q <= S_REG_WR;
              kiln_cfg_pkg::HL_REG_READ: state_q <= S_REG_RD;
              kiln_cfg_pkg::HL_MEM_WRITE: state_q <= arg_len == '0 ? S_WSUM : S_WDATA;
              default: begin  // kiln_cfg_pkg::HL_MEM_READ
                state_q <= S_SEND;
                if (out_of_range_q) begin
                  reply_q <= {{(RPB - 8){1'b0}}, kiln_cfg_pkg::HL_ERR_RANGE};
                end else if (arg_len == '0) begin
                  // the acknowledgement, then the checksum of nothing: 0
                  reply_q <= {{(RPB - 8){1'b0}}, kiln_cfg_pkg::HL_MEM_READ | kiln_cfg_pkg::HL_ACK};
                  reply_n_q <= 3'd2;
                end else begin
                  reply_q <= {{(RPB - 8){1'b0}}, kiln_cfg_pkg::HL_MEM_READ | kiln_cfg_pkg::HL_ACK};
                  after_q <= S_RMEM;
                end
              end
            endcase
          end
          S_REG_WR: begin
            if (m_axil_o.aw_valid && m_axil_i.aw_ready) aw_done_q <= 1'b1;
            if (m_axil_o.w_valid && m_axil_i.w_ready) w_done_q <= 1'b1;
            if (m_axil_i.b_valid) begin
              reply_q <= {{(RPB - 8){1'b0}}, m_axil_i.b_resp == kiln_cfg_pkg::AXI_RESP_OKAY
                              ? kiln_cfg_pkg::HL_REG_WRITE | kiln_cfg_pkg::HL_ACK
                              : kiln_cfg_pkg::HL_ERR_BUS};
              state_q <= S_SEND;
            end
          end
          S_REG_RD: begin
            if (m_axil_o.ar_valid && m_axil_i.ar_ready) ar_done_q <= 1'b1;
            if (m_axil_i.r_valid) begin
              if (m_axil_i.r_resp == kiln_cfg_pkg::AXI_RESP_OKAY) begin
                reply_q <= {m_axil_i.r_data, kiln_cfg_pkg::HL_REG_READ | kiln_cfg_pkg::HL_ACK};
                reply_n_q <= 3'd5;
              end else begin
                reply_q <= {{(RPB - 8){1'b0}}, kiln_cfg_pkg::HL_ERR_BUS};
              end
              state_q <= S_SEND;
            end
          end
          S_WDATA: if (rx_valid_i) begin
            word_q[8 * addr_q[2:0] +: 8] <= rx_data_i;
            strb_q[addr_q[2:0]] <= 1'b1;
            word_addr_q <= addr_q[MW-1:3];
            sum_q <= sum_q + rx_data_i;
            addr_q <= addr_q + 1'b1;
            left_q <= left_q - 1'b1;
            // A word is complete, or the data ends: write it (nothing when out of range).
            if (addr_q[2:0] == 3'd7 || left_q == kiln_cfg_pkg::HL_MEM_LEN_BITS'(1)) begin
              if (!bad_range_q) state_q <= S_WMEM;
              else if (left_q == kiln_cfg_pkg::HL_MEM_LEN_BITS'(1)) state_q <= S_WSUM;
            end
          end
          S_WMEM: if (mem_i.ready) begin
            if (mem_i.error) bad_range_q <= 1'b1;
            strb_q <= '0;
            state_q <= left_q == '0 ? S_WSUM : S_WDATA;
          end
          S_WSUM: if (rx_valid_i) begin
            reply_q <= {{(RPB - 8){1'b0}}, bad_range_q ? kiln_cfg_pkg::HL_ERR_RANGE
                            : rx_data_i != sum_q ? kiln_cfg_pkg::HL_ERR_CHECKSUM
                            : kiln_cfg_pkg::HL_MEM_WRITE | kiln_cfg_pkg::HL_ACK};
            state_q <= S_SEND;
          end
          S_RMEM: if (mem_i.ready) state_q <= S_RWAIT;  // in range: checked by S_EXEC
          S_RWAIT: if (mem_i.rvalid) begin
            word_q <= mem_i.rdata;
            state_q <= S_RSEND;
          end
          S_RSEND: if (tx_ready_i) begin
            sum_q <= sum_q + rd_byte;
            addr_q <= addr_q + 1'b1;
            left_q <= left_q - 1'b1;
            if (left_q == kiln_cfg_pkg::HL_MEM_LEN_BITS'(1)) begin
              reply_q <= {{(RPB - 8){1'b0}}, sum_q + rd_byte};
              reply_n_q <= 3'd1;
              after_q <= S_CMD;
              state_q <= S_SEND;
            end else if (addr_q[2:0] == 3'd7) begin
              state_q <= S_RMEM;
            end
          end
          S_SEND: if (tx_ready_i) begin
            reply_q <= reply_q >> 8;
            reply_n_q <= reply_n_q - 1'b1;
            if (reply_n_q == 3'd1) state_q <= after_q;
          end
          S_RESET: begin
            rst_cnt_q <= rst_cnt_q - 1'b1;
            if (rst_cnt_q == 4'd0) begin
              reply_q <= {{(RPB - 8){1'b0}}, kiln_cfg_pkg::HL_RESET | kiln_cfg_pkg::HL_ACK};
              state_q <= S_SEND;
            end
          end
          default: state_q <= S_CMD;
        endcase
      end
    end
  end
endmodule
