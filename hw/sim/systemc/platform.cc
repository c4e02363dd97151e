#include "hw/sim/systemc/platform.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#endif

#include "hw/sim/systemc/accelerator.h"
#include "hw/sim/systemc/host.h"
#include "hw/sim/systemc/platform_trace.h"
#include "hw/sim/systemc/verilated_thread_context.h"
#include "hw/spec/error.h"

namespace kiln::sim::sc {

namespace {

const ScModelInfo& find_model(const hw::Config& cfg) {
  std::string built;
  for (const ScModelInfo& m : systemc_models()) {
    hw::Config model_cfg = hw::Config::from_json(m.config_json, m.name);
    if (model_cfg.fingerprint() == cfg.fingerprint()) return m;
    built += fmt::format(" {} ({:016x})", m.name, model_cfg.fingerprint());
  }
  throw hw::Error(fmt::format(
      "systemc device: no SystemC model for configuration '{}' (fingerprint {:016x}); this "
      "build has:{}. Add the configuration to KILN_SYSTEMC_CONFIGS (cmake "
      "-DKILN_SYSTEMC_CONFIGS=...) and rebuild",
      cfg.name(), cfg.fingerprint(), built.empty() ? " none" : built));
}

// Makes `ctx` SystemC's current context for the life of the guard.
class UseContext {
 public:
  explicit UseContext(sc_core::sc_simcontext* ctx)
      : prev_(sc_core::sc_curr_simcontext), prev_default_(sc_core::sc_default_global_context) {
    sc_core::sc_curr_simcontext = ctx;
    sc_core::sc_default_global_context = ctx;
  }
  ~UseContext() {
    sc_core::sc_curr_simcontext = prev_;
    sc_core::sc_default_global_context = prev_default_;
  }
  UseContext(const UseContext&) = delete;
  UseContext& operator=(const UseContext&) = delete;

