# ALU with an immediate and a tensor operand, padded 2D load
load memory_type=acc sram_base=0 dram_base=0x10 y_size=2 x_size=3 x_stride=3 y_pad_0=1 y_pad_1=1 x_pad_0=1 x_pad_1=2
alu alu_opcode=shr use_imm=1 imm=-32768 uop_bgn=1 uop_end=2 iter_out=4 iter_in=1 dst_factor_out=1 push_next_dep=1
alu alu_opcode=max use_imm=0 uop_bgn=0 uop_end=1 iter_out=2 iter_in=2 dst_factor_out=1 dst_factor_in=2 src_factor_out=1 src_factor_in=2
alu alu_opcode=mul use_imm=1 imm=3 uop_bgn=0 uop_end=1 iter_out=1 iter_in=1
store memory_type=out dram_base=7 y_size=1 x_size=1 x_stride=1 pop_prev_dep
finish
uop dst_idx=1 src_idx=2 wgt_idx=3
uop dst_idx=0 src_idx=1 wgt_idx=0
