# Ultra96 (v2) bitstream with Vivado (not run by Kiln's CI):
#   kiln hw rtl-params --config hw/config/default.json -o build/pkg-default
#   vivado -mode batch -source boards/ultra96/vivado.tcl -tclargs build/pkg-default vivado-ultra96
# Needs Avnet's board files (ultra96v2) installed in Vivado; for a v1 board change the
# board_part below to em.avnet.com:ultra96:part0:1.2.
source [file join [file dirname [file normalize [info script]]] .. xilinx kiln_bd.tcl]
set pkg_dir [file normalize [lindex $argv 0]]
set out_dir [file normalize [expr {[llength $argv] > 1 ? [lindex $argv 1] : "vivado-ultra96"}]]
kiln_build_zynq ultra96 xczu3eg-sbva484-1-e avnet.com:ultra96v2:part0:1.2 zynqmp $pkg_dir $out_dir 200
