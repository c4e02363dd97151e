# Shared part of boards/<board>/vivado.tcl: a Vivado project with the accelerator RTL
# (kiln_top of one configuration, wrapped by the generated kiln_zynq.v), a block design that joins it
# to the Zynq PS, synthesis, implementation and the bitstream. Written for Vivado
# 2020.2 or later; not run by Kiln's CI (no Vivado there): docs/boards.md.
#
# kiln_build_zynq <board> <part> <board_part> <ps_kind> <pkg_dir> <out_dir> <mhz>
#   ps_kind: ps7 (Zynq-7000: M_AXI_GP0 -> registers, S_AXI_HP0 <- memory port) or
#            zynqmp (ZynqMP: M_AXI_HPM0_FPD -> registers, S_AXI_HP0_FPD <- memory port)
#   pkg_dir: the folder holding kiln_cfg_pkg.sv and kiln_zynq.v (kiln hw rtl-params --config ... -o DIR)
set kiln_root [file normalize [file join [file dirname [info script]] .. ..]]

proc kiln_build_zynq {board part board_part ps_kind pkg_dir out_dir mhz} {
  set root $::kiln_root
  create_project kiln_$board $out_dir -part $part -force
  if {$board_part ne ""} {
    # Board files (Digilent's, Avnet's) set the PS's DDR and MIO; install them first.
    set_property board_part $board_part [current_project]
  }
  set rtl [list [file join $pkg_dir kiln_cfg_pkg.sv]]
  foreach f [lsort [glob [file join $root hw rtl *.sv]]] { lappend rtl $f }
  add_files -norecurse $rtl
  set_property file_type SystemVerilog [get_files *.sv]
  add_files -norecurse [file join $pkg_dir kiln_zynq.v]
  set_property top kiln_zynq [current_fileset]
  update_compile_order -fileset sources_1

  create_bd_design kiln
  if {$ps_kind eq "ps7"} {
    set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:processing_system7 ps]
    apply_bd_automation -rule xilinx.com:bd_rule:processing_system7 \
        -config {make_external "FIXED_IO, DDR" apply_board_preset "1"} $ps
    set_property -dict [list CONFIG.PCW_USE_S_AXI_HP0 {1} CONFIG.PCW_S_AXI_HP0_DATA_WIDTH {64} \
        CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ $mhz CONFIG.PCW_USE_M_AXI_GP0 {1}] $ps
    set clk ps/FCLK_CLK0
    set master ps/M_AXI_GP0
    set slave ps/S_AXI_HP0
    set rst_in ps/FCLK_RESET0_N
  } else {
    set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:zynq_ultra_ps_e ps]
    apply_bd_automation -rule xilinx.com:bd_rule:zynq_ultra_ps_e \
        -config {apply_board_preset "1"} $ps
    set_property -dict [list CONFIG.PSU__USE__M_AXI_GP0 {1} CONFIG.PSU__USE__M_AXI_GP1 {0} \
        CONFIG.PSU__USE__S_AXI_GP2 {1} CONFIG.PSU__SAXIGP2__DATA_WIDTH {64} \
        CONFIG.PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ $mhz] $ps
    set clk ps/pl_clk0
    set master ps/M_AXI_HPM0_FPD
    set slave ps/S_AXI_HP0_FPD
    set rst_in ps/pl_resetn0
  }
  create_bd_cell -type module -reference kiln_zynq kiln
  create_bd_cell -type ip -vlnv xilinx.com:ip:proc_sys_reset reset
  # Registers: PS master -> interconnect -> kiln/s_axi. Memory: kiln/m_axi -> interconnect
  # -> PS high-performance slave (DDR).
  create_bd_cell -type ip -vlnv xilinx.com:ip:axi_interconnect regs_ic
  set_property CONFIG.NUM_MI 1 [get_bd_cells regs_ic]
  create_bd_cell -type ip -vlnv xilinx.com:ip:axi_interconnect mem_ic
  set_property CONFIG.NUM_MI 1 [get_bd_cells mem_ic]

  connect_bd_net [get_bd_pins $clk] [get_bd_pins kiln/aclk] [get_bd_pins reset/slowest_sync_clk] \
      [get_bd_pins regs_ic/ACLK] [get_bd_pins regs_ic/S00_ACLK] [get_bd_pins regs_ic/M00_ACLK] \
      [get_bd_pins mem_ic/ACLK] [get_bd_pins mem_ic/S00_ACLK] [get_bd_pins mem_ic/M00_ACLK]
  foreach p [get_bd_pins -quiet -of_objects $ps -filter {NAME =~ *ACLK* && DIR == I}] {
    connect_bd_net [get_bd_pins $clk] $p
  }
  connect_bd_net [get_bd_pins $rst_in] [get_bd_pins reset/ext_reset_in]
  connect_bd_net [get_bd_pins reset/peripheral_aresetn] [get_bd_pins kiln/aresetn] \
      [get_bd_pins regs_ic/S00_ARESETN] [get_bd_pins regs_ic/M00_ARESETN] \
      [get_bd_pins mem_ic/S00_ARESETN] [get_bd_pins mem_ic/M00_ARESETN]
  connect_bd_net [get_bd_pins reset/interconnect_aresetn] [get_bd_pins regs_ic/ARESETN] \
      [get_bd_pins mem_ic/ARESETN]
  connect_bd_intf_net [get_bd_intf_pins $master] [get_bd_intf_pins regs_ic/S00_AXI]
  connect_bd_intf_net [get_bd_intf_pins regs_ic/M00_AXI] [get_bd_intf_pins kiln/s_axi]
  connect_bd_intf_net [get_bd_intf_pins kiln/m_axi] [get_bd_intf_pins mem_ic/S00_AXI]
  connect_bd_intf_net [get_bd_intf_pins mem_ic/M00_AXI] [get_bd_intf_pins $slave]

  # A 4 KiB register window (the register map of hw/spec/regs.h ends below 0x100) and the
  # whole DDR for the memory port; hw/driver/board maps the same addresses.
  assign_bd_address
  validate_bd_design
  save_bd_design
  set bd [get_files kiln.bd]
  generate_target all $bd
  set wrapper [make_wrapper -files $bd -top]
  add_files -norecurse $wrapper
  set_property top kiln_wrapper [current_fileset]
  update_compile_order -fileset sources_1

  launch_runs synth_1 -jobs 4
  wait_on_run synth_1
  launch_runs impl_1 -to_step write_bitstream -jobs 4
  wait_on_run impl_1
  open_run impl_1
  report_utilization -file [file join $out_dir utilization.txt]
  report_timing_summary -file [file join $out_dir timing.txt]
  set bit [glob -nocomplain [file join $out_dir kiln_$board.runs impl_1 *.bit]]
  puts "kiln: bitstream $bit; utilization.txt and timing.txt in $out_dir"
}
