#include "hw/sim/rtl/axi_dram.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::sim {

AxiDram::AxiDram(std::span<uint8_t> mem, const DramTiming& timing, int bus_bytes,
                 const InjectedFault& fault)
    : mem_(mem), timing_(timing), bus_bytes_(bus_bytes), rng_(timing.seed), inject_(fault) {}

void AxiDram::note_fault(const char* what, uint64_t addr) {
  if (fault_.empty()) {
    fault_ = fmt::format("DRAM {} of {} bytes at 0x{:x} lies outside the {} bytes of DRAM", what,
                         bus_bytes_, addr, mem_.size());
  }
}

void AxiDram::reset() {
  reads_.clear();
  writes_.clear();
  responses_.clear();
  r_held_ = b_held_ = false;
  ar_offer_ = aw_offer_ = w_offer_ = Offer{};
  fault_.clear();
  fault_id_ = -1;
  protocol_.clear();
  hung_ = false;
}

void AxiDram::drive(TopIn& in) {
  // Back-pressure: each ready drops and each new valid waits with probability 1/3.
  auto stall = [&] { return timing_.backpressure && rng_() % 3 == 0; };
  bool stall_ar = stall(), stall_aw = stall(), stall_w = stall(), stall_r = stall(),
       stall_b = stall();

  // A hung slave raises nothing new; a valid already offered stays (AXI).
  stall_ar = stall_ar || hung_;
  stall_aw = stall_aw || hung_;
  stall_w = stall_w || hung_;
  stall_r = stall_r || hung_;
  stall_b = stall_b || hung_;
  in.m_arready = reads_.size() < kMaxOutstanding && !stall_ar;
  in.m_awready = writes_.size() < kMaxOutstanding && !stall_aw;

  in.m_rvalid = false;
  in.m_rlast = false;
  in.m_rdata = 0;
  in.m_rresp = 0;
  if (!reads_.empty()) {
    const Burst& b = reads_.front();
    bool ready = b.ready_at <= cycle_ && rd_budget_ >= bus_bytes_;
    if (r_held_ || (ready && !stall_r)) {
      uint64_t addr = b.addr + uint64_t(b.beat) * bus_bytes_;
      in.m_rvalid = true;
      in.m_rid = b.id;
      in.m_rlast = b.beat == b.beats - 1;
      if (b.injected) {
        in.m_rresp = 2;  // SLVERR, data zero
      } else if (in_range(addr)) {
        for (int i = 0; i < bus_bytes_; ++i) in.m_rdata |= uint64_t{mem_[addr + i]} << (8 * i);
      } else {
        in.m_rresp = 2;  // SLVERR
      }
    }
  }

  // Write data is taken only for a burst whose address has arrived.
  bool w_open = false;
  for (const Burst& b : writes_) w_open = w_open || b.beat < b.beats;
  in.m_wready = w_open && wr_budget_ >= bus_bytes_ && !stall_w;

  in.m_bvalid = false;
  in.m_bresp = 0;
  if (!responses_.empty()) {
    const Burst& b = responses_.front();
    if (b_held_ || (b.ready_at <= cycle_ && !stall_b)) {
      in.m_bvalid = true;
      in.m_bid = b.id;
      in.m_bresp = b.resp;
    }
  }
}

void AxiDram::check_offer(Offer& o, const char* channel, bool valid, bool ready, uint64_t a,
                          uint64_t b) {
  if (o.pending && (!valid || a != o.a || b != o.b) && protocol_.empty()) {
    protocol_ = fmt::format("AXI protocol: at cycle {} the master {} {} before the slave took it",
                            cycle_, valid ? "changed" : "dropped", channel);
  }
  o = {valid && !ready, a, b};
}

