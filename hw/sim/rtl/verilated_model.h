#pragma once
// RtlModel for one Verilated configuration: V is the class Verilator generated for it
// (Vkiln_<name>). Included only by the generated per-configuration model_<name>.cc.

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "hw/sim/rtl/rtl_model.h"
#include "hw/spec/bus_ports.h"
#include "hw/spec/error.h"
#include "hw/spec/rtl_params.h"
#include "hw/sim/rtl/verilated_harness.h"

namespace kiln::sim {

// A field of a Verilated port (hw/spec's bits [lsb, lsb + width)), with the 32-bit word
// it starts in, its offset there and its mask worked out once: port_get and port_or run
// a few dozen times per simulated cycle.
inline uint64_t low_bits(int n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }
struct PortField {
  PortField() = default;
  PortField(const hw::dbg::BitField& f)  // NOLINT(google-explicit-constructor)
      : lsb(f.lsb), width(f.width), word(f.lsb / 32), off(f.lsb % 32),
        words((f.lsb % 32 + f.width + 31) / 32), mask(low_bits(f.width)) {}
  int lsb = 0, width = 0;
  int word = 0, off = 0, words = 0;  // words: how many 32-bit words it touches
  uint64_t mask = 0;
};

// Bits f of a Verilated port: an integer type (up to 64 bits) or a VlWide<N>.
template <class P>
[[gnu::always_inline]] inline uint64_t port_get(const P& p, const PortField& f) {
  return (static_cast<uint64_t>(p) >> f.lsb) & f.mask;
}
template <size_t N>
[[gnu::always_inline]] inline uint64_t port_get(const VlWide<N>& p, const PortField& f) {
  if (f.words == 1) return (p[f.word] >> f.off) & f.mask;
  if (f.words == 2) return ((p[f.word] | uint64_t{p[f.word + 1]} << 32) >> f.off) & f.mask;
  if (f.words == 3 && f.width <= 64) {  // a 64-bit field that does not start a word
    const uint64_t lo = p[f.word] | uint64_t{p[f.word + 1]} << 32;
    return ((lo >> f.off) | uint64_t{p[f.word + 2]} << (64 - f.off)) & f.mask;
  }
  uint64_t v = 0;
  for (int got = 0; got < f.width;) {
    const int bit = f.lsb + got, w = bit / 32, o = bit % 32;
    const int n = std::min(32 - o, f.width - got);
    v |= ((p[w] >> o) & low_bits(n)) << got;
    got += n;
  }
  return v;
}
// Ors v (of f.width bits) into bits f of a port that starts at zero.
template <class P>
[[gnu::always_inline]] inline void port_or(P& p, const PortField& f, uint64_t v) {
  p = static_cast<P>(p | (v << f.lsb));
}
template <size_t N>
[[gnu::always_inline]] inline void port_or(VlWide<N>& p, const PortField& f, uint64_t v) {
  if (f.words == 1) {
    p[f.word] |= static_cast<uint32_t>(v << f.off);
    return;
  }
  if (f.words == 2) {
    const uint64_t x = v << f.off;
    p[f.word] |= static_cast<uint32_t>(x);
    p[f.word + 1] |= static_cast<uint32_t>(x >> 32);
    return;
  }
  if (f.words == 3 && f.width <= 64) {
    const uint64_t x = v << f.off;
    p[f.word] |= static_cast<uint32_t>(x);
    p[f.word + 1] |= static_cast<uint32_t>(x >> 32);
    p[f.word + 2] |= static_cast<uint32_t>(v >> (64 - f.off));
    return;
  }
  for (int put = 0; put < f.width;) {
    const int bit = f.lsb + put, w = bit / 32, o = bit % 32;
    const int n = std::min(32 - o, f.width - put);
    p[w] |= static_cast<uint32_t>(((v >> put) & low_bits(n)) << o);
    put += n;
  }
}
template <class P>
void port_clear(P& p) {
  p = 0;
}
template <size_t N>
void port_clear(VlWide<N>& p) {
  for (size_t i = 0; i < N; ++i) p.at(i) = 0;
}

// Bit `bit` of word `word` of a Verilated memory (kiln_sram's `mem`), written first
// with `set`; `what` names the buffer in errors.
template <std::size_t W>
constexpr std::size_t wide_words(const VlWide<W>&) { return W; }
template <class T, std::size_t N>
constexpr std::size_t memory_depth(const VlUnpacked<T, N>&) { return N; }
template <class T, std::size_t N>
bool memory_bit(VlUnpacked<T, N>& mem, uint64_t word, uint32_t bit, std::optional<bool> set,
                std::string_view what) {
  if (word >= N)
    throw hw::Error(fmt::format("the {} buffer has {} words; there is no word {}", what, N, word));
  T& w = mem[word];
  if constexpr (std::is_integral_v<T>) {
    if (bit >= sizeof(T) * 8)
      throw hw::Error(fmt::format("the {} buffer's words have {} bits of storage; there is no bit {}",
                                  what, sizeof(T) * 8, bit));
    if (set) w = static_cast<T>((w & ~(T{1} << bit)) | (static_cast<T>(*set) << bit));
    return (w >> bit) & 1;
  } else {
    if (bit >= wide_words(w) * 32)
      throw hw::Error(fmt::format("the {} buffer's words have {} bits of storage; there is no bit {}",
                                  what, wide_words(w) * 32, bit));
    uint32_t& e = w.at(bit / 32);
    if (set) e = (e & ~(uint32_t{1} << (bit % 32))) | (uint32_t{*set} << (bit % 32));
    return (e >> (bit % 32)) & 1;
  }
}

// Where each signal of kiln_top's bus structs lies (hw/spec/bus_ports.h).
struct TopPortLayout {
  explicit TopPortLayout(int axi_data_bits) {
    auto st = hw::bus::bus_structs(axi_data_bits, hw::kRtlAxiAddrBits);
    auto f = [&](std::string_view name, std::string_view path) {
      return hw::bus::bus_field(st, name, path);
    };
    for (const auto& [name, bits] : {std::pair{"axil_req_t", &axil_req_bits},
                                     {"axil_rsp_t", &axil_rsp_bits},
                                     {"axi_req_t", &axi_req_bits},
                                     {"axi_rsp_t", &axi_rsp_bits}}) {
      for (const hw::bus::Struct& s : st)
        if (s.name == name) *bits = s.bits();
    }
    s_awvalid = f("axil_req_t", "aw_valid");
    s_awaddr = f("axil_req_t", "aw_addr");
    s_wvalid = f("axil_req_t", "w_valid");
    s_wdata = f("axil_req_t", "w_data");
    s_wstrb = f("axil_req_t", "w_strb");
    s_bready = f("axil_req_t", "b_ready");
    s_arvalid = f("axil_req_t", "ar_valid");
    s_araddr = f("axil_req_t", "ar_addr");
    s_rready = f("axil_req_t", "r_ready");
    s_awready = f("axil_rsp_t", "aw_ready");
    s_wready = f("axil_rsp_t", "w_ready");
    s_bvalid = f("axil_rsp_t", "b_valid");
    s_arready = f("axil_rsp_t", "ar_ready");
    s_rvalid = f("axil_rsp_t", "r_valid");
    s_rdata = f("axil_rsp_t", "r_data");
    m_arready = f("axi_rsp_t", "ar_ready");
    m_rvalid = f("axi_rsp_t", "r_valid");
    m_rid = f("axi_rsp_t", "r.id");
    m_rdata = f("axi_rsp_t", "r.data");
    m_rresp = f("axi_rsp_t", "r.resp");
    m_rlast = f("axi_rsp_t", "r.last");
    m_awready = f("axi_rsp_t", "aw_ready");
    m_wready = f("axi_rsp_t", "w_ready");
    m_bvalid = f("axi_rsp_t", "b_valid");
    m_bid = f("axi_rsp_t", "b.id");
    m_bresp = f("axi_rsp_t", "b.resp");
    m_arvalid = f("axi_req_t", "ar_valid");
    m_arid = f("axi_req_t", "ar.id");
    m_araddr = f("axi_req_t", "ar.addr");
    m_arlen = f("axi_req_t", "ar.len");
    m_rready = f("axi_req_t", "r_ready");
    m_awvalid = f("axi_req_t", "aw_valid");
    m_awaddr = f("axi_req_t", "aw.addr");
    m_awlen = f("axi_req_t", "aw.len");
    m_wvalid = f("axi_req_t", "w_valid");
    m_wdata = f("axi_req_t", "w.data");
    m_wstrb = f("axi_req_t", "w.strb");
    m_wlast = f("axi_req_t", "w.last");
    m_bready = f("axi_req_t", "b_ready");
  }
  int axil_req_bits = 0, axil_rsp_bits = 0, axi_req_bits = 0, axi_rsp_bits = 0;
  PortField s_awvalid, s_awaddr, s_wvalid, s_wdata, s_wstrb, s_bready, s_arvalid,
      s_araddr, s_rready, s_awready, s_wready, s_bvalid, s_arready, s_rvalid, s_rdata;
  PortField m_arready, m_rvalid, m_rid, m_rdata, m_rresp, m_rlast, m_awready, m_wready,
      m_bvalid, m_bid, m_bresp, m_arvalid, m_arid, m_araddr, m_arlen, m_rready, m_awvalid,
      m_awaddr, m_awlen, m_wvalid, m_wdata, m_wstrb, m_wlast, m_bready;
};

// The bits a Verilated port holds.
template <class P>
constexpr int port_bits() {
  return static_cast<int>(sizeof(P) * 8);
}

template <class V>
class VerilatedModel final : public RtlModel {
 public:
  VerilatedModel(const std::string& wave_file, int axi_data_bits)
      : h_(wave_file, "kiln_top"), l_(axi_data_bits) {
    V& t = h_.top();
    // A layout the Verilated ports cannot hold means the model and hw/spec disagree.
    if (l_.axil_req_bits > port_bits<decltype(t.s_axil_i)>() ||
        l_.axil_rsp_bits > port_bits<decltype(t.s_axil_o)>() ||
        l_.axi_req_bits > port_bits<decltype(t.m_axi_o)>() ||
        l_.axi_rsp_bits > port_bits<decltype(t.m_axi_i)>()) {
      throw hw::Error("the Verilated model's bus ports are narrower than hw/spec/bus_ports.h");
    }
  }

