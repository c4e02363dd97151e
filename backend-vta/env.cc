#include "backend-vta/env.h"

#include "compiler/support/error.h"

namespace kiln::vta {

Env::Env(const hw::Config& cfg) : cfg_(cfg) {}

bool Env::is_scratchpad(const std::string& scope) {
  return scope == kInpScope || scope == kWgtScope || scope == kAccScope;
}

hw::MemType Env::mem_type(const std::string& scope) const {
  if (scope == kInpScope) return hw::MemType::kInp;
  if (scope == kWgtScope) return hw::MemType::kWgt;
  if (scope == kAccScope) return hw::MemType::kAcc;
  throw CompileError("vta: '" + scope + "' is not a scratchpad scope (" + kInpScope + ", " + kWgtScope + ", " +
                     kAccScope + ")");
}

int64_t Env::elem_scalars(hw::MemType m) const {
  switch (m) {
    case hw::MemType::kInp: return int64_t{batch()} * block_in();
    case hw::MemType::kWgt: return int64_t{block_out()} * block_in();
    case hw::MemType::kAcc:
    case hw::MemType::kOut: return int64_t{batch()} * block_out();
    case hw::MemType::kUop: return 1;
  }
  return 1;
}

int64_t Env::depth(hw::MemType m) const { return hw::mem_depth(cfg_, m); }

}  // namespace kiln::vta
