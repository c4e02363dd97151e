#include "backend-vta/program.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hw/driver/runtime/device_buffer.h"
#include "hw/spec/error.h"
#include "hw/spec/isa.h"
#include "support/json.h"

namespace kiln::vta {

namespace {

bool same_kernel(const runtime::UopKernel& a, const runtime::UopKernel& b) {
  if (a.kind() != b.kind() || a.reset() != b.reset() || a.alu_op() != b.alu_op() || a.use_imm() != b.use_imm() ||
      a.imm() != b.imm() || a.loops() != b.loops() || a.uops().size() != b.uops().size())
    return false;
  for (size_t i = 0; i < a.uops().size(); ++i) {
    const hw::Uop &x = a.uops()[i], &y = b.uops()[i];
    if (x.dst_idx != y.dst_idx || x.src_idx != y.src_idx || x.wgt_idx != y.wgt_idx) return false;
  }
  return true;
}

const char* kind_name(ProgramOp::Kind k) {
  switch (k) {
    case ProgramOp::Kind::kLoad: return "load";
    case ProgramOp::Kind::kStore: return "store";
    case ProgramOp::Kind::kGemm: return "gemm";
    case ProgramOp::Kind::kAlu: return "alu";
    case ProgramOp::Kind::kDepPush: return "push";
    case ProgramOp::Kind::kDepPop: return "pop";
  }
  return "?";
}

}  // namespace

uint64_t ProgramArg::bytes() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n * static_cast<uint64_t>(bits / 8);
}

int Program::add_kernel(runtime::UopKernel k) {
  for (size_t i = 0; i < kernels_.size(); ++i)
    if (same_kernel(kernels_[i], k)) return static_cast<int>(i);
  kernels_.push_back(std::move(k));
  return static_cast<int>(kernels_.size() - 1);
}

ProgramStats Program::stats() const {
  ProgramStats s;
  auto elem_bytes = [&](hw::MemType m) { return static_cast<uint64_t>(hw::mem_elem_bytes(config_, m)); };
  for (const ProgramOp& op : ops_) {
    switch (op.kind) {
      case ProgramOp::Kind::kLoad:
        ++s.loads;
        s.bytes_loaded += uint64_t{op.y_size} * op.x_size * elem_bytes(op.mem);
        break;
      case ProgramOp::Kind::kStore:
        ++s.stores;
        s.bytes_stored += uint64_t{op.y_size} * op.x_size * elem_bytes(op.mem);
        break;
      case ProgramOp::Kind::kGemm:
      case ProgramOp::Kind::kAlu: {
        const runtime::UopKernel& k = kernels_[static_cast<size_t>(op.kernel)];
        uint64_t n = uint64_t{k.outer().extent} * k.inner().extent * k.uops().size();
        if (op.kind == ProgramOp::Kind::kGemm) {
          ++s.gemm_insns;
          if (!k.reset()) s.gemm_uops += n;
          else s.gemm_reset_uops += n;
        } else {
          ++s.alu_insns;
          s.alu_uops += n;
          if (!k.use_imm()) s.alu_tensor_uops += n;
        }
        break;
      }
      case ProgramOp::Kind::kDepPush:
      case ProgramOp::Kind::kDepPop: ++s.dep_ops; break;
    }
  }
  return s;
}

