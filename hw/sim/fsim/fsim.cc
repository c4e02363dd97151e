#include "hw/sim/fsim/fsim.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>

#include "hw/spec/error.h"
#include "hw/spec/ranges.h"

namespace kiln::sim {

namespace {

using hw::AluOp;
using hw::Insn;
using hw::MemType;
using hw::Opcode;
using Counter = hw::regs::Counter;

using hw::Module;
using hw::TokenQueue;
constexpr Module kModules[] = {Module::kLoad, Module::kCompute, Module::kStore};

// A value per module or per token queue, indexed by the enum itself.
template <class E, int N, class T>
struct PerEnum {
  T v[N]{};
  T& operator[](E e) { return v[static_cast<int>(e)]; }
  const T& operator[](E e) const { return v[static_cast<int>(e)]; }
};
template <class T>
using PerModule = PerEnum<Module, hw::kNumModules, T>;

// The low `width` bits of `v` as a signed number: the only way values enter a buffer.
int64_t wrap(uint64_t v, int width) {
  if (width >= 64) return static_cast<int64_t>(v);
  int s = 64 - width;
  return static_cast<int64_t>(v << s) >> s;
}

uint64_t read_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int b = 0; b < bytes; ++b) v |= uint64_t{p[b]} << (8 * b);
  return v;
}

void write_le(uint8_t* p, int bytes, uint64_t v) {
  for (int b = 0; b < bytes; ++b) p[b] = static_cast<uint8_t>(v >> (8 * b));
}

// "load inp", "store", "gemm", "alu shr", "finish".
std::string mnemonic(const Insn& insn) {
  switch (insn.opcode) {
    case Opcode::kLoad: return fmt::format("load {}", hw::mem_type_name(insn.memory_type));
    case Opcode::kAlu: return fmt::format("alu {}", hw::alu_op_name(insn.alu_opcode));
    default: return std::string(hw::opcode_name(insn.opcode));
  }
}

}  // namespace

// One run: the decoded stream, the three module queues and the token counts. The
// queues are as deep as the RTL's (hw::Config::kCmdQueueDepth, kTokenQueueDepth): fetch
// dispatches in stream order and waits while the next instruction's queue is full; a
// module that ran an instruction waits to push while the token queue is full.
struct Fsim::Impl {
  Fsim& f;
  const hw::Config& cfg;
  std::vector<Insn> insns;
  // queue[m]: the instructions fetch dispatched to m, in order; head[m] the one m holds.
  PerModule<std::vector<uint32_t>> queue;
  PerModule<size_t> head;
  uint32_t next_fetch = 0;  // the next instruction fetch dispatches
  // m ran its held instruction and waits for room to push its tokens.
  PerModule<bool> pushing;
  PerEnum<TokenQueue, hw::kNumTokenQueues, uint64_t> tokens;

  explicit Impl(Fsim& fsim) : f(fsim), cfg(fsim.cfg_) {}

  uint64_t& counter(Counter c) { return f.counters_[static_cast<int>(c)]; }

  std::string where(uint32_t n) const {
    return fmt::format("instruction #{} ({})", n, mnemonic(insns[n]));
  }
  [[noreturn]] void fail(uint32_t n, const std::string& msg) const {
    throw hw::Error(fmt::format("{}: {}", where(n), msg));
  }

  void fetch(uint64_t insn_addr, uint32_t insn_count);
  void check_form(uint32_t n) const;
  void schedule();
  void schedule_random(uint64_t seed);
  // Compute holds FINISH, the last instruction, until the end.
  bool at_finish() const {
    return !done(Module::kCompute) && insns[head_insn(Module::kCompute)].opcode == Opcode::kFinish;
  }
  void retire_finish();
  [[noreturn]] void deadlock() const;

