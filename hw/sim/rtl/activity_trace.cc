#include "hw/sim/rtl/activity_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <optional>
#include <nlohmann/json.hpp>

#include "hw/spec/debug_ports.h"
#include "hw/spec/error.h"
#include "hw/spec/isa.h"
#include "hw/spec/regs.h"

namespace kiln::sim {

namespace {

using json = nlohmann::ordered_json;
using State = ActivityTrace::State;

constexpr int kRunsTid = 0;  // the runs themselves; module m is on tid m + 1
static_assert(ActivityTrace::unit_of(hw::Module::kLoad) == ActivityTrace::kLoad &&
              ActivityTrace::unit_of(hw::Module::kStore) == ActivityTrace::kStore);
std::string_view unit_name(ActivityTrace::Unit u) {
  return u == ActivityTrace::kFetch ? "fetch" : hw::module_name(static_cast<hw::Module>(u - 1));
}
// A full token queue holds this many.
constexpr uint64_t kTokenQueueFull = hw::Config::kTokenQueueDepth;

// The modules' sequencer states (kiln_token_seq; hw/spec/debug_ports.h).
constexpr unsigned kIdle = static_cast<unsigned>(hw::dbg::SeqState::kIdle);
constexpr unsigned kPop = static_cast<unsigned>(hw::dbg::SeqState::kPop);
constexpr unsigned kPush = static_cast<unsigned>(hw::dbg::SeqState::kPush);

// A load, compute or store module's state: busy from START until PUSH; stalled in POP
// while a token it pops is missing, and in PUSH while a token queue it
// pushes to is full; otherwise idle, or in a handshake between instructions.
State classify(unsigned state, bool waits_token, bool waits_room) {
  if (state == kIdle) return State::kIdle;
  if (state == kPop) return waits_token ? State::kStallToken : State::kSync;
  if (state == kPush) return waits_room ? State::kStallQueue : State::kSync;
  return State::kBusy;
}

const char* state_key(State s) {
  switch (s) {
    case State::kBusy:
      return "busy";
    case State::kStallToken:
      return "stall_token";
    case State::kStallQueue:
      return "stall_queue";
    case State::kSync:
      return "sync";
    case State::kIdle:
      break;
  }
  return "idle";
}

uint64_t le64(std::span<const uint8_t> b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | b[static_cast<size_t>(i)];
  return v;
}

}  // namespace

TraceFile::TraceFile(const std::string& path, const std::string& device,
                     const std::string& other_data)
    : path_(path), device_(device) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) fail(std::strerror(errno));
  std::fputs(fmt::format("{{\"otherData\":{},\n\"traceEvents\":[\n", other_data).c_str(), file_);
  flush();
}

TraceFile::~TraceFile() {
  if (!file_) return;
  try {
    flush();
  } catch (const hw::Error&) {
    // A destructor must not throw; the file is then incomplete.
  }
  std::fclose(file_);
}

void TraceFile::fail(const std::string& what) const {
  throw hw::Error(fmt::format("{} device: cannot write the trace file '{}': {}", device_, path_, what));
}

void TraceFile::emit(const std::string& event) {
  if (trailer_) {
    if (std::fseek(file_, trailer_at_, SEEK_SET) != 0) fail(std::strerror(errno));
    trailer_ = false;
  }
  if (!first_event_) std::fputs(",\n", file_);
  std::fputs(event.c_str(), file_);
  first_event_ = false;
}

void TraceFile::flush() {
  if (trailer_) return;
  trailer_at_ = std::ftell(file_);
  std::fputs("\n]}\n", file_);
  trailer_ = true;
  if (std::fflush(file_) != 0 || std::ferror(file_)) fail(std::strerror(errno));
}

void TraceFile::name_process(int pid, const std::string& name, int sort_index) {
  emit(json{{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}}.dump());
  emit(json{{"name", "process_sort_index"},
            {"ph", "M"},
            {"pid", pid},
            {"args", {{"sort_index", sort_index}}}}
           .dump());
}

void TraceFile::name_thread(int pid, int tid, const std::string& name) {
  emit(json{{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}}
           .dump());
  emit(json{{"name", "thread_sort_index"},
            {"ph", "M"},
            {"pid", pid},
            {"tid", tid},
            {"args", {{"sort_index", tid}}}}
           .dump());
}

void TraceFile::counter(int pid, std::string_view track, uint64_t ts,
                        std::span<const std::pair<std::string_view, double>> values) {
  // fmt rather than json objects here and in close(): a long run has many events.
  std::string args;
  for (const auto& [k, v] : values) fmt::format_to(std::back_inserter(args), "{}\"{}\":{}", args.empty() ? "" : ",", k, v);
  emit(fmt::format("{{\"name\":\"{}\",\"ph\":\"C\",\"pid\":{},\"ts\":{},\"args\":{{{}}}}}", track,
                   pid, ts, args));
}

