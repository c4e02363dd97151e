// The in-order core's instruction decode: what the held instruction is (its opcode class,
// the decoupled core's module that would run it, whether the ISA has it), and for a LOAD
// or STORE whether it moves anything, the size of its elements and the scratchpad a
// LOAD writes. Combinational; kiln_inorder_top registers what its walk needs when it
// decodes. A GEMM's or an ALU's own fields come from kiln_loop_fields.
module kiln_inorder_decode (
  /* verilator lint_off UNUSEDSIGNAL */
  input  kiln_cfg_pkg::mem_insn_t insn_i,  // as a LOAD/STORE: opcode and type sit where every format has them
  /* verilator lint_on UNUSEDSIGNAL */
  input  logic                    is_alu_i,  // kiln_loop_fields' decode of the ALU opcode
  output logic                    is_load_o,
  output logic                    is_store_o,
  output logic                    is_gemm_o,
  output logic                    is_finish_o,
  output kiln_cfg_pkg::module_e   module_o,  // the module a decoupled core would run it on
  output logic                    bad_o,     // an opcode or memory type the ISA lacks
  output logic                    empty_xfer_o,  // a LOAD or STORE of no element
  // Element bytes 2^le_o; an element of 8 bytes or more is nw_o + 1 words, a smaller one
  // (sub_word_o) is part of a word.
  output logic [3:0]              le_o,
  output logic [7:0]              nw_o,
  output logic                    sub_word_o,
  output logic [3:0]              target_o   // the scratchpad a LOAD writes: acc, wgt, inp, uop
);
  logic to_load_module;
  assign is_load_o = insn_i.opcode == kiln_cfg_pkg::OP_LOAD;
  assign is_store_o = insn_i.opcode == kiln_cfg_pkg::OP_STORE;
  assign is_gemm_o = insn_i.opcode == kiln_cfg_pkg::OP_GEMM;
  assign is_finish_o = insn_i.opcode == kiln_cfg_pkg::OP_FINISH;
  assign to_load_module = is_load_o && (insn_i.memory_type == kiln_cfg_pkg::MEM_INP ||
                                        insn_i.memory_type == kiln_cfg_pkg::MEM_WGT);
  assign module_o = to_load_module ? kiln_cfg_pkg::MODULE_LOAD
                    : is_store_o   ? kiln_cfg_pkg::MODULE_STORE
                                   : kiln_cfg_pkg::MODULE_COMPUTE;
  assign bad_o = !(is_load_o || is_store_o || is_gemm_o || is_alu_i || is_finish_o) ||
                 (is_load_o && insn_i.memory_type > kiln_cfg_pkg::MEM_ACC) ||
                 (is_store_o && insn_i.memory_type != kiln_cfg_pkg::MEM_OUT);
  assign empty_xfer_o = insn_i.x_size == '0 || insn_i.y_size == '0;

  always_comb begin
    case (insn_i.memory_type)
      kiln_cfg_pkg::MEM_UOP: le_o = 4'($clog2(kiln_cfg_pkg::UOP_ELEM_BYTES));
      kiln_cfg_pkg::MEM_WGT: le_o = 4'($clog2(kiln_cfg_pkg::WGT_ELEM_BYTES));
      kiln_cfg_pkg::MEM_INP: le_o = 4'($clog2(kiln_cfg_pkg::INP_ELEM_BYTES));
      kiln_cfg_pkg::MEM_ACC: le_o = 4'($clog2(kiln_cfg_pkg::ACC_ELEM_BYTES));
      default:               le_o = 4'($clog2(kiln_cfg_pkg::OUT_ELEM_BYTES));
    endcase
    sub_word_o = le_o < 4'd3;
    nw_o = sub_word_o ? 8'd0 : 8'((1 << (le_o - 4'd3)) - 1);
  end
  assign target_o = {is_load_o && insn_i.memory_type == kiln_cfg_pkg::MEM_ACC,
                     is_load_o && insn_i.memory_type == kiln_cfg_pkg::MEM_WGT,
                     is_load_o && insn_i.memory_type == kiln_cfg_pkg::MEM_INP,
                     is_load_o && insn_i.memory_type == kiln_cfg_pkg::MEM_UOP};
endmodule