InorderEstimate estimate_inorder(const Program& p, int mem_latency) {
  // Cycles per event, read off kiln_inorder_top's sequencer: a memory word is prepared
  // a cycle before its request and waits for the response (a write for its registered
  // acknowledgement); a micro-op step is UOP, ROW (SRC for a tensor ALU operand), a LANE
  // cycle per lane and the lane pipeline's drain in WRITE; an instruction adds DECODE
  // and RETIRE to its two fetched words. A word takes at least 3 cycles (prepare,
  // request, response): a memory that answers in the next cycle is as fast as one that
  // answers at once.
  constexpr double kWordOverhead = 2, kMinWord = 3, kInsnOverhead = 2;
  constexpr double kStepOverhead = 6, kResetStep = 4;
  const hw::Config& cfg = p.config();
  const double read = std::max(kMinWord, mem_latency + kWordOverhead), write = read;
  const double lanes = static_cast<double>(cfg.batch()) * cfg.block_out();
  auto words = [&](hw::MemType m) {  // requests per element: a smaller one is part of a word
    return std::max<uint64_t>(1, static_cast<uint64_t>(hw::mem_elem_bytes(cfg, m)) / 8);
  };
  InorderEstimate e;
  double cycles = 0;
  auto insn = [&] {
    ++e.insns;
    e.reads += 2;
    cycles += 2 * read + kInsnOverhead;
  };
  // The runtime loads each kernel's micro-ops once (a LOAD UOP, an element a request).
  for (const runtime::UopKernel& k : p.kernels()) {
    insn();
    e.reads += k.uops().size();
    cycles += static_cast<double>(k.uops().size()) * read;
  }
  for (const ProgramOp& op : p.ops()) {
    switch (op.kind) {
      case ProgramOp::Kind::kLoad: {
        insn();
        const uint64_t data = uint64_t{op.y_size} * op.x_size;
        const uint64_t all = uint64_t{op.y_size + op.pad.top + op.pad.bottom} * (op.x_size + op.pad.left + op.pad.right);
        e.reads += data * words(op.mem);
        cycles += static_cast<double>(data * words(op.mem)) * read + static_cast<double>(all - data);
        break;
      }
      case ProgramOp::Kind::kStore: {
        insn();
        const uint64_t data = uint64_t{op.y_size} * op.x_size;
        e.writes += data * words(hw::MemType::kOut);
        cycles += static_cast<double>(data) + static_cast<double>(data * words(hw::MemType::kOut)) * write;
        break;
      }
      case ProgramOp::Kind::kGemm:
      case ProgramOp::Kind::kAlu: {
        insn();
        const runtime::UopKernel& k = p.kernels()[static_cast<size_t>(op.kernel)];
        const uint64_t n = uint64_t{k.outer().extent} * k.inner().extent * k.uops().size();
        e.uop_steps += n;
        const bool tensor = op.kind == ProgramOp::Kind::kAlu && !k.use_imm();
        const double step = k.reset() ? kResetStep : lanes + kStepOverhead + (tensor ? 1 : 0);
        cycles += static_cast<double>(n) * step;
        break;
      }
      case ProgramOp::Kind::kDepPush:
      case ProgramOp::Kind::kDepPop: break;  // flags on the neighbouring instructions
    }
  }
  insn();  // FINISH
  e.cycles = cycles;
  return e;
}

void Program::emit(runtime::CommandStream& cs, std::span<const driver::DevAddr> addrs) const {
  if (cs.config().fingerprint() != config_.fingerprint()) {
    throw hw::Error(fmt::format("program '{}' was compiled for configuration '{}', the stream is for '{}'", name_,
                                config_.name(), cs.config().name()));
  }
  if (addrs.size() != args_.size()) {
    throw hw::Error(fmt::format("program '{}' takes {} arguments, {} given", name_, args_.size(), addrs.size()));
  }
  const hw::Config& c = config_;
  for (const ProgramOp& op : ops_) {
    switch (op.kind) {
      case ProgramOp::Kind::kLoad: {
        uint64_t eb = static_cast<uint64_t>(hw::mem_elem_bytes(c, op.mem));
        cs.load_2d(op.mem, op.sram, addrs[static_cast<size_t>(op.arg)] + op.dram_elem * eb, op.y_size, op.x_size,
                   op.x_stride, op.pad);
        break;
      }
      case ProgramOp::Kind::kStore:
        cs.store_2d(op.sram, addrs[static_cast<size_t>(op.arg)] + op.dram_elem * c.out_elem_bytes(), op.y_size,
                    op.x_size, op.x_stride);
        break;
      case ProgramOp::Kind::kGemm: cs.push_gemm(kernels_[static_cast<size_t>(op.kernel)]); break;
      case ProgramOp::Kind::kAlu: cs.push_alu(kernels_[static_cast<size_t>(op.kernel)]); break;
      case ProgramOp::Kind::kDepPush: cs.dep_push(op.from, op.to); break;
      case ProgramOp::Kind::kDepPop: cs.dep_pop(op.from, op.to); break;
    }
  }
}

driver::Counters Program::run(driver::Device& dev, std::span<const driver::DevAddr> addrs,
                              runtime::StreamOptions opts) const {
  runtime::CommandStream cs(dev, config_, opts);
  emit(cs, addrs);
  cs.synchronize();
  return cs.counters();
}

std::string Program::assembly(driver::Device& dev, std::span<const driver::DevAddr> addrs) const {
  runtime::CommandStream cs(dev, config_);
  emit(cs, addrs);
  return cs.disassemble();
}

