// Fuzzes the compiled-model reader (compiler/graph/model_file.cc, load_model). No
// backend is linked into this harness, so a header that parses stops at the backend
// lookup: the header, the buffers, the tensors and the payload bounds are what is
// fuzzed (the CPU backend's code blob is a shared library, trusted as code is).
// Every refusal must be a CompileError naming the file.
#include "compiler/graph/executor.h"
#include "compiler/support/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = kiln::fuzz::write_scratch(data, size, ".kiln");
  try {
    kiln::graph::Executor ex = kiln::graph::load_model(path);
    (void)ex;
  } catch (const kiln::CompileError&) {
  }
  return 0;
}
