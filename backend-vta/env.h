#pragma once
// What the compiler needs to know of one accelerator configuration: the shape of a
// GEMM micro-op (BATCH x BLOCK_IN times BLOCK_OUT x BLOCK_IN), the scratchpad scopes
// that schedules place tensors in, and each scope's element size and depth. All of it
// derives from hw::Config (the configuration file); nothing here restates a size.
#include <cstdint>
#include <string>

#include "compiler/ir/type.h"
#include "hw/spec/config.h"
#include "hw/spec/isa.h"

namespace kiln::vta {

// Storage scopes of the scratchpads (Stage::set_scope, cache_read/cache_write).
inline constexpr const char* kInpScope = "local.inp_buffer";
inline constexpr const char* kWgtScope = "local.wgt_buffer";
inline constexpr const char* kAccScope = "local.acc_buffer";

// Pragmas a schedule puts on an axis (Stage::pragma): the loop nest from that axis in
// is one DMA transfer, one ALU instruction or one GEMM instruction.
inline constexpr const char* kDmaCopy = "dma_copy";
inline constexpr const char* kAlu = "alu";
inline constexpr const char* kUopScope = "vta_uop_scope";

class Env {
 public:
  explicit Env(const hw::Config& cfg);
  const hw::Config& config() const { return cfg_; }

  int batch() const { return cfg_.batch(); }
  int block_in() const { return cfg_.block_in(); }
  int block_out() const { return cfg_.block_out(); }
  ir::DataType inp_dtype() const { return ir::DataType::Int(cfg_.inp_width()); }
  ir::DataType wgt_dtype() const { return ir::DataType::Int(cfg_.wgt_width()); }
  ir::DataType acc_dtype() const { return ir::DataType::Int(cfg_.acc_width()); }
  ir::DataType out_dtype() const { return ir::DataType::Int(cfg_.out_width()); }

  // The memory type behind a scope ("" for none), its element size in scalars and
  // its depth in elements.
  static bool is_scratchpad(const std::string& scope);
  hw::MemType mem_type(const std::string& scope) const;
  int64_t elem_scalars(hw::MemType m) const;
  int64_t depth(hw::MemType m) const;

 private:
  hw::Config cfg_;
};

}  // namespace kiln::vta