std::string Program::to_json() const {
  nlohmann::json j;
  j["format"] = "kiln-vta-program";
  j["version"] = 1;
  j["name"] = name_;
  j["config"] = {{"name", config_.name()}, {"fingerprint", fmt::format("{:016x}", config_.fingerprint())}};
  for (const ProgramArg& a : args_) j["args"].push_back({{"name", a.name}, {"shape", a.shape}, {"bits", a.bits}});
  for (const runtime::UopKernel& k : kernels_) {
    nlohmann::json kj;
    kj["name"] = k.name();
    kj["kind"] = k.kind() == runtime::KernelKind::kGemm ? "gemm" : "alu";
    kj["reset"] = k.reset();
    kj["alu_op"] = std::string(hw::alu_op_name(k.alu_op()));
    kj["use_imm"] = k.use_imm();
    kj["imm"] = k.imm();
    for (const runtime::UopLoop& l : k.loops())
      kj["loops"].push_back({l.extent, l.dst_factor, l.src_factor, l.wgt_factor});
    for (const hw::Uop& u : k.uops()) kj["uops"].push_back({u.dst_idx, u.src_idx, u.wgt_idx});
    j["kernels"].push_back(kj);
  }
  j["ops"] = nlohmann::json::array();
  for (const ProgramOp& op : ops_) {
    nlohmann::json o;
    o["op"] = kind_name(op.kind);
    switch (op.kind) {
      case ProgramOp::Kind::kLoad:
      case ProgramOp::Kind::kStore:
        o["mem"] = std::string(hw::mem_type_name(op.mem));
        o["sram"] = op.sram;
        o["arg"] = op.arg;
        o["dram"] = op.dram_elem;
        o["shape"] = {op.y_size, op.x_size, op.x_stride};
        if (op.kind == ProgramOp::Kind::kLoad) o["pad"] = {op.pad.top, op.pad.bottom, op.pad.left, op.pad.right};
        break;
      case ProgramOp::Kind::kGemm:
      case ProgramOp::Kind::kAlu: o["kernel"] = op.kernel; break;
      case ProgramOp::Kind::kDepPush:
      case ProgramOp::Kind::kDepPop:
        o["from"] = std::string(hw::module_name(op.from));
        o["to"] = std::string(hw::module_name(op.to));
        break;
    }
    j["ops"].push_back(o);
  }
  return j.dump();
}

