#include "backend-cpu/module.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <mutex>
#include <numeric>
#include <thread>
#include <unordered_map>

#include "backend-cpu/codegen.h"
#include "backend-cpu/runtime/parallel.h"
#include "backend-cpu/runtime/workspace.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/printer.h"
#include "compiler/support/error.h"
#include "support/debug.h"

#ifndef KILN_CPU_PARALLEL_LIB
#error "KILN_CPU_PARALLEL_LIB (the path of the parallel runtime archive) must be defined"
#endif

namespace kiln::cpu {

using PackedFn = int32_t (*)(void**, int32_t);

// Some of a module's functions, compiled on one thread: an LLVM context of their own
// (LLVM's unit of thread safety), optimized and emitted as one object.
struct Part {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unique_ptr<llvm::Module> mod;
  std::string object;
};

struct Module::Impl {
  Target target;
  std::vector<schedule::LoweredFunc> funcs;
  std::vector<Part> parts;

  std::mutex mu;  // guards the lazily made JIT and the whole module's object
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unordered_map<std::string, PackedFn> packed;
  std::unordered_map<std::string, void*> typed;
  std::unique_ptr<std::string> whole;  // one object of every function, where there are parts

  void ensure_jit();
};

namespace {

std::string llvm_error(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return os.str();
}

const char* status_text(int32_t rc) {
  switch (rc) {
    case 1: return "integer division by zero";
    case 2: return "out of memory for a temporary buffer";
    case -1: return "wrong number of arguments";
    default: return "unknown fault";
  }
}

bool same_arch_as_host(const Target& t) {
  return llvm::Triple(t.triple).getArch() == llvm::Triple(llvm::sys::getProcessTriple()).getArch();
}

}  // namespace

void Module::Impl::ensure_jit() {
  std::lock_guard<std::mutex> lk(mu);
  if (jit) return;
  if (!same_arch_as_host(target)) {
    throw RuntimeError("cpu: this code was compiled for " + target.triple + ", another machine than this one (" +
                       llvm::sys::getProcessTriple() + "), and cannot run here; export_object() writes it as an object file to link there");
  }
  if (target.vector_libm && !dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL)) {
    throw RuntimeError("cpu: -vector-libm needs glibc's libmvec.so.1: " + std::string(dlerror()));
  }
  auto jtmb = llvm::orc::JITTargetMachineBuilder(llvm::Triple(target.triple));
  jtmb.setCPU(target.cpu);
  auto created = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
  if (!created) throw RuntimeError("cpu: cannot start the JIT: " + llvm_error(created.takeError()));
  std::unique_ptr<llvm::orc::LLJIT> j = std::move(*created);
  llvm::orc::JITDylib& jd = j->getMainJITDylib();
  // libm and libc (exp, tanh) come from the process; the runtime's thread pool and
  // workspace cache are this process's ones.
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(j->getDataLayout().getGlobalPrefix());
  if (!gen) throw RuntimeError("cpu: JIT symbol search: " + llvm_error(gen.takeError()));
  jd.addGenerator(std::move(*gen));
  llvm::orc::SymbolMap runtime;
  runtime[j->mangleAndIntern("kiln_parallel_launch")] = {llvm::orc::ExecutorAddr::fromPtr(&kiln_parallel_launch),
                                                         llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  runtime[j->mangleAndIntern("kiln_get_num_threads")] = {llvm::orc::ExecutorAddr::fromPtr(&kiln_get_num_threads),
                                                         llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  runtime[j->mangleAndIntern("kiln_set_num_threads")] = {llvm::orc::ExecutorAddr::fromPtr(&kiln_set_num_threads),
                                                         llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  runtime[j->mangleAndIntern("kiln_workspace_alloc")] = {llvm::orc::ExecutorAddr::fromPtr(&kiln_workspace_alloc),
                                                         llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  runtime[j->mangleAndIntern("kiln_workspace_free")] = {llvm::orc::ExecutorAddr::fromPtr(&kiln_workspace_free),
                                                        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  if (auto err = jd.define(llvm::orc::absoluteSymbols(std::move(runtime)))) {
    throw RuntimeError("cpu: JIT runtime symbols: " + llvm_error(std::move(err)));
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    auto name = "kiln-module-" + std::to_string(i) + ".o";
    if (auto err = j->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(parts[i].object, name))) {
      throw RuntimeError("cpu: JIT cannot load the object: " + llvm_error(std::move(err)));
    }
  }
  for (const schedule::LoweredFunc& f : funcs) {
    auto p = j->lookup(f.name + "_packed");
    if (!p) throw RuntimeError("cpu: JIT lookup of '" + f.name + "': " + llvm_error(p.takeError()));
    packed[f.name] = p->toPtr<PackedFn>();
    auto t = j->lookup(f.name);
    if (!t) throw RuntimeError("cpu: JIT lookup of '" + f.name + "': " + llvm_error(t.takeError()));
    typed[f.name] = t->toPtr<void*>();
  }
  jit = std::move(j);
}

// ---------------------------------------------------------------- build

namespace {

// Generates, optimizes and emits `funcs` as one object.
Part compile_part(const std::vector<schedule::LoweredFunc>& funcs, const Target& target) {
  Part p;
  p.ctx = std::make_unique<llvm::LLVMContext>();
  p.tm = create_target_machine(target);
  p.mod = codegen_module(funcs, target, *p.tm, *p.ctx);
  optimize_module(*p.mod, *p.tm, target.opt_level);
  p.object = emit_object(*p.mod, *p.tm);
  return p;
}

// The functions' loop IR nodes: what LLVM's time on a function grows with (its
// unrolled register tiles).
size_t ir_size(const schedule::LoweredFunc& f) {
  size_t n = 0;
  ir::post_order_visit(f.body, [&](const ir::Node*) { ++n; });
  return n;
}

}  // namespace

int compile_threads() {
  if (const char* env = std::getenv("KILN_COMPILE_THREADS")) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || v < 1 || v > 1024) {
      throw CompileError(std::string("KILN_COMPILE_THREADS must be a whole number from 1 to 1024, not '") + env + "'");
    }
    return static_cast<int>(v);
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::vector<std::vector<size_t>> partition_functions(const std::vector<size_t>& costs, int parts) {
  size_t n = std::min(costs.size(), static_cast<size_t>(std::max(parts, 1)));
  std::vector<std::vector<size_t>> out(n);
  if (n == 0) return out;
  // Longest first, each to the part with the least so far; each part's functions then
  // in their given order.
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  std::vector<size_t> load(n, 0);
  for (size_t i : order) {
    size_t p = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    out[p].push_back(i);
    load[p] += costs[i];
  }
  for (auto& p : out) std::sort(p.begin(), p.end());
  return out;
}

Module build(const std::vector<schedule::LoweredFunc>& funcs, const Target& target) {
  if (funcs.empty()) throw CompileError("cpu build: no functions");
  Module m;
  auto impl = std::make_shared<Module::Impl>();
  impl->target = target;
  impl->funcs = funcs;
  // The functions in parts, one per compiling thread: a model's kernels are
  // independent, and LLVM's optimization and code generation (most of a compilation)
  // run on one thread per context.
  int threads = compile_threads();
  if (threads == 1 || funcs.size() == 1) {
    impl->parts.push_back(compile_part(funcs, target));
  } else {
    std::vector<size_t> costs;
    for (const auto& f : funcs) costs.push_back(ir_size(f));
    std::vector<std::future<Part>> running;
    for (const std::vector<size_t>& members : partition_functions(costs, threads)) {
      std::vector<schedule::LoweredFunc> part;
      for (size_t i : members) part.push_back(funcs[i]);
      running.push_back(std::async(std::launch::async, [part = std::move(part), &target] { return compile_part(part, target); }));
    }
    for (auto& r : running) r.wait();  // every thread done before any error leaves
    for (auto& r : running) impl->parts.push_back(r.get());
  }
  if (debug_enabled("asm")) {
    for (Part& p : impl->parts) std::cerr << emit_assembly(*p.mod, *p.tm);
  }
  m.impl_ = std::move(impl);
  return m;
}

Module build(const std::vector<schedule::LoweredFunc>& funcs, const std::string& target) {
  return build(funcs, Target::parse(target));
}

Module build(const schedule::Schedule& s, const std::vector<te::Tensor>& args, const std::string& target,
             const std::string& name) {
  Target t = Target::parse(target);  // first, so that a bad target is reported before lowering
  return build(std::vector<schedule::LoweredFunc>{schedule::lower(s, args, name)}, t);
}

// ---------------------------------------------------------------- Module

const Target& Module::target() const { return impl_->target; }

std::vector<std::string> Module::function_names() const {
  std::vector<std::string> names;
  for (const auto& f : impl_->funcs) names.push_back(f.name);
  return names;
}

const schedule::LoweredFunc& Module::function(const std::string& name) const {
  for (const auto& f : impl_->funcs) {
    if (f.name == name) return f;
  }
  throw RuntimeError("cpu: the module has no function '" + name + "'");
}

void Module::call(const std::string& name, const std::vector<NDArray>& args) const {
  const schedule::LoweredFunc& f = function(name);
  if (args.size() != f.args.size()) {
    throw RuntimeError("'" + name + "' takes " + std::to_string(f.args.size()) + " arguments, got " + std::to_string(args.size()));
  }
  std::vector<void*> ptrs;
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Buffer& b = f.args[i];
    const NDArray& a = args[i];
    std::string what = "argument " + std::to_string(i) + " ('" + b->name + "') of '" + name + "'";
    if (!a.defined()) throw RuntimeError(what + " is an empty array");
    if (a.dtype() != b->dtype) throw RuntimeError(what + " must be " + b->dtype.to_string() + ", not " + a.dtype().to_string());
    if (static_cast<size_t>(a.ndim()) != b->shape.size()) {
      throw RuntimeError(what + " must have rank " + std::to_string(b->shape.size()) + ", not " + std::to_string(a.ndim()));
    }
    for (size_t d = 0; d < b->shape.size(); ++d) {
      const int64_t* n = ir::as_const_int(b->shape[d]);
      if (!n || *n != a.shape()[d]) {
        throw RuntimeError(what + " has extent " + std::to_string(a.shape()[d]) + " in dimension " + std::to_string(d) +
                           ", expected " + (n ? std::to_string(*n) : ir::to_string(b->shape[d])));
      }
    }
    if (!a.is_contiguous()) throw RuntimeError(what + " must be compact row-major (use NDArray::contiguous())");
    for (size_t j = 0; j < i; ++j) {
      auto lo1 = static_cast<const uint8_t*>(a.data()), lo2 = static_cast<const uint8_t*>(args[j].data());
      if (a.nbytes() > 0 && args[j].nbytes() > 0 && lo1 < lo2 + args[j].nbytes() && lo2 < lo1 + a.nbytes()) {
        throw RuntimeError(what + " overlaps argument " + std::to_string(j) + ": arguments must be distinct");
      }
    }
    ptrs.push_back(a.data());
  }
  int32_t rc = call_packed(name, ptrs.data());
  if (rc != 0) throw RuntimeError("'" + name + "' failed: " + status_text(rc));
}

void Module::operator()(const std::vector<NDArray>& args) const { call(impl_->funcs.at(0).name, args); }

int32_t Module::call_packed(const std::string& name, void** args) const {
  impl_->ensure_jit();
  auto it = impl_->packed.find(name);
  if (it == impl_->packed.end()) throw RuntimeError("cpu: the module has no function '" + name + "'");
  return it->second(args, static_cast<int32_t>(function(name).args.size()));
}

void* Module::function_pointer(const std::string& name) const {
  impl_->ensure_jit();
  auto it = impl_->typed.find(name);
  if (it == impl_->typed.end()) throw RuntimeError("cpu: the module has no function '" + name + "'");
  return it->second;
}

std::string Module::llvm_ir() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  for (const Part& p : impl_->parts) p.mod->print(os, nullptr);
  return os.str();
}

std::string Module::assembly() const {
  std::string s;
  for (const Part& p : impl_->parts) s += emit_assembly(*p.mod, *p.tm);
  return s;
}

const std::string& Module::object() const {
  if (impl_->parts.size() == 1) return impl_->parts[0].object;
  // One object file of every function, for a program to link: compiled again as one
  // module, on this thread (only here: the JIT and export_library take the parts).
  std::lock_guard<std::mutex> lk(impl_->mu);
  if (!impl_->whole) impl_->whole = std::make_unique<std::string>(compile_part(impl_->funcs, impl_->target).object);
  return *impl_->whole;
}

size_t Module::num_objects() const { return impl_->parts.size(); }

std::string c_type_name(ir::DataType t) {
  t = t.element_of();
  int bits = t.storage_bytes() * 8;
  switch (t.code()) {
    case ir::TypeCode::Int: return "int" + std::to_string(bits) + "_t";
    case ir::TypeCode::UInt: return "uint" + std::to_string(bits) + "_t";
    case ir::TypeCode::Float: return t.bits() == 64 ? "double" : t.bits() == 32 ? "float" : "uint16_t /* float16 bits */";
    case ir::TypeCode::BFloat: return "uint16_t /* bfloat16 bits */";
    case ir::TypeCode::Handle: return "void";
  }
  return "void";
}

std::string Module::header(const std::string& guard) const {
  std::string h;
  h += "/* Generated by Kiln's CPU backend for target: " + impl_->target.to_string() + "\n";
  h += " * Every function returns 0, or non-zero on a fault (1: integer division by zero,\n";
  h += " * 2: out of memory, -1: wrong argument count). Arrays are compact row-major and\n";
  h += " * must not overlap. Parallel loops run on the library's thread pool, sized by\n";
  h += " * KILN_NUM_THREADS or kiln_set_num_threads(). */\n";
  h += "#ifndef " + guard + "\n#define " + guard + "\n\n#include <stdint.h>\n\n";
  h += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  for (const auto& f : impl_->funcs) {
    h += "/* " + f.name + "(";
    for (size_t i = 0; i < f.args.size(); ++i) {
      const ir::Buffer& b = f.args[i];
      h += (i ? ", " : "") + b->name + ": " + b->dtype.to_string() + "[";
      for (size_t d = 0; d < b->shape.size(); ++d) h += (d ? ", " : "") + ir::to_string(b->shape[d]);
      h += "]";
    }
    h += ") */\n";
    h += "int32_t " + f.name + "(";
    for (size_t i = 0; i < f.args.size(); ++i) h += (i ? ", " : "") + c_type_name(f.args[i]->dtype) + "* " + f.args[i]->name;
    h += ");\n";
    h += "int32_t " + f.name + "_packed(void** args, int32_t num_args);\n\n";
  }
  h += "int32_t kiln_get_num_threads(void);\nvoid kiln_set_num_threads(int32_t n);\n\n";
  h += "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  return h;
}

void Module::export_object(const std::string& path) const {
  const std::string& bytes = object();
  std::ofstream out(path, std::ios::binary);
  if (!out) throw RuntimeError("cpu: cannot write " + path);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw RuntimeError("cpu: write to " + path + " failed");
}

namespace {
std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

void Module::export_library(const std::string& path) const {
  if (!same_arch_as_host(impl_->target)) {
    throw RuntimeError("cpu: export_library links with the host's cc; for " + impl_->target.triple + " use export_object()");
  }
  // Each part's object as it is (no second compilation into one object).
  std::vector<std::string> objs;
  std::string inputs;
  auto remove_objects = [&] {
    for (const std::string& o : objs) std::remove(o.c_str());
  };
  for (size_t i = 0; i < impl_->parts.size(); ++i) {
    objs.push_back(path + "." + std::to_string(i) + ".o");
    std::ofstream out(objs.back(), std::ios::binary);
    const std::string& bytes = impl_->parts[i].object;
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      remove_objects();
      throw RuntimeError("cpu: cannot write " + objs.back());
    }
    inputs += shell_quote(objs.back()) + " ";
  }
  std::string cmd = "cc -shared -o " + shell_quote(path) + " " + inputs + shell_quote(KILN_CPU_PARALLEL_LIB) +
                    (impl_->target.vector_libm ? " -lmvec" : "") + " -lstdc++ -lpthread -lm 2>&1";
  std::string log;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (size_t n = fread(buf, 1, sizeof buf, p)) log.append(buf, n);
    int rc = pclose(p);
    remove_objects();
    if (rc != 0) throw RuntimeError("cpu: linking " + path + " failed: " + cmd + "\n" + log);
  } else {
    remove_objects();
    throw RuntimeError("cpu: cannot run the linker: " + cmd);
  }
  std::string header_path = path;
  size_t dot = header_path.rfind('.');
  size_t slash = header_path.rfind('/');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) header_path.resize(dot);
  header_path += ".h";
  std::ofstream h(header_path);
  if (!h) throw RuntimeError("cpu: cannot write " + header_path);
  h << header();
}

}  // namespace kiln::cpu
