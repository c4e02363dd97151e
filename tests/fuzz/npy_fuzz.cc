// Fuzzes the .npy reader of the CPU runtime (backend-cpu/runtime/tensor.h,
// NDArray::load_npy). An array that loads must save and load back to the same bytes;
// anything else must be refused with CompileError.
#include <cstring>

#include "backend-cpu/runtime/tensor.h"
#include "compiler/support/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = kiln::fuzz::write_scratch(data, size, ".npy");
  kiln::cpu::NDArray a;
  try {
    a = kiln::cpu::NDArray::load_npy(path);
  } catch (const kiln::CompileError&) {
    return 0;
  }
  if (a.dtype().code() == kiln::ir::TypeCode::BFloat) return 0;  // no numpy type: cannot be saved
  a.save_npy(path);
  kiln::cpu::NDArray b = kiln::cpu::NDArray::load_npy(path);
  kiln::fuzz::check(b.shape() == a.shape() && b.dtype() == a.dtype(), "save_npy then load_npy changed the shape or type");
  kiln::fuzz::check(a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), static_cast<size_t>(a.nbytes())) == 0,
                    "save_npy then load_npy changed the data");
  return 0;
}