void AxiDram::update(const TopIn& in, const TopOut& out) {
  check_offer(ar_offer_, "ARVALID/ARADDR/ARLEN/ARID", out.m_arvalid, in.m_arready,
              out.m_araddr, uint64_t{out.m_arlen} << 8 | out.m_arid);
  check_offer(aw_offer_, "AWVALID/AWADDR/AWLEN", out.m_awvalid, in.m_awready, out.m_awaddr,
              out.m_awlen);
  check_offer(w_offer_, "WVALID/WDATA/WSTRB/WLAST", out.m_wvalid, in.m_wready, out.m_wdata,
              uint64_t{out.m_wstrb} << 1 | out.m_wlast);
  // Bursts: bus-aligned (what this model serves) and within one 4 KiB page (AXI4).
  auto check_burst = [&](const char* what, uint64_t addr, int beats) {
    bool aligned = addr % bus_bytes_ == 0;
    bool one_page = addr % 4096 + uint64_t(beats) * bus_bytes_ <= 4096;
    if ((!aligned || !one_page) && protocol_.empty()) {
      protocol_ = fmt::format("AXI protocol: at cycle {} a {} burst of {} beats at 0x{:x} {}",
                              cycle_, what, beats, addr,
                              aligned ? "crosses a 4 KiB boundary" : "is not bus-aligned");
    }
  };
  if (in.m_arready && out.m_arvalid) check_burst("read", out.m_araddr, out.m_arlen + 1);
  if (in.m_awready && out.m_awvalid) check_burst("write", out.m_awaddr, out.m_awlen + 1);
  if (in.m_arready && out.m_arvalid) {
    ++read_bursts_;
    bool inject = inject_.kind == InjectedFault::Kind::kDramReadError && read_bursts_ == inject_.n;
    reads_.push_back({.id = out.m_arid, .addr = out.m_araddr, .beats = out.m_arlen + 1,
                      .ready_at = cycle_ + static_cast<uint64_t>(timing_.latency),
                      .injected = inject});
  }
  if (in.m_awready && out.m_awvalid) {
    writes_.push_back({.id = 0, .addr = out.m_awaddr, .beats = out.m_awlen + 1});
  }
  r_held_ = in.m_rvalid && !out.m_rready;
  if (in.m_rvalid && out.m_rready) {
    Burst& b = reads_.front();
    if (b.injected && fault_.empty()) {
      fault_ = fmt::format("DRAM read burst #{} ({} beats at 0x{:x}, ARID {}) answered SLVERR: "
                           "injected fault {}",
                           read_bursts_ - reads_.size() + 1, b.beats, b.addr, b.id, inject_.text);
      fault_id_ = b.id;
    } else if (in.m_rresp && fault_.empty()) {
      note_fault("read", b.addr + uint64_t(b.beat) * bus_bytes_);
      fault_id_ = b.id;
    }
    rd_budget_ -= bus_bytes_;
    if (++b.beat == b.beats) reads_.pop_front();
    // The hang starts after a handshake, so that no valid is dropped.
    if (++read_beats_ == inject_.n && inject_.kind == InjectedFault::Kind::kDramHang) hung_ = true;
  }
  if (in.m_wready && out.m_wvalid) {
    auto it = std::find_if(writes_.begin(), writes_.end(),
                           [](const Burst& b) { return b.beat < b.beats; });
    uint64_t addr = it->addr + uint64_t(it->beat) * bus_bytes_;
    if (out.m_wlast != (it->beat == it->beats - 1) && protocol_.empty()) {
      protocol_ = fmt::format("AXI protocol: at cycle {} WLAST is {} on beat {} of a {}-beat burst",
                              cycle_, out.m_wlast, it->beat + 1, it->beats);
    }
    bool ok = in_range(addr);
    if (ok) {
      for (int i = 0; i < bus_bytes_; ++i)
        if (out.m_wstrb >> i & 1) mem_[addr + i] = static_cast<uint8_t>(out.m_wdata >> (8 * i));
    } else {
      note_fault("write", addr);
      it->resp = 2;
    }
    wr_budget_ -= bus_bytes_;
    if (++it->beat == it->beats) {
      responses_.push_back({.id = 0, .addr = it->addr, .beats = 0,
                            .ready_at = cycle_ + static_cast<uint64_t>(timing_.latency),
                            .resp = it->resp});
    }
  }
  // Completed write bursts leave the address queue in order.
  while (!writes_.empty() && writes_.front().beat == writes_.front().beats) writes_.pop_front();
  b_held_ = in.m_bvalid && !out.m_bready;
  if (in.m_bvalid && out.m_bready) responses_.pop_front();

  // Bandwidth: a budget of bytes refilled every cycle, capped so idle time is not banked.
  int64_t cap = std::max<int64_t>(bus_bytes_, timing_.bytes_per_cycle);
  rd_budget_ = std::min(rd_budget_ + timing_.bytes_per_cycle, cap);
  wr_budget_ = std::min(wr_budget_ + timing_.bytes_per_cycle, cap);
  ++cycle_;
}

std::string AxiDram::describe() const {
  return fmt::format("DRAM: {} read bursts and {} write bursts outstanding, {} write responses "
                     "pending{}",
                     reads_.size(), writes_.size(), responses_.size(),
                     hung_ ? fmt::format("; the DRAM slave has stopped answering (injected fault "
                                         "{}, after {} read beats)",
                                         inject_.text, read_beats_)
                           : "");
}

}  // namespace kiln::sim
