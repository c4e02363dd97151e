#include "hw/sim/systemc/host.h"

#include <fmt/format.h>

#include "hw/sim/rtl/rtl_sim.h"
#include "hw/spec/error.h"
#include "hw/spec/regs.h"

namespace kiln::sim::sc {

namespace r = hw::regs;

namespace {
// While running, the status register is polled this often (as the rtl harness does).
constexpr int kPollCycles = 256;
// After an abort the core completes the bursts in flight: far fewer cycles than this.
constexpr int kAbortDrainCycles = 100000;
}  // namespace

Host::Host(sc_core::sc_module_name name, Accelerator& accel, sc_core::sc_time period,
           uint64_t watchdog_cycles)
    : sc_module(name), socket("socket"), accel_(accel), period_(period),
      watchdog_cycles_(watchdog_cycles) {
  SC_THREAD(serve);
}

void Host::post(Op op, uint32_t offset, uint32_t value) {
  op_ = op;
  offset_ = offset;
  value_ = value;
  done_ = false;
  go_.notify(sc_core::SC_ZERO_TIME);
}

void Host::serve() {
  for (;;) {
    wait(go_);
    wait(accel_.signals().clk->posedge_event());  // a command starts on a clock edge
    try {
      switch (op_) {
        case Op::kReset: reset(); break;
        case Op::kWriteReg: write(offset_, value_); break;
        case Op::kReadReg: result_ = read(offset_); break;
        case Op::kRun: result_ = run_until_done(); break;
      }
    } catch (const hw::Error& e) {
      failure_ = e.what();
    }
    done_ = true;
    sc_core::sc_pause();
  }
}

void Host::reset() {
  // Synchronous, active low, a few cycles; the bridge forgets what was in flight.
  accel_.signals().rst_n.write(false);
  for (int i = 0; i < 4; ++i) wait(accel_.signals().clk->posedge_event());
  accel_.signals().rst_n.write(true);
  wait(accel_.signals().clk->posedge_event());
  accel_.bridge().clear_errors();
}

uint32_t Host::access(tlm::tlm_command cmd, uint32_t offset, uint32_t value) {
  tlm::tlm_generic_payload p;
  p.set_command(cmd);
  p.set_address(offset);
  p.set_data_ptr(reinterpret_cast<unsigned char*>(&value));
  p.set_data_length(4);
  p.set_streaming_width(4);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->b_transport(p, delay);
  if (p.is_response_error()) {
    throw hw::Error(fmt::format("systemc device: register {} 0x{:02x} got no response",
                                cmd == tlm::TLM_WRITE_COMMAND ? "write to" : "read of", offset));
  }
  return value;
}

void Host::write(uint32_t offset, uint32_t value) { access(tlm::TLM_WRITE_COMMAND, offset, value); }

uint32_t Host::read(uint32_t offset) { return access(tlm::TLM_READ_COMMAND, offset, 0); }

uint32_t Host::run_until_done() {
  run_error_.clear();
  AxiTlmBridge& bridge = accel_.bridge();
  uint64_t start = accel_.cycle();
  for (;;) {
    wait(kPollCycles * period_);
    sc_core::sc_pause();  // a point where other accelerators' callers may post commands
    uint64_t last = std::max(start, accel_.last_progress());
    if (accel_.cycle() - last > watchdog_cycles_) {
      run_error_ = hang_report();
      return abort_run();
    }
    uint32_t status = read(r::kStatus);
    if (!bridge.protocol_error().empty()) {
      run_error_ = fmt::format("systemc: {}", bridge.protocol_error());
      reset();
      return status | r::kStatusError;
    }
    if (status & r::kStatusError) {
      std::string cause = r::status_error_text(status);
      std::string why = !bridge.fault().empty() ? bridge.fault()
                        : !cause.empty() ? cause
                                         : std::string("memory error response");
      run_error_ = fmt::format("systemc: the accelerator reported an error: {}", why);
      reset();
      return status;
    }
    if (!(status & r::kStatusBusy)) return status;
  }
}

uint32_t Host::abort_run() {
  write(r::kCtrl, r::kCtrlAbort);
  uint32_t status = read(r::kStatus);
  bool taken = (status & r::kStatusDone) && !(status & r::kStatusBusy) &&
               r::status_cause(status) == r::ErrorCause::kAborted;
  auto clk = [&] { wait(accel_.signals().clk->posedge_event()); };
  for (int i = 0; taken && i < kAbortDrainCycles && !accel_.port_quiet(); ++i) clk();
  for (int i = 0; i < 4; ++i) clk();
  std::string broke;
  if (!taken)
    broke = fmt::format("the abort (CTRL bit 1) was not taken (STATUS 0x{:02x})", status);
  else if (!accel_.port_quiet())
    broke = fmt::format("the memory port did not drain within {} cycles of the abort ({})",
                        kAbortDrainCycles, accel_.bridge().describe());
  else if (!accel_.bridge().protocol_error().empty())
    broke = fmt::format("the abort broke the memory port: {}", accel_.bridge().protocol_error());
  else if (!accel_.bridge().fault().empty())
    broke = accel_.bridge().fault();
  if (!broke.empty()) {
    run_error_ += fmt::format(". After the hang {}; the accelerator was reset", broke);
    reset();
  }
  return status | r::kStatusError;
}

std::string Host::hang_report() const {
  return fmt::format("systemc watchdog: {} made no progress for {} cycles (at cycle {}). {}. {}",
                     accel_.name(), watchdog_cycles_, accel_.cycle(),
                     describe_modules(accel_.debug_view()), accel_.bridge().describe());
}

}  // namespace kiln::sim::sc