 private:
  sc_core::sc_simcontext* prev_;
  sc_core::sc_simcontext* prev_default_;
};

// libsystemc tells ASan of each switch between its coroutines' stacks, but its switch
// back to the thread that called sc_start names an empty stack (SystemC never learns
// the caller's bounds). ASan then takes the thread to have no stack: an exception
// thrown later leaves its frames poisoned, and sound code reads as overflowing them.
// After each sc_start, tell ASan the calling thread's real stack. Nothing without ASan.
void restore_caller_stack() {
#if defined(__SANITIZE_ADDRESS__)
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* bottom = nullptr;
  size_t size = 0;
  pthread_attr_getstack(&attr, &bottom, &size);
  pthread_attr_destroy(&attr);
  __sanitizer_start_switch_fiber(nullptr, bottom, size);
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
}

}  // namespace

std::vector<std::string> systemc_model_names() {
  std::vector<std::string> out;
  for (const ScModelInfo& m : systemc_models()) out.push_back(m.name);
  return out;
}

// The simulation context and every module in it, destroyed in that context.
class Platform::Context {
 public:
  Context()
      : sim(std::make_unique<sc_core::sc_simcontext>()),
        verilated(std::make_unique<VerilatedThreadContext>()) {}
  ~Context() {
    UseContext use(sim.get());
    if (wave) sc_core::sc_close_vcd_trace_file(wave);
    modules.clear();
    clock.reset();
  }
  std::unique_ptr<sc_core::sc_simcontext> sim;
  std::unique_ptr<VerilatedThreadContext> verilated;
  std::unique_ptr<sc_core::sc_clock> clock;
  std::vector<std::unique_ptr<sc_core::sc_module>> modules;
  sc_core::sc_trace_file* wave = nullptr;
};

Platform::Platform(const hw::Config& cfg, uint64_t dram_bytes, const PlatformOptions& opts)
    : opts_(opts) {
  const ScModelInfo& model = find_model(cfg);
  validate(opts.memory);
  if (opts.accelerators < 1 || opts.accelerators > 16)
    throw hw::Error(fmt::format("systemc: {} accelerators; the platform takes 1 to 16",
                                opts.accelerators));
  if (!(opts.clock_mhz > 0))
    throw hw::Error(fmt::format("systemc: clock of {} MHz; it must be above 0", opts.clock_mhz));
  if (opts.interconnect_cycles < 0)
    throw hw::Error("systemc: interconnect latency must be at least 0 cycles");
  window_ = dram_bytes / uint64_t(opts.accelerators) / 4096 * 4096;
  if (window_ == 0)
    throw hw::Error(fmt::format("systemc: {} bytes of DRAM cannot be shared by {} accelerators",
                                dram_bytes, opts.accelerators));
  mem_.assign(dram_bytes, 0);

  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);  // stdout may be --json
  ctx_ = std::make_unique<Context>();
  UseContext use(ctx_->sim.get());
  sc_core::sc_time period(1e6 / opts.clock_mhz, sc_core::SC_PS);
  ctx_->clock = std::make_unique<sc_core::sc_clock>("clk", period);
  auto memory = std::make_unique<MemoryModel>("memory", std::span<uint8_t>(mem_), opts.memory,
                                              period, model.axi_data_bits / 8);
  auto ic = std::make_unique<Interconnect>("interconnect", opts.interconnect_cycles * period,
                                           opts.accelerators);
  ic->to_memory.bind(memory->socket);
  memory_ = memory.get();
  interconnect_ = ic.get();
  ctx_->modules.push_back(std::move(memory));
  ctx_->modules.push_back(std::move(ic));
  for (int i = 0; i < opts.accelerators; ++i) {
    auto accel = std::make_unique<Accelerator>(fmt::format("accel{}", i).c_str(), model,
                                               *ctx_->clock, period, uint64_t(i) * window_, window_,
                                               opts.backpressure, opts.seed + uint64_t(i));
    accel->bridge().socket.bind(interconnect_->targets);
    auto host = std::make_unique<Host>(fmt::format("host{}", i).c_str(), *accel, period,
                                       opts.watchdog_cycles);
    host->socket.bind(accel->regs);
    accels_.push_back(accel.get());
    hosts_.push_back(host.get());
    ctx_->modules.push_back(std::move(accel));
    ctx_->modules.push_back(std::move(host));
  }
  if (!opts.trace_file.empty()) {
    auto trace = std::make_unique<PlatformTrace>("trace", opts.trace_file, cfg, opts.memory.name,
                                                 *ctx_->clock, accels_, *memory_, *interconnect_);
    trace_ = trace.get();
    ctx_->modules.push_back(std::move(trace));
  }
  if (!opts.wave_file.empty()) {
    std::string base = opts.wave_file;
    if (base.size() > 4 && base.ends_with(".vcd")) base.resize(base.size() - 4);
    ctx_->wave = sc_core::sc_create_vcd_trace_file(base.c_str());
    if (!ctx_->wave) throw hw::Error(fmt::format("systemc: cannot write the waveform {}", opts.wave_file));
    ctx_->wave->set_time_unit(1, sc_core::SC_PS);
    TopSignals& s = accels_[0]->signals();
    sc_core::sc_trace(ctx_->wave, *ctx_->clock, "clk");
    sc_core::sc_trace(ctx_->wave, s.rst_n, "rst_n");
    sc_core::sc_trace(ctx_->wave, s.m_arvalid, "m_axi_arvalid");
    sc_core::sc_trace(ctx_->wave, s.m_arready, "m_axi_arready");
    sc_core::sc_trace(ctx_->wave, s.m_araddr, "m_axi_araddr");
    sc_core::sc_trace(ctx_->wave, s.m_arlen, "m_axi_arlen");
    sc_core::sc_trace(ctx_->wave, s.m_rvalid, "m_axi_rvalid");
    sc_core::sc_trace(ctx_->wave, s.m_rready, "m_axi_rready");
    sc_core::sc_trace(ctx_->wave, s.m_rlast, "m_axi_rlast");
    sc_core::sc_trace(ctx_->wave, s.m_awvalid, "m_axi_awvalid");
    sc_core::sc_trace(ctx_->wave, s.m_awready, "m_axi_awready");
    sc_core::sc_trace(ctx_->wave, s.m_awaddr, "m_axi_awaddr");
    sc_core::sc_trace(ctx_->wave, s.m_wvalid, "m_axi_wvalid");
    sc_core::sc_trace(ctx_->wave, s.m_wready, "m_axi_wready");
    sc_core::sc_trace(ctx_->wave, s.m_wlast, "m_axi_wlast");
    sc_core::sc_trace(ctx_->wave, s.m_bvalid, "m_axi_bvalid");
    sc_core::sc_trace(ctx_->wave, s.m_bready, "m_axi_bready");
    sc_core::sc_trace(ctx_->wave, s.s_awvalid, "s_axil_awvalid");
    sc_core::sc_trace(ctx_->wave, s.s_arvalid, "s_axil_arvalid");
    sc_core::sc_trace(ctx_->wave, s.dbg_state, "dbg_state");
    sc_core::sc_trace(ctx_->wave, s.dbg_progress, "dbg_progress");
  }
  sc_core::sc_start(sc_core::SC_ZERO_TIME);  // elaboration
  restore_caller_stack();
  for (int i = 0; i < accelerators(); ++i) {
    exec(i, Host::Op::kReset, 0, 0);
  }
}

