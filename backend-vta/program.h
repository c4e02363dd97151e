#pragma once
// A compiled VTA program: what the code generator made of one lowered function. It is
// the sequence of runtime calls (2D loads and stores, GEMM and ALU instructions with
// their micro-op kernels, dependency tokens) with every DRAM address given as an
// argument index plus an element offset (the relocations). Running it replays the
// calls into a runtime::CommandStream for the device, which places the micro-op
// kernels in the uop buffer, merges the tokens into instructions and encodes them
// for the device's configuration. Programs save to and load from JSON files.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "hw/driver/device.h"
#include "hw/driver/runtime/command_stream.h"
#include "hw/driver/runtime/uop_kernel.h"
#include "hw/spec/config.h"

namespace kiln::vta {

struct ProgramArg {
  std::string name;
  std::vector<int64_t> shape;
  int bits = 8;  // signed integer elements
  uint64_t bytes() const;
};

struct ProgramOp {
  enum class Kind : uint8_t { kLoad, kStore, kGemm, kAlu, kDepPush, kDepPop };
  Kind kind = Kind::kLoad;
  // kLoad / kStore: memory type (kStore: kOut), SRAM element, DRAM argument + element
  // offset (in elements of that memory type), the 2D shape and the padding.
  hw::MemType mem = hw::MemType::kInp;
  uint32_t sram = 0;
  int arg = 0;
  uint64_t dram_elem = 0;
  uint32_t y_size = 0, x_size = 0, x_stride = 0;
  runtime::Pad pad;
  // kGemm / kAlu: index into Program::kernels.
  int kernel = 0;
  // kDepPush / kDepPop.
  hw::Module from = hw::Module::kLoad, to = hw::Module::kCompute;
};

// What a program does, counted at compile time.
struct ProgramStats {
  uint64_t loads = 0, stores = 0, gemm_insns = 0, alu_insns = 0, dep_ops = 0;
  uint64_t gemm_uops = 0;  // micro-op executions (BATCH x BLOCK_IN x BLOCK_OUT MACs each)
  uint64_t alu_uops = 0;
  uint64_t alu_tensor_uops = 0;  // of those, with a tensor operand (half rate on Kiln's RTL)
  uint64_t gemm_reset_uops = 0;
  uint64_t bytes_loaded = 0, bytes_stored = 0;
};

class Program {
 public:
  Program() = default;
  Program(std::string name, hw::Config config) : name_(std::move(name)), config_(std::move(config)) {}

  const std::string& name() const { return name_; }
  const hw::Config& config() const { return config_; }
  const std::vector<ProgramArg>& args() const { return args_; }
  const std::vector<runtime::UopKernel>& kernels() const { return kernels_; }
  const std::vector<ProgramOp>& ops() const { return ops_; }
  ProgramStats stats() const;

  // Building (the code generator).
  void add_arg(ProgramArg a) { args_.push_back(std::move(a)); }
  int add_kernel(runtime::UopKernel k);  // equal kernels are stored once
  void add_op(const ProgramOp& op) { ops_.push_back(op); }

  // Records the program into `cs` with argument i at DRAM address addrs[i] (no
  // synchronize). hw::Error when the stream's configuration or the arguments differ.
  void emit(runtime::CommandStream& cs, std::span<const driver::DevAddr> addrs) const;
  // emit() on a fresh stream for `dev`, then synchronize(): runs to FINISH. Returns the
  // device counters of the run.
  driver::Counters run(driver::Device& dev, std::span<const driver::DevAddr> addrs,
                       runtime::StreamOptions opts = {}) const;
  // The instruction stream as text assembly, for arguments at `addrs` on `dev`.
  std::string assembly(driver::Device& dev, std::span<const driver::DevAddr> addrs) const;

  // JSON (the configuration is stored by name and fingerprint, and checked on load).
  void save(const std::filesystem::path& path) const;
  static Program load(const std::filesystem::path& path, const hw::Config& config);
  std::string to_json() const;
  static Program from_json(std::string_view text, const hw::Config& config, std::string_view source = "<program>");

 private:
  std::string name_;
  hw::Config config_ = hw::Config::vta_default();
  std::vector<ProgramArg> args_;
  std::vector<runtime::UopKernel> kernels_;
  std::vector<ProgramOp> ops_;
};

// The in-order core's timing (hw/rtl/kiln_inorder_top.sv, one sequencer, program
// order): every instruction is fetched as two memory words, decoded and retired; a
// LOAD or STORE walks its elements one at a time (a memory word per request, one
// request in flight; padding a cycle per element); a GEMM or ALU micro-op walks the
// accumulator row a lane a cycle, then drains the lane pipeline. `mem_latency` is the
// memory's response latency in cycles (the rtl device's AXI DRAM model, or 0 for a board
// top's on-chip device memory, which answers in the next cycle).
struct InorderEstimate {
  uint64_t insns = 0;           // incl. the uop loads the runtime adds and FINISH
  uint64_t reads = 0, writes = 0;  // memory words
  uint64_t uop_steps = 0;       // GEMM and ALU micro-op executions
  double cycles = 0;
};

InorderEstimate estimate_inorder(const Program& p, int mem_latency);

}  // namespace kiln::vta
