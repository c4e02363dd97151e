#include "hw/spec/config.h"

#include <fmt/format.h>

#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "hw/spec/error.h"
#include "hw/spec/isa.h"
#include "support/json.h"

namespace kiln::hw {

namespace {

constexpr std::array<ConfigKey, 9> kKeys = {{
    {"LOG_INP_WIDTH", &ConfigParams::log_inp_width, 3, 4},
    {"LOG_WGT_WIDTH", &ConfigParams::log_wgt_width, 3, 4},
    {"LOG_ACC_WIDTH", &ConfigParams::log_acc_width, 4, 6},
    {"LOG_BATCH", &ConfigParams::log_batch, 0, 4},
    {"LOG_BLOCK", &ConfigParams::log_block, 1, 6},
    {"LOG_UOP_BUFF_SIZE", &ConfigParams::log_uop_buff_size, 3, 24},
    {"LOG_INP_BUFF_SIZE", &ConfigParams::log_inp_buff_size, 3, 24},
    {"LOG_WGT_BUFF_SIZE", &ConfigParams::log_wgt_buff_size, 3, 26},
    {"LOG_ACC_BUFF_SIZE", &ConfigParams::log_acc_buff_size, 3, 26},
}};

// Index fields in LOAD/STORE (sram_base) are 16 bits wide.
constexpr int kMaxIndexWidth = 16;

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

void check_buffer(std::string_view key, int log_bytes, int elem_bytes, std::string_view what,
                  const std::string& name) {
  // A buffer holds at least two elements and its index fits a 16-bit sram_base.
  int log_elem = 0;
  while ((1 << log_elem) < elem_bytes) ++log_elem;
  int log_depth = log_bytes - log_elem;
  if (log_depth < 1) {
    throw Error(fmt::format("config '{}': {} = {} holds fewer than two {} elements of {} bytes; "
                            "the minimum is {}",
                            name, key, log_bytes, what, elem_bytes, log_elem + 1));
  }
  if (log_depth > kMaxIndexWidth) {
    throw Error(fmt::format("config '{}': {} = {} gives {} {} elements, more than the 2^{} that a "
                            "16-bit sram_base can index; the maximum is {}",
                            name, key, log_bytes, 1ull << log_depth, what, kMaxIndexWidth,
                            log_elem + kMaxIndexWidth));
  }
}

}  // namespace

std::span<const ConfigKey> config_keys() { return kKeys; }

int Config::log2_exact(uint32_t v) {
  int l = 0;
  while ((1u << l) < v) ++l;
  return l;
}

Config::Config(const ConfigParams& params, std::string name, std::string description)
    : params_(params), name_(std::move(name)), description_(std::move(description)) {
  for (const ConfigKey& k : kKeys) {
    int v = params_.*k.member;
    if (v < k.min || v > k.max) {
      throw Error(fmt::format("config '{}': {} = {} is out of range; valid values are {} to {}",
                              name_, k.name, v, k.min, k.max));
    }
  }
  if (params_.log_acc_width <= std::max(params_.log_inp_width, params_.log_wgt_width)) {
    throw Error(fmt::format("config '{}': LOG_ACC_WIDTH = {} must exceed LOG_INP_WIDTH ({}) and "
                            "LOG_WGT_WIDTH ({}): accumulators are wider than their operands",
                            name_, params_.log_acc_width, params_.log_inp_width,
                            params_.log_wgt_width));
  }
  check_buffer("LOG_UOP_BUFF_SIZE", params_.log_uop_buff_size, uop_elem_bytes(), "micro-op", name_);
  check_buffer("LOG_INP_BUFF_SIZE", params_.log_inp_buff_size, inp_elem_bytes(), "input", name_);
  check_buffer("LOG_WGT_BUFF_SIZE", params_.log_wgt_buff_size, wgt_elem_bytes(), "weight", name_);
  check_buffer("LOG_ACC_BUFF_SIZE", params_.log_acc_buff_size, acc_elem_bytes(), "accumulator",
               name_);
  int uop_bits = uop_dst_width() + uop_src_width() + uop_wgt_width();
  if (uop_bits > 32) {
    throw Error(fmt::format("config '{}': a micro-op needs dst_idx {} + src_idx {} + wgt_idx {} = {} "
                            "bits, more than 32; shrink LOG_ACC_BUFF_SIZE, LOG_INP_BUFF_SIZE or "
                            "LOG_WGT_BUFF_SIZE",
                            name_, uop_dst_width(), uop_src_width(), uop_wgt_width(), uop_bits));
  }
  // The instruction formats must fit in 128 bits; InsnLayout throws naming the field.
  try {
    InsnLayout layout(*this);
  } catch (const Error& e) {
    throw Error(fmt::format("config '{}': {}", name_, e.what()));
  }
  fingerprint_ = fnv1a64(canonical());
}

std::string Config::canonical() const {
  std::string s = "kiln-config-v1";
  for (const ConfigKey& k : kKeys) s += fmt::format(";{}={}", k.name, params_.*k.member);
  return s;
}

Config Config::from_params(const ConfigParams& params, std::string name) {
  return Config(params, std::move(name), "");
}

Config Config::vta_default() { return Config(ConfigParams{}, "default", "VTA's default"); }

Config Config::from_json(std::string_view text, std::string_view source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number too large
    throw Error(fmt::format("{}: not valid JSON: {}", source, e.what()));
  }
  if (!j.is_object()) throw Error(fmt::format("{}: a configuration must be a JSON object", source));