Program Program::from_json(std::string_view text, const hw::Config& config, std::string_view source) {
  auto fail = [&](const std::string& why) -> hw::Error {
    return hw::Error(fmt::format("{}: not a valid VTA program: {}", source, why));
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw fail(e.what());
  }
  try {
    if (j.value("format", "") != "kiln-vta-program") throw fail("format is not kiln-vta-program");
    std::string fp = j.at("config").at("fingerprint").get<std::string>();
    if (fp != fmt::format("{:016x}", config.fingerprint())) {
      throw hw::Error(fmt::format("{}: the program was compiled for configuration '{}' (fingerprint {}), not '{}' ({:016x})",
                                  source, j.at("config").at("name").get<std::string>(), fp, config.name(),
                                  config.fingerprint()));
    }
    Program p(j.at("name").get<std::string>(), config);
    for (const auto& a : j.at("args")) {
      p.add_arg(ProgramArg{a.at("name"), json_integers<int64_t>(a.at("shape"), "shape"),
                           json_integer<int>(a.at("bits"), "bits")});
    }
    auto stage_of_name = [&](const std::string& s) {
      for (hw::Module st : {hw::Module::kLoad, hw::Module::kCompute, hw::Module::kStore})
        if (hw::module_name(st) == s) return st;
      throw fail("unknown module '" + s + "'");
    };
    auto mem_of_name = [&](const std::string& s) {
      for (hw::MemType m : {hw::MemType::kUop, hw::MemType::kWgt, hw::MemType::kInp, hw::MemType::kAcc, hw::MemType::kOut})
        if (hw::mem_type_name(m) == s) return m;
      throw fail("unknown memory type '" + s + "'");
    };
    if (j.contains("kernels")) {
      for (const auto& kj : j.at("kernels")) {
        std::string name = kj.at("name");
        std::string kind = kj.at("kind");
        hw::AluOp op = hw::AluOp::kMin;
        bool found = false;
        for (hw::AluOp o : hw::kAluOps)
          if (hw::alu_op_name(o) == kj.at("alu_op").get<std::string>()) op = o, found = true;
        if (!found) throw fail("unknown ALU op in kernel '" + name + "'");
        auto builder = [&] {
          if (kind == "gemm") return runtime::UopKernelBuilder::gemm(name, kj.at("reset").get<bool>());
          if (kind != "alu") throw fail("unknown kernel kind '" + kind + "'");
          if (!kj.at("use_imm").get<bool>()) return runtime::UopKernelBuilder::alu(name, op);
          return runtime::UopKernelBuilder::alu_imm(name, op, json_integer<int32_t>(kj.at("imm"), "imm"));
        };
        runtime::UopKernelBuilder b = builder();
        size_t nloops = 0;
        if (kj.contains("loops")) {
          for (const auto& jl : kj.at("loops")) {
            std::vector<uint32_t> l = json_integers<uint32_t>(jl, "loop");
            if (l.size() != 4) throw fail(fmt::format("a loop of kernel '{}' is not [extent, dst, src, wgt]", name));
            b.loop_begin(l[0], l[1], l[2], l[3]);
            ++nloops;
          }
        }
        for (const auto& ju : kj.at("uops")) {
          std::vector<uint32_t> u = json_integers<uint32_t>(ju, "uop");
          if (u.size() != 3) throw fail(fmt::format("a micro-op of kernel '{}' is not [dst, src, wgt]", name));
          b.push(u[0], u[1], u[2]);
        }
        for (size_t i = 0; i < nloops; ++i) b.loop_end();
        p.kernels_.push_back(b.finish());
      }
    }
    for (const auto& o : j.at("ops")) {
      ProgramOp op;
      std::string k = o.at("op");
      if (k == "load" || k == "store") {
        op.kind = k == "load" ? ProgramOp::Kind::kLoad : ProgramOp::Kind::kStore;
        op.mem = mem_of_name(o.at("mem"));
        op.sram = json_integer<uint32_t>(o.at("sram"), "sram");
        op.arg = json_integer<int>(o.at("arg"), "arg");
        op.dram_elem = json_integer<uint64_t>(o.at("dram"), "dram");
        std::vector<uint32_t> shape = json_integers<uint32_t>(o.at("shape"), "shape");
        if (shape.size() != 3) throw fail("a " + k + "'s shape is not [y_size, x_size, x_stride]");
        op.y_size = shape[0];
        op.x_size = shape[1];
        op.x_stride = shape[2];
        if (op.arg < 0 || static_cast<size_t>(op.arg) >= p.args_.size()) throw fail(fmt::format("argument {} does not exist", op.arg));
        if (op.kind == ProgramOp::Kind::kLoad) {
          std::vector<uint32_t> pad = json_integers<uint32_t>(o.at("pad"), "pad");
          if (pad.size() != 4) throw fail("a load's pad is not [top, bottom, left, right]");
          op.pad = runtime::Pad{pad[0], pad[1], pad[2], pad[3]};
        }
      } else if (k == "gemm" || k == "alu") {
        op.kind = k == "gemm" ? ProgramOp::Kind::kGemm : ProgramOp::Kind::kAlu;
        op.kernel = json_integer<int>(o.at("kernel"), "kernel");
        if (op.kernel < 0 || static_cast<size_t>(op.kernel) >= p.kernels_.size())
          throw fail(fmt::format("kernel {} does not exist", op.kernel));
      } else if (k == "push" || k == "pop") {
        op.kind = k == "push" ? ProgramOp::Kind::kDepPush : ProgramOp::Kind::kDepPop;
        op.from = stage_of_name(o.at("from"));
        op.to = stage_of_name(o.at("to"));
      } else {
        throw fail("unknown op '" + k + "'");
      }
      p.ops_.push_back(op);
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw fail(e.what());
  }
}

void Program::save(const std::filesystem::path& path) const {
  std::ofstream out(path);
  if (!out) throw hw::Error("cannot write '" + path.string() + "'");
  out << to_json() << "\n";
  if (!out) throw hw::Error("cannot write '" + path.string() + "'");
}

Program Program::load(const std::filesystem::path& path, const hw::Config& config) {
  std::ifstream in(path);
  if (!in) throw hw::Error("cannot read '" + path.string() + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return from_json(ss.str(), config, path.string());
}

}  // namespace kiln::vta
