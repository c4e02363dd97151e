// support/: the debug flags, the integer helpers, the JSON integer reader, the one
// error type and the whole-file read that hw/ and compiler/ share (label support).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "compiler/support/error.h"
#include "hw/spec/error.h"
#include "support/debug.h"
#include "support/error.h"
#include "support/file.h"
#include "support/integer.h"
#include "support/json.h"

namespace kiln {
namespace {

// Sets $KILN_DEBUG for one test and restores what was there.
class DebugEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("KILN_DEBUG");
    had_ = old != nullptr;
    if (had_) old_ = old;
  }
  void TearDown() override {
    if (had_) ::setenv("KILN_DEBUG", old_.c_str(), 1);
    else ::unsetenv("KILN_DEBUG");
  }
  static void set(const char* v) { ::setenv("KILN_DEBUG", v, 1); }
  bool had_ = false;
  std::string old_;
};

TEST_F(DebugEnv, TopicsAreCommaSeparatedWords) {
  ::unsetenv("KILN_DEBUG");
  EXPECT_FALSE(debug_enabled("ir"));
  set("");
  EXPECT_FALSE(debug_enabled("ir"));
  set("ir");
  EXPECT_TRUE(debug_enabled("ir"));
  EXPECT_FALSE(debug_enabled("stream"));
  set("graph,stream");
  EXPECT_TRUE(debug_enabled("stream"));
  EXPECT_TRUE(debug_enabled("graph"));
  EXPECT_FALSE(debug_enabled("ir"));
  // Whole words only: "vta" is not "vta-ir"; stray commas change nothing.
  set("vta-ir,,");
  EXPECT_FALSE(debug_enabled("vta"));
  EXPECT_TRUE(debug_enabled("vta-ir"));
  EXPECT_FALSE(debug_enabled("ir"));
  set("stream,all");
  EXPECT_TRUE(debug_enabled("ir"));
}

// floordiv and floormod against their definition: q is the largest integer with
// q * b <= a (for b > 0; the mirror for b < 0), and a == q * b + r.
TEST(Integer, FloorDivisionMatchesItsDefinition) {
  for (int64_t a = -40; a <= 40; ++a) {
    for (int64_t b = -9; b <= 9; ++b) {
      if (b == 0) continue;
      int64_t q = floordiv(a, b), r = floormod(a, b);
      EXPECT_EQ(q * b + r, a) << a << " " << b;
      if (b > 0) EXPECT_TRUE(r >= 0 && r < b) << a << " mod " << b << " = " << r;
      else EXPECT_TRUE(r <= 0 && r > b) << a << " mod " << b << " = " << r;
    }
  }
  EXPECT_EQ(floordiv(-7, 2), -4);
  EXPECT_EQ(floordiv(7, -2), -4);
  EXPECT_EQ(floordiv(-7, -2), 3);
  EXPECT_EQ(floormod(-7, 2), 1);
  EXPECT_EQ(floormod(7, -2), -1);
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(floordiv(kMin, -1), kMin);  // wraps, as the loop IR's integers do
  EXPECT_EQ(floormod(kMin, -1), 0);
  EXPECT_EQ(floordiv(kMin, 1), kMin);
  static_assert(floordiv(-1, 16) == -1 && floormod(-1, 16) == 15);
}

TEST(Integer, CeilDivAndRoundUpTakeMixedTypes) {
  EXPECT_EQ(ceil_div(int64_t{0}, 16), 0);
  EXPECT_EQ(ceil_div(int64_t{1}, 16), 1);
  EXPECT_EQ(ceil_div(int64_t{16}, 16), 1);
  EXPECT_EQ(ceil_div(int64_t{17}, 16), 2);
  EXPECT_EQ(round_up(int64_t{17}, 16), 32);
  EXPECT_EQ(round_up(uint64_t{4097}, 4096), 8192u);
  EXPECT_EQ(round_up(size_t{64}, 64), 64u);
  static_assert(std::is_same_v<decltype(round_up(size_t{1}, 1)), size_t>);
  static_assert(std::is_same_v<decltype(ceil_div(int64_t{1}, 1)), int64_t>);
  static_assert(round_up(3, 4) == 4);
}

TEST(Integer, DivisorsAreAllOfThemAscending) {
  for (int64_t n = 1; n <= 300; ++n) {
    std::vector<int64_t> want;
    for (int64_t d = 1; d <= n; ++d)
      if (n % d == 0) want.push_back(d);
    EXPECT_EQ(divisors(n), want) << n;
  }
  EXPECT_EQ(divisors(49), (std::vector<int>{1, 7, 49}));
  EXPECT_TRUE(divisors(0).empty());
  EXPECT_TRUE(divisors(-6).empty());
  // Large n: trial division stops at the square root, without overflowing i * i.
  EXPECT_EQ(divisors(int64_t{1000000007}), (std::vector<int64_t>{1, 1000000007}));
  EXPECT_EQ(divisors(std::numeric_limits<int32_t>::max()).size(), 2u);  // a Mersenne prime
}

TEST(Integer, LargestDivisorAtMostIsTheLargestWithinTheBudget) {
  for (int64_t n = 1; n <= 120; ++n)
    for (int64_t most = 1; most <= 130; ++most) {
      int64_t want = 1;
      for (int64_t d = 1; d <= std::min(n, most); ++d)
        if (n % d == 0) want = d;
      EXPECT_EQ(largest_divisor_at_most(n, most), want) << n << " " << most;
    }
  static_assert(largest_divisor_at_most(56, 8) == 8 && largest_divisor_at_most(7, 4) == 1);
  EXPECT_EQ(largest_divisor_at_most(int64_t{12}, int64_t{0}), 1);  // a budget below 1 still gives 1
}