ActivityTrace::ActivityTrace(const std::string& path, const hw::Config& cfg) : layout_(cfg) {
  json other = {{"tool", "kiln"},
                {"device", "rtl"},
                {"config", cfg.name()},
                {"time_unit", "1 us on the timeline is 1 clock cycle"}};
  file_ = std::make_shared<TraceFile>(path, "rtl", other.dump());
  declare_tracks(fmt::format("kiln rtl ({})", cfg.name()));
}

ActivityTrace::ActivityTrace(std::shared_ptr<TraceFile> file, const hw::Config& cfg, int pid,
                             const std::string& name)
    : file_(std::move(file)), pid_(pid), layout_(cfg) {
  declare_tracks(name);
}

void ActivityTrace::declare_tracks(const std::string& name) {
  file_->name_process(pid_, name, pid_);
  for (int t = 0; t <= kNumUnits; ++t)
    file_->name_thread(pid_, t, std::string(t == kRunsTid ? "runs" : unit_name(static_cast<Unit>(t - 1))));
  file_->flush();
}

ActivityTrace::~ActivityTrace() {
  try {
    if (active_) end_run("the run did not finish");
  } catch (const hw::Error&) {
    // A destructor must not throw; the file is then incomplete.
  }
}

void ActivityTrace::register_write(uint32_t offset, uint32_t value, std::span<const uint8_t> dram) {
  namespace r = hw::regs;
  if (offset == r::kInsnAddrLo) insn_addr_ = (insn_addr_ & ~uint64_t{0xffffffff}) | value;
  if (offset == r::kInsnAddrHi) insn_addr_ = (insn_addr_ & 0xffffffff) | uint64_t{value} << 32;
  if (offset == r::kInsnCount) insn_count_ = value;
  if (offset != r::kCtrl || !(value & r::kCtrlStart)) return;
  // The stream as the fetch module will read it (the part inside DRAM).
  uint64_t end = std::min<uint64_t>(insn_addr_ + uint64_t{insn_count_} * hw::kInsnBytes, dram.size());
  std::span<const uint8_t> stream;
  if (insn_addr_ < end) stream = dram.subspan(insn_addr_, end - insn_addr_);
  begin_run(stream, insn_count_);
}

ActivityTrace::InsnInfo ActivityTrace::describe(std::span<const uint8_t> stream, uint32_t i) const {
  size_t at = size_t{i} * hw::kInsnBytes;
  InsnInfo info{fmt::format("#{} (outside DRAM)", i), kCompute, false, false, false, false};
  if (at + hw::kInsnBytes > stream.size()) return info;
  hw::InsnBits bits = {le64(stream.subspan(at, 8)), le64(stream.subspan(at + 8, 8))};
  // Routing and tokens from the header, as kiln_fetch and the modules read it; the
  // name from the decoded instruction where it decodes.
  hw::Insn head = layout_.header(bits);
  info.module = unit_of(hw::module_of(head));
  info.pop_prev = head.pop_prev_dep;
  info.pop_next = head.pop_next_dep;
  info.push_prev = head.push_prev_dep;
  info.push_next = head.push_next_dep;
  info.name = fmt::format("op{} #{}", static_cast<int>(head.opcode), i);
  try {
    hw::Insn insn = layout_.decode(bits);
    std::string op(hw::opcode_name(insn.opcode));
    if (insn.opcode == hw::Opcode::kLoad)
      op += " " + std::string(hw::mem_type_name(insn.memory_type));
    if (insn.opcode == hw::Opcode::kAlu) op += " " + std::string(hw::alu_op_name(insn.alu_opcode));
    info.name = fmt::format("{} #{}", op, i);
  } catch (const hw::Error&) {
    // An undecodable instruction keeps its raw opcode in the name.
  }
  return info;
}

void ActivityTrace::begin_run(std::span<const uint8_t> stream, uint32_t insn_count) {
  if (active_) end_run("");
  insns_.clear();
  for (auto& r : routed_) r.clear();
  for (uint32_t i = 0; i < insn_count; ++i) {
    insns_.push_back(describe(stream, i));
    routed_[insns_.back().module].push_back(i);
  }
  for (int m = 0; m < kNumUnits; ++m) {
    popped_[m] = 0;
    current_[m] = -1;
    tracks_[m] = Track{};
  }
  cycle_ = 0;
  tokens_ = ~uint64_t{0};
  run_start_ = now_;
  active_ = true;
}

