#pragma once
// What every Verilated top needs around it, written once: its context, the model, an
// optional FST waveform, and the clock's two halves. V is a class Verilator generated;
// its clock port is clk_i. Used by hw/sim/rtl (kiln_top and the in-order core) and
// hw/sim/uart (the board top).

#include <verilated.h>
#include <verilated_fst_c.h>

#include <memory>
#include <string>

namespace kiln::sim {

template <class V>
class VerilatedHarness {
 public:
  VerilatedHarness(const std::string& wave_file, const char* name)
      : ctx_(std::make_unique<VerilatedContext>()) {
    // Tracing must be switched on before the model exists, and costs time: only then.
    if (!wave_file.empty()) ctx_->traceEverOn(true);
    top_ = std::make_unique<V>(ctx_.get(), name);
    if (!wave_file.empty()) {
      wave_ = std::make_unique<VerilatedFstC>();
      top_->trace(wave_.get(), 99);
      wave_->open(wave_file.c_str());
    }
  }
  ~VerilatedHarness() {
    top_->final();
    if (wave_) wave_->close();
  }
  VerilatedHarness(const VerilatedHarness&) = delete;
  VerilatedHarness& operator=(const VerilatedHarness&) = delete;

  V& top() { return *top_; }
  // Clock low with the inputs already set on top(): settle and record.
  void eval_low() {
    top_->clk_i = 0;
    top_->eval();
    if (wave_) wave_->dump(2 * time_);
  }
  // The rising edge.
  void posedge() {
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
