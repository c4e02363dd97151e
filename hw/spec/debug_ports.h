#pragma once
// The layout of the cores' debug ports, which the simulation harness reads for its
// watchdog report and the activity timeline (hw/sim/rtl). kiln_top and
// kiln_inorder_top assemble dbg_state_o from the packed structs that rtl_params
// generates from these tables (kiln_cfg_pkg::dbg_state_t, inorder_dbg_state_t), so the
// RTL and the C++ read one layout.

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "hw/spec/isa.h"

namespace kiln::hw::dbg {

// Bits [lsb + width - 1 : lsb] of a debug port.
struct BitField {
  std::string_view name;  // the struct member's name in the generated package
  int lsb;
  int width;
  constexpr uint64_t get(uint64_t port) const {
    return (port >> lsb) & ((uint64_t{1} << width) - 1);
  }
};

// Width of dbg_state_o on every core.
inline constexpr int kStateBits = 16;

// kiln_top (the decoupled core): whether the accelerator runs, and the state of fetch
// (bit 0: its head waits for room in a command queue; bit 1: instructions are left to
// read) and of the three modules (their state_e).
inline constexpr BitField kRunning{"running", 0, 1};
inline constexpr BitField kFetchState{"fetch_state", 5, 2};
inline constexpr BitField kLoadState{"load_state", 7, 3};
inline constexpr BitField kComputeState{"compute_state", 10, 3};
inline constexpr BitField kStoreState{"store_state", 13, 3};
inline constexpr std::array kDecoupledState = {kRunning, kFetchState, kLoadState, kComputeState,
                                               kStoreState};
// The state field of module `m` in dbg_state_o.
constexpr const BitField& module_state(Module m) {
  switch (m) {
    case Module::kLoad: return kLoadState;
    case Module::kCompute: return kComputeState;
    case Module::kStore: break;
  }
  return kStoreState;
}

// kiln_inorder_top: its sequencer's state (state_e) and whether a memory read is
// outstanding.
inline constexpr BitField kInorderRunning{"running", 0, 1};
inline constexpr BitField kInorderState{"state", 4, 4};
inline constexpr BitField kInorderReadWait{"read_wait", 8, 1};
inline constexpr std::array kInorderDbgState = {kInorderRunning, kInorderState, kInorderReadWait};

// dbg_tokens_o: the occupancy of each token queue, in TokenQueue order.
inline constexpr int kTokenCountBits = 16;
inline constexpr int kTokensBits = kTokenCountBits * kNumTokenQueues;
constexpr uint64_t token_count(uint64_t tokens, TokenQueue q) {
  return BitField{"", static_cast<int>(q) * kTokenCountBits, kTokenCountBits}.get(tokens);
}
static_assert(Config::kTokenQueueDepth < (int64_t{1} << kTokenCountBits),
              "a token count must hold a full token queue");

// dbg_queues_o: the occupancy of each module's command queue, in Module order.
inline constexpr int kQueueCountBits = 5;
inline constexpr int kQueuesBits = 16;
static_assert(Config::kCmdQueueDepth + 1 < (1 << kQueueCountBits) &&
                  kQueueCountBits * kNumModules <= kQueuesBits,
              "a command queue count must hold a full queue");
constexpr uint64_t queue_count(uint64_t queues, Module m) {
  return BitField{"", static_cast<int>(m) * kQueueCountBits, kQueueCountBits}.get(queues);
}

}  // namespace kiln::hw::dbg
