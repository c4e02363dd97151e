// The device settings (hw/driver/device_settings.h): each spelled either way, applied
// only to the devices that take it, values parsed whole, errors naming the setting as
// the user wrote it; and `kiln sim` / `kiln run` refusing a flag for another device.

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "hw/driver/device_settings.h"
#include "hw/spec/error.h"
#include "tests/support/command.h"

namespace kiln {
namespace {

using driver::DeviceOptions;

std::string error_of(std::string_view device, std::string_view name, const std::string& value) {
  const driver::DeviceSetting* s = driver::find_device_setting(name);
  if (!s) return "no setting " + std::string(name);
  DeviceOptions o;
  try {
    driver::apply_device_setting(o, device, *s, value, "--" + std::string(name));
  } catch (const hw::Error& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceSettings, EachAppliesToItsDevices) {
  std::set<std::string> names;
  for (const driver::DeviceSetting& s : driver::device_settings()) {
    EXPECT_TRUE(names.insert(std::string(s.name)).second) << s.name << " twice";
    EXPECT_FALSE(s.devices.empty()) << s.name;
    EXPECT_FALSE(s.help.empty()) << s.name;
    EXPECT_EQ(driver::find_device_setting(driver::flag_of(s).substr(2)), &s) << s.name;
  }
  DeviceOptions o;
  const driver::DeviceSetting* latency = driver::find_device_setting("dram-latency");
  ASSERT_NE(latency, nullptr);
  driver::apply_device_setting(o, "systemc", *latency, "64", "--dram-latency");
  EXPECT_EQ(o.dram_latency, 64);
  driver::apply_device_setting(o, "rtl", *driver::find_device_setting("backpressure"), "1", "-backpressure");
  EXPECT_TRUE(o.dram_backpressure);
  driver::apply_device_setting(o, "uio", *driver::find_device_setting("uio_buffer"), "/dev/mem@0x10000000", "--uio-buffer");
  EXPECT_EQ(o.uio_buffer, "/dev/mem");
  EXPECT_EQ(o.uio_buffer_offset, 0x10000000u);
  driver::apply_device_setting(o, "fsim", *driver::find_device_setting("dram_mb"), "32", "-dram_mb");
  EXPECT_EQ(o.dram_bytes, uint64_t{32} << 20);
}

TEST(DeviceSettings, BadValuesAndOtherDevicesAreRefusedByName) {
  EXPECT_EQ(error_of("fsim", "dram_latency", "64"), "--dram_latency applies to --device rtl|systemc; the device is fsim");
  EXPECT_EQ(error_of("rtl", "dram_latency", "soon"), "--dram_latency soon: expected a whole number");
  EXPECT_EQ(error_of("rtl", "dram_latency", "-5"), "--dram_latency -5: expected 0 to 1048576");
  EXPECT_EQ(error_of("systemc", "accelerators", "17"), "--accelerators 17: expected 1 to 16");
  EXPECT_EQ(error_of("systemc", "dram_gbps", "0"), "--dram_gbps 0: expected a number above 0");
  EXPECT_EQ(error_of("systemc", "dram_gbps", "nan"), "--dram_gbps nan: expected a number above 0");
  EXPECT_EQ(error_of("rtl", "core", "fast"), "--core fast: expected decoupled or inorder");
  EXPECT_EQ(error_of("rtl", "watchdog", "99999999999999999999999"), "--watchdog 99999999999999999999999: expected a whole number");
  EXPECT_EQ(error_of("uio", "uio_registers", "@12"), "--uio_registers @12: expected PATH or PATH@OFFSET (say /dev/mem@0x43c00000)");
  EXPECT_EQ(error_of("fsim", "dram_mb", "100000"), "--dram_mb 100000: at most 65536");
  EXPECT_EQ(driver::find_device_setting("warp"), nullptr);
}

test::CommandResult kiln(const std::string& args) { return test::run_command(std::string(KILN_BIN) + " " + args); }

TEST(DeviceSettings, CommandsRefuseAFlagForAnotherDevice) {
  auto sim = kiln("sim --device fsim --program /nonexistent.bin --memory hbm2-pc");
  EXPECT_NE(sim.status, 0);
  auto run = kiln("run /nonexistent.onnx --target cpu --dram-latency 9");
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.output.find("device flags apply to an accelerator target"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace kiln
