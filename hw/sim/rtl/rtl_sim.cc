#include "hw/sim/rtl/rtl_sim.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <deque>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "hw/spec/debug_ports.h"
#include "hw/spec/error.h"
#include "hw/spec/isa.h"
#include "hw/spec/regs.h"

namespace kiln::sim {

namespace r = hw::regs;

namespace {

// AXI4-Lite accesses answer within a few cycles; more means a broken register file.
constexpr int kRegTimeout = 1000;
// While running, the status register is polled this often.
constexpr int kPollCycles = 256;
// After an abort the core completes the bursts in flight (the DRAM model holds at most
// 16 each way, of at most 16 beats): a few hundred cycles; far more is a broken drain.
constexpr int kAbortDrainCycles = 100000;

uint64_t model_fingerprint(const RtlModelInfo& m) { return hw::Config::from_json(m.config_json, m.name).fingerprint(); }

// The model of `cfg` (by fingerprint) for `core` among available_rtl_models(), or null.
const RtlModelInfo* lookup_model(const hw::Config& cfg, const std::string& core) {
  for (const RtlModelInfo* m : available_rtl_models())
    if (m->core == core && model_fingerprint(*m) == cfg.fingerprint()) return m;
  return nullptr;
}

const RtlModelInfo& find_model(const hw::Config& cfg, const std::string& core) {
  if (core != "decoupled" && core != "inorder")
    throw hw::Error(fmt::format("rtl device: unknown core '{}'; the RTL has 'decoupled' "
                                "(kiln_top) and 'inorder' (kiln_inorder_top)",
                                core));
  if (const RtlModelInfo* m = lookup_model(cfg, core)) return *m;
  std::string built;
  for (const RtlModelInfo* m : available_rtl_models())
    built += fmt::format(" {} ({}, {:016x})", m->name, m->core, model_fingerprint(*m));
  const char* list = core == "inorder" ? "KILN_RTL_INORDER_CONFIGS" : "KILN_RTL_CONFIGS";
  throw hw::Error(fmt::format(
      "rtl device: no Verilated {} model for configuration '{}' (fingerprint {:016x}); this "
      "build has:{}. Verilate it at run time with the device flag --build-model (cached; "
      "hw/sim/rtl/model_builder.h), or add the configuration to {} (cmake -D{}=...) and rebuild",
      core, cfg.name(), cfg.fingerprint(), built.empty() ? " none" : built, list, list));
}

// Models Verilated at run time; a deque, so that references to them stay valid.
std::mutex registered_mutex;
std::deque<RtlModelInfo>& registered_models() {
  static std::deque<RtlModelInfo> models;
  return models;
}

// The in-order core's sequencer states (hw/spec/debug_ports.h InorderState), for hang
// reports.
const char* inorder_state(unsigned s) {
  using S = hw::dbg::InorderState;
  switch (static_cast<S>(s)) {
    case S::kIdle: return "idle";
    case S::kFetch: return "fetching an instruction";
    case S::kDecode: return "decoding";
    case S::kXfer: return "loading";
    case S::kStRead: case S::kStWrite: return "storing";
    case S::kUop: case S::kRow: case S::kSrc: case S::kLane: case S::kWrite:
      return "running a GEMM/ALU loop";
    case S::kRetire: return "retiring";
    case S::kDone: return "done";
  }
  return "?";
}

// A module's sequencer state (hw/spec/debug_ports.h SeqState) in words: `waits` names the
// tokens it pops, `room` the queues it pushes to, `runs` what it does.
std::string module_state(unsigned s, const char* waits, const char* room, const char* runs) {
  using S = hw::dbg::SeqState;
  switch (static_cast<S>(s)) {
    case S::kIdle: return "idle";
    case S::kPop: return fmt::format("waits for a token ({})", waits);
    case S::kStart: return fmt::format("starting ({})", runs);
    case S::kRun: return runs;
    case S::kPush: return fmt::format("waits for room in a token queue ({})", room);
  }
  return "?";
}
// The token queues module m pops (pops) or pushes, named as hw/spec names them, joined
// with `sep`.
std::string queues_of(hw::Module m, bool pops, std::string_view sep) {
  const hw::TokenLinks l = hw::token_links(m);
  std::vector<std::string_view> names;
  for (const std::optional<hw::TokenQueue>& q :
       pops ? std::array{l.pop_prev, l.pop_next} : std::array{l.push_prev, l.push_next}) {
    if (q) names.push_back(hw::token_queue_name(*q));
  }
  return fmt::format("{}", fmt::join(names, sep));
}
std::string state_of(hw::Module m, unsigned s) {
  const char* runs = m == hw::Module::kLoad      ? "loading"
                     : m == hw::Module::kCompute ? "loading UOP/ACC or running a GEMM/ALU loop"
                                                 : "storing";
  return module_state(s, queues_of(m, true, " and/or ").c_str(),
                      queues_of(m, false, " or ").c_str(), runs);
}

}  // namespace

std::string describe_modules(const TopOut& out) {
  namespace dbg = hw::dbg;
  auto state = [&](const dbg::BitField& f) { return static_cast<unsigned>(f.get(out.dbg_state)); };
  unsigned fetch = state(dbg::kFetchState), load = state(dbg::kLoadState);
  unsigned compute = state(dbg::kComputeState), store = state(dbg::kStoreState);
  std::string f = (fetch & dbg::kFetchWaitsRoom) ? "waits for room in a module's command queue"
                  : (fetch & dbg::kFetchReading) ? "reading instructions"
                                                 : "all instructions fetched";
  std::vector<std::string> tokens, queues;
  for (int k = 0; k < hw::kNumTokenQueues; ++k) {
    const auto q = static_cast<hw::TokenQueue>(k);
    tokens.push_back(
        fmt::format("{} {}", hw::token_queue_name(q), dbg::token_count(out.dbg_tokens, q)));
  }
  for (int k = 0; k < hw::kNumModules; ++k) {
    const auto m = static_cast<hw::Module>(k);
    queues.push_back(
        fmt::format("{} {}", hw::module_name(m), dbg::queue_count(out.dbg_queues, m)));
  }
  return fmt::format("fetch: {}; load: {}; compute: {}; store: {}. Tokens queued: {}. Command "
                     "queues: {}",
                     f, state_of(hw::Module::kLoad, load), state_of(hw::Module::kCompute, compute),
                     state_of(hw::Module::kStore, store), fmt::join(tokens, ", "),
                     fmt::join(queues, ", "));
}

void register_rtl_model(RtlModelInfo info) {
  std::lock_guard lock(registered_mutex);
  registered_models().push_back(std::move(info));
}

std::vector<const RtlModelInfo*> available_rtl_models() {
  std::vector<const RtlModelInfo*> out;
  for (const RtlModelInfo& m : rtl_models()) out.push_back(&m);
  std::lock_guard lock(registered_mutex);
  for (const RtlModelInfo& m : registered_models()) out.push_back(&m);
  return out;
}

bool has_rtl_model(const hw::Config& cfg, const std::string& core) { return lookup_model(cfg, core) != nullptr; }

std::vector<std::string> rtl_model_names() {
  std::vector<std::string> out;
  for (const RtlModelInfo* m : available_rtl_models()) out.push_back(m->name);
  return out;
}

RtlSim::RtlSim(const hw::Config& cfg, std::span<uint8_t> dram, const RtlSimOptions& opts)
    : RtlSim(find_model(cfg, opts.core), dram, opts) {}

RtlSim::RtlSim(const RtlModelInfo& model, std::span<uint8_t> dram, const RtlSimOptions& opts)
    : model_(model.make(opts.wave_file)),
      dram_bytes_(dram),
      dram_(dram, opts.dram, model.axi_data_bits / 8, opts.fault),
      opts_(opts),
      core_(model.core) {
  if (!opts.trace_file.empty() && model.core != "decoupled") {
    throw hw::Error(fmt::format("rtl device: the activity timeline ({}) follows kiln_top's "
                                "load, compute and store modules; the {} core has none",
                                opts.trace_file, model.core));
  }
  if (!opts.trace_file.empty()) {
    trace_ = std::make_unique<ActivityTrace>(opts.trace_file,
                                             hw::Config::from_json(model.config_json, model.name));
  }
  if (opts.fault.kind == InjectedFault::Kind::kSramStuck) {
    const hw::Config cfg = hw::Config::from_json(model.config_json, model.name);
    const auto mem = static_cast<hw::MemType>(opts.fault.mem);
    const uint32_t depth = hw::mem_depth(cfg, mem);
    const int bits = hw::mem_elem_bytes(cfg, mem) * 8;
    if (opts.fault.word >= depth || opts.fault.bit >= static_cast<uint32_t>(bits)) {
      throw hw::Error(fmt::format("--fault {}: configuration {}'s {} buffer has {} words of {} bits",
                                  opts.fault.text, model.name, hw::mem_type_name(mem), depth, bits));
    }
    // A model whose array the harness cannot find is refused now, not in the middle of a run.
    (void)model_->scratchpad_bit(mem, opts.fault.word, opts.fault.bit, std::nullopt);
  }
  reset();
}

void RtlSim::hold_stuck_bit() {
  const InjectedFault& f = opts_.fault;
  const auto mem = static_cast<hw::MemType>(f.mem);
  if (model_->scratchpad_bit(mem, f.word, f.bit, std::nullopt) != f.value) {
    (void)model_->scratchpad_bit(mem, f.word, f.bit, f.value);
    ++stuck_holds_;
  }
}

void RtlSim::reset() {
  // Synchronous, active low, a few cycles; the DRAM model forgets what was in flight.
  in_ = TopIn{};
  for (int i = 0; i < 4; ++i) tick();
  dram_.reset();
  in_.rst_n = true;
  tick();
}

RtlSim::~RtlSim() = default;

void RtlSim::settle() {
  dram_.drive(in_);
  model_->eval_low(in_, out_);
  dram_.update(in_, out_);
  if (trace_ && in_.rst_n) trace_->sample(out_);
}

void RtlSim::edge() {
  model_->posedge();
  ++cycle_;
  if (stuck_on_) hold_stuck_bit();  // whatever the edge wrote, the cell reads its stuck value
}

void RtlSim::tick() {
  settle();
  if (out_.dbg_progress) last_progress_ = cycle_;
  edge();
}

void RtlSim::write_reg(uint32_t offset, uint32_t value) {
  uint64_t nth = ++reg_writes_[offset & 0xff];
  bool start = offset == r::kCtrl && (value & r::kCtrlStart);
  if (opts_.fault.kind == InjectedFault::Kind::kRegDrop && offset == opts_.fault.reg &&
      nth == opts_.fault.n) {
    if (start) start_cycle_ = cycle_;  // as far as the host knows
    return;  // lost on the way: the RTL never sees it
  }
  if (trace_) trace_->register_write(offset, value, dram_bytes_);
  in_.s_awvalid = in_.s_wvalid = true;
  in_.s_awaddr = static_cast<uint8_t>(offset);
  in_.s_wdata = value;
  in_.s_wstrb = 0xf;
  in_.s_bready = true;
  bool aw_done = false, w_done = false, b_done = false;
  for (int i = 0; i < kRegTimeout && !b_done; ++i) {
    settle();
    bool aw_fire = in_.s_awvalid && out_.s_awready;
    bool w_fire = in_.s_wvalid && out_.s_wready;
    b_done = aw_done && w_done && out_.s_bvalid;
    edge();
    if (aw_fire) aw_done = true, in_.s_awvalid = false;
    if (w_fire) w_done = true, in_.s_wvalid = false;
  }
  in_.s_awvalid = in_.s_wvalid = in_.s_bready = false;
  if (!b_done)
    throw hw::Error(fmt::format("rtl device: register write to 0x{:02x} got no response", offset));
  if (start) {
    start_cycle_ = cycle_;
    ++runs_;
    stuck_on_ = opts_.fault.kind == InjectedFault::Kind::kSramStuck && runs_ == opts_.fault.n;
    stuck_holds_ = 0;
    if (stuck_on_) hold_stuck_bit();
  }
}

uint32_t RtlSim::read_reg(uint32_t offset) {
  in_.s_arvalid = true;
  in_.s_araddr = static_cast<uint8_t>(offset);
  in_.s_rready = true;
  bool ar_done = false;
  for (int i = 0; i < kRegTimeout; ++i) {
    settle();
    bool ar_fire = in_.s_arvalid && out_.s_arready;
    bool r_fire = ar_done && out_.s_rvalid;
    uint32_t data = out_.s_rdata;
    edge();
    if (ar_fire) ar_done = true, in_.s_arvalid = false;
    if (r_fire) {
      in_.s_rready = false;
      return data;
    }
  }
  in_.s_arvalid = in_.s_rready = false;
  throw hw::Error(fmt::format("rtl device: register read of 0x{:02x} got no response", offset));
}

uint32_t RtlSim::run_until_done() {
  uint32_t status = wait_until_done();
  stuck_on_ = false;  // later runs see a healthy cell (the word keeps what it holds)
  if (trace_) trace_->end_run(error_);
  return status;
}

uint32_t RtlSim::wait_until_done() {
  error_.clear();
  if (std::string why = started_check(); !why.empty()) {
    error_ = why;
    return read_reg(r::kStatus) | r::kStatusError;
  }
  last_progress_ = cycle_;
  for (;;) {
    for (int i = 0; i < kPollCycles; ++i) {
      tick();
      if (cycle_ - last_progress_ > opts_.watchdog_cycles) {
        error_ = hang_report();
        error_ += ". " + counters_text();
        return abort_run();
      }
    }
    uint32_t status = read_reg(r::kStatus);
    if (!dram_.protocol_error().empty()) {
      error_ = fmt::format("rtl: {}", dram_.protocol_error());
      reset();
      return status | r::kStatusError;
    }
    if (status & r::kStatusError) {
      std::string cause = r::status_error_text(status);
      std::string why = !dram_.fault().empty() ? dram_.fault()
                        : !cause.empty() ? cause
                                         : std::string("DRAM error response");
      if (dram_.fault_id() >= 0) why += fmt::format(" (the read of {})", reader_of(dram_.fault_id()));
      if (stuck_on_ && r::status_cause(status) == r::ErrorCause::kParity) {
        const InjectedFault& f = opts_.fault;
        why += fmt::format(" [the injected fault {}: bit {} of {} word {} stuck at {}; the cell "
                           "held {} and was set back {} time(s) this run]",
                           f.text, f.bit, hw::mem_type_name(static_cast<hw::MemType>(f.mem)), f.word,
                           int{f.value}, int{!f.value}, stuck_holds_);
      }
      error_ = fmt::format("rtl: the accelerator reported an error: {}. {}", why, counters_text());
      reset();
      return status;
    }
    if (!(status & r::kStatusBusy)) return status;
  }
}

uint32_t RtlSim::abort_run() {
  write_reg(r::kCtrl, r::kCtrlAbort);
  dram_.end_hang();  // the host's recovery reaches the stuck slave too
  uint32_t status = read_reg(r::kStatus);
  bool taken = (status & r::kStatusDone) && !(status & r::kStatusBusy) &&
               r::status_cause(status) == r::ErrorCause::kAborted;
  // The drain: what was in flight completes, nothing new goes out; then the core resets
  // its modules within a few cycles.
  auto port_quiet = [&] {
    return dram_.idle() && !out_.m_arvalid && !out_.m_awvalid && !out_.m_wvalid;
  };
  for (int i = 0; taken && i < kAbortDrainCycles && !port_quiet(); ++i) tick();
  for (int i = 0; i < 4; ++i) tick();
  std::string broke;
  if (!taken)
    broke = fmt::format("the abort (CTRL bit 1) was not taken (STATUS 0x{:02x})", status);
  else if (!port_quiet())
    broke = fmt::format("the memory port did not drain within {} cycles of the abort ({})",
                        kAbortDrainCycles, dram_.describe());
  else if (!dram_.protocol_error().empty())
    broke = fmt::format("the abort broke the memory port: {}", dram_.protocol_error());
  else if (!dram_.fault().empty())
    broke = dram_.fault();
  if (!broke.empty()) {
    error_ += fmt::format(". After the hang {}; the model was reset", broke);
    reset();
  }
  return status | r::kStatusError;
}

std::string RtlSim::hang_report() const {
  uint64_t st = out_.dbg_state;
  if (core_ == "inorder") {
    return fmt::format("rtl watchdog: no progress for {} cycles (at cycle {}). in-order core: {}{}. {}",
                       opts_.watchdog_cycles, cycle_,
                       inorder_state(static_cast<unsigned>(hw::dbg::kInorderState.get(st))),
                       hw::dbg::kInorderReadWait.get(st) ? ", waiting for a memory read" : "",
                       dram_.describe());
  }
  return fmt::format("rtl watchdog: no progress for {} cycles (at cycle {}). {}. {}",
                     opts_.watchdog_cycles, cycle_, describe_modules(out_), dram_.describe());
}

std::string RtlSim::counters_text() {
  std::string out;
  for (const r::CounterInfo& info : r::kCounters) {
    if (core_ == "inorder" && !r::inorder_has_counter(info.id)) continue;
    uint64_t v = uint64_t{read_reg(r::counter_hi(info.id))} << 32 | read_reg(r::counter_lo(info.id));
    if (v == 0 && info.id != r::Counter::kCycles) continue;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", info.name, v);
  }
  return "Counters of the run: " + out;
}

std::string RtlSim::started_check() {
  uint32_t status = read_reg(r::kStatus);
  if (status & r::kStatusBusy) return "";
  // Not busy: either this run ended already (its cycle counter fits in the cycles since
  // the start) or it never began and STATUS is an earlier run's.
  uint64_t since = cycle_ - start_cycle_;
  uint32_t cycles = read_reg(r::counter_lo(r::Counter::kCycles));
  if ((status & r::kStatusDone) && cycles <= since) return "";
  return fmt::format(
      "rtl: the run did not start: right after the write of CTRL start (register {}, 0x{:02x}) "
      "STATUS is 0x{:02x}, {}; the write did not reach the accelerator (a lost register write)",
      hw::regs::writable_reg_name(r::kCtrl), r::kCtrl, status,
      (status & r::kStatusDone)
          ? fmt::format("an earlier run's (its cycle counter {} is more than the {} cycles since)",
                        cycles, since)
          : std::string("neither busy nor done"));
}

std::string RtlSim::reader_of(int arid) const {
  if (core_ == "inorder") return "the in-order core";
  // kiln_top's read clients in ARID order (its NCL list: fetch, inp, wgt, uop, acc).
  static constexpr const char* kReaders[] = {"fetch (instructions)", "load (INP)", "load (WGT)",
                                             "compute (UOP)", "compute (ACC)"};
  if (arid >= 0 && arid < 5) return kReaders[arid];
  return fmt::format("ARID {}", arid);
}

}  // namespace kiln::sim