// What the readers' fuzzers found: get<int64_t>() of 8.9e28 is undefined behaviour.
// Only a JSON integer that the type holds is read; everything else throws a JSON
// exception naming the value.
TEST(Json, OnlyIntegersInRangeAreRead) {
  using nlohmann::json;
  EXPECT_EQ(json_integer<int>(json(-7), "n"), -7);
  EXPECT_EQ(json_integer<uint32_t>(json(4294967295u), "n"), 4294967295u);
  EXPECT_EQ(json_integer<int64_t>(json::parse("-9223372036854775808"), "n"), INT64_MIN);
  EXPECT_EQ(json_integer<uint64_t>(json::parse("18446744073709551615"), "n"), UINT64_MAX);
  auto message = [](auto read) -> std::string {
    try {
      read();
    } catch (const json::exception& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message([] { json_integer<int64_t>(json::parse("8.9e28"), "config"); }),
            "[json.exception.type_error.302] 'config' must be an integer, got 8.9e+28");
  EXPECT_EQ(message([] { json_integer<int>(json(3.0), "n"); }),
            "[json.exception.type_error.302] 'n' must be an integer, got 3.0");
  EXPECT_EQ(message([] { json_integer<int>(json(true), "n"); }),
            "[json.exception.type_error.302] 'n' must be an integer, got true");
  EXPECT_EQ(message([] { json_integer<int>(json("7"), "n"); }),
            "[json.exception.type_error.302] 'n' must be an integer, got a JSON string");
  EXPECT_EQ(message([] { json_integer<int>(json(int64_t{1} << 40), "buffer"); }),
            "[json.exception.out_of_range.406] 'buffer' is 1099511627776, outside -2147483648 to 2147483647");
  EXPECT_EQ(message([] { json_integer<uint32_t>(json(-1), "sram"); }),
            "[json.exception.out_of_range.406] 'sram' is -1, outside 0 to 4294967295");
  EXPECT_EQ(message([] { json_integer<int64_t>(json::parse("18446744073709551615"), "n"); }),
            "[json.exception.out_of_range.406] 'n' is 18446744073709551615, outside -9223372036854775808 to "
            "9223372036854775807");
  EXPECT_FALSE(try_json_integer<int8_t>(json(128)));
  EXPECT_EQ(try_json_integer<int8_t>(json(-128)), int8_t{-128});
}

TEST(Json, ArraysOfIntegersNameTheElement) {
  using nlohmann::json;
  EXPECT_EQ(json_integers<int64_t>(json::parse("[1, 2, 3]"), "shape"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(json_integers<int>(json::array(), "shape").empty());
  try {
    json_integers<int>(json::parse("[1, 1.8e19]"), "dtype");
    FAIL() << "a float was read as an integer";
  } catch (const json::type_error& e) {
    EXPECT_STREQ(e.what(), "[json.exception.type_error.302] 'dtype[1]' must be an integer, got 1.8e+19");
  }
  EXPECT_THROW(json_integers<int>(json(5), "shape"), json::type_error);
  EXPECT_THROW(json_integers<int>(json::parse(R"({"a": 1})"), "shape"), json::type_error);
}

TEST(Error, EveryLayersErrorIsOne) {
  // Callers that only report catch kiln::Error; the tuner's callers catch std::invalid_argument.
  static_assert(std::is_base_of_v<Error, hw::Error>);
  static_assert(std::is_base_of_v<Error, CompileError>);
  static_assert(std::is_base_of_v<std::invalid_argument, Error>);
  try {
    throw hw::Error("tiny.json: LOG_BLOCK: expected 1..6, got 9");
  } catch (const Error& e) {
    EXPECT_EQ(e.report("kiln"), "kiln: error: tiny.json: LOG_BLOCK: expected 1..6, got 9");
  }
  try {
    throw CompileError("schedule error in stage 'C': split of axis 'i'");
  } catch (const std::exception& e) {
    EXPECT_STREQ(e.what(), "schedule error in stage 'C': split of axis 'i'");
  }
}

TEST(Error, OtherExceptionsAreReportedAsKilnsOwnFault) {
  std::string r = internal_error_report("kiln", std::out_of_range("vector::_M_range_check"));
  EXPECT_EQ(r.rfind("kiln: internal error: vector::_M_range_check", 0), 0u) << r;
  EXPECT_NE(r.find("a bug in Kiln"), std::string::npos) << r;
}

TEST(File, ReadWholeAsItsBytesOrNamesThePath) {
  auto path = std::filesystem::temp_directory_path() / ("kiln-support-read-" + std::to_string(::getpid()));
  std::string bytes(70000, '\0');  // past any stream buffer, NUL bytes included
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 % 251);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_EQ(read_file(path.string()), bytes);
  std::ofstream(path, std::ios::binary | std::ios::trunc).flush();
  EXPECT_EQ(read_file(path.string()), "");
  std::filesystem::remove(path);
  try {
    read_file(path.string());
    ADD_FAILURE() << "a missing file was read";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ": cannot open the file");
  }
  std::string dir = std::filesystem::temp_directory_path().string();
  try {
    read_file(dir);
    ADD_FAILURE() << "a directory was read";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir + ": is a directory, not a file");
  }
  // A device has no size ahead; it is read to its end like a pipe.
  EXPECT_EQ(read_file("/dev/null"), "");
}

}  // namespace
}  // namespace kiln