  // Nothing dispatched to `m` is left to run (more may come while fetch is not done).
  bool done(Module m) const { return head[m] == queue[m].size(); }
  uint32_t head_insn(Module m) const { return queue[m][head[m]]; }
  // Instructions in m's command queue and the one m holds.
  size_t in_flight(Module m) const { return queue[m].size() - head[m]; }
  bool queue_full(Module m) const { return in_flight(m) >= hw::Config::kCmdQueueDepth + 1u; }
  // Dispatches instructions while their module's queue has room.
  void dispatch();
  // The first token queue the head instruction of `m` waits on (to pop from, or while
  // pushing, to push into), or none if `m` can go on.
  std::optional<TokenQueue> missing_token(Module m) const;
  bool ready(Module m) const { return !done(m) && !missing_token(m); }
  // What `m` waits for, for messages: "it waits for a load->compute token", ...
  std::string wait_reason(Module m) const;
  void step(Module m);

  void execute(uint32_t n);
  void load(uint32_t n, const Insn& insn);
  void store(uint32_t n, const Insn& insn);
  void gemm(uint32_t n, const Insn& insn);
  void alu(uint32_t n, const Insn& insn);
  void check_dram(uint32_t n, const Insn& insn, int elem_bytes) const;
  // Refuses an instruction that touches an index beyond its buffer (hw/spec/ranges.h).
  void check_ranges(uint32_t n, const Insn& insn) const;
};

void Fsim::Impl::fetch(uint64_t insn_addr, uint32_t insn_count) {
  if (insn_count == 0)
    throw hw::Error("the instruction stream is empty: it needs at least a FINISH");
  uint64_t bytes = uint64_t{insn_count} * hw::kInsnBytes;
  if (insn_addr > f.dram_.size() || bytes > f.dram_.size() - insn_addr) {
    throw hw::Error(fmt::format(
        "fetch of {} instructions at DRAM byte 0x{:x} ends at byte 0x{:x}, beyond the DRAM's "
        "{} bytes",
        insn_count, insn_addr, insn_addr + bytes, f.dram_.size()));
  }
  counter(Counter::kDramReadBytes) += bytes;
  try {
    insns = hw::decode_program(f.layout_, f.dram_.subspan(insn_addr, bytes));
  } catch (const hw::Error& e) {
    throw hw::Error(fmt::format("fetch: {}", e.what()));
  }
  int64_t finish = -1;
  for (uint32_t n = 0; n < insns.size(); ++n) {
    if (finish >= 0) {
      fail(n, fmt::format("follows FINISH (instruction #{}); nothing may come after FINISH",
                          finish));
    }
    check_form(n);
    if (insns[n].opcode == Opcode::kFinish) finish = n;
  }
  if (finish < 0) {
    throw hw::Error(fmt::format("the stream of {} instructions has no FINISH; end it with one",
                                insns.size()));
  }
}

// Checks what the decoder cannot: combinations of fields that no module accepts.
void Fsim::Impl::check_form(uint32_t n) const {
  const Insn& in = insns[n];
  Module m = hw::module_of(in);
  if (in.opcode == Opcode::kFinish) {
    if (in.pop_prev_dep || in.pop_next_dep)
      fail(n, "pops a token; FINISH must pop none (pop the last token in an earlier compute "
              "instruction)");
    if (in.push_prev_dep || in.push_next_dep)
      fail(n, "pushes a token; FINISH has every field but the opcode zero");
    return;
  }
  hw::TokenLinks l = hw::token_links(m);
  if (!l.pop_prev && (in.pop_prev_dep || in.push_prev_dep))
    fail(n, fmt::format("runs on the {} module, which has no prev module: pop_prev_dep and "
                        "push_prev_dep must be 0", hw::module_name(m)));
  if (!l.pop_next && (in.pop_next_dep || in.push_next_dep))
    fail(n, fmt::format("runs on the {} module, which has no next module: pop_next_dep and "
                        "push_next_dep must be 0", hw::module_name(m)));
  bool padded = in.y_pad_0 || in.y_pad_1 || in.x_pad_0 || in.x_pad_1;
  if (in.opcode == Opcode::kLoad) {
    if (in.memory_type == MemType::kOut)
      fail(n, "a LOAD cannot target OUT: OUT is the low bits of ACC (load ACC instead)");
    if (in.memory_type == MemType::kUop && padded)
      fail(n, "a micro-op load takes no padding (y_pad_0, y_pad_1, x_pad_0, x_pad_1 must be 0)");
  }
  if (in.opcode == Opcode::kStore) {
    if (in.memory_type != MemType::kOut)
      fail(n, fmt::format("a STORE reads OUT; memory_type is {}, it must be out (4)",
                          hw::mem_type_name(in.memory_type)));
    if (padded) fail(n, "a STORE takes no padding (y_pad_0, y_pad_1, x_pad_0, x_pad_1 must be 0)");
  }
}

