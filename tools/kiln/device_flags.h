#pragma once
// The device flags of every command that runs on a device (kiln sim, kiln vta, kiln
// run, kiln compile, kiln tune): one flag per driver::device_settings() entry, so every
// such command takes the same flags with the same meaning, documented once in
// docs/cli.md ("Device flags").

#include <CLI/CLI.hpp>

#include <deque>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hw/driver/device.h"
#include "hw/driver/device_settings.h"

namespace kiln::cli {

class DeviceFlags {
 public:
  // Adds the flags to `cmd`, but for the settings named in `except` (the command has
  // its own way to give them: kiln sim sizes DRAM for its image).
  void add_to(CLI::App* cmd, std::initializer_list<std::string_view> except = {});
  // The settings given, in table order, with their values ("1" for a switch).
  std::vector<std::pair<const driver::DeviceSetting*, std::string>> given() const;
  bool given(std::string_view name) const;
  // `base` with every given flag applied for `device`; throws hw::Error for a flag the
  // device does not take or a bad value, naming the flag.
  driver::DeviceOptions options(std::string_view device, driver::DeviceOptions base = {}) const;

 private:
  struct Flag {
    const driver::DeviceSetting* setting = nullptr;
    CLI::Option* option = nullptr;
    std::string value;
    bool on = false;  // a switch
  };
  std::deque<Flag> flags_;  // stable addresses: CLI11 writes into them
};

}  // namespace kiln::cli
