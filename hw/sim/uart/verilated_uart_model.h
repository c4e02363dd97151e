#pragma once
// UartModel for one Verilated configuration: V is the class Verilator generated for it
// (Vkiln_uart_<name>). Included only by the generated uart_model_<name>.cc.

#include <memory>
#include <string>

#include "hw/sim/rtl/verilated_harness.h"
#include "hw/sim/uart/uart_model.h"

namespace kiln::sim {

template <class V>
class VerilatedUartModel final : public UartModel {
 public:
  explicit VerilatedUartModel(const std::string& wave_file) : h_(wave_file, "kiln_uart_top") {}

  void eval_low(const UartTopIn& in, UartTopOut& out) override {
    V& t = h_.top();
    t.rst_ni = in.rst_n;
    t.uart_rx_i = in.rx;
    h_.eval_low();
    out.tx = t.uart_tx_o;
    out.link_active = t.link_active_o;
    out.dbg_state = t.dbg_state_o;
    out.dbg_progress = t.dbg_progress_o;
  }

  void posedge() override { h_.posedge(); }

 private:
  VerilatedHarness<V> h_;
};

}  // namespace kiln::sim
