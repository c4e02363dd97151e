// kiln.hw: accelerator configurations, devices, the runtime's command stream, counters
// and traces (hw/spec, hw/driver), and one operator through the VTA backend
// (backend-vta/ops.h), as thin pybind11 wrappers: a hardware experiment is a Python
// script over the same calls `kiln sim` and `kiln vta` make.
#include <pybind11/numpy.h>
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/driver/device.h"
#include "hw/driver/device_settings.h"
#include "hw/driver/runtime/command_stream.h"
#include "hw/driver/runtime/uop_kernel.h"
#include "hw/spec/assembly.h"
#include "hw/spec/config.h"
#include "hw/spec/config_files.h"
#include "hw/spec/error.h"
#include "hw/spec/isa.h"
#include "hw/spec/regs.h"
#include "python/src/bindings.h"
#ifdef KILN_PYTHON_VTA
#include "backend-vta/ops.h"
#include "backend-vta/reference.h"
#endif

namespace py = pybind11;

namespace kiln::python {

namespace {

using driver::Device;
using runtime::CommandStream;
using runtime::UopKernel;
using runtime::UopKernelBuilder;

// The ISA's enumerations are spelled in Python as isa.h names them ("acc", "compute",
// "add"), so that messages, assembly and scripts use one vocabulary.
template <typename E, size_t N>
E by_name(std::string_view what, const std::string& name, const std::array<E, N>& values,
          std::string_view (*name_of)(E)) {
  std::string known;
  for (E v : values) {
    if (name_of(v) == name) return v;
    known += (known.empty() ? "" : ", ") + std::string(name_of(v));
  }
  throw hw::Error(std::string(what) + " '" + name + "': expected one of " + known);
}
hw::MemType mem_type(const std::string& name) {
  return by_name("memory type", name, hw::kMemTypes, &hw::mem_type_name);
}
hw::Module module_named(const std::string& name) {
  constexpr std::array kModules = {hw::Module::kLoad, hw::Module::kCompute, hw::Module::kStore};
  return by_name("module", name, kModules, &hw::module_name);
}
hw::AluOp alu_op(const std::string& name) { return by_name("ALU operation", name, hw::kAluOps, &hw::alu_op_name); }

// A str or an os.PathLike (pathlib.Path) as a path.
std::string fspath(const py::handle& h) { return py::str(py::module_::import("os").attr("fspath")(h)); }

// A Config, or a configuration's name in hw/config or a file path (hw::load_config).
hw::Config to_config(const py::handle& h) {
  if (py::isinstance<hw::Config>(h)) return h.cast<hw::Config>();
  if (py::isinstance<py::str>(h) || py::hasattr(h, "__fspath__")) return hw::load_config(fspath(h));
  throw hw::Error("expected a configuration (kiln.hw.Config, a name in hw/config or a path), got " +
                  py::repr(h).cast<std::string>());
}

// Counters by their names in hw/spec/regs.h (as `kiln sim --json` prints them), in the
// register map's order; only those the device measures.
py::dict counters_dict(const driver::Counters& counters) {
  py::dict d;
  for (const hw::regs::CounterInfo& info : hw::regs::kCounters) {
    auto it = counters.find(info.id);
    if (it != counters.end()) d[py::str(std::string(info.name))] = it->second;
  }
  return d;
}

// Device settings as Python keyword arguments, spelled as target options
// (dram_latency=64); each goes through device_settings.h's one table, which checks that
// `kind` takes it and parses its value.
driver::DeviceOptions device_options(const std::string& kind, const py::kwargs& settings) {
  driver::DeviceOptions opts;
  for (const auto& [key, value] : settings) {
    std::string name = py::str(key);
    const driver::DeviceSetting* s = driver::find_device_setting(name);
    if (!s) {
      std::string known;
      for (const driver::DeviceSetting& d : driver::device_settings())
        known += (known.empty() ? "" : ", ") + std::string(d.name);
      throw hw::Error("no device setting '" + name + "'; the settings: " + known);
    }
    // A switch takes True/False; a path takes any os.PathLike; the rest their text.
    std::string text = py::isinstance<py::bool_>(value) ? (value.cast<bool>() ? "1" : "0")
                       : py::hasattr(value, "__fspath__") ? fspath(value)
                                                          : py::str(value).cast<std::string>();
    driver::apply_device_setting(opts, kind, *s, text, name);
  }
  return opts;
}

// A C-contiguous view of any buffer (a NumPy array of any dtype, bytes, bytearray).
std::span<const uint8_t> bytes_of(const py::array& a) {
  return {static_cast<const uint8_t*>(a.data()), static_cast<size_t>(a.nbytes())};
}
py::array contiguous(const py::object& data) {
  py::array a = py::array::ensure(data, py::array::c_style);
  // An object array's bytes would be pointers into this process.
  if (!a || a.dtype().kind() == 'O')
    throw hw::Error("expected an array or a bytes-like object, got " + py::repr(data).cast<std::string>());
  return a;
}

py::bytes to_bytes(const std::vector<uint8_t>& v) {
  return py::bytes(reinterpret_cast<const char*>(v.data()), v.size());
}
std::vector<uint8_t> from_bytes(const py::object& data) {
  py::array a = contiguous(data);
  std::span<const uint8_t> b = bytes_of(a);
  return {b.begin(), b.end()};
}

void bind_config(py::module_& mod) {
  py::class_<hw::Config>(mod, "Config", "an accelerator configuration (hw/spec/config.h)")
      .def_static("from_file", [](const py::object& path) { return hw::Config::from_file(fspath(path)); }, py::arg("path"))
      .def_static("from_json", &hw::Config::from_json, py::arg("text"), py::arg("source") = "<config>")
      .def_static("default", &hw::Config::vta_default, "VTA's default configuration (hw/config/default.json)")
      .def_property_readonly("name", &hw::Config::name)
      .def_property_readonly("description", &hw::Config::description)
      // The nine keys of the file, by the names of config_keys().
      .def_property_readonly("params", [](const hw::Config& c) {
        py::dict d;
        for (const hw::ConfigKey& k : hw::config_keys()) d[py::str(std::string(k.name))] = c.params().*k.member;
        return d;
      })
      .def_property_readonly("inp_width", &hw::Config::inp_width)
      .def_property_readonly("wgt_width", &hw::Config::wgt_width)
      .def_property_readonly("acc_width", &hw::Config::acc_width)
      .def_property_readonly("out_width", &hw::Config::out_width)
      .def_property_readonly("batch", &hw::Config::batch)
      .def_property_readonly("block_in", &hw::Config::block_in)
      .def_property_readonly("block_out", &hw::Config::block_out)
      .def_property_readonly("inp_elem_bytes", &hw::Config::inp_elem_bytes)
      .def_property_readonly("wgt_elem_bytes", &hw::Config::wgt_elem_bytes)
      .def_property_readonly("acc_elem_bytes", &hw::Config::acc_elem_bytes)
      .def_property_readonly("out_elem_bytes", &hw::Config::out_elem_bytes)
      .def_property_readonly("uop_elem_bytes", &hw::Config::uop_elem_bytes)
      .def_property_readonly("uop_buff_bytes", &hw::Config::uop_buff_bytes)
      .def_property_readonly("inp_buff_bytes", &hw::Config::inp_buff_bytes)
      .def_property_readonly("wgt_buff_bytes", &hw::Config::wgt_buff_bytes)
      .def_property_readonly("acc_buff_bytes", &hw::Config::acc_buff_bytes)
      .def_property_readonly("out_buff_bytes", &hw::Config::out_buff_bytes)
      .def_property_readonly("uop_depth", &hw::Config::uop_depth)
      .def_property_readonly("inp_depth", &hw::Config::inp_depth)
      .def_property_readonly("wgt_depth", &hw::Config::wgt_depth)
      .def_property_readonly("acc_depth", &hw::Config::acc_depth)
      .def_property_readonly("out_depth", &hw::Config::out_depth)
      .def_property_readonly("fingerprint", &hw::Config::fingerprint)
      .def("canonical", &hw::Config::canonical)
      .def("to_json", &hw::Config::to_json, py::arg("with_derived") = true)
      .def(py::self == py::self)
      .def("__repr__", [](const hw::Config& c) {
        return "kiln.hw.Config('" + c.name() + "', " + std::to_string(c.batch()) + "x" + std::to_string(c.block_in()) +
               "x" + std::to_string(c.block_out()) + ")";
      });
  mod.def("config", [](const py::object& name_or_path) { return to_config(name_or_path); },
         py::arg("name_or_path") = "default",
         "a configuration by name in hw/config (\"default\", \"small\", \"tiny\") or by path");
}

void bind_isa(py::module_& mod) {
  py::class_<hw::Insn>(mod, "Insn", "one instruction with the fields of shared/ISA.md (hw/spec/isa.h)")
      .def_property_readonly("opcode", [](const hw::Insn& i) { return std::string(hw::opcode_name(i.opcode)); })
      .def_property_readonly("memory_type", [](const hw::Insn& i) { return std::string(hw::mem_type_name(i.memory_type)); })
      .def_property_readonly("module", [](const hw::Insn& i) { return std::string(hw::module_name(hw::module_of(i))); })
      .def_readonly("pop_prev_dep", &hw::Insn::pop_prev_dep)
      .def_readonly("pop_next_dep", &hw::Insn::pop_next_dep)
      .def_readonly("push_prev_dep", &hw::Insn::push_prev_dep)
      .def_readonly("push_next_dep", &hw::Insn::push_next_dep)
      .def_readonly("sram_base", &hw::Insn::sram_base)
      .def_readonly("dram_base", &hw::Insn::dram_base)
      .def_readonly("y_size", &hw::Insn::y_size)
      .def_readonly("x_size", &hw::Insn::x_size)
      .def_readonly("x_stride", &hw::Insn::x_stride)
      .def_readonly("y_pad_0", &hw::Insn::y_pad_0)
      .def_readonly("y_pad_1", &hw::Insn::y_pad_1)
      .def_readonly("x_pad_0", &hw::Insn::x_pad_0)
      .def_readonly("x_pad_1", &hw::Insn::x_pad_1)
      .def_readonly("reset", &hw::Insn::reset)
      .def_readonly("uop_bgn", &hw::Insn::uop_bgn)
      .def_readonly("uop_end", &hw::Insn::uop_end)
      .def_readonly("iter_out", &hw::Insn::iter_out)
      .def_readonly("iter_in", &hw::Insn::iter_in)
      .def_readonly("dst_factor_out", &hw::Insn::dst_factor_out)
      .def_readonly("dst_factor_in", &hw::Insn::dst_factor_in)
      .def_readonly("src_factor_out", &hw::Insn::src_factor_out)
      .def_readonly("src_factor_in", &hw::Insn::src_factor_in)
      .def_readonly("wgt_factor_out", &hw::Insn::wgt_factor_out)
      .def_readonly("wgt_factor_in", &hw::Insn::wgt_factor_in)
      .def_property_readonly("alu_opcode", [](const hw::Insn& i) { return std::string(hw::alu_op_name(i.alu_opcode)); })
      .def_readonly("use_imm", &hw::Insn::use_imm)
      .def_readonly("imm", &hw::Insn::imm)
      .def(py::self == py::self);
  py::class_<hw::Uop>(mod, "Uop", "a micro-op: indices into ACC, INP or ACC, and WGT")
      .def_readonly("dst_idx", &hw::Uop::dst_idx)
      .def_readonly("src_idx", &hw::Uop::src_idx)
      .def_readonly("wgt_idx", &hw::Uop::wgt_idx)
      .def(py::self == py::self)
      .def("__repr__", [](const hw::Uop& u) { return hw::disassemble_uops(std::span(&u, 1)); });
  py::class_<hw::AsmProgram>(mod, "AsmProgram", "assembled instructions and micro-ops (hw/spec/assembly.h)")
      .def_readonly("insns", &hw::AsmProgram::insns)
      .def_readonly("uops", &hw::AsmProgram::uops);

  mod.def("assemble", [](const std::string& text, const py::object& cfg, const std::string& source) {
        return hw::assemble(text, to_config(cfg), source);
      }, py::arg("text"), py::arg("config") = "default", py::arg("source") = "<asm>");
  mod.def("disassemble", [](const std::vector<hw::Insn>& insns, const py::object& cfg) {
        return hw::disassemble(insns, to_config(cfg));
      }, py::arg("insns"), py::arg("config") = "default");
  mod.def("disassemble_uops", [](const std::vector<hw::Uop>& uops) { return hw::disassemble_uops(uops); });
  // Program files: 16 bytes per instruction, 4 per micro-op, in the configuration's layout.
  mod.def("encode_program", [](const std::vector<hw::Insn>& insns, const py::object& cfg) {
        return to_bytes(hw::encode_program(hw::InsnLayout(to_config(cfg)), insns));
      }, py::arg("insns"), py::arg("config") = "default");
  mod.def("decode_program", [](const py::object& data, const py::object& cfg) {
        return hw::decode_program(hw::InsnLayout(to_config(cfg)), from_bytes(data));
      }, py::arg("data"), py::arg("config") = "default");
  mod.def("encode_uops", [](const std::vector<hw::Uop>& uops, const py::object& cfg) {
        return to_bytes(hw::encode_uops(hw::InsnLayout(to_config(cfg)), uops));
      }, py::arg("uops"), py::arg("config") = "default");
  mod.attr("INSN_BYTES") = hw::kInsnBytes;
}

void bind_device(py::module_& mod) {
  mod.def("device_kinds", &driver::device_kinds, "the devices this build has");
  mod.def("device_settings", [] {
        py::list out;
        for (const driver::DeviceSetting& s : driver::device_settings())
          out.append(py::dict(py::arg("name") = std::string(s.name), py::arg("devices") = std::string(s.devices),
                              py::arg("value") = std::string(s.value), py::arg("help") = std::string(s.help)));
        return out;
      }, "the device settings (hw/driver/device_settings.h) that kiln.hw.device takes as keywords");
  mod.def("counter_info", [] {
        py::list out;
        for (const hw::regs::CounterInfo& c : hw::regs::kCounters)
          out.append(py::make_tuple(std::string(c.name), c.timed, std::string(c.description)));
        return out;
      }, "(name, timed, description) of each performance counter (hw/spec/regs.h)");

  py::class_<Device, std::unique_ptr<Device>>(mod, "Device", "an accelerator (hw/driver/device.h)")
      .def_property_readonly("kind", [](const Device& d) { return std::string(d.kind()); })
      .def_property_readonly("config", &Device::config)
      .def_property_readonly("dram_bytes", &Device::dram_bytes)
      .def("alloc", &Device::alloc, py::arg("bytes"), py::arg("align") = 64)
      .def("free", &Device::free, py::arg("addr"))
      .def("write", [](Device& d, driver::DevAddr addr, const py::object& data) {
        py::array a = contiguous(data);
        d.write(addr, bytes_of(a));
      }, py::arg("addr"), py::arg("data"), "copies an array's bytes (any dtype) to DRAM")
      .def("read", [](Device& d, driver::DevAddr addr, py::ssize_t count, const py::object& dtype) {
        py::array a(py::dtype::from_args(dtype), std::vector<py::ssize_t>{count});
        d.read(addr, {static_cast<uint8_t*>(a.mutable_data()), static_cast<size_t>(a.nbytes())});
        return a;
      }, py::arg("addr"), py::arg("count"), py::arg("dtype") = "uint8", "`count` elements of `dtype` from DRAM")
      .def("write_reg", &Device::write_reg, py::arg("offset"), py::arg("value"))
      .def("read_reg", &Device::read_reg, py::arg("offset"))
      .def("run", [](Device& d, driver::DevAddr addr, uint32_t count) {
        py::gil_scoped_release release;
        d.run(addr, count);
      }, py::arg("insn_addr"), py::arg("insn_count"), "runs the instructions at insn_addr to FINISH")
      .def("counters", [](Device& d) { return counters_dict(d.counters()); },
           "the counters of the last run this device measures, by name")
      .def("__repr__", [](const Device& d) {
        return "kiln.hw.device('" + std::string(d.kind()) + "', '" + d.config().name() + "')";
      });
  // kiln.hw.device("rtl", "tiny", dram_latency=64, trace="t.json"): the settings are
  // those of `kiln hw devices` and docs/cli.md's device flags, spelled dram_latency.
  mod.def("device", [](const std::string& kind, const py::object& cfg, const py::kwargs& settings) {
        return driver::make_device(kind, to_config(cfg), device_options(kind, settings));
      }, py::arg("kind") = "fsim", py::arg("config") = "default");
}

void bind_command_stream(py::module_& mod) {
  py::class_<UopKernel>(mod, "UopKernel", "the body of one GEMM or ALU instruction (hw/driver/runtime/uop_kernel.h)")
      .def_property_readonly("name", &UopKernel::name)
      .def_property_readonly("kind", [](const UopKernel& k) { return k.kind() == runtime::KernelKind::kGemm ? "gemm" : "alu"; })
      .def_property_readonly("uops", &UopKernel::uops)
      .def_property_readonly("loops", [](const UopKernel& k) {
        py::list out;
        for (const runtime::UopLoop& l : k.loops())
          out.append(py::make_tuple(l.extent, l.dst_factor, l.src_factor, l.wgt_factor));
        return out;
      })
      .def_property_readonly("reset", &UopKernel::reset)
      .def_property_readonly("alu_op", [](const UopKernel& k) { return std::string(hw::alu_op_name(k.alu_op())); })
      .def_property_readonly("use_imm", &UopKernel::use_imm)
      .def_property_readonly("imm", &UopKernel::imm);
  // UopKernelBuilder.alu_imm("add1", "add", 1).loop_begin(4, 1, 1).push(0, 0).loop_end().finish()
  py::class_<UopKernelBuilder>(mod, "UopKernelBuilder", "records a micro-op kernel like VTA's VTAUopLoopBegin/Push/End")
      .def_static("gemm", &UopKernelBuilder::gemm, py::arg("name"), py::arg("reset") = false)
      .def_static("alu", [](std::string name, const std::string& op) {
        return UopKernelBuilder::alu(std::move(name), alu_op(op));
      }, py::arg("name"), py::arg("op"))
      .def_static("alu_imm", [](std::string name, const std::string& op, int32_t imm) {
        return UopKernelBuilder::alu_imm(std::move(name), alu_op(op), imm);
      }, py::arg("name"), py::arg("op"), py::arg("imm"))
      .def("loop_begin", &UopKernelBuilder::loop_begin, py::arg("extent"), py::arg("dst_factor"), py::arg("src_factor"),
           py::arg("wgt_factor") = 0, py::return_value_policy::reference_internal)
      .def("loop_end", &UopKernelBuilder::loop_end, py::return_value_policy::reference_internal)
      .def("push", &UopKernelBuilder::push, py::arg("dst"), py::arg("src"), py::arg("wgt") = 0,
           py::return_value_policy::reference_internal)
      .def("finish", &UopKernelBuilder::finish);

  py::class_<CommandStream>(mod, "CommandStream", "instruction streams built the way VTA's runtime builds them")
      // The stream refers to the device: keep_alive holds the device while it lives.
      .def(py::init([](Device& dev, const py::object& cfg, bool dump) {
             runtime::StreamOptions opts;
             opts.dump = dump;
             if (cfg.is_none()) return std::make_unique<CommandStream>(dev, opts);
             return std::make_unique<CommandStream>(dev, to_config(cfg), opts);
           }),
           py::arg("device"), py::arg("config") = py::none(), py::arg("dump") = false, py::keep_alive<1, 2>())
      .def_property_readonly("config", &CommandStream::config)
      // pad: (top, bottom, left, right) in elements.
      .def("load_2d", [](CommandStream& s, const std::string& type, uint32_t sram, driver::DevAddr dram, uint32_t y_size,
                         uint32_t x_size, uint32_t x_stride, std::array<uint32_t, 4> pad) {
        s.load_2d(mem_type(type), sram, dram, y_size, x_size, x_stride, runtime::Pad{pad[0], pad[1], pad[2], pad[3]});
      }, py::arg("type"), py::arg("sram"), py::arg("dram"), py::arg("y_size"), py::arg("x_size"), py::arg("x_stride"),
         py::arg("pad") = std::array<uint32_t, 4>{0, 0, 0, 0})
      .def("store_2d", &CommandStream::store_2d, py::arg("sram"), py::arg("dram"), py::arg("y_size"), py::arg("x_size"),
           py::arg("x_stride"))
      .def("push_gemm", &CommandStream::push_gemm, py::arg("kernel"))
      .def("push_alu", &CommandStream::push_alu, py::arg("kernel"))
      .def("dep_push", [](CommandStream& s, const std::string& from, const std::string& to) {
        s.dep_push(module_named(from), module_named(to));
      }, py::arg("from_"), py::arg("to"))
      .def("dep_pop", [](CommandStream& s, const std::string& from, const std::string& to) {
        s.dep_pop(module_named(from), module_named(to));
      }, py::arg("from_"), py::arg("to"))
      .def("synchronize", [](CommandStream& s) {
        py::gil_scoped_release release;
        s.synchronize();
      }, "ends the stream, runs it on the device and waits")
      .def_property_readonly("pending", [](const CommandStream& s) {
        return std::vector<hw::Insn>(s.pending().begin(), s.pending().end());
      })
      .def_property_readonly("last_program", [](const CommandStream& s) {
        return std::vector<hw::Insn>(s.last_program().begin(), s.last_program().end());
      })
      .def("disassemble", &CommandStream::disassemble, "the pending stream as text assembly")
      .def("counters", [](const CommandStream& s) { return counters_dict(s.counters()); },
           "device counters summed over every run of this stream")
      .def("uop_cache_stats", [](const CommandStream& s) {
        const runtime::UopCacheStats& c = s.uop_cache_stats();
        return py::dict(py::arg("hits") = c.hits, py::arg("loads") = c.loads, py::arg("evictions") = c.evictions);
      });
}

#ifdef KILN_PYTHON_VTA
py::dict stats_dict(const vta::ProgramStats& s) {
  return py::dict(py::arg("loads") = s.loads, py::arg("stores") = s.stores, py::arg("gemm_insns") = s.gemm_insns,
                  py::arg("alu_insns") = s.alu_insns, py::arg("dep_ops") = s.dep_ops, py::arg("gemm_uops") = s.gemm_uops,
                  py::arg("alu_uops") = s.alu_uops, py::arg("alu_tensor_uops") = s.alu_tensor_uops,
                  py::arg("gemm_reset_uops") = s.gemm_reset_uops, py::arg("bytes_loaded") = s.bytes_loaded,
                  py::arg("bytes_stored") = s.bytes_stored);
}

// One conv2d run as `kiln vta conv2d` makes it: the program, its result against the
// CPU reference, the device's counters.
struct Conv2DRun {
  vta::Conv2DWorkload workload;
  vta::Conv2DKnobs knobs;
  vta::Program program;
  bool matches_reference = false;
  driver::Counters counters;
  std::vector<int8_t> output, reference;  // NCHW
};

py::array nchw(const vta::Conv2DWorkload& wl, const std::vector<int8_t>& v) {
  return py::array_t<int8_t>({wl.batch, wl.out_channels, wl.out_height(), wl.out_width()}, v.data());
}

void bind_vta(py::module_& mod) {
  py::class_<vta::Conv2DWorkload>(mod, "Conv2DWorkload", "an int8 conv2d's shape (backend-vta/strategy.h)")
      .def(py::init([](std::string name, int batch, int height, int width, int in_channels, int out_channels, int kernel,
                       int pad, int stride) {
             vta::Conv2DWorkload wl;
             wl.name = std::move(name);
             wl.batch = batch;
             wl.height = height;
             wl.width = width;
             wl.in_channels = in_channels;
             wl.out_channels = out_channels;
             wl.kernel_h = wl.kernel_w = kernel;
             wl.pad_h = wl.pad_w = pad;
             wl.stride_h = wl.stride_w = stride;
             return wl;
           }),
           py::arg("name") = "conv2d", py::arg("batch") = 1, py::arg("height") = 1, py::arg("width") = 1,
           py::arg("in_channels") = 0, py::arg("out_channels") = 0, py::arg("kernel") = 1, py::arg("pad") = 0,
           py::arg("stride") = 1)
      .def_readwrite("name", &vta::Conv2DWorkload::name)
      .def_readwrite("batch", &vta::Conv2DWorkload::batch)
      .def_readwrite("height", &vta::Conv2DWorkload::height)
      .def_readwrite("width", &vta::Conv2DWorkload::width)
      .def_readwrite("in_channels", &vta::Conv2DWorkload::in_channels)
      .def_readwrite("out_channels", &vta::Conv2DWorkload::out_channels)
      .def_readwrite("kernel_h", &vta::Conv2DWorkload::kernel_h)
      .def_readwrite("kernel_w", &vta::Conv2DWorkload::kernel_w)
      .def_readwrite("pad_h", &vta::Conv2DWorkload::pad_h)
      .def_readwrite("pad_w", &vta::Conv2DWorkload::pad_w)
      .def_readwrite("stride_h", &vta::Conv2DWorkload::stride_h)
      .def_readwrite("stride_w", &vta::Conv2DWorkload::stride_w)
      .def_property_readonly("out_height", &vta::Conv2DWorkload::out_height)
      .def_property_readonly("out_width", &vta::Conv2DWorkload::out_width)
      .def_property_readonly("macs", &vta::Conv2DWorkload::macs)
      .def("__str__", &vta::Conv2DWorkload::to_string)
      .def("__repr__", [](const vta::Conv2DWorkload& wl) { return "kiln.hw.Conv2DWorkload(" + wl.to_string() + ")"; });
  mod.def("resnet18_conv_workloads", &vta::resnet18_conv_workloads, py::arg("batch") = 1,
         "ResNet-18's convolutions C2..C12 (the TVM paper's table)");
  mod.def("dense_workload", &vta::dense_workload, py::arg("batch"), py::arg("in_features"), py::arg("out_features"),
         py::arg("name") = "dense");

  py::class_<vta::Requant>(mod, "Requant", "the requantization fused on the ALU: (+ bias) >> shift, clip")
      .def(py::init([](bool bias, int shift, bool relu) { return vta::Requant{bias, shift, relu}; }),
           py::arg("bias") = true, py::arg("shift") = 8, py::arg("relu") = true)
      .def_readwrite("bias", &vta::Requant::bias)
      .def_readwrite("shift", &vta::Requant::shift)
      .def_readwrite("relu", &vta::Requant::relu);

  py::class_<vta::Conv2DKnobs>(mod, "Conv2DKnobs", "a conv2d schedule's knobs (backend-vta/strategy.h)")
      .def(py::init<>())
      .def_readwrite("tile_b", &vta::Conv2DKnobs::tile_b)
      .def_readwrite("tile_h", &vta::Conv2DKnobs::tile_h)
      .def_readwrite("tile_w", &vta::Conv2DKnobs::tile_w)
      .def_readwrite("tile_oc", &vta::Conv2DKnobs::tile_oc)
      .def_readwrite("tile_ic", &vta::Conv2DKnobs::tile_ic)
      .def_readwrite("h_threads", &vta::Conv2DKnobs::h_threads)
      .def_readwrite("oc_threads", &vta::Conv2DKnobs::oc_threads)
      .def_readwrite("double_buffer", &vta::Conv2DKnobs::double_buffer)
      .def(py::self == py::self)
      .def("__str__", &vta::Conv2DKnobs::to_string)
      .def("__repr__", [](const vta::Conv2DKnobs& k) { return "kiln.hw.Conv2DKnobs(" + k.to_string() + ")"; });
  mod.def("default_conv2d_knobs", [](const py::object& cfg, const vta::Conv2DWorkload& wl, const vta::Requant& rq,
                                    bool latency_hiding) {
        return vta::default_conv2d_knobs(vta::Env(to_config(cfg)), wl, rq, latency_hiding);
      }, py::arg("config"), py::arg("workload"), py::arg("requant") = vta::Requant{}, py::arg("latency_hiding") = true);

  py::class_<vta::Program>(mod, "Program", "a compiled VTA program (backend-vta/program.h)")
      .def_property_readonly("name", &vta::Program::name)
      .def_property_readonly("config", &vta::Program::config)
      .def_property_readonly("args", [](const vta::Program& p) {
        py::list out;
        for (const vta::ProgramArg& a : p.args()) out.append(py::make_tuple(a.name, py::tuple(py::cast(a.shape)), a.bits));
        return out;
      })
      .def_property_readonly("num_kernels", [](const vta::Program& p) { return p.kernels().size(); })
      .def("stats", [](const vta::Program& p) { return stats_dict(p.stats()); },
           "what the program does, counted at compile time")
      .def("assembly", [](const vta::Program& p, Device& dev, const std::vector<driver::DevAddr>& addrs) {
        return p.assembly(dev, addrs);
      }, py::arg("device"), py::arg("addrs"), "the stream as text assembly for the arguments at `addrs` on `device`")
      .def("run", [](const vta::Program& p, Device& dev, const std::vector<driver::DevAddr>& addrs) {
        driver::Counters c;
        {
          py::gil_scoped_release release;
          c = p.run(dev, addrs);
        }
        return counters_dict(c);
      }, py::arg("device"), py::arg("addrs"), "runs with argument i at DRAM address addrs[i]; returns the counters")
      .def("to_json", &vta::Program::to_json)
      .def("save", [](const vta::Program& p, const std::string& path) { p.save(path); }, py::arg("path"));
  mod.def("build_conv2d", [](const py::object& cfg, const vta::Conv2DWorkload& wl, const vta::Requant& rq,
                            std::optional<vta::Conv2DKnobs> knobs) {
        vta::Env env(to_config(cfg));
        py::gil_scoped_release release;
        return vta::build_conv2d(env, wl, rq, knobs ? *knobs : vta::default_conv2d_knobs(env, wl, rq));
      }, py::arg("config"), py::arg("workload"), py::arg("requant") = vta::Requant{}, py::arg("knobs") = py::none(),
      "the program of one conv2d (knobs: the default schedule's when None)");

  py::class_<Conv2DRun>(mod, "Conv2DRun", "one conv2d on a device, checked against the CPU reference")
      .def_readonly("workload", &Conv2DRun::workload)
      .def_readonly("knobs", &Conv2DRun::knobs)
      .def_readonly("program", &Conv2DRun::program)
      .def_readonly("matches_reference", &Conv2DRun::matches_reference)
      .def_property_readonly("counters", [](const Conv2DRun& r) { return counters_dict(r.counters); })
      .def_property_readonly("stats", [](const Conv2DRun& r) { return stats_dict(r.program.stats()); })
      .def_property_readonly("output", [](const Conv2DRun& r) { return nchw(r.workload, r.output); })
      .def_property_readonly("reference", [](const Conv2DRun& r) { return nchw(r.workload, r.reference); });
  // kiln.hw.conv2d(dev, workload): `kiln vta conv2d --device KIND` from Python: the
  // program for the device's configuration, random tensors from `seed`, the run, and
  // the CPU int8 reference.
  mod.def("conv2d", [](Device& dev, const vta::Conv2DWorkload& wl, const vta::Requant& rq,
                      std::optional<vta::Conv2DKnobs> knobs, uint32_t seed, bool latency_hiding) {
        py::gil_scoped_release release;
        vta::Env env(dev.config());
        Conv2DRun r;
        r.workload = wl;
        r.knobs = knobs ? *knobs : vta::default_conv2d_knobs(env, wl, rq, latency_hiding);
        r.program = vta::build_conv2d(env, wl, rq, r.knobs);
        vta::Conv2DTensors t = vta::random_conv2d_tensors(wl, seed);
        vta::Conv2DResult res = vta::run_conv2d(dev, r.program, vta::pack_data(env, wl, t.data),
                                                vta::pack_kernel(env, wl, t.kernel), vta::pack_bias(env, wl, t.bias));
        r.counters = res.counters;
        r.output = vta::unpack_out(env, wl, res.out);
        r.reference = vta::reference_conv2d(wl, rq, t.data, t.kernel, t.bias);
        r.matches_reference = r.output == r.reference;
        return r;
      }, py::arg("device"), py::arg("workload"), py::arg("requant") = vta::Requant{}, py::arg("knobs") = py::none(),
      py::arg("seed") = 1, py::arg("latency_hiding") = true);
}
#endif

}  // namespace

void bind_hw(py::module_& m) {
  py::module_ mod =
      m.def_submodule("hw", "the accelerator: configurations, devices, the command stream (hw/spec, hw/driver)");
  bind_config(mod);
  bind_isa(mod);
  bind_device(mod);
  bind_command_stream(mod);
#ifdef KILN_PYTHON_VTA
  bind_vta(mod);
#endif
}

}  // namespace kiln::python
