load memory_type=uop sram_base=0 dram_base=0 y_size=1 x_size=1 x_stride=1
load memory_type=wgt sram_base=0 dram_base=1 y_size=1 x_size=1 x_stride=1
load memory_type=inp sram_base=0 dram_base=4 y_size=1 x_size=1 x_stride=1 push_next_dep
gemm reset=1 uop_bgn=0 uop_end=1 iter_out=1 iter_in=1 pop_prev_dep     # waits for the loads
gemm uop_bgn=0 uop_end=1 iter_out=1 iter_in=1 push_next_dep            # out ready for store
store memory_type=out sram_base=0 dram_base=64 y_size=1 x_size=1 x_stride=1 pop_prev_dep push_prev_dep
gemm pop_next_dep                                                      # waits for the store
finish
uop dst_idx=0 src_idx=0 wgt_idx=0
