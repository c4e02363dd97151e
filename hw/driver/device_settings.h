#pragma once
// Every DeviceOptions field a user sets, by name: the one list that the command line's
// device flags (`kiln sim`, `kiln vta`, `kiln run`: --dram-latency 64) and the options
// of accelerator target strings (`vta -device=rtl -dram_latency=64`) are made from, and
// that docs/cli.md's table of device flags follows (tests/cli checks it).
// A setting names the devices that take it; giving it to another device is an error
// that says which devices do, rather than a setting silently ignored.

#include <span>
#include <string>
#include <string_view>

#include "hw/driver/device.h"
#include "hw/sim/rtl/fault.h"

namespace kiln::driver {

struct DeviceSetting {
  std::string_view name;     // as a target option (-dram_latency=64); the flag is --dram-latency
  std::string_view devices;  // the devices that take it, comma-separated
  std::string_view value;    // what the value is ("N", "FILE", ...); "" for a switch
  std::string_view help;
  // Parses `value` into `o`; throws hw::Error naming the setting for a bad value.
  void (*apply)(DeviceOptions& o, const std::string& value);
};

std::span<const DeviceSetting> device_settings();
// By target-option (dram_latency) or flag (dram-latency) spelling; nullptr if none.
const DeviceSetting* find_device_setting(std::string_view name);
// Whether `device` ("rtl", "uart-sim", ...) takes `s`.
bool device_takes(const DeviceSetting& s, std::string_view device);
// The flag's spelling: "--dram-latency".
std::string flag_of(const DeviceSetting& s);

// Sets `s` to `value` for `device`. Throws hw::Error naming `spelled` (how the user
// wrote the setting: "--dram-latency" or "-dram_latency") when the device does not take
// it (listing those that do) or the value is bad.
// The rtl device's `--fault` value: "" (none), dram-read-error:N, dram-hang:N or
// reg-drop:REGISTER[:N]. Throws hw::Error naming the problem and the kinds.
sim::InjectedFault parse_fault(const std::string& text);

void apply_device_setting(DeviceOptions& o, std::string_view device, const DeviceSetting& s,
                          const std::string& value, std::string_view spelled);

}  // namespace kiln::driver
