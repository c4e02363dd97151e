// The vector ALU: one operation on every accumulator lane (BATCH x BLOCK_OUT), in the
// accumulator width. MIN and MAX compare signed, ADD and MUL wrap, SHR shifts right
// arithmetically by the operand's low LOG_ACC_WIDTH bits read as signed (a negative
// amount shifts left). LANES lanes side by side: a whole accumulator row by default,
// one lane for a core that walks the row lane by lane (kiln_inorder_top).
//
// Every operation's result is formed in parallel, then the opcode selects one. With
// PIPELINE set a register sits between the two (r_o a cycle after the operands), so
// that a slow part (an iCE40) meets timing; without it the ALU is combinational and
// clk_i is not used.
module kiln_alu #(
  parameter int LANES = kiln_cfg_pkg::BATCH * kiln_cfg_pkg::BLOCK_OUT,
  parameter bit PIPELINE = 0,
  localparam int AW = kiln_cfg_pkg::ACC_WIDTH
) (
  input  logic                clk_i,
  input  kiln_cfg_pkg::alu_op_e op_i,
  input  logic [LANES*AW-1:0] a_i,
  input  logic [LANES*AW-1:0] b_i,
  output logic [LANES*AW-1:0] r_o
);
  localparam int LAW = kiln_cfg_pkg::LOG_ACC_WIDTH;

  // Per lane: whether a < b, and the ADD, SHR and MUL results.
  logic [LANES*AW-1:0] sum, shr, mul;
  logic [LANES-1:0] lt;
  kiln_cfg_pkg::alu_op_e op;
  always_comb begin
    for (int l = 0; l < LANES; l++) begin
      logic signed [AW-1:0] x, y;
      logic [LAW-1:0] amt, neg;
      x = a_i[l * AW +: AW];
      y = b_i[l * AW +: AW];
      amt = y[LAW-1:0];
      neg = LAW'(0) - amt;
      lt[l] = x < y;
      sum[l * AW +: AW] = x + y;
      shr[l * AW +: AW] = amt[LAW-1] ? (x << neg) : (x >>> amt);
      mul[l * AW +: AW] = x * y;
    end
  end

  logic [LANES*AW-1:0] a_s, b_s, sum_s, shr_s, mul_s;
  logic [LANES-1:0] lt_s;
  if (PIPELINE) begin : g_reg
    always_ff @(posedge clk_i) begin
      op <= op_i;
      a_s <= a_i;
      b_s <= b_i;
      lt_s <= lt;
      sum_s <= sum;
      shr_s <= shr;
      mul_s <= mul;
    end
  end else begin : g_comb
    logic unused_clk;
    assign unused_clk = clk_i;
    assign op = op_i;
    assign a_s = a_i;
    assign b_s = b_i;
    assign lt_s = lt;
    assign sum_s = sum;
    assign shr_s = shr;
    assign mul_s = mul;
  end

  always_comb begin
    for (int l = 0; l < LANES; l++) begin
      logic [AW-1:0] x, y;
      x = a_s[l * AW +: AW];
      y = b_s[l * AW +: AW];
      case (op)
        kiln_cfg_pkg::ALU_MIN: r_o[l * AW +: AW] = lt_s[l] ? x : y;
        kiln_cfg_pkg::ALU_MAX: r_o[l * AW +: AW] = lt_s[l] ? y : x;
        kiln_cfg_pkg::ALU_ADD: r_o[l * AW +: AW] = sum_s[l * AW +: AW];
        kiln_cfg_pkg::ALU_SHR: r_o[l * AW +: AW] = shr_s[l * AW +: AW];
        kiln_cfg_pkg::ALU_MUL: r_o[l * AW +: AW] = mul_s[l * AW +: AW];
        default: r_o[l * AW +: AW] = x;
      endcase
    end
  end
endmodule
