#include "backend-cpu/target.h"

#include <dlfcn.h>
#include <unistd.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include "backend-cpu/llvm_init.h"
#include "compiler/support/error.h"

namespace kiln::cpu {

void ensure_llvm_initialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();
    llvm::InitializeAllDisassemblers();
  });
}

namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void apply_attrs(std::vector<std::string>* features, const std::vector<std::string>& attrs) {
  for (const std::string& a : attrs) {
    std::string name = a.substr(1);
    features->erase(std::remove(features->begin(), features->end(), name), features->end());
    if (a[0] == '+') features->push_back(name);
  }
}

void resolve_features(Target* t) {
  ensure_llvm_initialized();
  t->features.clear();
  if (t->is_host()) {
    for (const auto& f : llvm::sys::getHostCPUFeatures()) {
      if (f.second) t->features.push_back(f.first().str());
    }
  } else {
    std::string err;
    const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t->triple, err);
    if (!target) throw CompileError("target: unknown -mtriple '" + t->triple + "': " + err);
    std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(t->triple, t->cpu, ""));
    if (!sti || (t->cpu != "generic" && !sti->isCPUStringValid(t->cpu))) {
      throw CompileError("target: LLVM does not know -mcpu=" + t->cpu + " for " + t->triple);
    }
    for (const llvm::SubtargetFeatureKV& kv : sti->getAllProcessorFeatures()) {
      if (sti->checkFeatures(std::string("+") + kv.Key)) t->features.push_back(kv.Key);
    }
  }
  apply_attrs(&t->features, t->attrs);
  std::sort(t->features.begin(), t->features.end());
}

int parse_int(const std::string& key, const std::string& value) {
  try {
    size_t used = 0;
    int v = std::stoi(value, &used);
    if (used == value.size()) return v;
  } catch (...) {
  }
  throw CompileError("target: " + key + " expects an integer, got '" + value + "'");
}

// "48K", "2M", "32768": a size in bytes.
int64_t parse_bytes(const std::string& key, const std::string& value) {
  std::string digits = value;
  int64_t scale = 1;
  if (!digits.empty() && (digits.back() == 'K' || digits.back() == 'k')) scale = 1 << 10;
  if (!digits.empty() && (digits.back() == 'M' || digits.back() == 'm')) scale = 1 << 20;
  if (scale != 1) digits.pop_back();
  int64_t v = parse_int(key, digits);
  if (v <= 0 || v > (int64_t{1} << 30) / scale) throw CompileError("target: " + key + " expects a size such as 48K or 2M, got '" + value + "'");
  return v * scale;
}

// The host's data (or unified) cache of a level: sysfs's, else what the C library
// reads from CPUID (virtual machines often have no cache entries in sysfs); 0 unknown.
int64_t host_cache(int level) {
  for (int i = 0; i < 8; ++i) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream lf(dir + "level"), tf(dir + "type"), sf(dir + "size");
    int l = 0;
    std::string type, size;
    if (!(lf >> l) || !(tf >> type) || !(sf >> size)) break;
    if (l != level || type == "Instruction") continue;
    try {
      return parse_bytes("cache", size);
    } catch (const CompileError&) {
      return 0;
    }
  }
  long bytes = sysconf(level == 1 ? _SC_LEVEL1_DCACHE_SIZE : _SC_LEVEL2_CACHE_SIZE);
  return bytes > 0 ? bytes : 0;
}

}  // namespace

Target Target::host() { return parse("llvm"); }

std::string Target::default_host_string() {
  static const std::string s = [] {
    llvm::Triple host(llvm::sys::getProcessTriple());
    if (!host.isX86() || !host.isArch64Bit() || !host.isOSLinux()) return std::string("llvm");
    void* mvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    if (!mvec) mvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL);
    return std::string(mvec ? "llvm -vector-libm=1" : "llvm");
  }();
  return s;
}

Target Target::parse(const std::string& text) { return Target(target::Target::read(text)); }