  void eval_low(const TopIn& in, TopOut& out) override {
    V& t = h_.top();
    t.rst_ni = in.rst_n;
    // The register port moves only while the host reads or writes a register (TopOut):
    // between accesses its inputs stay zero, so it is packed only around them.
    const bool axil = in.s_awvalid || in.s_wvalid || in.s_bready || in.s_arvalid || in.s_rready;
    if (axil || axil_was_driven_) {
      port_clear(t.s_axil_i);
      port_or(t.s_axil_i, l_.s_awvalid, in.s_awvalid);
      port_or(t.s_axil_i, l_.s_awaddr, in.s_awaddr);
      port_or(t.s_axil_i, l_.s_wvalid, in.s_wvalid);
      port_or(t.s_axil_i, l_.s_wdata, in.s_wdata);
      port_or(t.s_axil_i, l_.s_wstrb, in.s_wstrb);
      port_or(t.s_axil_i, l_.s_bready, in.s_bready);
      port_or(t.s_axil_i, l_.s_arvalid, in.s_arvalid);
      port_or(t.s_axil_i, l_.s_araddr, in.s_araddr);
      port_or(t.s_axil_i, l_.s_rready, in.s_rready);
    }
    // The memory's inputs and the core's requests stay the same for long stretches (a
    // GEMM loop runs from the scratchpads): each is packed or unpacked only on a change.
    const MemIn mem_in{in};
    if (!(mem_in == last_mem_in_)) {
      last_mem_in_ = mem_in;
      port_clear(t.m_axi_i);
      port_or(t.m_axi_i, l_.m_arready, in.m_arready);
      port_or(t.m_axi_i, l_.m_rvalid, in.m_rvalid);
      port_or(t.m_axi_i, l_.m_rid, in.m_rid);
      port_or(t.m_axi_i, l_.m_rdata, in.m_rdata);
      port_or(t.m_axi_i, l_.m_rresp, in.m_rresp);
      port_or(t.m_axi_i, l_.m_rlast, in.m_rlast);
      port_or(t.m_axi_i, l_.m_awready, in.m_awready);
      port_or(t.m_axi_i, l_.m_wready, in.m_wready);
      port_or(t.m_axi_i, l_.m_bvalid, in.m_bvalid);
      port_or(t.m_axi_i, l_.m_bid, in.m_bid);
      port_or(t.m_axi_i, l_.m_bresp, in.m_bresp);
    }
    h_.eval_low();
    if (axil) {
      const auto& s = t.s_axil_o;
      out.s_awready = port_get(s, l_.s_awready);
      out.s_wready = port_get(s, l_.s_wready);
      out.s_bvalid = port_get(s, l_.s_bvalid);
      out.s_arready = port_get(s, l_.s_arready);
      out.s_rvalid = port_get(s, l_.s_rvalid);
      out.s_rdata = static_cast<uint32_t>(port_get(s, l_.s_rdata));
    }
    axil_was_driven_ = axil;
    const auto& m = t.m_axi_o;
    if (!have_m_out_ || m != last_m_out_) {
      have_m_out_ = true;
      last_m_out_ = m;
      out.m_arvalid = port_get(m, l_.m_arvalid);
      out.m_arid = static_cast<uint8_t>(port_get(m, l_.m_arid));
      out.m_araddr = static_cast<uint32_t>(port_get(m, l_.m_araddr));
      out.m_arlen = static_cast<uint8_t>(port_get(m, l_.m_arlen));
      out.m_rready = port_get(m, l_.m_rready);
      out.m_awvalid = port_get(m, l_.m_awvalid);
      out.m_awaddr = static_cast<uint32_t>(port_get(m, l_.m_awaddr));
      out.m_awlen = static_cast<uint8_t>(port_get(m, l_.m_awlen));
      out.m_wvalid = port_get(m, l_.m_wvalid);
      out.m_wdata = port_get(m, l_.m_wdata);
      out.m_wstrb = static_cast<uint8_t>(port_get(m, l_.m_wstrb));
      out.m_wlast = port_get(m, l_.m_wlast);
      out.m_bready = port_get(m, l_.m_bready);
    }
    out.dbg_state = t.dbg_state_o;
    out.dbg_tokens = t.dbg_tokens_o;
    out.dbg_queues = t.dbg_queues_o;
    out.dbg_progress = t.dbg_progress_o;
  }

