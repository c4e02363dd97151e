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

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <unordered_map>

#include "backend-cpu/codegen.h"
#include "backend-cpu/runtime/parallel.h"
#include "backend-cpu/runtime/workspace.h"
#include "compiler/ir/printer.h"
#include "compiler/support/error.h"
#include "support/debug.h"

#ifndef KILN_CPU_PARALLEL_LIB
#error "KILN_CPU_PARALLEL_LIB (the path of the parallel runtime archive) must be defined"
#endif

namespace kiln::cpu {

using PackedFn = int32_t (*)(void**, int32_t);

struct Module::Impl {
  Target target;
  std::vector<schedule::LoweredFunc> funcs;
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> mod;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::string object;

  std::mutex mu;  // guards the lazily made JIT
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unordered_map<std::string, PackedFn> packed;
  std::unordered_map<std::string, void*> typed;

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
  if (auto err = j->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object, "kiln-module.o"))) {
    throw RuntimeError("cpu: JIT cannot load the object: " + llvm_error(std::move(err)));
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

Module build(const std::vector<schedule::LoweredFunc>& funcs, const Target& target) {
  if (funcs.empty()) throw CompileError("cpu build: no functions");
  Module m;
  auto impl = std::make_shared<Module::Impl>();
  impl->target = target;
  impl->funcs = funcs;
  impl->ctx = std::make_unique<llvm::LLVMContext>();
  impl->tm = create_target_machine(target);
  impl->mod = codegen_module(funcs, target, *impl->tm, *impl->ctx);
  optimize_module(*impl->mod, *impl->tm, target.opt_level);
  if (debug_enabled("asm")) std::cerr << emit_assembly(*impl->mod, *impl->tm);
  impl->object = emit_object(*impl->mod, *impl->tm);
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
  impl_->mod->print(os, nullptr);
  return os.str();
}

std::string Module::assembly() const { return emit_assembly(*impl_->mod, *impl_->tm); }

const std::string& Module::object() const { return impl_->object; }

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
  std::ofstream out(path, std::ios::binary);
  if (!out) throw RuntimeError("cpu: cannot write " + path);
  out.write(impl_->object.data(), static_cast<std::streamsize>(impl_->object.size()));
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
  std::string obj = path + ".o";
  export_object(obj);
  std::string cmd = "cc -shared -o " + shell_quote(path) + " " + shell_quote(obj) + " " + shell_quote(KILN_CPU_PARALLEL_LIB) +
                    (impl_->target.vector_libm ? " -lmvec" : "") + " -lstdc++ -lpthread -lm 2>&1";
  std::string log;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (size_t n = fread(buf, 1, sizeof buf, p)) log.append(buf, n);
    int rc = pclose(p);
    std::remove(obj.c_str());
    if (rc != 0) throw RuntimeError("cpu: linking " + path + " failed: " + cmd + "\n" + log);
  } else {
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
