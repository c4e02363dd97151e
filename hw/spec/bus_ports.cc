#include "hw/spec/bus_ports.h"

#include <fmt/format.h>

#include <algorithm>

#include "hw/spec/error.h"

namespace kiln::hw::bus {

int Struct::bits() const {
  int n = 0;
  for (const Member& m : members) n += m.width;
  return n;
}

std::vector<Struct> bus_structs(int axi_data_bits, int axi_addr_bits) {
  const int dw = axi_data_bits;
  std::vector<Struct> s;
  // AXI4 channels (AR and AW carry the same fields)
  s.push_back({"axi_ax_t",
               {{"id", kAxiIdBits},
                {"addr", axi_addr_bits},
                {"len", kAxiLenBits},
                {"size", kAxiSizeBits},
                {"burst", kAxiBurstBits}}});
  s.push_back({"axi_w_t", {{"data", dw}, {"strb", dw / 8}, {"last", 1}}});
  s.push_back({"axi_b_t", {{"id", kAxiIdBits}, {"resp", kAxiRespBits}}});
  s.push_back({"axi_r_t", {{"id", kAxiIdBits}, {"data", dw}, {"resp", kAxiRespBits}, {"last", 1}}});
  const int ax = s[0].bits(), w = s[1].bits(), b = s[2].bits(), r = s[3].bits();
  s.push_back({"axi_req_t",
               {{"aw_valid", 1}, {"aw", ax, "axi_ax_t"}, {"w_valid", 1}, {"w", w, "axi_w_t"},
                {"b_ready", 1}, {"ar_valid", 1}, {"ar", ax, "axi_ax_t"}, {"r_ready", 1}}});
  s.push_back({"axi_rsp_t",
               {{"aw_ready", 1}, {"w_ready", 1}, {"b_valid", 1}, {"b", b, "axi_b_t"},
                {"ar_ready", 1}, {"r_valid", 1}, {"r", r, "axi_r_t"}}});
  // Inside kiln_top: one read client's share of the AXI4 read channels (fetch, load's
  // INP and WGT, compute's UOP and ACC through kiln_dma_reader), which
  // kiln_axi_rd_arbiter gathers onto the master port, adding the id, size and burst
  // type. The read data is the master's R channel, the same wires for every client, so
  // it is not part of the response.
  s.push_back({"rd_req_t",
               {{"ar_valid", 1}, {"ar_addr", axi_addr_bits}, {"ar_len", kAxiLenBits},
                {"r_ready", 1}}});
  s.push_back({"rd_rsp_t", {{"ar_ready", 1}, {"r_valid", 1}}});
  // AXI4-Lite (the register file)
  s.push_back({"axil_req_t",
               {{"aw_valid", 1}, {"aw_addr", kAxilAddrBits}, {"w_valid", 1},
                {"w_data", kAxilDataBits}, {"w_strb", kAxilDataBits / 8}, {"b_ready", 1},
                {"ar_valid", 1}, {"ar_addr", kAxilAddrBits}, {"r_ready", 1}}});
  s.push_back({"axil_rsp_t",
               {{"aw_ready", 1}, {"w_ready", 1}, {"b_valid", 1}, {"b_resp", kAxiRespBits},
                {"ar_ready", 1}, {"r_valid", 1}, {"r_data", kAxilDataBits}, {"r_resp", kAxiRespBits}}});
  // Device memory (kiln_inorder_top, kiln_devmem, kiln_host_bridge): one 64-bit word a
  // request; ready accepts it, rvalid brings a read's data, error marks either as failed.
  s.push_back({"mem_req_t",
               {{"valid", 1}, {"we", 1}, {"addr", kMemAddrBits}, {"wdata", kMemDataBits},
                {"wstrb", kMemDataBits / 8}}});
  s.push_back({"mem_rsp_t",
               {{"ready", 1}, {"rvalid", 1}, {"rdata", kMemDataBits}, {"error", 1}}});
  return s;
}

dbg::BitField bus_field(std::span<const Struct> structs, std::string_view name,
                        std::string_view path) {
  auto find = [&](std::string_view n) -> const Struct& {
    auto it = std::find_if(structs.begin(), structs.end(),
                           [&](const Struct& st) { return st.name == n; });
    if (it == structs.end()) throw Error(fmt::format("no bus struct '{}'", n));
    return *it;
  };
  const Struct* st = &find(name);
  int lsb = 0;
  for (;;) {
    std::string_view head = path.substr(0, path.find('.'));
    int top = st->bits();
    const Member* hit = nullptr;
    for (const Member& m : st->members) {
      top -= m.width;
      if (m.name == head) {
        hit = &m;
        break;
      }
    }
    if (hit == nullptr) throw Error(fmt::format("bus struct '{}' has no member '{}'", st->name, head));
    lsb += top;
    if (head.size() == path.size()) return {"", lsb, hit->width};
    if (hit->type.empty())
      throw Error(fmt::format("member '{}' of bus struct '{}' is no struct", head, st->name));
    st = &find(hit->type);
    path.remove_prefix(head.size() + 1);
  }
}

}  // namespace kiln::hw::bus
