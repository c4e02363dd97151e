// Ahead-of-time compilation: an object file for the host and for AArch64 (checked by
// its ELF header and llvm-objdump-19's disassembly), and a shared library with a C
// header that a small C program built without LLVM dlopens and calls.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "tests/support/command.h"
#include "backend-cpu/module.h"
#include "compiler/ir/op.h"
#include "compiler/support/error.h"
#include "compiler/schedule/schedule.h"
#include "compiler/te/ops.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ir::DataType;
using te::Tensor;

struct Saxpy {
  Tensor a, b, c;
  schedule::Schedule s;
  explicit Saxpy(float factor = 2) {
    a = te::placeholder({64, 256}, DataType::Float(32), "A");
    b = te::placeholder({64, 256}, DataType::Float(32), "B");
    c = te::compute({64, 256}, [&](ir::Var i, ir::Var j) { return a(i, j) * factor + b(i, j); }, "C");
    s = schedule::create_schedule({c});
    auto [jo, ji] = s[c].split(c->axis[1], 16);
    s[c].vectorize(ji);
    s[c].parallel(c->axis[0]);
    (void)jo;
  }
};

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("kiln_aot_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string run_command(const std::string& cmd, int* rc) {
  test::CommandResult r = test::run_command(cmd);
  *rc = r.status;
  return r.output;
}

uint16_t elf_machine(const std::string& obj) {
  if (obj.size() < 20 || obj.compare(0, 4, "\x7f" "ELF") != 0) return 0;
  uint16_t m = 0;
  std::memcpy(&m, obj.data() + 18, 2);  // e_machine, little-endian
  return m;
}

TEST(Aot, HostObject) {
  Saxpy p;
  cpu::Module m = cpu::build(p.s, {p.a, p.b, p.c}, "llvm", "aot_saxpy");
  EXPECT_EQ(elf_machine(m.object()), 62);  // EM_X86_64
  std::string h = m.header();
  EXPECT_NE(h.find("int32_t aot_saxpy(float* A, float* B, float* C);"), std::string::npos) << h;
  EXPECT_NE(h.find("aot_saxpy_packed"), std::string::npos);
}

TEST(Aot, CrossCompileAArch64) {
  Saxpy p;
  cpu::Module m = cpu::build(p.s, {p.a, p.b, p.c}, "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72", "aot_saxpy");
  EXPECT_EQ(elf_machine(m.object()), 183);  // EM_AARCH64
  EXPECT_THROW(m({}), cpu::RuntimeError);   // cannot run here
  EXPECT_NE(m.assembly().find(".4s"), std::string::npos) << "expected NEON vectors of 4 floats";
  fs::path dir = temp_dir();
  fs::path obj = dir / "saxpy_aarch64.o";
  m.export_object(obj.string());
  int rc = 0;
  std::string dis = run_command("llvm-objdump-19 -d -r --triple=aarch64-linux-gnu " + obj.string(), &rc);
  // llvm-objdump-19 comes with llvm-19 (scripts/install-deps.sh): its absence is a failure.
  ASSERT_EQ(rc, 0) << "llvm-objdump-19 failed or is missing: " << dis;
  EXPECT_NE(dis.find("file format elf64-littleaarch64"), std::string::npos) << dis;
  EXPECT_NE(dis.find("<aot_saxpy>:"), std::string::npos) << dis;
  EXPECT_NE(dis.find(".4s"), std::string::npos) << dis;
  EXPECT_NE(dis.find("kiln_parallel_launch"), std::string::npos) << dis;  // relocation to the runtime
  fs::remove_all(dir);
}

TEST(Aot, SharedLibraryLoadedByAProgramWithoutLLVM) {
  Saxpy p;
  cpu::Module m = cpu::build(p.s, {p.a, p.b, p.c}, "llvm", "aot_saxpy");
  fs::path dir = temp_dir();
  fs::path lib = dir / "kiln_aot.so";
  m.export_library(lib.string());
  ASSERT_TRUE(fs::exists(lib));
  ASSERT_TRUE(fs::exists(dir / "kiln_aot.h"));
  fs::path loader_src = fs::path(KILN_CPU_TEST_DIR) / "aot_loader.c";
  fs::path loader = dir / "loader";
  int rc = 0;
  std::string out = run_command("cc -std=c11 -D_DEFAULT_SOURCE -Wall -Werror -I" + dir.string() + " " + loader_src.string() +
                                    " -o " + loader.string() + " -ldl -lm",
                                &rc);
  ASSERT_EQ(rc, 0) << out;
  // The loader links no LLVM: its only libraries are libc's.
  std::string ldd = run_command("ldd " + loader.string(), &rc);
  EXPECT_EQ(ldd.find("LLVM"), std::string::npos) << ldd;
  out = run_command("KILN_NUM_THREADS=3 " + loader.string() + " " + lib.string(), &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("threads=3\nok"), std::string::npos) << out;
  fs::remove_all(dir);
}