  std::string name = std::filesystem::path(std::string(source)).stem().string();
  std::string description;
  std::set<std::string> seen;
  ConfigParams p;
  for (const auto& [key, value] : j.items()) {
    if (key == "name" || key == "description") {
      if (!value.is_string())
        throw Error(fmt::format("{}: key '{}' must be a string", source, key));
      (key == "name" ? name : description) = value.get<std::string>();
      continue;
    }
    const ConfigKey* found = nullptr;
    for (const ConfigKey& k : kKeys)
      if (k.name == key) found = &k;
    if (!found) {
      std::string valid;
      for (const ConfigKey& k : kKeys) valid += fmt::format(" {}", k.name);
      throw Error(fmt::format("{}: unknown key '{}'; valid keys are name, description and{}",
                              source, key, valid));
    }
    std::optional<int64_t> integer = try_json_integer<int64_t>(value);
    if (!integer) {
      throw Error(fmt::format("{}: key {} must be an integer from {} to {}, got {}", source, key,
                              found->min, found->max, value.dump()));
    }
    int64_t v = *integer;
    if (v < found->min || v > found->max) {
      throw Error(fmt::format("{}: {} = {} is out of range; valid values are {} to {}", source, key,
                              v, found->min, found->max));
    }
    p.*found->member = static_cast<int>(v);
    seen.insert(key);
  }
  for (const ConfigKey& k : kKeys) {
    if (!seen.count(std::string(k.name)))
      throw Error(fmt::format("{}: missing key {} (valid values {} to {})", source, k.name, k.min,
                              k.max));
  }
  try {
    return Config(p, name, description);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", source, e.what()));
  }
}

Config Config::from_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open configuration file", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return from_json(ss.str(), path.string());
}

std::string Config::to_json(bool with_derived) const {
  nlohmann::ordered_json j;
  j["name"] = name_;
  if (!description_.empty()) j["description"] = description_;
  for (const ConfigKey& k : kKeys) j[std::string(k.name)] = params_.*k.member;
  if (with_derived) {
    nlohmann::ordered_json d;
    d["fingerprint"] = fmt::format("{:016x}", fingerprint_);
    d["INP_WIDTH"] = inp_width();
    d["WGT_WIDTH"] = wgt_width();
    d["ACC_WIDTH"] = acc_width();
    d["OUT_WIDTH"] = out_width();
    d["BATCH"] = batch();
    d["BLOCK_IN"] = block_in();
    d["BLOCK_OUT"] = block_out();
    d["LOG_OUT_BUFF_SIZE"] = log_out_buff_size();
    d["INP_ELEM_BYTES"] = inp_elem_bytes();
    d["WGT_ELEM_BYTES"] = wgt_elem_bytes();
    d["ACC_ELEM_BYTES"] = acc_elem_bytes();
    d["OUT_ELEM_BYTES"] = out_elem_bytes();
    d["UOP_ELEM_BYTES"] = uop_elem_bytes();
    d["UOP_DEPTH"] = uop_depth();
    d["INP_DEPTH"] = inp_depth();
    d["WGT_DEPTH"] = wgt_depth();
    d["ACC_DEPTH"] = acc_depth();
    d["OUT_DEPTH"] = out_depth();
    d["LOG_UOP_DEPTH"] = log_uop_depth();
    d["LOG_INP_DEPTH"] = log_inp_depth();
    d["LOG_WGT_DEPTH"] = log_wgt_depth();
    d["LOG_ACC_DEPTH"] = log_acc_depth();
    d["UOP_DST_WIDTH"] = uop_dst_width();
    d["UOP_SRC_WIDTH"] = uop_src_width();
    d["UOP_WGT_WIDTH"] = uop_wgt_width();
    j["derived"] = d;
  }
  return j.dump(2);
}

}  // namespace kiln::hw