void ActivityTrace::sample_cycle(const TopOut& out, uint64_t now) {
  namespace dbg = hw::dbg;
  using hw::Module;
  using hw::TokenQueue;
  auto state = [&](const dbg::BitField& f) { return static_cast<unsigned>(f.get(out.dbg_state)); };
  unsigned fetch = state(dbg::kFetchState), load = state(dbg::kLoadState);
  unsigned compute = state(dbg::kComputeState), store = state(dbg::kStoreState);
  auto tok = [&](TokenQueue q) { return dbg::token_count(out.dbg_tokens, q); };
  auto queued = [&](Module m) { return static_cast<unsigned>(dbg::queue_count(out.dbg_queues, m)); };
  unsigned queue[kNumUnits] = {0, queued(Module::kLoad), queued(Module::kCompute),
                               queued(Module::kStore)};
  const unsigned module_state[kNumUnits] = {fetch, load, compute, store};

  if (state(dbg::kRunning)) {  // running: the counters count this cycle
    now_ = now;
    if (cycle_ == 0) run_start_ = now;
    auto insn = [&](Unit m) -> const InsnInfo* {
      return current_[m] >= 0 ? &insns_[static_cast<size_t>(current_[m])] : nullptr;
    };
    // Fetch: the head is the first instruction not yet queued.
    int64_t head = 0;
    for (int m = kLoad; m < kNumUnits; ++m) head += static_cast<int64_t>(popped_[m] + queue[m]);
    if (fetch & dbg::kFetchWaitsRoom)
      set_state(kFetch, State::kStallQueue, head);
    else
      set_state(kFetch, (fetch & dbg::kFetchReading) ? State::kBusy : State::kIdle, -1);

    // Load, compute, store: busy and stalled exactly as their busy_o and stall_o, on the
    // token queues their instruction's dependency flags name.
    for (int k = 0; k < hw::kNumModules; ++k) {
      Module m = static_cast<Module>(k);
      Unit u = unit_of(m);
      const InsnInfo* in = insn(u);
      hw::TokenLinks links = hw::token_links(m);
      // Whether `flag` is set and names a queue that holds `n` tokens.
      auto holds = [&](bool flag, std::optional<TokenQueue> q, uint64_t n) {
        return flag && q && tok(*q) == n;
      };
      bool waits_token = in && (holds(in->pop_prev, links.pop_prev, 0) ||
                                holds(in->pop_next, links.pop_next, 0));
      bool waits_room = in && (holds(in->push_prev, links.push_prev, kTokenQueueFull) ||
                               holds(in->push_next, links.push_next, kTokenQueueFull));
      set_state(u, classify(module_state[u], waits_token, waits_room), current_[u]);
    }

    if (out.dbg_tokens != tokens_) {
      tokens_ = out.dbg_tokens;
      // fmt rather than json objects here and in close(): a long run has many events.
      std::pair<std::string_view, double> values[hw::kNumTokenQueues];
      for (int q = 0; q < hw::kNumTokenQueues; ++q) {
        auto t = static_cast<TokenQueue>(q);
        values[q] = {hw::token_queue_name(t), double(tok(t))};
      }
      file_->counter(pid_, "tokens", now_, values);
    }
    ++cycle_;
    now_ = now + 1;
  }

  // A module in IDLE with a command queued takes it at this edge (cmd_pop_o); each
  // queue holds its module's instructions in stream order.
  for (int m = kLoad; m < kNumUnits; ++m) {
    if (module_state[m] != kIdle || queue[m] == 0) continue;
    size_t n = popped_[m]++;
    current_[m] = n < routed_[m].size() ? routed_[m][n] : -1;
  }
}

void ActivityTrace::set_state(Unit m, State s, int64_t insn) {
  if (s == State::kIdle || s == State::kSync) insn = -1;
  Track& t = tracks_[m];
  if (t.state == s && t.insn == insn) return;
  close(m);
  t = Track{s, insn, now_};
}

void ActivityTrace::close(Unit m) {
  const Track& t = tracks_[m];
  if (t.state == State::kIdle || t.state == State::kSync || now_ == t.since) return;
  std::string what = t.insn >= 0 && static_cast<size_t>(t.insn) < insns_.size()
                         ? insns_[static_cast<size_t>(t.insn)].name
                         : std::string(unit_name(m));
  std::string name = t.state == State::kBusy         ? what
                     : t.state == State::kStallToken ? "token wait: " + what
                                                     : "queue full: " + what;
  // Instruction names are plain ASCII (hw::opcode_name and friends): no escaping.
  std::string insn = t.insn >= 0 ? fmt::format(",\"insn\":{}", t.insn) : "";
  file_->emit(
      fmt::format("{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{},"
                  "\"dur\":{},\"args\":{{\"state\":\"{}\"{}}}}}",
                  name, state_key(t.state), pid_, static_cast<int>(m) + 1, t.since,
                  now_ - t.since, state_key(t.state), insn));
}

void ActivityTrace::end_run(const std::string& error) {
  if (!active_) return;
  active_ = false;
  for (int m = 0; m < kNumUnits; ++m) {
    close(static_cast<Unit>(m));
    tracks_[m] = Track{};
  }
  ++runs_;
  json args = {{"cycles", cycle_}, {"instructions", insns_.size()}};
  if (!error.empty()) args["error"] = error;
  file_->emit(json{{"name", fmt::format("run {}", runs_)},
                   {"cat", "run"},
                   {"ph", "X"},
                   {"pid", pid_},
                   {"tid", kRunsTid},
                   {"ts", run_start_},
                   {"dur", cycle_},
                   {"args", args}}
                  .dump());
  offset_ += cycle_;
  file_->flush();
}

}  // namespace kiln::sim
