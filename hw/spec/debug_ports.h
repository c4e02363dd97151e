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
// (the bits below) and of the three modules (their SeqState).
inline constexpr BitField kRunning{"running", 0, 1};
inline constexpr BitField kFetchState{"fetch_state", 5, 2};
// The bits of kFetchState, in the order kiln_fetch's state_o packs them.
inline constexpr unsigned kFetchWaitsRoom = 1u << 0;  // its head waits for room in a command queue
inline constexpr unsigned kFetchReading = 1u << 1;    // instructions are left to read
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

// The states of kiln_token_seq, the sequencer that load, compute and store each run
// (their fields of dbg_state_o): rtl_params generates kiln_cfg_pkg::seq_state_e
// (SEQ_IDLE, ...) from this table.
enum class SeqState : uint8_t {
  kIdle = 0,   // waits for an instruction
  kPop = 1,    // waits for the tokens the instruction pops
  kStart = 2,  // starts it
  kRun = 3,    // runs it
  kPush = 4,   // waits for room for the tokens it pushes
};
inline constexpr std::array kSeqStates = {SeqState::kIdle, SeqState::kPop, SeqState::kStart,
                                          SeqState::kRun, SeqState::kPush};
constexpr std::string_view seq_state_name(SeqState s) {
  constexpr std::array<std::string_view, 5> names = {"idle", "pop", "start", "run", "push"};
  return names[static_cast<size_t>(s)];
}

// The in-order core's sequencer states (kiln_cfg_pkg::inorder_state_e, INORDER_IDLE, ...).
enum class InorderState : uint8_t {
  kIdle = 0,
  kFetch = 1,     // reading an instruction
  kDecode = 2,
  kXfer = 3,      // a LOAD's elements from memory
  kStRead = 4,    // a STORE: reading ACC
  kStWrite = 5,   // a STORE: writing memory
  kUop = 6,       // a GEMM/ALU loop: reading a micro-op
  kRow = 7,       // ... an accumulator row
  kSrc = 8,       // ... its source operands
  kLane = 9,      // ... lane by lane
  kWrite = 10,    // ... writing the row back
  kRetire = 11,
  kDone = 12,
};
inline constexpr std::array kInorderStates = {
    InorderState::kIdle,   InorderState::kFetch,   InorderState::kDecode, InorderState::kXfer,
    InorderState::kStRead, InorderState::kStWrite, InorderState::kUop,    InorderState::kRow,
    InorderState::kSrc,    InorderState::kLane,    InorderState::kWrite,  InorderState::kRetire,
    InorderState::kDone};
constexpr std::string_view inorder_state_name(InorderState s) {
  constexpr std::array<std::string_view, 13> names = {
      "idle", "fetch", "decode", "xfer", "st_read", "st_write", "uop",
      "row",  "src",   "lane",   "write", "retire", "done"};
  return names[static_cast<size_t>(s)];
}

// kiln_inorder_top: its sequencer's state (InorderState) and whether a memory read is
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
static_assert(kSeqStates.size() <= (size_t{1} << kLoadState.width) &&
                  kLoadState.width == kComputeState.width && kLoadState.width == kStoreState.width,
              "a module's state field must hold every SeqState");
static_assert(kInorderStates.size() <= (size_t{1} << kInorderState.width),
              "the in-order state field must hold every InorderState");
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
