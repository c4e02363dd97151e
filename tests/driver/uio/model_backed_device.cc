// The runtime suite (tests/driver/runtime_test.cc) on the uio device. The suite makes
// its devices with make_device(kind, cfg, opts); this folder compiles it with that name
// turned into make_device_on_uio_model (CMakeLists.txt), which gives each "uio" device
// its own register-level model of the board, built for the device's configuration as
// a bitstream would be. The product's make_device has no test hook.

#include <memory>
#include <string_view>

#include <fmt/format.h>

#include "hw/driver/device.h"
#include "hw/driver/uio/uio_device.h"
#include "hw/spec/error.h"
#include "tests/driver/uio/uio_model.h"

namespace kiln::driver {

std::unique_ptr<Device> make_device_on_uio_model(std::string_view kind, const hw::Config& cfg,
                                                 const DeviceOptions& opts);

namespace {

// Holds the model so that it is made before the device maps its files and outlives it
// (a base class initialized before UioDevice, destroyed after it).
struct ModelHolder {
  ModelHolder(const hw::Config& cfg, uint64_t dram_bytes)
      : model(cfg, test::UioModel::Options{.buffer_bytes = dram_bytes}) {}
  test::UioModel model;
};

class ModelBackedUioDevice : private ModelHolder, public UioDevice {
 public:
  ModelBackedUioDevice(const hw::Config& cfg, const DeviceOptions& opts)
      : ModelHolder(cfg, opts.dram_bytes), UioDevice(cfg, suite_options(opts)) {}

 private:
  // The model's runs take milliseconds; a deadlocked stream need not wait 10 s.
  DeviceOptions suite_options(const DeviceOptions& opts) const {
    DeviceOptions o = model.device_options(opts);
    o.uio_timeout_s = 1.0;
    return o;
  }
};

}  // namespace

std::unique_ptr<Device> make_device_on_uio_model(std::string_view kind, const hw::Config& cfg,
                                                 const DeviceOptions& opts) {
  if (kind != "uio") throw hw::Error(fmt::format("this suite runs the uio device, not '{}'", kind));
  return std::make_unique<ModelBackedUioDevice>(cfg, opts);
}

}  // namespace kiln::driver
