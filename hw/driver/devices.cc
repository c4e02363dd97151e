// The list of devices this build has. A device of a later issue adds a line here.

#include <fmt/format.h>

#include "hw/driver/device.h"
#include "hw/driver/fsim_device.h"
#include "hw/spec/error.h"
#ifdef KILN_HAVE_RTL
#include "hw/driver/rtl/rtl_device.h"
#endif
#ifdef KILN_HAVE_SYSTEMC
#include "hw/driver/systemc/systemc_device.h"
#endif
#ifdef KILN_HAVE_UART
#include "hw/driver/uart/uart_device.h"
#endif
#ifdef KILN_HAVE_UIO
#include "hw/driver/uio/uio_device.h"
#endif

namespace kiln::driver {

namespace {

struct Entry {
  std::string_view kind;
  std::unique_ptr<Device> (*make)(const hw::Config&, const DeviceOptions&);
};

template <typename D>
std::unique_ptr<Device> make(const hw::Config& cfg, const DeviceOptions& opts) {
  return std::make_unique<D>(cfg, opts);
}

constexpr Entry kDevices[] = {
    {"fsim", &make<FsimDevice>},
#ifdef KILN_HAVE_RTL
    {"rtl", &make_rtl_device},
#endif
#ifdef KILN_HAVE_SYSTEMC
    {"systemc", &make_systemc_device},
#endif
#ifdef KILN_HAVE_UART
    {"uart", &make_uart_device},
#ifdef KILN_HAVE_UART_SIM
    {"uart-sim", &make_uart_sim_device},
#endif
#endif
#ifdef KILN_HAVE_UIO
    {"uio", &make_uio_device},
#endif
};

}  // namespace

std::vector<std::string> device_kinds() {
  std::vector<std::string> out;
  for (const Entry& e : kDevices) out.emplace_back(e.kind);
  return out;
}

std::unique_ptr<Device> make_device(std::string_view kind, const hw::Config& cfg,
                                    const DeviceOptions& opts) {
  for (const Entry& e : kDevices)
    if (e.kind == kind) return e.make(cfg, opts);
  std::string known;
  for (const Entry& e : kDevices) known += fmt::format(" {}", e.kind);
  throw hw::Error(fmt::format("unknown device '{}'; this build has:{}", kind, known));
}

}  // namespace kiln::driver