Target::Target(const target::Target& t) {
  if (!t.is_cpu()) throw CompileError("target: '" + t.str() + "' is not a CPU target (it must start with 'llvm')");
  if (!t.is_llvm()) {
    *this = parse(default_host_string());
    return;
  }
  ensure_llvm_initialized();
  bool explicit_cpu = false;
  for (const auto& [name, value] : t.options()) {
    const std::string key = "-" + name;
    if (key == "-mtriple") {
      triple = llvm::Triple::normalize(value);
    } else if (key == "-mcpu") {
      cpu = value;
      explicit_cpu = true;
    } else if (key == "-mattr") {
      for (const std::string& a : split_commas(value)) {
        if (a[0] != '+' && a[0] != '-') throw CompileError("target: -mattr entry '" + a + "' must start with + or -");
        attrs.push_back(a);
      }
    } else if (key == "-num-cores") {
      num_cores = parse_int(key, value);
      if (num_cores < 0) throw CompileError("target: -num-cores must be >= 0");
    } else if (key == "-opt-level") {
      opt_level = parse_int(key, value);
      if (opt_level < 0 || opt_level > 3) throw CompileError("target: -opt-level must be 0..3");
    } else if (key == "-fast-math-contract") {
      fp_contract = parse_int(key, value) != 0;
    } else if (key == "-vector-libm") {
      vector_libm = parse_int(key, value) != 0;
    } else if (key == "-l1d-cache") {
      l1d_bytes = parse_bytes(key, value);
    } else if (key == "-l2-cache") {
      l2_bytes = parse_bytes(key, value);
    } else {
      throw CompileError("target: unknown option '" + key +
                         "' (known: -mtriple -mcpu -mattr -num-cores -opt-level -fast-math-contract -vector-libm -l1d-cache -l2-cache)");
    }
  }
  std::string host_triple = llvm::sys::getProcessTriple();
  if (triple.empty()) triple = host_triple;
  if (!explicit_cpu) cpu = triple == host_triple ? llvm::sys::getHostCPUName().str() : "generic";
  if (cpu == "native") cpu = llvm::sys::getHostCPUName().str();
  resolve_features(this);
  if (vector_libm && !(is_x86() && llvm::Triple(triple).isOSLinux())) {
    throw CompileError("target: -vector-libm needs an x86-64 Linux target (glibc's libmvec)");
  }
}

bool Target::is_host() const {
  return triple == llvm::sys::getProcessTriple() && cpu == llvm::sys::getHostCPUName().str();
}

bool Target::is_x86() const { return llvm::Triple(triple).isX86(); }

bool Target::has_feature(const std::string& name) const {
  return std::find(features.begin(), features.end(), name) != features.end();
}

std::string Target::feature_string() const {
  std::string s;
  if (is_host()) {
    for (const auto& f : llvm::sys::getHostCPUFeatures()) {
      if (!s.empty()) s += ",";
      s += (f.second ? "+" : "-") + f.first().str();
    }
  }
  for (const std::string& a : attrs) {
    if (!s.empty()) s += ",";
    s += a;
  }
  return s;
}

int Target::vector_bits() const {
  if (has_feature("avx512f")) return 512;
  if (has_feature("avx2") || has_feature("avx")) return 256;
  return 128;
}

int Target::vector_registers() const {
  if (has_feature("avx512f") || llvm::Triple(triple).isAArch64()) return 32;
  return 16;
}

int64_t Target::l1d_cache() const {
  if (l1d_bytes) return l1d_bytes;
  int64_t h = is_host() ? host_cache(1) : 0;
  return h ? h : 32 << 10;
}

int64_t Target::l2_cache() const {
  if (l2_bytes) return l2_bytes;
  int64_t h = is_host() ? host_cache(2) : 0;
  return h ? h : 1 << 20;
}

// Measured on the two cores of docs/performance.md, one thread, defaults otherwise:
// Intel's Sapphire Rapids runs BERT-base's products 2-5% faster each with k unrolled
// by 8 than by 4; AMD's Zen 5 runs them 10-15% slower so (BERT-base 124-127 -> 108-115
// ms by 4, MatMul 1024 12.9-13.5 -> 9.9-10.3 ms, 4096 760-899 -> 704-708 ms; by 2 or 1
// in between). Zen 4 and older, unmeasured, keep 8.
int Target::gemm_k_unroll() const {
  if (cpu.rfind("znver", 0) == 0) {
    int generation = std::atoi(cpu.c_str() + 5);
    if (generation >= 5) return 4;
  }
  return 8;
}

std::string Target::to_string() const {
  std::string s = "llvm -mtriple=" + triple + " -mcpu=" + cpu;
  if (!attrs.empty()) {
    s += " -mattr=";
    for (size_t i = 0; i < attrs.size(); ++i) s += (i ? "," : "") + attrs[i];
  }
  if (num_cores) s += " -num-cores=" + std::to_string(num_cores);
  if (opt_level != 3) s += " -opt-level=" + std::to_string(opt_level);
  if (!fp_contract) s += " -fast-math-contract=0";
  if (vector_libm) s += " -vector-libm=1";
  if (l1d_bytes) s += " -l1d-cache=" + std::to_string(l1d_bytes);
  if (l2_bytes) s += " -l2-cache=" + std::to_string(l2_bytes);
  return s;
}

}  // namespace kiln::cpu
