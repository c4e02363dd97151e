#pragma once
// The host CPU's side of one accelerator: a SystemC thread with a TLM-2.0 initiator
// socket to the accelerator's register file. It does what a driver does, on the
// platform's clock: register writes and reads (each an AXI4-Lite access), polling the
// status register, and the watchdog that ends a run without progress with CTRL abort
// and a report naming what each module waits for. The Platform posts one command at a
// time and runs the simulation until the host has done it (sc_pause).

#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <string>

#include "hw/sim/systemc/accelerator.h"

namespace kiln::sim::sc {

class Host : public sc_core::sc_module {
 public:
  enum class Op { kReset, kWriteReg, kReadReg, kRun };

  tlm_utils::simple_initiator_socket<Host, 32> socket;

  SC_HAS_PROCESS(Host);
  Host(sc_core::sc_module_name name, Accelerator& accel, sc_core::sc_time period,
       uint64_t watchdog_cycles);

  // Between sc_start()s: the command to do next; run the simulation until done().
  void post(Op op, uint32_t offset = 0, uint32_t value = 0);
  bool done() const { return done_; }
  // The register value read, or the status at the end of a run.
  uint32_t result() const { return result_; }
  // Why the last run failed ("" when it did not): the watchdog's, the bridge's or the
  // accelerator's report.
  const std::string& run_error() const { return run_error_; }
  // A register access that got no answer: the platform is broken ("" when none).
  const std::string& failure() const { return failure_; }

 private:
  void serve();
  void reset();
  // One AXI4-Lite access through the socket; throws hw::Error when it gets no answer.
  uint32_t access(tlm::tlm_command cmd, uint32_t offset, uint32_t value);
  void write(uint32_t offset, uint32_t value);
  uint32_t read(uint32_t offset);
  uint32_t run_until_done();
  uint32_t abort_run();
  std::string hang_report() const;

  Accelerator& accel_;
  sc_core::sc_time period_;
  uint64_t watchdog_cycles_;
  sc_core::sc_event go_;
  Op op_ = Op::kReset;
  uint32_t offset_ = 0, value_ = 0, result_ = 0;
  bool done_ = true;
  std::string run_error_, failure_;
};

}  // namespace kiln::sim::sc
