#include "hw/sim/systemc/axi_tlm_bridge.h"

#include <fmt/format.h>

#include <cmath>

#include "hw/sim/systemc/memory_model.h"

namespace kiln::sim::sc {

AxiTlmBridge::AxiTlmBridge(sc_core::sc_module_name name, TopSignals& s, int bus_bytes,
                           sc_core::sc_time period, uint64_t dram_base, uint64_t dram_bytes,
                           bool backpressure, uint64_t seed)
    : sc_module(name), socket("socket"), s_(s), bus_bytes_(bus_bytes), period_(period),
      dram_base_(dram_base), dram_bytes_(dram_bytes), backpressure_(backpressure), rng_(seed) {
  payload_.set_extension(new BurstTiming);
  SC_METHOD(on_clock);
  sensitive << s_.clk->posedge_event();
  dont_initialize();
}

void AxiTlmBridge::reset() {
  reads_.clear();
  writes_.clear();
  responses_.clear();
  d_ = Drive{};
}

void AxiTlmBridge::on_clock() {
  // This edge ends cycle c (what was sampled is that cycle's) and starts c + 1.
  double cycle = std::round(sc_core::sc_time_stamp() / period_) - 1;
  if (!s_.rst_n.read()) {
    reset();
  } else {
    update(cycle);
  }
  drive(cycle + 1);
}

void AxiTlmBridge::check_burst(const char* what, uint64_t addr, int beats, double cycle) {
  bool aligned = addr % uint64_t(bus_bytes_) == 0;
  bool one_page = addr % 4096 + uint64_t(beats) * uint64_t(bus_bytes_) <= 4096;
  if ((!aligned || !one_page) && protocol_.empty()) {
    protocol_ = fmt::format("AXI protocol: at cycle {} a {} burst of {} beats at 0x{:x} {}", cycle,
                            what, beats, addr,
                            aligned ? "crosses a 4 KiB boundary" : "is not bus-aligned");
  }
}

double AxiTlmBridge::transact(tlm::tlm_command cmd, uint64_t addr, std::vector<uint8_t>& data,
                              std::vector<uint8_t>* enable, bool& error, double cycle) {
  if (addr > dram_bytes_ || data.size() > dram_bytes_ - addr) {
    if (fault_.empty()) {
      fault_ = fmt::format("DRAM {} of {} bytes at 0x{:x} lies outside the {} bytes of DRAM",
                           cmd == tlm::TLM_READ_COMMAND ? "read" : "write", data.size(), addr,
                           dram_bytes_);
    }
    error = true;
    return cycle + 1;
  }
  payload_.set_command(cmd);
  payload_.set_address(dram_base_ + addr);
  payload_.set_data_ptr(data.data());
  payload_.set_data_length(static_cast<unsigned>(data.size()));
  payload_.set_streaming_width(static_cast<unsigned>(data.size()));
  payload_.set_byte_enable_ptr(enable ? enable->data() : nullptr);
  payload_.set_byte_enable_length(enable ? static_cast<unsigned>(enable->size()) : 0);
  payload_.set_dmi_allowed(false);
  payload_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  tlm::tlm_sync_enum s = socket->nb_transport_fw(payload_, phase, delay);
  error = s != tlm::TLM_COMPLETED || payload_.is_response_error();
  return cycle + delay / period_;
}

void AxiTlmBridge::update(double cycle) {
  bool arvalid = s_.m_arvalid.read(), awvalid = s_.m_awvalid.read(), wvalid = s_.m_wvalid.read();
  bool rready = s_.m_rready.read(), bready = s_.m_bready.read();
  if (d_.arready && arvalid) {
    ReadBurst b;
    b.id = s_.m_arid.read();
    b.addr = s_.m_araddr.read();
    b.beats = int(s_.m_arlen.read()) + 1;
    check_burst("read", b.addr, b.beats, cycle);
    b.data.resize(size_t(b.beats) * size_t(bus_bytes_));
    b.ready = transact(tlm::TLM_READ_COMMAND, b.addr, b.data, nullptr, b.error, cycle);
    b.interval = payload_.get_extension<BurstTiming>()->beat_interval;
    if (b.error && fault_.empty())
      fault_ = fmt::format("the memory refused the read burst of {} bytes at 0x{:x}", b.data.size(),
                           b.addr);
    reads_.push_back(std::move(b));
  }
  if (d_.rvalid && rready) {
    if (++reads_.front().beat == reads_.front().beats) reads_.pop_front();
  }
  if (d_.awready && awvalid) {
    WriteBurst b;
    b.addr = s_.m_awaddr.read();
    b.beats = int(s_.m_awlen.read()) + 1;
    check_burst("write", b.addr, b.beats, cycle);
    writes_.push_back(std::move(b));
  }
  if (d_.wready && wvalid) {
    WriteBurst& b = writes_.front();
    bool last = b.beat == b.beats - 1;
    if (s_.m_wlast.read() != last && protocol_.empty()) {
      protocol_ = fmt::format("AXI protocol: at cycle {} WLAST is {} on beat {} of a {}-beat burst",
                              cycle, s_.m_wlast.read(), b.beat + 1, b.beats);
    }
    uint64_t data = s_.m_wdata.read();
    uint32_t strobe = s_.m_wstrb.read();
    for (int i = 0; i < bus_bytes_; ++i) {
      b.data.push_back(static_cast<uint8_t>(data >> (8 * i)));
      b.enable.push_back((strobe >> i & 1) ? TLM_BYTE_ENABLED : TLM_BYTE_DISABLED);
    }
    if (++b.beat == b.beats) {
      bool error = false;
      double ready = transact(tlm::TLM_WRITE_COMMAND, b.addr, b.data, &b.enable, error, cycle);
      if (error && fault_.empty())
        fault_ = fmt::format("the memory refused the write burst of {} bytes at 0x{:x}",
                             b.data.size(), b.addr);
      responses_.push_back({ready, error ? 2u : 0u});
      writes_.pop_front();
    }
  }
  if (d_.bvalid && bready) responses_.pop_front();
  // Valids not taken stay up (AXI): remembered in d_ for drive().
  d_.rvalid = d_.rvalid && !rready;
  d_.bvalid = d_.bvalid && !bready;
}

void AxiTlmBridge::drive(double cycle) {
  auto stall = [&] { return backpressure_ && rng_() % 3 == 0; };
  bool stall_ar = stall(), stall_aw = stall(), stall_w = stall(), stall_r = stall(),
       stall_b = stall();
  bool r_held = d_.rvalid, b_held = d_.bvalid;
  d_.arready = reads_.size() < kMaxOutstanding && !stall_ar;
  d_.awready = writes_.size() < kMaxOutstanding && responses_.size() < kMaxOutstanding && !stall_aw;
  d_.wready = !writes_.empty() && !stall_w;
  d_.rvalid = false;
  d_.rlast = false;
  d_.rdata = 0;
  d_.rresp = 0;
  if (!reads_.empty()) {
    const ReadBurst& b = reads_.front();
    bool ready = b.ready + b.beat * b.interval <= cycle + 1e-9;
    if (r_held || (ready && !stall_r)) {
      d_.rvalid = true;
      d_.rid = b.id;
      d_.rlast = b.beat == b.beats - 1;
      d_.rresp = b.error ? 2 : 0;
      for (int i = 0; i < bus_bytes_; ++i)
        d_.rdata |= uint64_t{b.data[size_t(b.beat) * size_t(bus_bytes_) + size_t(i)]} << (8 * i);
    }
  }
  d_.bvalid = false;
  d_.bresp = 0;
  if (!responses_.empty()) {
    const Response& r = responses_.front();
    if (b_held || (r.ready <= cycle + 1e-9 && !stall_b)) {
      d_.bvalid = true;
      d_.bresp = r.resp;
    }
  }
  s_.m_arready.write(d_.arready);
  s_.m_awready.write(d_.awready);
  s_.m_wready.write(d_.wready);
  s_.m_rvalid.write(d_.rvalid);
  s_.m_rlast.write(d_.rlast);
  s_.m_rid.write(d_.rid);
  s_.m_rdata.write(d_.rdata);
  s_.m_rresp.write(d_.rresp);
  s_.m_bvalid.write(d_.bvalid);
  s_.m_bid.write(0);
  s_.m_bresp.write(d_.bresp);
}

std::string AxiTlmBridge::describe() const {
  return fmt::format("AXI-to-TLM bridge: {} read bursts and {} write bursts outstanding, {} write "
                     "responses pending",
                     reads_.size(), writes_.size(), responses_.size());
}

}  // namespace kiln::sim::sc