void Fsim::Impl::dispatch() {
  while (next_fetch < insns.size()) {
    Module m = hw::module_of(insns[next_fetch]);
    if (queue_full(m)) return;
    queue[m].push_back(next_fetch++);
  }
}

// check_form rejected a flag whose module has no such neighbour, so every queue a set
// flag names exists (value() throws rather than read past the array otherwise).
std::optional<TokenQueue> Fsim::Impl::missing_token(Module m) const {
  const Insn& in = insns[head_insn(m)];
  hw::TokenLinks l = hw::token_links(m);
  auto full = [&](std::optional<TokenQueue> q) {
    return tokens[q.value()] >= hw::Config::kTokenQueueDepth;
  };
  auto empty = [&](std::optional<TokenQueue> q) { return tokens[q.value()] == 0; };
  if (pushing[m]) {
    if (in.push_prev_dep && full(l.push_prev)) return l.push_prev;
    if (in.push_next_dep && full(l.push_next)) return l.push_next;
    return std::nullopt;
  }
  if (in.pop_prev_dep && empty(l.pop_prev)) return l.pop_prev;
  if (in.pop_next_dep && empty(l.pop_next)) return l.pop_next;
  return std::nullopt;
}

std::string Fsim::Impl::wait_reason(Module m) const {
  std::string_view t = hw::token_queue_name(missing_token(m).value());
  if (!pushing[m]) return fmt::format("it waits for a {} token", t);
  return fmt::format("it ran and waits to push a {} token, but that token queue is full ({} tokens)",
                     t, hw::Config::kTokenQueueDepth);
}

// Pops, executes, then pushes, as the RTL's modules do: a push into a full token queue
// leaves the instruction held (pushing[m]) until there is room.
void Fsim::Impl::step(Module m) {
  uint32_t n = head_insn(m);
  const Insn& in = insns[n];
  hw::TokenLinks l = hw::token_links(m);
  if (!pushing[m]) {
    if (in.pop_prev_dep) --tokens[l.pop_prev.value()];
    if (in.pop_next_dep) --tokens[l.pop_next.value()];
    execute(n);
    pushing[m] = true;
    if (missing_token(m)) return;
  }
  pushing[m] = false;
  if (in.push_prev_dep) ++tokens[l.push_prev.value()];
  if (in.push_next_dep) ++tokens[l.push_next.value()];
  static constexpr Counter kInsnCounter[hw::kNumModules] = {
      Counter::kLoadInsns, Counter::kComputeInsns, Counter::kStoreInsns};
  ++counter(kInsnCounter[static_cast<int>(m)]);
  ++head[m];
  dispatch();
}

void Fsim::Impl::schedule() {
  dispatch();
  if (f.schedule_seed_ != 0) return schedule_random(f.schedule_seed_);
  for (;;) {
    bool progress = false;
    // Load and store run as far as they can before compute looks at its head, so
    // that when FINISH is at compute's head they have done all they ever could.
    for (Module m : {Module::kLoad, Module::kStore}) {
      while (ready(m)) {
        step(m);
        progress = true;
      }
    }
    if (at_finish()) return retire_finish();
    while (!at_finish() && ready(Module::kCompute)) {
      step(Module::kCompute);
      progress = true;
    }
    if (!progress) deadlock();
  }
}

