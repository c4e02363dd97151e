// The CPU runtime without code generation: target strings, the tensor type with its
// .npy and DLPack interchange, and the thread pool.
#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <thread>

#include "backend-cpu/runtime/parallel.h"
#include "backend-cpu/runtime/tensor.h"
#include "backend-cpu/runtime/workspace.h"
#include "backend-cpu/target.h"
#include "compiler/support/error.h"

namespace kiln {
namespace {

using cpu::NDArray;
using cpu::Target;
using ir::DataType;

// ---------------------------------------------------------------- targets

TEST(Target, HostByDefault) {
  Target t = Target::parse("llvm");
  EXPECT_TRUE(t.is_host());
  EXPECT_FALSE(t.cpu.empty());
  EXPECT_EQ(Target::parse(t.to_string()).to_string(), t.to_string());
}

TEST(Target, CrossTriple) {
  Target t = Target::parse("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72");
  EXPECT_EQ(t.triple, "aarch64-unknown-linux-gnu");
  EXPECT_EQ(t.cpu, "cortex-a72");
  EXPECT_FALSE(t.is_host());
  EXPECT_FALSE(t.is_x86());
  EXPECT_TRUE(t.has_feature("neon"));
  EXPECT_EQ(t.vector_bits(), 128);
}

TEST(Target, NamedX86CpusAndAttrs) {
  Target skx = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512");
  EXPECT_TRUE(skx.has_feature("avx512f"));
  EXPECT_EQ(skx.vector_bits(), 512);
  Target hsw = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell");
  EXPECT_TRUE(hsw.has_feature("avx2"));
  EXPECT_TRUE(hsw.has_feature("fma"));
  EXPECT_FALSE(hsw.has_feature("avx512f"));
  EXPECT_EQ(hsw.vector_bits(), 256);
  Target off = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -mattr=-avx512f,+avx2 -num-cores=3");
  EXPECT_FALSE(off.has_feature("avx512f"));
  EXPECT_EQ(off.num_cores, 3);
  EXPECT_NE(off.to_string().find("-mattr=-avx512f,+avx2"), std::string::npos);
}

TEST(Target, RegistersAndCachesForTheDefaultSchedules) {
  Target skx = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -l1d-cache=48K -l2-cache=2M");
  EXPECT_EQ(skx.vector_registers(), 32);
  EXPECT_EQ(skx.l1d_cache(), 48 << 10);
  EXPECT_EQ(skx.l2_cache(), 2 << 20);
  EXPECT_EQ(Target::parse(skx.to_string()).l2_cache(), 2 << 20) << "the sizes survive the text form";
  Target hsw = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell");
  EXPECT_EQ(hsw.vector_registers(), 16);
  EXPECT_EQ(hsw.l1d_cache(), 32 << 10) << "another machine's caches are not read from this one";
  EXPECT_EQ(Target::parse("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72").vector_registers(), 32);
  // The GEMM's reduction unroll, by the core it was measured on.
  EXPECT_EQ(skx.gemm_k_unroll(), 8);
  EXPECT_EQ(Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=sapphirerapids").gemm_k_unroll(), 8);
  EXPECT_EQ(Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=znver5").gemm_k_unroll(), 4);
  EXPECT_EQ(Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=znver4").gemm_k_unroll(), 8) << "unmeasured: the default";
  // The host's own sizes, from /sys where Linux has them.
  Target host = Target::parse("llvm");
  EXPECT_GE(host.l1d_cache(), 4 << 10);
  EXPECT_GE(host.l2_cache(), host.l1d_cache());
}

TEST(Target, ErrorsNameTheOption) {
  auto message = [](const std::string& text) {
    try {
      Target::parse(text);
    } catch (const CompileError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("cuda").find("'llvm'"), std::string::npos);
  EXPECT_NE(message("llvm -mcpu").find("-mcpu"), std::string::npos);
  EXPECT_NE(message("llvm -foo=1").find("-foo"), std::string::npos);
  EXPECT_NE(message("llvm -mattr=avx2").find("avx2"), std::string::npos);
  EXPECT_NE(message("llvm -mtriple=nonsense-none-none").find("nonsense"), std::string::npos);
  EXPECT_NE(message("llvm -num-cores=x").find("-num-cores"), std::string::npos);
  EXPECT_NE(message("llvm -l2-cache=big").find("-l2-cache"), std::string::npos);
  EXPECT_NE(message("llvm -l1d-cache=0").find("-l1d-cache"), std::string::npos);
}

// ---------------------------------------------------------------- NDArray

TEST(NDArray, AlignedCompactStorage) {
  NDArray a = NDArray::empty({3, 5, 7}, DataType::Float(32));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
  EXPECT_EQ(a.strides(), (std::vector<int64_t>{35, 7, 1}));
  EXPECT_EQ(a.size(), 105);
  EXPECT_EQ(a.nbytes(), 420);
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_THROW(NDArray::empty({2}, DataType::Float(32, 4)), CompileError);
}

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/kiln_cpu_" + std::to_string(::getpid()) + "_" + name;
}

TEST(NDArray, NpyRoundTripEveryType) {
  for (DataType t : {DataType::Int(8), DataType::Int(16), DataType::Int(32), DataType::Int(64), DataType::UInt(8),
                     DataType::UInt(16), DataType::UInt(32), DataType::UInt(64), DataType::Float(16),
                     DataType::Float(32), DataType::Float(64), DataType::Bool()}) {
    SCOPED_TRACE(t.to_string());
    NDArray a = NDArray::empty({4, 3}, t);
    auto* bytes = static_cast<uint8_t*>(a.data());
    for (int64_t i = 0; i < a.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(t.is_bool() ? (i % 2) : (i * 37 + 11));
    std::string path = temp_path("rt.npy");
    a.save_npy(path);
    NDArray b = NDArray::load_npy(path);
    std::remove(path.c_str());
    EXPECT_EQ(b.dtype(), t);
    EXPECT_EQ(b.shape(), a.shape());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), static_cast<size_t>(a.nbytes())), 0);
  }
  EXPECT_THROW(NDArray::empty({2}, DataType::BFloat16()).save_npy(temp_path("bf.npy")), CompileError);
}

// Files as numpy writes them, byte for byte: version 1 header, C and Fortran order.
TEST(NDArray, NpyReadsNumpyFiles) {
  auto write = [](const std::string& path, const std::string& header, const std::vector<uint8_t>& data) {
    std::string h = header;
    size_t total = 10 + h.size() + 1;
    h.append((64 - total % 64) % 64, ' ');
    h.push_back('\n');
    std::ofstream out(path, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    char len[2] = {static_cast<char>(h.size() & 0xff), static_cast<char>(h.size() >> 8)};
    out.write(len, 2);
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  };
  std::string path = temp_path("np.npy");
  std::vector<uint8_t> six(6 * 4);
  for (int i = 0; i < 6; ++i) {
    int32_t v = i;
    std::memcpy(six.data() + 4 * i, &v, 4);
  }
  // np.arange(6, dtype='<i4').reshape(2, 3, order='F'): memory 0..5 column-major.
  write(path, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", six);
  NDArray f = NDArray::load_npy(path);
  ASSERT_EQ(f.shape(), (std::vector<int64_t>{2, 3}));
  // element (r, c) = r + 2c
  EXPECT_EQ(f.data_as<int32_t>()[0 * 3 + 2], 4);
  EXPECT_EQ(f.data_as<int32_t>()[1 * 3 + 0], 1);
  write(path, "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }", six);
  NDArray c = NDArray::load_npy(path);
  EXPECT_EQ(c.shape(), (std::vector<int64_t>{6}));
  EXPECT_EQ(c.data_as<int32_t>()[5], 5);
  write(path, "{'descr': '<i4', 'fortran_order': False, 'shape': (7,), }", six);
  EXPECT_THROW(NDArray::load_npy(path), CompileError);  // truncated
  write(path, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", six);
  EXPECT_THROW(NDArray::load_npy(path), CompileError);  // complex
  std::remove(path.c_str());
  EXPECT_THROW(NDArray::load_npy(temp_path("missing.npy")), CompileError);
}

TEST(NDArray, DLPackExportSharesAndKeepsAlive) {
  DLManagedTensor* m = nullptr;
  void* data = nullptr;
  {
    NDArray a = NDArray::empty({2, 8}, DataType::Int(16));
    for (int i = 0; i < 16; ++i) a.data_as<int16_t>()[i] = static_cast<int16_t>(i * 3);
    m = a.to_dlpack();
    data = a.data();
  }
  // The array is gone; the export still holds the storage.
  EXPECT_EQ(m->dl_tensor.data, data);
  EXPECT_EQ(m->dl_tensor.ndim, 2);
  EXPECT_EQ(m->dl_tensor.dtype.code, kDLInt);
  EXPECT_EQ(m->dl_tensor.dtype.bits, 16);
  EXPECT_EQ(m->dl_tensor.shape[1], 8);
  EXPECT_EQ(static_cast<int16_t*>(m->dl_tensor.data)[5], 15);
  // Import it back: zero-copy, and the deleter runs once when the last user goes.
  NDArray b = NDArray::from_dlpack(m);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b.data_as<int16_t>()[7], 21);
}

struct Foreign {
  std::vector<float> values;
  std::vector<int64_t> shape{3, 2};
  std::vector<int64_t> strides{1, 3};  // column-major view
  DLManagedTensor managed{};
  static inline int deleted = 0;
};

TEST(NDArray, DLPackImportStridedForeignTensor) {
  auto* f = new Foreign;
  f->values = {0, 1, 2, 3, 4, 5};
  f->managed.dl_tensor = {f->values.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, f->shape.data(), f->strides.data(), 0};
  f->managed.manager_ctx = f;
  f->managed.deleter = [](DLManagedTensor* self) {
    ++Foreign::deleted;
    delete static_cast<Foreign*>(self->manager_ctx);
  };
  Foreign::deleted = 0;
  {
    NDArray a = NDArray::from_dlpack(&f->managed);
    EXPECT_FALSE(a.is_contiguous());
    NDArray c = a.contiguous();
    EXPECT_TRUE(c.is_contiguous());
    // element (r, col) = values[r + 3 col]
    EXPECT_EQ(c.data_as<float>()[2 * 2 + 1], 5.0f);
    EXPECT_EQ(c.data_as<float>()[1 * 2 + 0], 1.0f);
    EXPECT_EQ(Foreign::deleted, 0);
  }
  EXPECT_EQ(Foreign::deleted, 1);
}

TEST(NDArray, DLPackRejectsDeviceTensors) {
  static int deleted = 0;
  int64_t shape[1] = {4};
  DLManagedTensor m{};
  m.dl_tensor = {nullptr, {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  m.deleter = [](DLManagedTensor*) { ++deleted; };
  EXPECT_THROW(NDArray::from_dlpack(&m), CompileError);
  EXPECT_EQ(deleted, 1);
}

// ---------------------------------------------------------------- thread pool

TEST(ThreadPool, RunsEveryTaskOnceOnSeveralThreads) {
  kiln_set_num_threads(4);
  EXPECT_EQ(kiln_get_num_threads(), 4);
  struct Seen {
    std::atomic<int> count[64];
    std::mutex mu;
    std::set<std::thread::id> threads;
  } seen;
  for (auto& c : seen.count) c = 0;
  // Tasks claim from a counter, so tiny tasks may all run on the caller: make them
  // long enough (100 us) for the helpers to join.
  constexpr int kRounds = 10;
  for (int round = 0; round < kRounds; ++round) {
    int32_t rc = kiln_parallel_launch(
        [](int32_t t, int32_t n, void* cl) -> int32_t {
          auto* s = static_cast<Seen*>(cl);
          if (n != 64) return 7;
          std::this_thread::sleep_for(std::chrono::microseconds(100));
          s->count[t]++;
          std::lock_guard<std::mutex> lk(s->mu);
          s->threads.insert(std::this_thread::get_id());
          return 0;
        },
        &seen, 64);
    ASSERT_EQ(rc, 0);
  }
  for (auto& c : seen.count) EXPECT_EQ(c.load(), kRounds);
  EXPECT_GE(seen.threads.size(), 2u);
  kiln_set_num_threads(0);  // back to the default
}

// Many short launches and resizes: every task runs exactly once, nothing hangs.
TEST(ThreadPool, RapidLaunchesAndResizes) {
  std::atomic<int64_t> sum{0};
  int64_t want = 0;
  for (int round = 0; round < 2000; ++round) {
    if (round % 250 == 0) kiln_set_num_threads(1 + (round / 250) % 4);
    int32_t n = 1 + round % 7;
    want += static_cast<int64_t>(n) * (n - 1) / 2;
    ASSERT_EQ(kiln_parallel_launch(
                  [](int32_t t, int32_t, void* cl) -> int32_t {
                    static_cast<std::atomic<int64_t>*>(cl)->fetch_add(t);
                    return 0;
                  },
                  &sum, n),
              0);
  }
  EXPECT_EQ(sum.load(), want);
  kiln_set_num_threads(0);
}

TEST(ThreadPool, ReportsTaskErrorsAndNestsSerially) {
  kiln_set_num_threads(3);
  int32_t rc = kiln_parallel_launch([](int32_t t, int32_t, void*) -> int32_t { return t == 2 ? 5 : 0; }, nullptr, 6);
  EXPECT_EQ(rc, 5);
  std::atomic<int> inner{0};
  rc = kiln_parallel_launch(
      [](int32_t, int32_t, void* cl) -> int32_t {
        return kiln_parallel_launch(
            [](int32_t, int32_t, void* c) -> int32_t {
              static_cast<std::atomic<int>*>(c)->fetch_add(1);
              return 0;
            },
            cl, 4);
      },
      &inner, 3);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(inner.load(), 12);
  kiln_set_num_threads(0);
}

// A kernel's heap buffer comes back on the next call: the same buffer for the same
// size and for a request of at least half its size, a new one for a smaller request;
// 64-byte aligned; release empties the cache. Buffers taken and returned from several
// pool threads at once are each used by one at a time.
TEST(Workspace, FreedBuffersAreHandedOutAgain) {
  kiln_workspace_release();
  void* a = kiln_workspace_alloc(40 << 20);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  std::memset(a, 1, 40 << 20);
  kiln_workspace_free(a);
  void* b = kiln_workspace_alloc(40 << 20);
  EXPECT_EQ(b, a) << "the same size";
  kiln_workspace_free(b);
  void* c = kiln_workspace_alloc(30 << 20);
  EXPECT_EQ(c, a) << "a smaller request of at least half the size";
  void* d = kiln_workspace_alloc(30 << 20);
  EXPECT_NE(d, a) << "the cached one is taken";
  kiln_workspace_free(c);
  kiln_workspace_free(d);
  void* e = kiln_workspace_alloc(1 << 20);
  EXPECT_NE(e, a);
  EXPECT_NE(e, d);
  kiln_workspace_free(e);
  kiln_workspace_release();
  EXPECT_EQ(kiln_workspace_alloc(-1), nullptr);

  kiln_set_num_threads(4);
  std::atomic<int> clashes{0};
  ASSERT_EQ(kiln_parallel_launch(
                [](int32_t t, int32_t, void* cl) -> int32_t {
                  for (int k = 0; k < 200; ++k) {
                    int64_t bytes = (70 << 10) * (1 + (t + k) % 3);
                    auto* p = static_cast<int32_t*>(kiln_workspace_alloc(bytes));
                    if (!p) return 1;
                    for (int64_t i = 0; i < bytes / 4; i += 1024) p[i] = t;
                    for (int64_t i = 0; i < bytes / 4; i += 1024)
                      if (p[i] != t) static_cast<std::atomic<int>*>(cl)->fetch_add(1);
                    kiln_workspace_free(p);
                  }
                  return 0;
                },
                &clashes, 4),
            0);
  EXPECT_EQ(clashes.load(), 0);
  kiln_set_num_threads(0);
  kiln_workspace_release();
}

}  // namespace
}  // namespace kiln
