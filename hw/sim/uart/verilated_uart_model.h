#pragma once
// UartModel for one Verilated configuration: V is the class Verilator generated for it
// (Vkiln_uart_<name>). Included only by the generated uart_model_<name>.cc.

#include <verilated.h>
#include <verilated_fst_c.h>

#include <memory>
#include <string>

#include "hw/sim/uart/uart_model.h"

namespace kiln::sim {

template <class V>
class VerilatedUartModel final : public UartModel {
 public:
  explicit VerilatedUartModel(const std::string& wave_file)
      : ctx_(std::make_unique<VerilatedContext>()) {
    if (!wave_file.empty()) ctx_->traceEverOn(true);  // before the model exists
    top_ = std::make_unique<V>(ctx_.get(), "kiln_uart_top");
    if (!wave_file.empty()) {
      wave_ = std::make_unique<VerilatedFstC>();
      top_->trace(wave_.get(), 99);
      wave_->open(wave_file.c_str());
    }
  }
  ~VerilatedUartModel() override {
    top_->final();
    if (wave_) wave_->close();
  }

  void eval_low(const UartTopIn& in, UartTopOut& out) override {
    V& t = *top_;
    t.clk_i = 0;
    t.rst_ni = in.rst_n;
    t.uart_rx_i = in.rx;
    t.eval();
    if (wave_) wave_->dump(2 * time_);
    out.tx = t.uart_tx_o;
    out.link_active = t.link_active_o;
    out.dbg_state = t.dbg_state_o;
    out.dbg_progress = t.dbg_progress_o;
  }

  void posedge() override {
    top_->clk_i = 1;
    top_->eval();
    if (wave_) wave_->dump(2 * time_ + 1);
    ++time_;
  }

 private:
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<V> top_;
  std::unique_ptr<VerilatedFstC> wave_;
  uint64_t time_ = 0;
};

}  // namespace kiln::sim
