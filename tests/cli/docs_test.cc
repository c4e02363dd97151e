// docs/cli.md and docs/isa.md must match the code: every option of every command, and
// every field position of the default configuration, appears in them.

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/support/command.h"
#include "hw/driver/device_settings.h"
#include "hw/spec/isa.h"
#include "hw/spec/regs.h"

namespace kiln {
namespace {

std::string run(const std::string& args) { return test::run_command(std::string(KILN_BIN) + " " + args).output; }

std::string doc(const std::string& name) {
  std::ifstream in(std::string(std::getenv("KILN_SOURCE_DIR")) + "/docs/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Subcommand names listed under "Subcommands:" in a --help text.
std::vector<std::string> subcommands(const std::string& help) {
  std::vector<std::string> out;
  size_t at = help.find("Subcommands:");
  if (at == std::string::npos) return out;
  std::istringstream lines(help.substr(at));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string w;
    if (words >> w) out.push_back(w);
  }
  return out;
}

TEST(Docs, CliDocumentsEveryCommandAndOption) {
  std::string cli = doc("cli.md");
  ASSERT_FALSE(cli.empty());
  std::vector<std::string> commands;
  for (const std::string& c : subcommands(run("--help"))) {
    std::vector<std::string> subs = subcommands(run(c + " --help"));
    if (subs.empty()) commands.push_back(c);
    for (const std::string& s : subs) commands.push_back(c + " " + s);
  }
  ASSERT_GE(commands.size(), 5u);
  std::regex option("--[a-z][a-z0-9-]*");
  for (const std::string& c : commands) {
    SCOPED_TRACE(c);
    EXPECT_NE(cli.find("## kiln " + c), std::string::npos) << "no section for kiln " << c;
    std::string help = run(c + " --help");
    std::set<std::string> options;
    for (std::sregex_iterator it(help.begin(), help.end(), option), end; it != end; ++it)
      options.insert(it->str());
    for (const std::string& o : options) {
      if (o == "--help") continue;
      EXPECT_NE(cli.find(o), std::string::npos) << "option " << o << " of kiln " << c;
    }
  }
}

// docs/cli.md's "Device flags" table has a row per device setting (hw/driver/
// device_settings.cc) naming the devices that take it.
TEST(Docs, CliListsEveryDeviceFlag) {
  std::string cli = doc("cli.md");
  size_t at = cli.find("## Device flags");
  ASSERT_NE(at, std::string::npos);
  std::string section = cli.substr(at, cli.find("\n## ", at + 1) - at);
  for (const driver::DeviceSetting& s : driver::device_settings()) {
    std::string flag = driver::flag_of(s);
    size_t row = section.find("\n| `" + flag);
    ASSERT_NE(row, std::string::npos) << flag << " has no row";
    std::string line = section.substr(row + 1, section.find('\n', row + 1) - row - 1);
    std::string devices;
    for (char c : s.devices) devices += c == ',' ? std::string(", ") : std::string(1, c);
    EXPECT_NE(line.find("` | " + devices + " | "), std::string::npos) << flag << ": " << line;
  }
}

TEST(Docs, IsaShowsTheDefaultLayout) {
  std::string isa = doc("isa.md");
  ASSERT_FALSE(isa.empty());
  hw::InsnLayout layout(hw::Config::vta_default());
  auto range = [](int hi, int lo) {
    return hi == lo ? "[" + std::to_string(lo) + "]"
                    : "[" + std::to_string(hi) + ":" + std::to_string(lo) + "]";
  };
  auto documented = [&](std::string_view name, const std::string& bits) {
    std::istringstream lines(isa);
    std::string line;
    while (std::getline(lines, line))
      if (line.find(name) != std::string::npos && line.find(bits) != std::string::npos) return true;
    return false;
  };
  for (hw::Opcode op : {hw::Opcode::kLoad, hw::Opcode::kGemm, hw::Opcode::kAlu}) {
    for (const hw::FieldSpec& f : layout.fields(op)) {
      std::string bits = range(f.lsb + f.width - 1, f.lsb);
      EXPECT_TRUE(documented(f.name, bits)) << f.name << " " << bits;
    }
  }
  int lsb = 0;
  for (auto [name, width] : {std::pair{"dst_idx", layout.uop_dst_width()},
                             std::pair{"src_idx", layout.uop_src_width()},
                             std::pair{"wgt_idx", layout.uop_wgt_width()}}) {
    EXPECT_TRUE(documented(name, range(lsb + width - 1, lsb))) << name;
    lsb += width;
  }
  for (const auto& c : hw::regs::kCounters)
    EXPECT_NE(isa.find(std::string("`") + std::string(c.name) + "`"), std::string::npos) << c.name;
}

}  // namespace
}  // namespace kiln
