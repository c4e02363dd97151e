#pragma once
// A hardware fault that the Verilator harness injects into one rtl device, chosen by
// the device option `--fault KIND[:ARGS]` (hw/driver/device_settings.cc parses it;
// docs/testing.md "The fault model" says how each is detected). Every fault fires once,
// at a position counted from the device's creation, so that a run with it is
// deterministic and the device's later runs see healthy hardware.

#include <cstdint>
#include <string>

namespace kiln::sim {

struct InjectedFault {
  enum class Kind {
    kNone,
    kDramReadError,  // the n-th read burst (from 1) is answered SLVERR on every beat
    kDramHang,       // after n read beats the DRAM slave stops answering (no ready, no
                     // valid) until the host aborts the run
    kRegDrop,        // the n-th write (from 1) to register `reg` never reaches the RTL;
                     // the host's bus transaction completes as if it had
    kSramStuck,      // during the n-th run (from 1), bit `bit` of word `word` of
                     // scratchpad `mem` is stuck at `value`: the harness writes it back
                     // after every clock edge (the model's parity bit stays as written)
  };
  Kind kind = Kind::kNone;
  uint64_t n = 1;
  uint32_t reg = 0;  // kRegDrop: the register's offset (hw/spec/regs.h)
  // kSramStuck: the scratchpad (hw/spec/isa.h MemType: uop, wgt, inp or acc), the word,
  // the bit within it and the value it is stuck at
  uint8_t mem = 0;
  uint64_t word = 0;
  uint32_t bit = 0;
  bool value = false;
  std::string text;  // as the user wrote it, for messages ("dram-read-error:3")
};

}  // namespace kiln::sim
