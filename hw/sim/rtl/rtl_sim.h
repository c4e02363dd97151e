#pragma once
// The Verilator harness: one Verilated accelerator (the model built for the given
// configuration), its clock and reset, the AXI4 DRAM model, an optional FST
// waveform, the AXI4-Lite register accesses of the host, and a watchdog that turns a
// run without progress into an error naming what each module waits for, and an
// optional activity timeline of every run (activity_trace.h).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hw/sim/rtl/activity_trace.h"
#include "hw/sim/rtl/axi_dram.h"
#include "hw/sim/rtl/rtl_model.h"
#include "hw/spec/config.h"

namespace kiln::sim {

struct RtlSimOptions {
  DramTiming dram;
  std::string wave_file;             // FST waveform of the whole simulation ("" for none)
  uint64_t watchdog_cycles = 100000; // cycles without progress that count as a hang
  std::string trace_file;            // Chrome trace JSON of module activity ("" for none)
  std::string core = "decoupled";    // the microarchitecture: "decoupled" or "inorder"
  InjectedFault fault;               // a hardware fault to inject (fault.h), none by default
};

class RtlSim {
 public:
  // Selects the Verilated model of opts.core whose configuration has cfg's fingerprint;
  // throws hw::Error listing the built models when there is none, or naming the trace
  // file when it cannot be written (or when the core has no activity timeline).
  RtlSim(const hw::Config& cfg, std::span<uint8_t> dram, const RtlSimOptions& opts);
  RtlSim(const RtlModelInfo& model, std::span<uint8_t> dram, const RtlSimOptions& opts);
  ~RtlSim();
  RtlSim(const RtlSim&) = delete;
  RtlSim& operator=(const RtlSim&) = delete;

  // AXI4-Lite accesses (each takes a few clock cycles). An injected kRegDrop fault
  // loses its write here, as an interconnect would: the call returns as if it landed.
  void write_reg(uint32_t offset, uint32_t value);
  uint32_t read_reg(uint32_t offset);

  // Runs the clock until the status register shows done or error. Returns the status;
  // on a watchdog hang it has the error bit set and error() says why. A hang ends as a
  // board's driver ends it: CTRL abort (STATUS then shows done, error, cause kAborted),
  // and the clock runs while the core drains its memory port and resets its modules;
  // where the abort is not taken or breaks the port, error() says so and the model is
  // reset. After any other error the model is reset (the scratchpads keep their
  // contents), so that the next run starts clean. A run that does not start (STATUS
  // right after CTRL start shows neither this run busy nor its end) is an error naming
  // the lost write. Every error names the counters of the failed run and, for a DRAM
  // error response, the module whose read failed.
  uint32_t run_until_done();
  const std::string& error() const { return error_; }

  uint64_t cycle() const { return cycle_; }
  const AxiDram& dram() const { return dram_; }

 private:
  // One clock cycle in two halves: settle() applies the inputs and reads the outputs
  // (and samples the trace), edge() is the rising edge.
  void settle();
  void edge();
  void tick();
  void reset();
  uint32_t wait_until_done();
  uint32_t abort_run();  // after a watchdog hang: CTRL abort and the drain; the status
  std::string hang_report() const;
  std::string counters_text();        // the run's nonzero counters, read over AXI-Lite
  std::string started_check();        // "" when the run started; else why not
  std::string reader_of(int arid) const;  // the module behind a read ID
  void hold_stuck_bit();              // kSramStuck: the cell back to its stuck value

  std::unique_ptr<RtlModel> model_;
  std::span<uint8_t> dram_bytes_;
  AxiDram dram_;
  RtlSimOptions opts_;
  std::string core_;  // the model's core ("decoupled", "inorder")
  TopIn in_;
  TopOut out_;
  uint64_t cycle_ = 0;
  uint64_t last_progress_ = 0;
  uint64_t start_cycle_ = 0;          // when the last CTRL start write completed
  uint64_t reg_writes_[256] = {};     // writes per register offset, for kRegDrop
  uint64_t runs_ = 0;                 // CTRL starts the RTL has seen, for kSramStuck
  bool stuck_on_ = false;             // kSramStuck: this run has the stuck cell
  uint64_t stuck_holds_ = 0;          // times the cell was set back after the RTL wrote it
  std::string error_;
  std::unique_ptr<ActivityTrace> trace_;
};

// What each of kiln_top's modules waits for, its token and command queues, decoded
// from its debug outputs (for watchdog reports; also the SystemC platform's).
std::string describe_modules(const TopOut& out);

// The configurations that have Verilated models, by name: this build's, then those
// Verilated at run time (register_rtl_model).
std::vector<std::string> rtl_model_names();

}  // namespace kiln::sim
