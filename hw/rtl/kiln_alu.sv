// The vector ALU: one operation on every accumulator lane (BATCH x BLOCK_OUT), in the
// accumulator width. MIN and MAX compare signed, ADD and MUL wrap, SHR shifts right
// arithmetically by the operand's low LOG_ACC_WIDTH bits read as signed (a negative
// amount shifts left). LANES lanes side by side: a whole accumulator row by default,
// one lane for a core that walks the row lane by lane (kiln_inorder_top).
module kiln_alu #(
  parameter int LANES = kiln_cfg_pkg::BATCH * kiln_cfg_pkg::BLOCK_OUT,
  localparam int AW = kiln_cfg_pkg::ACC_WIDTH
) (
  input  logic [2:0]          op_i,
  input  logic [LANES*AW-1:0] a_i,
  input  logic [LANES*AW-1:0] b_i,
  output logic [LANES*AW-1:0] r_o
);
  localparam int LAW = kiln_cfg_pkg::LOG_ACC_WIDTH;

  always_comb begin
    for (int l = 0; l < LANES; l++) begin
      logic signed [AW-1:0] a, b, r;
      logic [LAW-1:0] amt, neg;
      a = a_i[l * AW +: AW];
      b = b_i[l * AW +: AW];
      amt = b[LAW-1:0];
      neg = LAW'(0) - amt;
      case (op_i)
        3'(kiln_cfg_pkg::ALU_MIN): r = (a < b) ? a : b;
        3'(kiln_cfg_pkg::ALU_MAX): r = (a > b) ? a : b;
        3'(kiln_cfg_pkg::ALU_ADD): r = a + b;
        3'(kiln_cfg_pkg::ALU_SHR): r = amt[LAW-1] ? (a << neg) : (a >>> amt);
        3'(kiln_cfg_pkg::ALU_MUL): r = a * b;
        default: r = a;
      endcase
      r_o[l * AW +: AW] = r;
    end
  end
endmodule
