#pragma once
// An accelerator configuration (hw/config/*.json): the single source of truth for
// every buffer size and width. Parsed, validated and derived here; every other layer
// (RTL parameters, simulators, driver, compiler intrinsics) reads it through Config.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace kiln::hw {

// The keys of a configuration file, exactly as shared/ISA.md names them.
struct ConfigParams {
  int log_inp_width = 3;
  int log_wgt_width = 3;
  int log_acc_width = 5;
  int log_batch = 0;
  int log_block = 4;
  int log_uop_buff_size = 15;
  int log_inp_buff_size = 15;
  int log_wgt_buff_size = 18;
  int log_acc_buff_size = 17;

  bool operator==(const ConfigParams&) const = default;
};

// A validated configuration with every derived quantity. Construct with from_file,
// from_json or from_params; all three validate and throw hw::Error naming the key.
class Config {
 public:
  static Config from_file(const std::filesystem::path& path);
  static Config from_json(std::string_view text, std::string_view source = "<config>");
  static Config from_params(const ConfigParams& params, std::string name = "custom");
  // The configuration a fresh user gets: VTA's default (hw/config/default.json).
  static Config vta_default();

  const ConfigParams& params() const { return params_; }
  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }

  // Element widths in bits (signed two's complement).
  int inp_width() const { return 1 << params_.log_inp_width; }
  int wgt_width() const { return 1 << params_.log_wgt_width; }
  int acc_width() const { return 1 << params_.log_acc_width; }
  int out_width() const { return inp_width(); }

  int batch() const { return 1 << params_.log_batch; }
  int block_in() const { return 1 << params_.log_block; }
  int block_out() const { return 1 << params_.log_block; }

  // One buffer element is one tile row; sizes in bytes.
  int inp_elem_bytes() const { return batch() * block_in() * inp_width() / 8; }
  int wgt_elem_bytes() const { return block_out() * block_in() * wgt_width() / 8; }
  int acc_elem_bytes() const { return batch() * block_out() * acc_width() / 8; }
  int out_elem_bytes() const { return batch() * block_out() * out_width() / 8; }
  static constexpr int kUopElemBytes = 4;
  int uop_elem_bytes() const { return kUopElemBytes; }

  int log_out_buff_size() const {
    return params_.log_acc_buff_size + params_.log_inp_width - params_.log_acc_width;
  }
  uint32_t uop_buff_bytes() const { return 1u << params_.log_uop_buff_size; }
  uint32_t inp_buff_bytes() const { return 1u << params_.log_inp_buff_size; }
  uint32_t wgt_buff_bytes() const { return 1u << params_.log_wgt_buff_size; }
  uint32_t acc_buff_bytes() const { return 1u << params_.log_acc_buff_size; }
  uint32_t out_buff_bytes() const { return 1u << log_out_buff_size(); }

  // Buffer depths in elements, and the index widths (log2 of the depths).
  uint32_t uop_depth() const { return uop_buff_bytes() / uop_elem_bytes(); }
  uint32_t inp_depth() const { return inp_buff_bytes() / inp_elem_bytes(); }
  uint32_t wgt_depth() const { return wgt_buff_bytes() / wgt_elem_bytes(); }
  uint32_t acc_depth() const { return acc_buff_bytes() / acc_elem_bytes(); }
  uint32_t out_depth() const { return acc_depth(); }
  int log_uop_depth() const { return log2_exact(uop_depth()); }
  int log_inp_depth() const { return log2_exact(inp_depth()); }
  int log_wgt_depth() const { return log2_exact(wgt_depth()); }
  int log_acc_depth() const { return log2_exact(acc_depth()); }

  // The RTL's queues, the same for every configuration (kiln_top takes them from the
  // generated parameter package): a module's command queue holds kCmdQueueDepth
  // instructions besides the one the module runs, a token queue kTokenQueueDepth tokens.
  // fsim refuses a stream that would fill one and wait forever, as the RTL would hang.
  static constexpr int kCmdQueueDepth = 8;
  static constexpr int kTokenQueueDepth = 65535;

  // Micro-op field widths (shared/ISA.md).
  int uop_dst_width() const { return log_acc_depth(); }
  int uop_src_width() const { return std::max(log_inp_depth(), log_acc_depth()); }
  int uop_wgt_width() const { return log_wgt_depth(); }

  // 64-bit FNV-1a hash of the canonical form (the nine keys, in ISA.md order).
  // The RTL exposes it in a register; the driver refuses a program built for another.
  uint64_t fingerprint() const { return fingerprint_; }
  std::string canonical() const;
  // The configuration as JSON, with the derived fields under "derived".
  std::string to_json(bool with_derived) const;

  bool operator==(const Config& other) const { return params_ == other.params_; }

 private:
  Config(const ConfigParams& params, std::string name, std::string description);
  static int log2_exact(uint32_t v);

  ConfigParams params_;
  std::string name_;
  std::string description_;
  uint64_t fingerprint_ = 0;
};

// Every configuration key with its valid range, in ISA.md order; validation and the
// JSON reader use this one table.
struct ConfigKey {
  std::string_view name;
  int ConfigParams::*member;
  int min;
  int max;
};
std::span<const ConfigKey> config_keys();

}  // namespace kiln::hw