void Fsim::Impl::schedule_random(uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (;;) {
    Module ready[hw::kNumModules];
    int count = 0;
    for (Module m : kModules) {
      if (m == Module::kCompute && at_finish()) continue;
      if (this->ready(m)) ready[count++] = m;
    }
    if (count > 0) {
      step(ready[rng() % count]);
    } else if (at_finish()) {
      return retire_finish();
    } else {
      deadlock();
    }
  }
}

// FINISH retires only when load and store have run every instruction.
void Fsim::Impl::retire_finish() {
  uint32_t n = head_insn(Module::kCompute);
  for (Module m : {Module::kLoad, Module::kStore}) {
    if (done(m)) continue;
    throw hw::Error(fmt::format(
        "FINISH (instruction #{}) retires while {} {} is not done ({}): the stream does not "
        "order it before FINISH",
        n, hw::module_name(m), where(head_insn(m)), wait_reason(m)));
  }
  step(Module::kCompute);
}

void Fsim::Impl::deadlock() const {
  std::string msg = "deadlock: no module can proceed;";
  const char* sep = "";
  for (Module m : kModules) {
    if (done(m)) continue;
    if (pushing[m]) {
      msg += fmt::format("{} {} holds {}: {}", sep, hw::module_name(m), where(head_insn(m)), wait_reason(m));
    } else {
      msg += fmt::format("{} {} waits at {} for a {} token", sep, hw::module_name(m), where(head_insn(m)),
                         hw::token_queue_name(missing_token(m).value()));
    }
    sep = ";";
  }
  if (next_fetch == insns.size()) throw hw::Error(msg + " that no instruction will push");
  // The instructions that would free the module are behind one that cannot be fetched.
  Module full = hw::module_of(insns[next_fetch]);
  throw hw::Error(fmt::format(
      "{}; fetch waits to dispatch {} into the {} command queue, which is full ({} instructions "
      "queued behind {} that {} holds; the RTL queues {}): the tokens it needs come later in the "
      "stream",
      msg, where(next_fetch), hw::module_name(full), hw::Config::kCmdQueueDepth, where(head_insn(full)),
      hw::module_name(full), hw::Config::kCmdQueueDepth));
}

void Fsim::Impl::execute(uint32_t n) {
  const Insn& in = insns[n];
  switch (in.opcode) {
    case Opcode::kLoad: return load(n, in);
    case Opcode::kStore: return store(n, in);
    case Opcode::kGemm: return gemm(n, in);
    case Opcode::kAlu: return alu(n, in);
    case Opcode::kFinish: return;
  }
}

// Every DRAM byte a LOAD or STORE touches lies in DRAM.
void Fsim::Impl::check_dram(uint32_t n, const Insn& in, int elem_bytes) const {
  uint64_t last_elem = uint64_t{in.dram_base} + uint64_t{in.y_size - 1} * in.x_stride + in.x_size;
  uint64_t end = last_elem * static_cast<uint64_t>(elem_bytes);
  if (end > f.dram_.size()) {
    fail(n, fmt::format("DRAM access of {} rows x {} {} elements ({} bytes each) at element {} "
                        "with stride {} ends at byte 0x{:x}, beyond the DRAM's {} bytes",
                        in.y_size, in.x_size, hw::mem_type_name(in.memory_type), elem_bytes,
                        in.dram_base, in.x_stride, end, f.dram_.size()));
  }
}