  void posedge() override { h_.posedge(); }

  // kiln_sram's arrays by the names Verilator gives them: kiln_top's INP and WGT, and
  // compute's UOP and ACC (two banks, its lower and upper half, unless ACC has two
  // words); kiln_inorder_axi's core holds all four.
  bool scratchpad_bit(hw::MemType mem, uint64_t word, uint32_t bit, std::optional<bool> set) override {
    auto* r = h_.top().rootp;
    const std::string_view what = hw::mem_type_name(mem);
    switch (mem) {
      case hw::MemType::kInp:
        if constexpr (requires { r->kiln_top__DOT__inp_buf__DOT__mem; })
          return memory_bit(r->kiln_top__DOT__inp_buf__DOT__mem, word, bit, set, what);
        if constexpr (requires { r->kiln_inorder_axi__DOT__core__DOT__inp_buf__DOT__mem; })
          return memory_bit(r->kiln_inorder_axi__DOT__core__DOT__inp_buf__DOT__mem, word, bit, set, what);
        break;
      case hw::MemType::kWgt:
        if constexpr (requires { r->kiln_top__DOT__wgt_buf__DOT__mem; })
          return memory_bit(r->kiln_top__DOT__wgt_buf__DOT__mem, word, bit, set, what);
        if constexpr (requires { r->kiln_inorder_axi__DOT__core__DOT__wgt_buf__DOT__mem; })
          return memory_bit(r->kiln_inorder_axi__DOT__core__DOT__wgt_buf__DOT__mem, word, bit, set, what);
        break;
      case hw::MemType::kUop:
        if constexpr (requires { r->kiln_top__DOT__compute__DOT__uop_buf__DOT__mem; })
          return memory_bit(r->kiln_top__DOT__compute__DOT__uop_buf__DOT__mem, word, bit, set, what);
        if constexpr (requires { r->kiln_inorder_axi__DOT__core__DOT__uop_buf__DOT__mem; })
          return memory_bit(r->kiln_inorder_axi__DOT__core__DOT__uop_buf__DOT__mem, word, bit, set, what);
        break;
      case hw::MemType::kAcc:
        if constexpr (requires {
                        r->kiln_top__DOT__compute__DOT__g_banks__DOT__g_bank__BRA__0__KET____DOT__acc_buf__DOT__mem;
                        r->kiln_top__DOT__compute__DOT__g_banks__DOT__g_bank__BRA__1__KET____DOT__acc_buf__DOT__mem;
                      }) {
          auto& lo = r->kiln_top__DOT__compute__DOT__g_banks__DOT__g_bank__BRA__0__KET____DOT__acc_buf__DOT__mem;
          auto& hi = r->kiln_top__DOT__compute__DOT__g_banks__DOT__g_bank__BRA__1__KET____DOT__acc_buf__DOT__mem;
          const uint64_t half = memory_depth(lo);
          if (word >= 2 * half)
            throw hw::Error(fmt::format("the acc buffer has {} words; there is no word {}", 2 * half, word));
          return word < half ? memory_bit(lo, word, bit, set, what) : memory_bit(hi, word - half, bit, set, what);
        }
        if constexpr (requires { r->kiln_top__DOT__compute__DOT__g_one_bank__DOT__acc_buf__DOT__mem; })
          return memory_bit(r->kiln_top__DOT__compute__DOT__g_one_bank__DOT__acc_buf__DOT__mem, word, bit, set, what);
        if constexpr (requires { r->kiln_inorder_axi__DOT__core__DOT__acc_buf__DOT__mem; })
          return memory_bit(r->kiln_inorder_axi__DOT__core__DOT__acc_buf__DOT__mem, word, bit, set, what);
        break;
      default:
        break;
    }
    throw hw::Error(fmt::format("this Verilated model has no {} array the harness can reach (kiln_sram's "
                                "`mem` under the names Verilator gave it when the harness was written)",
                                what));
  }

