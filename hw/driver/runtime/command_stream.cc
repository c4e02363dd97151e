#include "hw/driver/runtime/command_stream.h"

#include <fmt/format.h>

#include <iostream>
#include <string_view>

#include "hw/spec/assembly.h"
#include "hw/spec/error.h"
#include "hw/spec/regs.h"
#include "support/debug.h"

namespace kiln::runtime {

namespace {

using hw::Module;

int index(Module m) { return static_cast<int>(m); }

// Neighbouring modules only: load and store share no token queue.
void check_pair(Module from, Module to, const char* what) {
  if (hw::token_queue(from, to)) return;
  throw hw::Error(fmt::format("{}({}, {}): tokens flow only between neighbouring modules "
                              "(load<->compute, compute<->store)",
                              what, hw::module_name(from), hw::module_name(to)));
}

// The largest index a kernel touches along one operand, for a range check.
uint64_t max_index(const UopKernel& k, uint32_t hw::Uop::*member, uint32_t UopLoop::*factor) {
  uint64_t top = 0;
  for (const hw::Uop& u : k.uops()) top = std::max<uint64_t>(top, u.*member);
  for (const UopLoop& l : k.loops()) top += uint64_t{l.extent - 1} * (l.*factor);
  return top;
}

}  // namespace

CommandStream::CommandStream(driver::Device& dev, StreamOptions opts)
    : CommandStream(dev, dev.config(), opts) {}

CommandStream::CommandStream(driver::Device& dev, const hw::Config& program_config,
                             StreamOptions opts)
    : dev_(dev), cfg_(program_config), layout_(program_config), opts_(opts) {
  uint32_t version = dev_.read_reg(hw::regs::kVersion);
  if (version != hw::regs::kMapVersion) {
    throw hw::Error(fmt::format("{} device has register map version {}; this runtime speaks "
                                "version {}",
                                dev_.kind(), version, hw::regs::kMapVersion));
  }
  if (debug_enabled("stream")) opts_.dump = true;
}

CommandStream::~CommandStream() = default;

int64_t CommandStream::field_max(hw::Opcode op, hw::Field f) const { return layout_.field_max(op, f); }

uint32_t CommandStream::dram_elem_base(driver::DevAddr addr, int elem, const char* what) const {
  if (addr % elem != 0) {
    throw hw::Error(fmt::format("{}: DRAM address 0x{:x} is not aligned to the {}-byte element",
                                what, addr, elem));
  }
  uint64_t base = addr / elem;
  if (base > 0xffffffffu)
    throw hw::Error(fmt::format("{}: DRAM address 0x{:x} is beyond dram_base's 32 bits", what,
                                addr));
  return static_cast<uint32_t>(base);
}

hw::Insn& CommandStream::emit(const hw::Insn& in) {
  hw::Insn insn = in;
  Module s = hw::module_of(insn);
  insn.pop_prev_dep = pending_pop_prev_[index(s)];
  insn.pop_next_dep = pending_pop_next_[index(s)];
  layout_.encode(insn);  // every field fits its width, or a message naming it
  pending_pop_prev_[index(s)] = pending_pop_next_[index(s)] = false;
  last_of_stage_[index(s)] = insns_.size();
  insns_.push_back(insn);
  return insns_.back();
}

void CommandStream::emit_noop(Module stage, bool push_prev, bool push_next) {
  hw::Insn& out = emit(hw::noop_insn(stage));
  out.push_prev_dep = push_prev;
  out.push_next_dep = push_next;
}

void CommandStream::commit_pending_pops(Module stage) {
  if (pending_pop_prev_[index(stage)] || pending_pop_next_[index(stage)])
    emit_noop(stage, false, false);
}

void CommandStream::load_2d(hw::MemType type, uint32_t sram, driver::DevAddr dram,
                            uint32_t y_size, uint32_t x_size, uint32_t x_stride, Pad pad) {
  std::string_view mem = hw::mem_type_name(type);
  if (type == hw::MemType::kUop)
    throw hw::Error("load_2d(uop): the runtime loads micro-ops itself; push a UopKernel");
  if (type == hw::MemType::kOut)
    throw hw::Error("load_2d(out): OUT is written by GEMM and ALU only; load ACC instead");
  if (x_size == 0 || y_size == 0)
    throw hw::Error(fmt::format("load_2d({}): empty load ({} x {}); use dep_push for a "
                                "token-only no-op",
                                mem, y_size, x_size));
  uint64_t rows = uint64_t{pad.top} + y_size + pad.bottom;
  uint64_t cols = uint64_t{pad.left} + x_size + pad.right;
  if (sram + rows * cols > hw::mem_depth(cfg_, type)) {
    throw hw::Error(fmt::format("load_2d({}): elements [{}, {}) (({}+{}+{}) x ({}+{}+{})) do not "
                                "fit the {} buffer of {} elements",
                                mem, sram, sram + rows * cols, pad.top, y_size, pad.bottom,
                                pad.left, x_size, pad.right, mem, hw::mem_depth(cfg_, type)));
  }
  int elem = hw::mem_elem_bytes(cfg_, type);
  uint64_t end = dram + (uint64_t{y_size - 1} * x_stride + x_size) * elem;
  if (end > dev_.dram_bytes())
    throw hw::Error(fmt::format("load_2d({}): DRAM bytes [0x{:x}, 0x{:x}) are outside the {} "
                                "bytes of device DRAM",
                                mem, dram, end, dev_.dram_bytes()));
  hw::Insn insn;
  insn.opcode = hw::Opcode::kLoad;
  insn.memory_type = type;
  insn.sram_base = sram;
  insn.dram_base = dram_elem_base(dram, elem, "load_2d");
  insn.y_size = y_size;
  insn.x_size = x_size;
  insn.x_stride = x_stride;
  insn.y_pad_0 = pad.top;
  insn.y_pad_1 = pad.bottom;
  insn.x_pad_0 = pad.left;
  insn.x_pad_1 = pad.right;
  try {
    emit(insn);
  } catch (const hw::Error& e) {
    throw hw::Error(fmt::format("load_2d({}): {}", mem, e.what()));
  }
}

void CommandStream::store_2d(uint32_t sram, driver::DevAddr dram, uint32_t y_size,
                             uint32_t x_size, uint32_t x_stride) {
  if (x_size == 0 || y_size == 0)
    throw hw::Error(fmt::format("store_2d: empty store ({} x {}); use dep_push for a "
                                "token-only no-op",
                                y_size, x_size));
  uint64_t count = uint64_t{y_size} * x_size;
  if (sram + count > cfg_.out_depth()) {
    throw hw::Error(fmt::format("store_2d: elements [{}, {}) do not fit the out buffer of {} "
                                "elements",
                                sram, sram + count, cfg_.out_depth()));
  }
  int elem = cfg_.out_elem_bytes();
  uint64_t end = dram + (uint64_t{y_size - 1} * x_stride + x_size) * elem;
  if (end > dev_.dram_bytes())
    throw hw::Error(fmt::format("store_2d: DRAM bytes [0x{:x}, 0x{:x}) are outside the {} bytes "
                                "of device DRAM",
                                dram, end, dev_.dram_bytes()));
  hw::Insn insn;
  insn.opcode = hw::Opcode::kStore;
  insn.memory_type = hw::MemType::kOut;
  insn.sram_base = sram;
  insn.dram_base = dram_elem_base(dram, elem, "store_2d");
  insn.y_size = y_size;
  insn.x_size = x_size;
  insn.x_stride = x_stride;
  try {
    emit(insn);
  } catch (const hw::Error& e) {
    throw hw::Error(fmt::format("store_2d: {}", e.what()));
  }
}

void CommandStream::check_kernel(const UopKernel& k) const {
  auto fail = [&](const std::string& what) {
    throw hw::Error(fmt::format("micro-op kernel '{}': {}", k.name(), what));
  };
  if (k.uops().size() > cfg_.uop_depth()) {
    fail(fmt::format("{} micro-ops do not fit the uop buffer of {} micro-ops ({} bytes, "
                     "configuration '{}')",
                     k.uops().size(), cfg_.uop_depth(), cfg_.uop_buff_bytes(), cfg_.name()));
  }
  bool gemm = k.kind() == KernelKind::kGemm;
  struct Operand {
    const char* name;
    uint32_t hw::Uop::*member;
    uint32_t UopLoop::*factor;
    hw::MemType buffer;
  };
  const Operand operands[] = {
      {"dst", &hw::Uop::dst_idx, &UopLoop::dst_factor, hw::MemType::kAcc},
      {"src", &hw::Uop::src_idx, &UopLoop::src_factor,
       gemm ? hw::MemType::kInp : hw::MemType::kAcc},
      {"wgt", &hw::Uop::wgt_idx, &UopLoop::wgt_factor, hw::MemType::kWgt},
  };
  for (const Operand& op : operands) {
    if (!gemm && op.buffer == hw::MemType::kWgt) continue;
    uint64_t top = max_index(k, op.member, op.factor);
    if (top >= hw::mem_depth(cfg_, op.buffer)) {
      fail(fmt::format("{} index reaches {}, beyond the {} buffer of {} elements", op.name, top,
                       hw::mem_type_name(op.buffer), hw::mem_depth(cfg_, op.buffer)));
    }
  }
}

std::pair<uint32_t, uint32_t> CommandStream::ensure_resident(const UopKernel& k) {
  UopKey key;
  key.reserve(k.uops().size());
  for (const hw::Uop& u : k.uops()) {
    try {
      key.push_back(layout_.encode_uop(u));
    } catch (const hw::Error& e) {
      throw hw::Error(fmt::format("micro-op kernel '{}': {}", k.name(), e.what()));
    }
  }
  if (auto it = resident_.find(key); it != resident_.end()) {
    ++cache_stats_.hits;
    return it->second;
  }
  auto n = static_cast<uint32_t>(key.size());
  uint32_t bgn = uop_next_ + n <= cfg_.uop_depth() ? uop_next_ : 0;
  uint32_t end = bgn + n;
  // Evict what the new kernel overlaps. The compute module runs in order, so earlier
  // instructions of this stream still see the old micro-ops.
  for (auto it = resident_.begin(); it != resident_.end();) {
    if (it->second.first < end && bgn < it->second.second) {
      it = resident_.erase(it);
      ++cache_stats_.evictions;
    } else {
      ++it;
    }
  }
  uop_next_ = end;
  auto copy = kernel_copies_.find(key);
  if (copy == kernel_copies_.end()) {
    std::vector<uint8_t> bytes(key.size() * 4);
    for (size_t i = 0; i < key.size(); ++i)
      for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<uint8_t>(key[i] >> (8 * b));
    DeviceBuffer buf(dev_, bytes.size(), 64);
    buf.write(bytes);
    copy = kernel_copies_.emplace(key, std::move(buf)).first;
  }
  hw::Insn load;
  load.opcode = hw::Opcode::kLoad;
  load.memory_type = hw::MemType::kUop;
  load.sram_base = bgn;
  load.dram_base = dram_elem_base(copy->second.address(), cfg_.uop_elem_bytes(), "LOAD UOP");
  load.y_size = 1;
  load.x_size = n;
  load.x_stride = n;
  emit(load);
  ++cache_stats_.loads;
  resident_.emplace(std::move(key), std::pair{bgn, end});
  return {bgn, end};
}

void CommandStream::push_kernel(const UopKernel& k, KernelKind kind) {
  if (k.kind() != kind) {
    throw hw::Error(fmt::format("micro-op kernel '{}' is an {} kernel; use push_{}", k.name(),
                                k.kind() == KernelKind::kGemm ? "GEMM" : "ALU",
                                k.kind() == KernelKind::kGemm ? "gemm" : "alu"));
  }
  check_kernel(k);
  hw::Insn insn;
  insn.opcode = kind == KernelKind::kGemm ? hw::Opcode::kGemm : hw::Opcode::kAlu;
  insn.reset = k.reset();
  insn.iter_out = k.outer().extent;
  insn.iter_in = k.inner().extent;
  insn.dst_factor_out = k.outer().dst_factor;
  insn.dst_factor_in = k.inner().dst_factor;
  insn.src_factor_out = k.outer().src_factor;
  insn.src_factor_in = k.inner().src_factor;
  if (kind == KernelKind::kGemm) {
    insn.wgt_factor_out = k.outer().wgt_factor;
    insn.wgt_factor_in = k.inner().wgt_factor;
  } else {
    insn.alu_opcode = k.alu_op();
    insn.use_imm = k.use_imm();
    insn.imm = k.imm();
  }
  // Check the fields before the kernel takes a place in the uop buffer.
  try {
    layout_.encode(insn);
  } catch (const hw::Error& e) {
    throw hw::Error(fmt::format("micro-op kernel '{}': {}", k.name(), e.what()));
  }
  auto [bgn, end] = ensure_resident(k);
  insn.uop_bgn = bgn;
  insn.uop_end = end;
  emit(insn);
}

void CommandStream::push_gemm(const UopKernel& kernel) { push_kernel(kernel, KernelKind::kGemm); }
void CommandStream::push_alu(const UopKernel& kernel) { push_kernel(kernel, KernelKind::kAlu); }

void CommandStream::dep_pop(Module from, Module to) {
  check_pair(from, to, "dep_pop");
  // The pop executes on `to`; one instruction pops at most one token per queue.
  bool& flag = index(from) < index(to) ? pending_pop_prev_[index(to)]
                                       : pending_pop_next_[index(to)];
  if (flag) commit_pending_pops(to);
  flag = true;
}

void CommandStream::dep_push(Module from, Module to) {
  check_pair(from, to, "dep_push");
  // The push executes on `from`, after everything `from` was given so far.
  commit_pending_pops(from);
  bool next = index(from) < index(to);
  if (auto last = last_of_stage_[index(from)]) {
    hw::Insn& insn = insns_[*last];
    bool& flag = next ? insn.push_next_dep : insn.push_prev_dep;
    if (!flag) {
      flag = true;
      return;
    }
  }
  emit_noop(from, !next, next);
}

void CommandStream::end_stream() {
  // VTA's protocol: FINISH retires after the last store and the last load.
  dep_push(Module::kStore, Module::kCompute);
  dep_push(Module::kLoad, Module::kCompute);
  dep_pop(Module::kStore, Module::kCompute);
  dep_pop(Module::kLoad, Module::kCompute);
  commit_pending_pops(Module::kCompute);  // FINISH may not pop
  hw::Insn finish;
  finish.opcode = hw::Opcode::kFinish;
  emit(finish);
}

std::string CommandStream::disassemble() const { return hw::disassemble(insns_, cfg_); }

void CommandStream::synchronize() {
  bool pending_pops = false;
  for (int s = 0; s < hw::kNumModules; ++s) pending_pops |= pending_pop_prev_[s] || pending_pop_next_[s];
  if (insns_.empty() && !pending_pops) return;
  end_stream();
  last_program_ = std::move(insns_);
  insns_.clear();
  last_of_stage_ = {};
  try {
    run_program();
  } catch (...) {
    invalidate_uop_cache();  // the device's uop buffer is in an unknown state
    throw;
  }
}

void CommandStream::run_program() {
  if (opts_.dump) {
    std::ostream& out = opts_.dump_to != nullptr ? *opts_.dump_to : std::cerr;
    out << fmt::format("# kiln stream: {} instructions, configuration '{}', {} device\n",
                       last_program_.size(), cfg_.name(), dev_.kind())
        << hw::disassemble(last_program_, cfg_);
    out.flush();
  }
  namespace r = hw::regs;
  uint64_t fp = uint64_t{dev_.read_reg(r::kFingerprintHi)} << 32 | dev_.read_reg(r::kFingerprintLo);
  if (fp != cfg_.fingerprint()) {
    throw hw::Error(fmt::format("the program was built for configuration '{}' (fingerprint "
                                "{:016x}), but the {} device runs fingerprint {:016x}",
                                cfg_.name(), cfg_.fingerprint(), dev_.kind(), fp));
  }
  std::vector<uint8_t> bytes = hw::encode_program(layout_, last_program_);
  DeviceBuffer stream(dev_, bytes.size(), 64);
  stream.write(bytes);
  dev_.run(stream.address(), static_cast<uint32_t>(last_program_.size()));
  for (const auto& [counter, value] : dev_.counters()) counters_[counter] += value;
}

void CommandStream::invalidate_uop_cache() {
  resident_.clear();
  uop_next_ = 0;
}

}  // namespace kiln::runtime