void Fsim::Impl::load(uint32_t n, const Insn& in) {
  if (in.x_size == 0 || in.y_size == 0) return;  // a no-op that only moves tokens
  if (in.memory_type == MemType::kOut) fail(n, "a LOAD cannot target OUT");
  const int elem_bytes = hw::mem_elem_bytes(cfg, in.memory_type);
  int width = 32;  // a micro-op is one 32-bit value
  std::vector<int64_t>* buf = nullptr;
  Counter bytes_counter = Counter::kLoadUopBytes;
  switch (in.memory_type) {
    case MemType::kInp:
      width = cfg.inp_width(), buf = &f.inp_, bytes_counter = Counter::kLoadInpBytes;
      break;
    case MemType::kWgt:
      width = cfg.wgt_width(), buf = &f.wgt_, bytes_counter = Counter::kLoadWgtBytes;
      break;
    case MemType::kAcc:
      width = cfg.acc_width(), buf = &f.acc_, bytes_counter = Counter::kLoadAccBytes;
      break;
    case MemType::kUop:
    case MemType::kOut: break;
  }
  check_ranges(n, in);
  uint64_t rows = uint64_t{in.y_pad_0} + in.y_size + in.y_pad_1;
  uint64_t cols = uint64_t{in.x_pad_0} + in.x_size + in.x_pad_1;
  check_dram(n, in, elem_bytes);
  const int value_bytes = width / 8;
  const int per_elem = elem_bytes / value_bytes;
  for (uint64_t r = 0; r < rows; ++r) {
    bool pad_row = r < in.y_pad_0 || r >= in.y_pad_0 + in.y_size;
    for (uint64_t c = 0; c < cols; ++c) {
      uint64_t idx = in.sram_base + r * cols + c;
      if (pad_row || c < in.x_pad_0 || c >= in.x_pad_0 + in.x_size) {
        if (buf) std::fill_n(buf->data() + idx * per_elem, per_elem, 0);  // UOP has no pads
        continue;
      }
      uint64_t src = (uint64_t{in.dram_base} + (r - in.y_pad_0) * in.x_stride + (c - in.x_pad_0)) *
                     static_cast<uint64_t>(elem_bytes);
      if (in.memory_type == MemType::kUop) {
        try {
          f.uops_[idx] = f.layout_.decode_uop(static_cast<uint32_t>(read_le(&f.dram_[src], 4)));
        } catch (const hw::Error& e) {
          fail(n, fmt::format("micro-op at DRAM byte 0x{:x}: {}", src, e.what()));
        }
        continue;
      }
      int64_t* dst = buf->data() + idx * per_elem;
      for (int v = 0; v < per_elem; ++v)
        dst[v] = wrap(read_le(&f.dram_[src + v * value_bytes], value_bytes), width);
    }
  }
  uint64_t bytes = uint64_t{in.y_size} * in.x_size * elem_bytes;
  counter(bytes_counter) += bytes;
  counter(Counter::kDramReadBytes) += bytes;
}

void Fsim::Impl::store(uint32_t n, const Insn& in) {
  if (in.x_size == 0 || in.y_size == 0) return;
  const int elem_bytes = cfg.out_elem_bytes();
  const int value_bytes = cfg.out_width() / 8;
  const int per_elem = elem_bytes / value_bytes;
  check_ranges(n, in);
  check_dram(n, in, elem_bytes);
  for (uint64_t y = 0; y < in.y_size; ++y) {
    for (uint64_t x = 0; x < in.x_size; ++x) {
      // OUT is ACC read through its low output-width bits (write_le keeps those).
      const int64_t* src = f.acc_.data() + (in.sram_base + y * in.x_size + x) * per_elem;
      uint64_t dst = (uint64_t{in.dram_base} + y * in.x_stride + x) * elem_bytes;
      for (int v = 0; v < per_elem; ++v)
        write_le(&f.dram_[dst + v * value_bytes], value_bytes, static_cast<uint64_t>(src[v]));
    }
  }
  uint64_t bytes = uint64_t{in.y_size} * in.x_size * elem_bytes;
  counter(Counter::kStoreBytes) += bytes;
  counter(Counter::kDramWriteBytes) += bytes;
}

