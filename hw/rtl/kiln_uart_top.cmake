# The small-FPGA board top (kiln_uart_top: the in-order core, device memory, the UART
# host link): its source list, after the generated kiln_cfg_pkg. Included after
# kiln_rtl.cmake (whose KILN_RTL_INORDER_SOURCES is the core) by hw/sim/uart, the
# Verilated board top, and usable by the board flows (boards/).
set(KILN_UART_TOP_DIR ${CMAKE_CURRENT_LIST_DIR})
set(KILN_UART_TOP_SOURCES
  ${KILN_RTL_INORDER_SOURCES}
  ${KILN_UART_TOP_DIR}/kiln_uart_rx.sv
  ${KILN_UART_TOP_DIR}/kiln_uart_tx.sv
  ${KILN_UART_TOP_DIR}/kiln_devmem_array.sv
  ${KILN_UART_TOP_DIR}/kiln_devmem.sv
  ${KILN_UART_TOP_DIR}/kiln_host_bridge.sv
  ${KILN_UART_TOP_DIR}/kiln_uart_top.sv)
set(KILN_UART_TOP kiln_uart_top)