 private:
  VerilatedHarness<V> h_;
  TopPortLayout l_;
  bool axil_was_driven_ = false;  // the last eval_low drove the register port
  // The AXI4 master's inputs last packed into m_axi_i.
  struct MemIn {
    MemIn() = default;
    explicit MemIn(const TopIn& in)
        : rdata(in.m_rdata), arready(in.m_arready), rvalid(in.m_rvalid), rid(in.m_rid),
          rresp(in.m_rresp), rlast(in.m_rlast), awready(in.m_awready), wready(in.m_wready),
          bvalid(in.m_bvalid), bid(in.m_bid), bresp(in.m_bresp), valid(true) {}
    bool operator==(const MemIn&) const = default;
    uint64_t rdata = 0;
    bool arready = false, rvalid = false;
    uint8_t rid = 0, rresp = 0;
    bool rlast = false, awready = false, wready = false, bvalid = false;
    uint8_t bid = 0, bresp = 0;
    bool valid = false;  // false until the first pack: it then differs from any input
  };
  MemIn last_mem_in_;
  // m_axi_o as last unpacked into TopOut.
  std::remove_cvref_t<decltype(std::declval<V&>().m_axi_o)> last_m_out_{};
  bool have_m_out_ = false;
};

}  // namespace kiln::sim