// The one range rule (hw/spec/ranges.h), before the instruction touches anything: the
// driver refuses the same streams before launch with the same words.
void Fsim::Impl::check_ranges(uint32_t n, const Insn& in) const {
  if (auto v = hw::first_out_of_range(cfg, in, f.uops_)) fail(n, v->message);
}

void Fsim::Impl::gemm(uint32_t n, const Insn& in) {
  if (in.uop_end <= in.uop_bgn || in.iter_out == 0 || in.iter_in == 0) return;
  check_ranges(n, in);
  const int batch = cfg.batch(), bi = cfg.block_in(), bo = cfg.block_out();
  const int acc_w = cfg.acc_width();
  const size_t acc_elem = size_t(batch) * bo, inp_elem = size_t(batch) * bi,
               wgt_elem = size_t(bo) * bi;
  for (uint64_t i = 0; i < in.iter_out; ++i) {
    for (uint64_t j = 0; j < in.iter_in; ++j) {
      for (uint32_t k = in.uop_bgn; k < in.uop_end; ++k) {
        const hw::Uop& u = f.uops_[k];
        uint64_t d = u.dst_idx + i * in.dst_factor_out + j * in.dst_factor_in;
        int64_t* acc = f.acc_.data() + d * acc_elem;
        if (in.reset) {
          std::fill(acc, acc + acc_elem, 0);
          continue;
        }
        uint64_t s = u.src_idx + i * in.src_factor_out + j * in.src_factor_in;
        uint64_t w = u.wgt_idx + i * in.wgt_factor_out + j * in.wgt_factor_in;
        const int64_t* inp = f.inp_.data() + s * inp_elem;
        const int64_t* wgt = f.wgt_.data() + w * wgt_elem;
        for (int b = 0; b < batch; ++b) {
          const int64_t* x = inp + b * bi;
          for (int o = 0; o < bo; ++o) {
            const int64_t* y = wgt + o * bi;
            // Operands are at most 16 bits and BLOCK_IN at most 64: the sum is exact.
            int64_t sum = 0;
            for (int t = 0; t < bi; ++t) sum += x[t] * y[t];
            int64_t& a = acc[b * bo + o];
            a = wrap(static_cast<uint64_t>(a) + static_cast<uint64_t>(sum), acc_w);
          }
        }
      }
    }
  }
  counter(Counter::kGemmUops) += uint64_t{in.iter_out} * in.iter_in * (in.uop_end - in.uop_bgn);
}

void Fsim::Impl::alu(uint32_t n, const Insn& in) {
  if (in.uop_end <= in.uop_bgn || in.iter_out == 0 || in.iter_in == 0) return;
  check_ranges(n, in);
  const int acc_w = cfg.acc_width();
  const size_t elem = size_t(cfg.batch()) * cfg.block_out();
  const int64_t imm = in.imm;  // already the sign-extended int16
  for (uint64_t i = 0; i < in.iter_out; ++i) {
    for (uint64_t j = 0; j < in.iter_in; ++j) {
      for (uint32_t k = in.uop_bgn; k < in.uop_end; ++k) {
        const hw::Uop& u = f.uops_[k];
        uint64_t d = u.dst_idx + i * in.dst_factor_out + j * in.dst_factor_in;
        int64_t* acc = f.acc_.data() + d * elem;
        // Kiln defines ALU with reset like GEMM with reset: acc[d] becomes 0 and the
        // operation is not applied (ISA.md gives reset the same meaning in both).
        if (in.reset) {
          std::fill(acc, acc + elem, 0);
          continue;
        }
        const int64_t* src = nullptr;
        if (!in.use_imm) {
          uint64_t s = u.src_idx + i * in.src_factor_out + j * in.src_factor_in;
          src = f.acc_.data() + s * elem;
        }
        for (size_t e = 0; e < elem; ++e) {
          int64_t a = acc[e];
          int64_t b = src ? src[e] : imm;
          int64_t r = 0;
          switch (in.alu_opcode) {
            case AluOp::kMin: r = a < b ? a : b; break;
            case AluOp::kMax: r = a > b ? a : b; break;
            case AluOp::kAdd:
              r = wrap(static_cast<uint64_t>(a) + static_cast<uint64_t>(b), acc_w);
              break;
            case AluOp::kMul:
              r = wrap(static_cast<uint64_t>(a) * static_cast<uint64_t>(b), acc_w);
              break;
            case AluOp::kShr: {
              // The low LOG_ACC_WIDTH bits of the operand, signed: -acc_w/2 .. acc_w/2-1.
              int sh = static_cast<int>(static_cast<uint64_t>(b) & uint64_t(acc_w - 1));
              if (sh >= acc_w / 2) sh -= acc_w;
              r = sh >= 0 ? a >> sh : wrap(static_cast<uint64_t>(a) << -sh, acc_w);
              break;
            }
          }
          acc[e] = r;
        }
      }
    }
  }
  counter(Counter::kAluUops) += uint64_t{in.iter_out} * in.iter_in * (in.uop_end - in.uop_bgn);
}