Platform::~Platform() = default;

std::span<uint8_t> Platform::dram(int i) {
  return std::span<uint8_t>(mem_).subspan(uint64_t(i) * window_, window_);
}

void Platform::exec(int i, Host::Op op, uint32_t offset, uint32_t value) {
  std::unique_lock<std::mutex> lock(mu_);
  Host& h = *hosts_.at(size_t(i));
  h.post(op, offset, value);
  // Whoever holds the lock runs the simulation until some host pauses (a command done,
  // or a running host's poll), then lets the other callers post theirs.
  while (!h.done()) {
    {
      UseContext use(ctx_->sim.get());
      sc_core::sc_start();
      restore_caller_stack();
    }
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
  if (!h.failure().empty()) throw hw::Error(h.failure());
}

void Platform::write_reg(int i, uint32_t offset, uint32_t value) {
  if (trace_) {
    std::lock_guard<std::mutex> lock(mu_);
    trace_->register_write(i, offset, value, dram(i));
  }
  exec(i, Host::Op::kWriteReg, offset, value);
}

uint32_t Platform::read_reg(int i, uint32_t offset) {
  exec(i, Host::Op::kReadReg, offset, 0);
  return hosts_[size_t(i)]->result();
}

uint32_t Platform::run_until_done(int i) {
  try {
    exec(i, Host::Op::kRun, 0, 0);
  } catch (const hw::Error& e) {
    if (trace_) {
      std::lock_guard<std::mutex> lock(mu_);
      trace_->end_run(i, e.what());
    }
    throw;
  }
  if (trace_) {
    std::lock_guard<std::mutex> lock(mu_);
    trace_->end_run(i, error(i));
  }
  return hosts_[size_t(i)]->result();
}

const std::string& Platform::error(int i) const { return hosts_.at(size_t(i))->run_error(); }

PlatformStats Platform::stats() const {
  PlatformStats s;
  s.cycles = accels_.empty() ? 0 : accels_[0]->cycle();
  s.memory = memory_->stats();
  s.ports = interconnect_->traffic();
  return s;
}

}  // namespace kiln::sim::sc

// libsystemc's main() calls sc_main(); Kiln's programs have their own main() and drive
// the platform through the systemc Device, so this is never the entry point, but the
// symbol must exist for libsystemc to link (here, in a unit every user pulls in).
int sc_main(int, char**) {
  std::fputs("kiln: the SystemC platform is run by the systemc device (kiln sim --device "
             "systemc), not by sc_main\n",
             stderr);
  return 1;
}
