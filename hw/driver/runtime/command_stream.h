#pragma once
// The runtime: builds an instruction stream for one Device the way Apache TVM VTA's
// runtime does, then runs it. 2D loads and stores with padding; micro-op kernels
// cached in the uop buffer (ring-buffer eviction) and loaded by LOAD UOP from a DRAM
// copy; GEMM and ALU with up to two loops; dependency tokens between the load,
// compute and store modules merged into neighbouring instructions; synchronize().
//
// Token merging (as VTA): dep_pop(from, to) stays pending until the next instruction
// of stage `to`, which then pops. dep_push(from, to) sets the push flag on the last
// instruction of stage `from` (after committing that stage's pending pops), or
// appends a token-only no-op of that stage (LOAD/STORE with x_size 0) when there is
// none or its flag is taken.
//
// One CommandStream per device at a time: the uop cache assumes it alone writes the
// device's uop buffer, which persists across runs.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "hw/driver/device.h"
#include "hw/driver/runtime/device_buffer.h"
#include "hw/driver/runtime/uop_kernel.h"
#include "hw/spec/config.h"
#include "hw/spec/isa.h"

namespace kiln::runtime {

// Zero padding around a 2D load, in elements (each at most field_max(kLoad, kYPad0)).
struct Pad {
  uint32_t top = 0, bottom = 0, left = 0, right = 0;
};

struct StreamOptions {
  // Dump each stream as text assembly before running it; also on when $KILN_DEBUG
  // names "stream" (or "all").
  bool dump = false;
  std::ostream* dump_to = nullptr;  // default std::cerr
};

// What the uop cache did since the stream was made.
struct UopCacheStats {
  uint64_t hits = 0;       // pushes whose micro-ops were already in the uop buffer
  uint64_t loads = 0;      // LOAD UOP instructions emitted
  uint64_t evictions = 0;  // kernels dropped from the uop buffer to make room
};

class CommandStream {
 public:
  explicit CommandStream(driver::Device& dev, StreamOptions opts = {});
  // A stream built for `program_config`; synchronize() refuses to run it on a device
  // whose configuration fingerprint differs.
  CommandStream(driver::Device& dev, const hw::Config& program_config, StreamOptions opts = {});
  ~CommandStream();
  CommandStream(const CommandStream&) = delete;
  CommandStream& operator=(const CommandStream&) = delete;

  driver::Device& device() { return dev_; }
  const hw::Config& config() const { return cfg_; }
  const hw::InsnLayout& layout() const { return layout_; }
  // The largest value field `f` of `op` holds in this configuration (e.g. iter_out).
  int64_t field_max(hw::Opcode op, hw::Field f) const;

  // LOAD of INP, WGT or ACC: y_size rows of x_size elements, rows x_stride elements
  // apart, from byte address `dram` (aligned to the element size) into the buffer at
  // element `sram`, padded with zeros. INP/WGT run on the load module, ACC on compute.
  void load_2d(hw::MemType type, uint32_t sram, driver::DevAddr dram, uint32_t y_size,
               uint32_t x_size, uint32_t x_stride, Pad pad = {});
  // STORE from OUT (store module): the same shape, no padding.
  void store_2d(uint32_t sram, driver::DevAddr dram, uint32_t y_size, uint32_t x_size,
                uint32_t x_stride);

  // One GEMM / ALU instruction running `kernel`, preceded by a LOAD UOP when its
  // micro-ops are not in the uop buffer.
  void push_gemm(const UopKernel& kernel);
  void push_alu(const UopKernel& kernel);

  // Dependency tokens between neighbouring modules (load<->compute, compute<->store).
  void dep_push(hw::Module from, hw::Module to);
  void dep_pop(hw::Module from, hw::Module to);

  // Ends the stream (VTA's protocol: store and load hand a token to compute, compute
  // takes both, FINISH), copies it to device DRAM, runs it and waits. Throws hw::Error
  // with the device's message on failure. Does nothing when no instruction is pending.
  void synchronize();

  // The instructions recorded since the last synchronize().
  std::span<const hw::Insn> pending() const { return insns_; }
  // The last program synchronize() ran (FINISH included).
  std::span<const hw::Insn> last_program() const { return last_program_; }
  // The pending stream as text assembly.
  std::string disassemble() const;

  // Device counters summed over every run of this stream.
  const driver::Counters& counters() const { return counters_; }
  const UopCacheStats& uop_cache_stats() const { return cache_stats_; }

 private:
  void push_kernel(const UopKernel& kernel, KernelKind kind);
  // Returns [bgn, end) of the kernel's micro-ops in the uop buffer, loading it if needed.
  std::pair<uint32_t, uint32_t> ensure_resident(const UopKernel& kernel);
  void check_kernel(const UopKernel& kernel) const;
  hw::Insn& emit(const hw::Insn& insn);
  void emit_noop(hw::Module stage, bool push_prev, bool push_next);
  void commit_pending_pops(hw::Module stage);
  void end_stream();
  void run_program();
  void invalidate_uop_cache();
  uint32_t dram_elem_base(driver::DevAddr addr, int elem_bytes, const char* what) const;

  driver::Device& dev_;
  hw::Config cfg_;
  hw::InsnLayout layout_;
  StreamOptions opts_;

  std::vector<hw::Insn> insns_;
  std::vector<hw::Insn> last_program_;
  std::array<std::optional<size_t>, hw::kNumModules> last_of_stage_;  // index in insns_
  std::array<bool, hw::kNumModules> pending_pop_prev_{};
  std::array<bool, hw::kNumModules> pending_pop_next_{};

  // The uop buffer as a ring (VTA's UopQueue): a kernel goes right after the newest
  // one, or at 0 when it does not fit there, evicting every kernel it overlaps.
  // Kernels are keyed by their encoded micro-ops, so equal bodies share one copy.
  using UopKey = std::vector<uint32_t>;
  std::map<UopKey, std::pair<uint32_t, uint32_t>> resident_;  // [bgn, end) in the buffer
  uint32_t uop_next_ = 0;
  std::map<UopKey, DeviceBuffer> kernel_copies_;  // DRAM images that LOAD UOP reads
  UopCacheStats cache_stats_;

  driver::Counters counters_;
};

}  // namespace kiln::runtime
