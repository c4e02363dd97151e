#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "hw/spec/config.h"
#include "hw/spec/error.h"

namespace kiln::hw {
namespace {

std::string config_path(const std::string& name) {
  return std::string(std::getenv("KILN_SOURCE_DIR")) + "/hw/config/" + name + ".json";
}

// Expects from_json(text) to throw with every fragment in the message.
void expect_error(const std::string& text, std::initializer_list<std::string> fragments) {
  try {
    Config::from_json(text, "test.json");
    FAIL() << "accepted: " << text;
  } catch (const Error& e) {
    for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos)
        << "message '" << e.what() << "' lacks '" << f << "'";
  }
}

// The default configuration's JSON with some keys replaced.
std::string with(std::initializer_list<std::pair<std::string, std::string>> changes) {
  std::string text = R"({"LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3, "LOG_ACC_WIDTH": 5,
    "LOG_BATCH": 0, "LOG_BLOCK": 4, "LOG_UOP_BUFF_SIZE": 15, "LOG_INP_BUFF_SIZE": 15,
    "LOG_WGT_BUFF_SIZE": 18, "LOG_ACC_BUFF_SIZE": 17})";
  for (const auto& [key, value] : changes) {
    size_t at = text.find("\"" + key + "\"");
    size_t colon = text.find(':', at);
    size_t end = text.find_first_of(",}", colon);
    text = text.substr(0, colon + 1) + " " + value + text.substr(end);
  }
  return text;
}
std::string with(const std::string& key, const std::string& value) { return with({{key, value}}); }

TEST(Config, DefaultDerivesVtaValues) {
  Config c = Config::from_file(config_path("default"));
  EXPECT_EQ(c.name(), "default");
  EXPECT_EQ(c.params(), ConfigParams{});
  EXPECT_EQ(c.batch(), 1);
  EXPECT_EQ(c.block_in(), 16);
  EXPECT_EQ(c.block_out(), 16);
  EXPECT_EQ(c.inp_elem_bytes(), 16);
  EXPECT_EQ(c.wgt_elem_bytes(), 256);
  EXPECT_EQ(c.acc_elem_bytes(), 64);
  EXPECT_EQ(c.out_elem_bytes(), 16);
  EXPECT_EQ(c.uop_elem_bytes(), 4);
  EXPECT_EQ(c.log_out_buff_size(), 15);
  EXPECT_EQ(c.uop_depth(), 8192u);
  EXPECT_EQ(c.inp_depth(), 2048u);
  EXPECT_EQ(c.wgt_depth(), 1024u);
  EXPECT_EQ(c.acc_depth(), 2048u);
  EXPECT_EQ(c.out_depth(), 2048u);
  EXPECT_EQ(c.log_uop_depth(), 13);
  EXPECT_EQ(c.log_inp_depth(), 11);
  EXPECT_EQ(c.log_wgt_depth(), 10);
  EXPECT_EQ(c.log_acc_depth(), 11);
  EXPECT_EQ(c.uop_dst_width() + c.uop_src_width() + c.uop_wgt_width(), 32);
  EXPECT_EQ(c, Config::vta_default());
}

TEST(Config, TinyAndSmallDerive) {
  Config t = Config::from_file(config_path("tiny"));
  EXPECT_EQ(t.block_in(), 4);
  EXPECT_EQ(t.inp_depth(), 256u);
  EXPECT_EQ(t.wgt_depth(), 256u);
  EXPECT_EQ(t.acc_depth(), 256u);
  EXPECT_EQ(t.uop_depth(), 256u);
  Config s = Config::from_file(config_path("small"));
  EXPECT_EQ(s.block_out(), 8);
  EXPECT_EQ(s.wgt_elem_bytes(), 64);
  EXPECT_EQ(s.wgt_depth(), 512u);
}

TEST(Config, FingerprintDependsOnEveryKeyButNotTheName) {
  Config d = Config::from_json(with("LOG_BATCH", "0"), "a.json");
  Config renamed = Config::from_params(d.params(), "other");
  EXPECT_EQ(d.fingerprint(), renamed.fingerprint());
  for (const ConfigKey& k : config_keys()) {
    ConfigParams p = d.params();
    p.*k.member += (p.*k.member < k.max) ? 1 : -1;
    try {
      EXPECT_NE(Config::from_params(p).fingerprint(), d.fingerprint()) << k.name;
    } catch (const Error&) {
      // Some neighbours are invalid (e.g. a buffer too deep); that is fine here.
    }
  }
  EXPECT_NE(Config::from_file(config_path("tiny")).fingerprint(), d.fingerprint());
}

TEST(Config, MalformedConfigurationsNameTheProblem) {
  expect_error("{not json", {"test.json", "not valid JSON"});
  expect_error("[1, 2]", {"JSON object"});
  expect_error(with("LOG_BLOCK", "9"), {"LOG_BLOCK", "9", "out of range", "1 to 6"});
  expect_error(with("LOG_BATCH", "-1"), {"LOG_BATCH", "-1", "0 to 4"});
  expect_error(with("LOG_BLOCK", "\"4\""), {"LOG_BLOCK", "must be an integer"});
  expect_error(with("LOG_BLOCK", "4.5"), {"LOG_BLOCK", "must be an integer"});
  expect_error(with("LOG_BLOCK", "true"), {"LOG_BLOCK", "must be an integer"});
  // Past int64: the value as written, not as a wrapped -1.
  expect_error(with("LOG_BLOCK", "18446744073709551615"), {"LOG_BLOCK", "must be an integer from 1 to 6, got 18446744073709551615"});
  expect_error(R"({"LOG_INP_WIDTH": 3})", {"missing key", "LOG_WGT_WIDTH"});
  std::string extra = with("LOG_BLOCK", "4");
  extra.insert(1, "\"LOG_BLOK\": 4, ");
  expect_error(extra, {"unknown key 'LOG_BLOK'", "LOG_BLOCK"});
  expect_error(with({{"LOG_ACC_WIDTH", "4"}, {"LOG_INP_WIDTH", "4"}}), {"LOG_ACC_WIDTH", "must exceed"});
  // A weight buffer smaller than two 16x16 weight elements.
  expect_error(with("LOG_WGT_BUFF_SIZE", "8"), {"LOG_WGT_BUFF_SIZE", "fewer than two", "minimum is 9"});
  // An input buffer deeper than a 16-bit sram_base can index.
  expect_error(with("LOG_INP_BUFF_SIZE", "21"), {"LOG_INP_BUFF_SIZE", "16-bit sram_base", "maximum is 20"});
  // A micro-op buffer too deep for the GEMM format's uop fields in word 0.
  expect_error(with("LOG_UOP_BUFF_SIZE", "17"), {"does not fit in 128 bits"});
  // Micro-op fields wider than 32 bits.
  std::string wide = with("LOG_ACC_BUFF_SIZE", "22");
  expect_error(wide, {"micro-op", "more than 32"});
}

TEST(Config, CannotOpenMissingFile) {
  EXPECT_THROW(Config::from_file("/nonexistent/kiln.json"), Error);
}

TEST(Config, JsonRoundTrip) {
  Config d = Config::from_file(config_path("small"));
  Config again = Config::from_json(d.to_json(false), "again.json");
  EXPECT_EQ(again, d);
  EXPECT_EQ(again.name(), "small");
  EXPECT_NE(d.to_json(true).find("\"WGT_DEPTH\": 512"), std::string::npos);
}

}  // namespace
}  // namespace kiln::hw
