// The ISA contract that hw/spec owns beyond the bit layouts: which module runs an
// instruction, the token queues between modules, buffer depths, the debug-port layout,
// and the generated SystemVerilog package that carries them to the RTL.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <regex>
#include <set>
#include <string>

#include <fmt/format.h>

#include <map>

#include "hw/spec/config.h"
#include "hw/spec/config_files.h"
#include "hw/spec/bus_ports.h"
#include "hw/spec/debug_ports.h"
#include "hw/spec/host_link_protocol.h"
#include "hw/spec/isa.h"
#include "hw/spec/regs.h"
#include "hw/spec/rtl_params.h"

namespace kiln::hw {
namespace {

TEST(Contract, ModuleOfFollowsIsaMd) {
  for (MemType m : kMemTypes) {
    bool to_load = m == MemType::kInp || m == MemType::kWgt;
    EXPECT_EQ(module_of(Opcode::kLoad, m), to_load ? Module::kLoad : Module::kCompute)
        << mem_type_name(m);
    EXPECT_EQ(module_of(Opcode::kStore, m), Module::kStore);
  }
  for (Opcode op : {Opcode::kGemm, Opcode::kAlu, Opcode::kFinish})
    EXPECT_EQ(module_of(op, MemType::kInp), Module::kCompute) << opcode_name(op);
  // An opcode no enumerator names goes where fetch sends it: compute.
  EXPECT_EQ(module_of(static_cast<Opcode>(7), MemType::kInp), Module::kCompute);
  Insn store;
  store.opcode = Opcode::kStore;
  EXPECT_EQ(module_of(store), Module::kStore);
}

TEST(Contract, TokenQueuesJoinNeighboursOnly) {
  EXPECT_EQ(token_queue(Module::kLoad, Module::kCompute), TokenQueue::kLoadToCompute);
  EXPECT_EQ(token_queue(Module::kCompute, Module::kLoad), TokenQueue::kComputeToLoad);
  EXPECT_EQ(token_queue(Module::kCompute, Module::kStore), TokenQueue::kComputeToStore);
  EXPECT_EQ(token_queue(Module::kStore, Module::kCompute), TokenQueue::kStoreToCompute);
  EXPECT_FALSE(token_queue(Module::kLoad, Module::kStore));
  EXPECT_FALSE(token_queue(Module::kStore, Module::kLoad));
  EXPECT_FALSE(token_queue(Module::kCompute, Module::kCompute));
  EXPECT_EQ(token_queue_name(TokenQueue::kComputeToStore), "compute->store");
}

TEST(Contract, TokenLinksOfEachModule) {
  TokenLinks load = token_links(Module::kLoad);
  EXPECT_FALSE(load.pop_prev);
  EXPECT_FALSE(load.push_prev);
  EXPECT_EQ(load.pop_next, TokenQueue::kComputeToLoad);
  EXPECT_EQ(load.push_next, TokenQueue::kLoadToCompute);
  TokenLinks compute = token_links(Module::kCompute);
  EXPECT_EQ(compute.pop_prev, TokenQueue::kLoadToCompute);
  EXPECT_EQ(compute.pop_next, TokenQueue::kStoreToCompute);
  EXPECT_EQ(compute.push_prev, TokenQueue::kComputeToLoad);
  EXPECT_EQ(compute.push_next, TokenQueue::kComputeToStore);
  TokenLinks store = token_links(Module::kStore);
  EXPECT_EQ(store.pop_prev, TokenQueue::kComputeToStore);
  EXPECT_EQ(store.push_prev, TokenQueue::kStoreToCompute);
  EXPECT_FALSE(store.pop_next);
  EXPECT_FALSE(store.push_next);
}

TEST(Contract, NoopInsnRunsOnItsModuleAndMovesNoData) {
  for (int k = 0; k < kNumModules; ++k) {
    Module m = static_cast<Module>(k);
    Insn noop = noop_insn(m);
    EXPECT_EQ(module_of(noop), m) << module_name(m);
    EXPECT_EQ(noop.x_size, 0u) << module_name(m);
  }
}

TEST(Contract, DepthsOfEveryBuffer) {
  Config cfg = Config::vta_default();
  EXPECT_EQ(mem_depth(cfg, MemType::kUop), 8192u);
  EXPECT_EQ(mem_depth(cfg, MemType::kInp), 2048u);
  EXPECT_EQ(mem_depth(cfg, MemType::kWgt), 1024u);
  EXPECT_EQ(mem_depth(cfg, MemType::kAcc), 2048u);
  EXPECT_EQ(mem_depth(cfg, MemType::kOut), 2048u);
}

TEST(Contract, HeaderReadsWhatFetchReadsOfAnyBits) {
  InsnLayout layout(Config::vta_default());
  // Opcode 7 with every flag set and memory_type 6: nothing decodes, the header reads.
  Insn h = layout.header({7 | (0xfull << 3) | (6ull << 7), 0});
  EXPECT_EQ(static_cast<int>(h.opcode), 7);
  EXPECT_EQ(static_cast<int>(h.memory_type), 6);
  EXPECT_TRUE(h.pop_prev_dep && h.pop_next_dep && h.push_prev_dep && h.push_next_dep);
  EXPECT_EQ(module_of(h), Module::kCompute);
  Insn load;
  load.opcode = Opcode::kLoad;
  load.memory_type = MemType::kWgt;
  load.push_next_dep = true;
  Insn back = layout.header(layout.encode(load));
  EXPECT_EQ(module_of(back), Module::kLoad);
  EXPECT_TRUE(back.push_next_dep);
  EXPECT_FALSE(back.pop_next_dep);
}

TEST(Contract, DebugStateFieldsFitAndDoNotOverlap) {
  for (auto fields : {std::span<const dbg::BitField>(dbg::kDecoupledState),
                      std::span<const dbg::BitField>(dbg::kInorderDbgState)}) {
    uint64_t used = 0;
    for (const dbg::BitField& f : fields) {
      uint64_t mask = ((uint64_t{1} << f.width) - 1) << f.lsb;
      EXPECT_EQ(used & mask, 0u) << f.name;
      EXPECT_LE(f.lsb + f.width, dbg::kStateBits) << f.name;
      used |= mask;
    }
  }
  EXPECT_EQ(dbg::kLoadState.get(uint64_t{5} << dbg::kLoadState.lsb), 5u);
  uint64_t tokens = uint64_t{3} << (dbg::kTokenCountBits * 2);
  EXPECT_EQ(dbg::token_count(tokens, TokenQueue::kComputeToStore), 3u);
  EXPECT_EQ(dbg::token_count(tokens, TokenQueue::kComputeToLoad), 0u);
  EXPECT_EQ(dbg::queue_count(uint64_t{9} << dbg::kQueueCountBits, Module::kCompute), 9u);
}

// The members of `typedef struct packed {...} name;` in the package, with the lsb each
// gets from the widths declared above it.
std::vector<std::tuple<std::string, int, int>> struct_members(const std::string& pkg,
                                                              const std::string& name) {
  size_t end = pkg.find("} " + name + ";");
  size_t begin = pkg.rfind("typedef struct packed {", end);
  EXPECT_NE(end, std::string::npos) << name;
  std::string body = pkg.substr(begin, end - begin);
  // An enum type, or a vector typedef, is as wide as the parameter it names; a struct
  // type as its members.
  std::map<std::string, int> params, type_width;
  std::regex param(R"(localparam int (\w+) = (\d+);)");
  for (std::sregex_iterator it(pkg.begin(), pkg.end(), param), e; it != e; ++it)
    params[(*it)[1]] = std::stoi((*it)[2]);
  std::regex enum_type(R"(typedef enum logic \[(\w+)-1:0\] \{[^}]*\} (\w+);)");
  for (std::sregex_iterator it(pkg.begin(), pkg.end(), enum_type), e; it != e; ++it)
    type_width[(*it)[2]] = params.at((*it)[1]);
  std::regex vector_type(R"(typedef logic \[(\w+)-1:0\] (\w+);)");
  for (std::sregex_iterator it(pkg.begin(), pkg.end(), vector_type), e; it != e; ++it)
    type_width[(*it)[2]] = params.at((*it)[1]);
  auto width_of = [&](const std::string& type) {
    if (auto it = type_width.find(type); it != type_width.end()) return it->second;
    int w = 0;
    for (const auto& [n, lsb, width] : struct_members(pkg, type)) w += width;
    return w;
  };
  std::regex member(R"(\n\s+(\w+)(?: \[(\d+):0\])? (\w+);)");
  std::vector<std::pair<std::string, int>> declared;  // name, width (MSB first)
  int total = 0;
  for (std::sregex_iterator it(body.begin(), body.end(), member), e; it != e; ++it) {
    const std::smatch& m = *it;
    int width = m[1] != "logic" ? width_of(m[1]) : m[2].matched ? std::stoi(m[2]) + 1 : 1;
    declared.emplace_back(m[3], width);
    total += width;
  }
  std::vector<std::tuple<std::string, int, int>> out;
  int top = total;
  for (const auto& [n, w] : declared) {
    top -= w;
    out.emplace_back(n, top, w);
  }
  return out;
}

// Every expected (name, lsb, width) is a member of `type` at that place, and the members
// fill `bits`.
void expect_struct(const std::string& pkg, const std::string& type,
                   const std::vector<std::tuple<std::string, int, int>>& expected, int bits) {
  auto members = struct_members(pkg, type);
  int total = 0;
  for (const auto& [n, lsb, w] : members) total += w;
  EXPECT_EQ(total, bits) << type;
  for (const auto& [name, lsb, width] : expected) {
    auto it = std::find_if(members.begin(), members.end(),
                           [&](const auto& m) { return std::get<0>(m) == name; });
    ASSERT_NE(it, members.end()) << type << " lacks " << name;
    EXPECT_EQ(std::get<1>(*it), lsb) << type << "." << name;
    EXPECT_EQ(std::get<2>(*it), width) << type << "." << name;
  }
}

template <class Fields>
std::vector<std::tuple<std::string, int, int>> places(const Fields& fields) {
  std::vector<std::tuple<std::string, int, int>> out;
  for (const auto& f : fields) out.emplace_back(std::string(f.name), f.lsb, f.width);
  return out;
}

// The generated package's structs place every field where InsnLayout and the debug
// tables do; its enums list every value.
TEST(Contract, PackageStructsMatchTheLayouts) {
  for (const char* name : {"default", "tiny"}) {
    Config cfg = load_config(name);
    InsnLayout layout(cfg);
    std::string pkg = rtl_params_package(cfg);
    using F = InsnLayout::Format;
    expect_struct(pkg, "mem_insn_t", places(layout.fields(F::kMem)), kInsnBytes * 8);
    expect_struct(pkg, "gemm_insn_t", places(layout.fields(F::kGemm)), kInsnBytes * 8);
    expect_struct(pkg, "alu_insn_t", places(layout.fields(F::kAlu)), kInsnBytes * 8);
    expect_struct(pkg, "dbg_state_t", places(dbg::kDecoupledState), dbg::kStateBits);
    expect_struct(pkg, "inorder_dbg_state_t", places(dbg::kInorderDbgState), dbg::kStateBits);
    for (AluOp op : kAluOps) {
      std::string name = std::string(alu_op_name(op));
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      EXPECT_NE(pkg.find(fmt::format("ALU_{} = 3'd{}", name, static_cast<int>(op))),
                std::string::npos)
          << name;
    }
    EXPECT_NE(pkg.find("OP_FINISH = 3'd3"), std::string::npos);
    EXPECT_NE(pkg.find("MEM_OUT = 3'd4"), std::string::npos);
    EXPECT_NE(pkg.find("localparam int COMPUTE_POP_NEXT = 3;"), std::string::npos);
    EXPECT_NE(pkg.find("localparam int LOAD_POP_PREV = -1;"), std::string::npos);
  }
}

// The host interface reaches the RTL as regs.h and host_link_protocol.h define it: the
// STATUS word's fields, the register offsets, the UART link's bytes.
TEST(Contract, PackageHostInterfaceMatchesRegs) {
  std::string pkg = rtl_params_package(load_config("default"));
  const int where_bits = regs::kStatusWhereModuleBits + regs::kStatusWhereMemBits;
  expect_struct(pkg, "status_t",
                {{"busy", std::countr_zero(regs::kStatusBusy), 1},
                 {"done", std::countr_zero(regs::kStatusDone), 1},
                 {"error", std::countr_zero(regs::kStatusError), 1},
                 {"cause", static_cast<int>(regs::kStatusCauseShift), regs::kStatusCauseBits},
                 {"where", static_cast<int>(regs::kStatusWhereShift), where_bits}},
                32);
  expect_struct(pkg, "status_where_t",
                {{"module_id",
                  static_cast<int>(regs::kStatusWhereModuleShift - regs::kStatusWhereShift),
                  regs::kStatusWhereModuleBits},
                 {"mem", 0, regs::kStatusWhereMemBits}},
                where_bits);
  auto has = [&](const std::string& text) { return pkg.find(text) != std::string::npos; };
  EXPECT_TRUE(has(fmt::format("REG_INSN_ADDR_HI = 8'h{:02x};", regs::kInsnAddrHi)));
  EXPECT_TRUE(has(fmt::format("REG_COUNTER_BASE = 8'h{:02x};", regs::kCounterBase)));
  EXPECT_TRUE(has(fmt::format("HL_MEM_READ = 8'h{:02x};", link::kMemRead)));
  EXPECT_TRUE(has(fmt::format("HL_ERR_FRAMING = 8'h{:02x};", link::kErrFraming)));
  EXPECT_TRUE(has(fmt::format("localparam int AXI_LEN_BITS = {};", bus::kAxiLenBits)));
}

}  // namespace
}  // namespace kiln::hw
