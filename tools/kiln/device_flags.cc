#include "tools/kiln/device_flags.h"

#include <algorithm>

namespace kiln::cli {

void DeviceFlags::add_to(CLI::App* cmd, std::initializer_list<std::string_view> except) {
  for (const driver::DeviceSetting& s : driver::device_settings()) {
    if (std::find(except.begin(), except.end(), s.name) != except.end()) continue;
    Flag& f = flags_.emplace_back();
    f.setting = &s;
    std::string help;
    for (char c : s.devices) help += c == ',' ? std::string(", ") : std::string(1, c);
    help += ": " + std::string(s.help);
    f.option = s.value.empty() ? cmd->add_flag(driver::flag_of(s), f.on, help)
                               : cmd->add_option(driver::flag_of(s), f.value, help)->type_name(std::string(s.value));
    f.option->group("Device flags (docs/cli.md)");
  }
}

std::vector<std::pair<const driver::DeviceSetting*, std::string>> DeviceFlags::given() const {
  std::vector<std::pair<const driver::DeviceSetting*, std::string>> out;
  for (const Flag& f : flags_)
    if (f.option->count() > 0) out.emplace_back(f.setting, f.setting->value.empty() ? (f.on ? "1" : "0") : f.value);
  return out;
}

bool DeviceFlags::given(std::string_view name) const {
  for (const Flag& f : flags_)
    if (f.setting->name == name) return f.option->count() > 0;
  return false;
}

driver::DeviceOptions DeviceFlags::options(std::string_view device, driver::DeviceOptions base) const {
  for (const auto& [s, value] : given()) driver::apply_device_setting(base, device, *s, value, driver::flag_of(*s));
  return base;
}

}  // namespace kiln::cli
