# PYNQ-Z1 bitstream with Vivado (not run by Kiln's CI):
#   kiln hw rtl-params --config hw/config/default.json -o build/pkg-default
#   vivado -mode batch -source boards/pynq-z1/vivado.tcl -tclargs build/pkg-default vivado-pynq-z1
# Needs Digilent's board files (pynq-z1) installed in Vivado.
source [file join [file dirname [file normalize [info script]]] .. xilinx kiln_bd.tcl]
set pkg_dir [file normalize [lindex $argv 0]]
set out_dir [file normalize [expr {[llength $argv] > 1 ? [lindex $argv 1] : "vivado-pynq-z1"}]]
kiln_build_zynq pynq-z1 xc7z020clg400-1 www.digilentinc.com:pynq-z1:part0:1.0 ps7 $pkg_dir $out_dir 100
