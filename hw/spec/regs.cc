#include "hw/spec/regs.h"

#include <fmt/format.h>

#include "hw/spec/isa.h"

namespace kiln::hw::regs {

std::string status_error_text(uint32_t status) {
  ErrorCause cause = status_cause(status);
  std::string text(error_cause_text(cause));
  if (text.empty() || (cause != ErrorCause::kRange && cause != ErrorCause::kParity)) return text;
  uint32_t module = status_where_module(status), mem = status_where_mem(status);
  if (module > static_cast<uint32_t>(Module::kStore) || mem > static_cast<uint32_t>(MemType::kOut))
    return text + fmt::format(" (STATUS[15:8] 0x{:02x} names no module and buffer)",
                              (status & kStatusWhereMask) >> kStatusWhereShift);
  return text + fmt::format(" (the {} module, the {} buffer)",
                            module_name(static_cast<Module>(module)),
                            mem_type_name(static_cast<MemType>(mem)));
}

}  // namespace kiln::hw::regs
