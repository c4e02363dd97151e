#include "hw/sim/systemc/memory_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "hw/spec/error.h"

namespace kiln::sim::sc {

namespace {

// Figures and their sources: docs/systemc.md, "Memory presets".
constexpr MemoryPreset kPresets[] = {
    {"zynq7000-hp", "Zynq-7000 AXI_HP port (64-bit) in front of DDR3-1066 x32", 320, 1.2, 1.2,
     false, 8, 4096, 26.2, 7800, 260},
    {"zynqmp-hp", "Zynq UltraScale+ S_AXI_HP port (128-bit) in front of DDR4-2400 x64", 200,
     5.3, 5.3, false, 16, 8192, 26.6, 7800, 350},
    {"ddr4-2400-x64", "one DDR4-2400 x64 channel (one rank of x8 devices)", 55, 19.2, 19.2, true,
     16, 8192, 26.6, 7800, 350},
    {"lpddr4-3200-x32", "LPDDR4-3200, two x16 channels used as one x32", 60, 12.8, 12.8, true, 8,
     4096, 36, 3904, 280},
    {"hbm2-pc", "one HBM2 pseudo-channel (64 bits at 2 Gb/s per pin)", 55, 16, 16, true, 16, 1024,
     28, 3900, 350},
};

}  // namespace

MemoryTiming MemoryPreset::timing(double clock_mhz) const {
  double cycle_ns = 1000.0 / clock_mhz;
  MemoryTiming t;
  t.name = name;
  t.latency = latency_ns / cycle_ns;
  t.read_bytes_per_cycle = read_gbps * cycle_ns;
  t.write_bytes_per_cycle = write_gbps * cycle_ns;
  t.shared_bus = shared_bus;
  t.banks = banks;
  t.row_bytes = row_bytes;
  t.row_miss = row_miss_ns / cycle_ns;
  t.refresh_interval = trefi_ns / cycle_ns;
  t.refresh_cycles = trfc_ns / cycle_ns;
  return t;
}

std::span<const MemoryPreset> memory_presets() { return kPresets; }

const MemoryPreset& memory_preset(const std::string& name) {
  std::string known;
  for (const MemoryPreset& p : kPresets) {
    if (name == p.name) return p;
    known += fmt::format(" {}", p.name);
  }
  throw hw::Error(fmt::format("systemc: unknown memory preset '{}'; the presets are:{}", name, known));
}

void validate(const MemoryTiming& t) {
  auto fail = [&](const char* field, double v, const char* want) {
    throw hw::Error(fmt::format("systemc: memory '{}': {} is {}; it must be {}", t.name, field, v, want));
  };
  if (!(t.latency >= 0)) fail("latency", t.latency, "at least 0 cycles");
  if (!(t.read_bytes_per_cycle > 0)) fail("read bandwidth", t.read_bytes_per_cycle, "above 0 bytes per cycle");
  if (!(t.write_bytes_per_cycle > 0)) fail("write bandwidth", t.write_bytes_per_cycle, "above 0 bytes per cycle");
  if (t.banks < 0) fail("banks", t.banks, "0 (no bank model) or more");
  if (t.banks > 0 && t.row_bytes == 0) fail("row bytes", 0, "above 0 when there are banks");
  if (t.refresh_interval < 0 || t.refresh_cycles < 0) fail("refresh", t.refresh_cycles, "at least 0");
  if (t.refresh_interval > 0 && t.refresh_cycles >= t.refresh_interval)
    fail("refresh cycles (tRFC)", t.refresh_cycles, "below the refresh interval (tREFI)");
}

MemoryModel::MemoryModel(sc_core::sc_module_name name, std::span<uint8_t> storage,
                         const MemoryTiming& t, sc_core::sc_time period, int port_bytes)
    : sc_module(name), socket("socket"), mem_(storage), t_(t), period_(period),
      port_bytes_(port_bytes) {
  validate(t);
  socket.register_nb_transport_fw(this, &MemoryModel::nb_transport_fw);
  socket.register_b_transport(this, &MemoryModel::b_transport);
  socket.register_transport_dbg(this, &MemoryModel::transport_dbg);
  reset();
}

void MemoryModel::reset() {
  rd_free_ = wr_free_ = 0;
  open_row_.assign(static_cast<size_t>(t_.banks), -1);
}

double MemoryModel::access(uint64_t addr, double start) {
  double extra = 0;
  if (t_.refresh_interval > 0) {
    auto epoch = static_cast<int64_t>(start / t_.refresh_interval);
    double into = start - double(epoch) * t_.refresh_interval;
    if (into < t_.refresh_cycles) {
      extra += t_.refresh_cycles - into;
      ++stats_.refresh_stalls;
    }
    if (epoch != refresh_epoch_) {  // a refresh closed every row
      refresh_epoch_ = epoch;
      std::fill(open_row_.begin(), open_row_.end(), -1);
    }
  }
  if (t_.banks > 0) {
    uint64_t row_index = addr / t_.row_bytes;
    size_t bank = row_index % static_cast<uint64_t>(t_.banks);
    auto row = static_cast<int64_t>(row_index / static_cast<uint64_t>(t_.banks));
    if (open_row_[bank] == row) {
      ++stats_.row_hits;
    } else {
      ++stats_.row_misses;
      extra += t_.row_miss;
      open_row_[bank] = row;
    }
  }
  return extra;
}

void MemoryModel::serve(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  uint64_t addr = p.get_address();
  uint64_t len = p.get_data_length();
  if (addr > mem_.size() || len > mem_.size() - addr) {
    p.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    delay += sc_core::sc_time(t_.latency * period_.to_double(), sc_core::SC_PS);
    return;
  }
  bool write = p.is_write();
  double now = (sc_core::sc_time_stamp() + delay) / period_;
  double bpc = write ? t_.write_bytes_per_cycle : t_.read_bytes_per_cycle;
  double& bus = t_.shared_bus ? rd_free_ : (write ? wr_free_ : rd_free_);
  double start = std::max(now, bus);
  start += access(addr, start);
  double transfer = double(len) / bpc;
  bus = start + transfer;
  double ready = start + t_.latency;
  uint8_t* data = p.get_data_ptr();
  const uint8_t* be = p.get_byte_enable_ptr();
  unsigned be_len = p.get_byte_enable_length();
  if (write) {
    for (uint64_t i = 0; i < len; ++i)
      if (!be || be[i % be_len] == TLM_BYTE_ENABLED) mem_[addr + i] = data[i];
    ++stats_.write_bursts;
    stats_.write_bytes += len;
    stats_.write_busy += transfer;
  } else {
    std::memcpy(data, mem_.data() + addr, len);
    ++stats_.read_bursts;
    stats_.read_bytes += len;
    stats_.read_busy += transfer;
  }
  if (auto* bt = p.get_extension<BurstTiming>()) bt->beat_interval = std::max(1.0, port_bytes_ / bpc);
  delay = (ready - (sc_core::sc_time_stamp() / period_)) * period_;
  p.set_response_status(tlm::TLM_OK_RESPONSE);
}

tlm::tlm_sync_enum MemoryModel::nb_transport_fw(tlm::tlm_generic_payload& p, tlm::tlm_phase& phase,
                                                sc_core::sc_time& delay) {
  if (phase != tlm::BEGIN_REQ) return tlm::TLM_ACCEPTED;
  serve(p, delay);
  phase = tlm::BEGIN_RESP;
  return tlm::TLM_COMPLETED;
}

void MemoryModel::b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) { serve(p, delay); }

unsigned MemoryModel::transport_dbg(tlm::tlm_generic_payload& p) {
  uint64_t addr = p.get_address();
  uint64_t len = p.get_data_length();
  if (addr > mem_.size() || len > mem_.size() - addr) return 0;
  if (p.is_write())
    std::memcpy(mem_.data() + addr, p.get_data_ptr(), len);
  else
    std::memcpy(p.get_data_ptr(), mem_.data() + addr, len);
  return static_cast<unsigned>(len);
}

}  // namespace kiln::sim::sc