TEST(Aot, VectorLibmLibraryNeedsLibmvec) {
  auto a = te::placeholder({64}, DataType::Float(32), "A");
  auto c = te::compute({64}, [&](ir::Var i) { return ir::exp(a(i)); }, "C");
  auto s = schedule::create_schedule({c});
  auto [o, i] = s[c].split(c->axis[0], 16);
  s[c].vectorize(i);
  (void)o;
  cpu::Module m = cpu::build(s, {a, c}, "llvm -vector-libm=1", "vexp");
  fs::path dir = temp_dir();
  fs::path lib = dir / "libvexp.so";
  m.export_library(lib.string());
  int rc = 0;
  std::string dyn = run_command("readelf -d " + lib.string(), &rc);
  ASSERT_EQ(rc, 0) << "readelf (binutils) failed or is missing";
  EXPECT_NE(dyn.find("libmvec.so.1"), std::string::npos) << dyn;
  fs::remove_all(dir);
}

// Sets an environment variable for a scope, then puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Aot, PartitionsBalanceTheFunctionsCosts) {
  // Longest first, each to the lightest part; each part's indices in order.
  auto parts = cpu::partition_functions({5, 1, 1, 1, 4, 2}, 2);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0], (std::vector<size_t>{0, 1, 2}));  // 5, then 1 and 1
  EXPECT_EQ(parts[1], (std::vector<size_t>{3, 4, 5}));  // 4 and 2, then 1
  // No more parts than functions, and none empty.
  EXPECT_EQ(cpu::partition_functions({3, 3}, 8).size(), 2u);
  EXPECT_EQ(cpu::partition_functions({7, 1, 1}, 1), (std::vector<std::vector<size_t>>{{0, 1, 2}}));
  EXPECT_TRUE(cpu::partition_functions({}, 4).empty());
}

TEST(Aot, FunctionsCompiledInPartsRunAndLinkAsOne) {
  // Four functions on three compiling threads: three objects, which the JIT loads and
  // export_library links together; object() is one object of all four.
  std::vector<schedule::LoweredFunc> funcs;
  std::vector<Saxpy> programs;
  for (int k = 0; k < 4; ++k) programs.emplace_back(static_cast<float>(k + 1));
  for (int k = 0; k < 4; ++k) {
    const Saxpy& p = programs[k];
    funcs.push_back(schedule::lower(p.s, {p.a, p.b, p.c}, "aot_part" + std::to_string(k)));
  }
  cpu::Module m;
  {
    ScopedEnv env("KILN_COMPILE_THREADS", "3");
    EXPECT_EQ(cpu::compile_threads(), 3);
    m = cpu::build(funcs, "llvm");
  }
  EXPECT_EQ(m.num_objects(), 3u);
  cpu::NDArray a = cpu::NDArray::empty({64, 256}, DataType::Float(32)), b = cpu::NDArray::empty({64, 256}, DataType::Float(32));
  for (int i = 0; i < 64 * 256; ++i) {
    static_cast<float*>(a.data())[i] = static_cast<float>(i % 7);
    static_cast<float*>(b.data())[i] = static_cast<float>(i % 5);
  }
  for (int k = 0; k < 4; ++k) {
    cpu::NDArray c = cpu::NDArray::zeros({64, 256}, DataType::Float(32));
    m.call("aot_part" + std::to_string(k), {a, b, c});
    EXPECT_EQ(static_cast<float*>(c.data())[13], (k + 1) * 6.0f + 3.0f) << "function " << k;
  }
  fs::path dir = temp_dir();
  fs::path lib = dir / "libparts.so";
  m.export_library(lib.string());
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  for (int k = 0; k < 4; ++k) {
    using Fn = int32_t (*)(float*, float*, float*);
    auto f = reinterpret_cast<Fn>(dlsym(h, ("aot_part" + std::to_string(k)).c_str()));
    ASSERT_NE(f, nullptr) << "aot_part" << k;
    std::vector<float> c(64 * 256, 0.0f);
    EXPECT_EQ(f(static_cast<float*>(a.data()), static_cast<float*>(b.data()), c.data()), 0);
    EXPECT_EQ(c[13], (k + 1) * 6.0f + 3.0f) << "function " << k << " of the library";
  }
  dlclose(h);
  EXPECT_FALSE(fs::exists(dir / "libparts.so.0.o")) << "a part's object stayed behind";
  fs::path obj = dir / "parts.o";
  m.export_object(obj.string());
  int rc = 0;
  std::string syms = run_command("llvm-objdump-19 -t " + obj.string(), &rc);
  ASSERT_EQ(rc, 0) << syms;
  for (int k = 0; k < 4; ++k) EXPECT_NE(syms.find("aot_part" + std::to_string(k) + "_packed"), std::string::npos) << syms;
  fs::remove_all(dir);
  // One thread: one object; a bad count is refused by name.
  {
    ScopedEnv env("KILN_COMPILE_THREADS", "1");
    EXPECT_EQ(cpu::build(funcs, "llvm").num_objects(), 1u);
  }
  {
    ScopedEnv env("KILN_COMPILE_THREADS", "two");
    try {
      cpu::build(funcs, "llvm");
      ADD_FAILURE() << "KILN_COMPILE_THREADS=two accepted";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("KILN_COMPILE_THREADS"), std::string::npos) << e.what();
    }
  }
}

TEST(Aot, ExportLibraryRefusesForeignTargets) {
  Saxpy p;
  cpu::Module m = cpu::build(p.s, {p.a, p.b, p.c}, "llvm -mtriple=aarch64-linux-gnu", "aot_saxpy");
  EXPECT_THROW(m.export_library((temp_dir() / "x.so").string()), cpu::RuntimeError);
}

}  // namespace
}  // namespace kiln