Fsim::Fsim(const hw::Config& cfg, std::span<uint8_t> dram)
    : cfg_(cfg), layout_(cfg), dram_(dram) {
  inp_.assign(size_t{cfg.inp_depth()} * cfg.batch() * cfg.block_in(), 0);
  wgt_.assign(size_t{cfg.wgt_depth()} * cfg.block_out() * cfg.block_in(), 0);
  acc_.assign(size_t{cfg.acc_depth()} * cfg.batch() * cfg.block_out(), 0);
  uops_.assign(cfg.uop_depth(), hw::Uop{});
}

void Fsim::run(uint64_t insn_addr, uint32_t insn_count) {
  counters_.fill(0);
  Impl impl(*this);
  impl.fetch(insn_addr, insn_count);
  impl.schedule();
}

namespace {
std::span<const int64_t> view(const std::vector<int64_t>& buf, uint32_t index, size_t per_elem,
                              uint32_t depth, const char* name) {
  if (index >= depth)
    throw hw::Error(fmt::format("fsim: {} index {} is beyond the {} buffer's depth {}", name,
                                index, name, depth));
  return std::span<const int64_t>(buf).subspan(index * per_elem, per_elem);
}
}  // namespace

std::span<const int64_t> Fsim::acc(uint32_t index) const {
  return view(acc_, index, size_t(cfg_.batch()) * cfg_.block_out(), cfg_.acc_depth(), "acc");
}
std::vector<int64_t> Fsim::out(uint32_t index) const {
  std::span<const int64_t> a =
      view(acc_, index, size_t(cfg_.batch()) * cfg_.block_out(), cfg_.out_depth(), "out");
  std::vector<int64_t> o(a.size());
  for (size_t e = 0; e < a.size(); ++e) o[e] = wrap(static_cast<uint64_t>(a[e]), cfg_.out_width());
  return o;
}
std::span<const int64_t> Fsim::inp(uint32_t index) const {
  return view(inp_, index, size_t(cfg_.batch()) * cfg_.block_in(), cfg_.inp_depth(), "inp");
}
std::span<const int64_t> Fsim::wgt(uint32_t index) const {
  return view(wgt_, index, size_t(cfg_.block_out()) * cfg_.block_in(), cfg_.wgt_depth(), "wgt");
}
hw::Uop Fsim::uop(uint32_t index) const {
  if (index >= cfg_.uop_depth())
    throw hw::Error(fmt::format("fsim: uop index {} is beyond the uop buffer's depth {}", index,
                                cfg_.uop_depth()));
  return uops_[index];
}

}  // namespace kiln::sim
