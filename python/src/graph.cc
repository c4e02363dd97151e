// kiln.frontend and kiln.build_model: ONNX models through the graph compiler onto a
// target ("cpu", "llvm -mcpu=...", "vta -config=NAME -device=fsim|rtl"), run with
// arrays, saved to and loaded from .kiln files: thin pybind11 wrappers of
// compiler/frontend and compiler/graph, as `kiln run` and `kiln compile` use them.
// A model built for another machine ("llvm -mtriple=aarch64-linux-gnu") is compiled
// but never run: export_object() writes its kernels' code (backend-cpu's Module).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "backend-cpu/graph_backend.h"
#include "backend-cpu/runtime/tensor.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "compiler/graph/graph.h"
#include "compiler/support/error.h"
#include "compiler/target/target.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

// A compiled model and how it was built (save() needs the host backend's name).
struct GraphModule {
  std::shared_ptr<graph::Executor> ex;
  std::string backend, target;
};

cpu::NDArray output_array(const graph::Executor& ex, size_t k) {
  const graph::TensorType& t = ex.output_type(k);
  cpu::NDArray a = cpu::NDArray::empty(t.shape, t.dtype);
  std::memcpy(a.data(), ex.output(k), static_cast<size_t>(ex.output_bytes(k)));
  return a;
}

void set_input(graph::Executor& ex, size_t k, const py::handle& value) {
  if (k >= ex.num_inputs())
    throw CompileError("input " + std::to_string(k) + ": the model has " + std::to_string(ex.num_inputs()) + " inputs");
  cpu::NDArray a = to_ndarray(value).contiguous();
  const graph::TensorType& t = ex.input_type(k);
  if (a.dtype() != t.dtype || a.shape() != t.shape) {
    std::string got = a.dtype().to_string() + "[";
    for (size_t i = 0; i < a.shape().size(); ++i) got += (i ? ", " : "") + std::to_string(a.shape()[i]);
    throw CompileError("input " + std::to_string(k) + " ('" + ex.plan().inputs[k].name + "') is " + t.to_string() +
                       ", got " + got + "]");
  }
  ex.set_input(k, a.data(), a.nbytes());
}

size_t input_index(const graph::Executor& ex, const py::handle& key) {
  if (py::isinstance<py::int_>(key)) return key.cast<size_t>();
  std::string name = key.cast<std::string>();
  for (size_t k = 0; k < ex.num_inputs(); ++k)
    if (ex.plan().inputs[k].name == name) return k;
  std::string names;
  for (const auto& in : ex.plan().inputs) names += (names.empty() ? "" : ", ") + in.name;
  throw CompileError("the model has no input '" + name + "' (its inputs: " + names + ")");
}

// The CPU backend's code of the model's host kernels (all of them, in one object).
const cpu::Module& host_code(const GraphModule& g) {
  if (g.backend.empty()) throw CompileError("this module was loaded from a .kiln file, which holds its code already");
  const cpu::Module* code = cpu::compiled_module(g.ex->kernels());
  if (!code) {
    throw CompileError("this model has no host kernels compiled by the CPU backend (its target: " + g.target +
                       "), so there is no object file to export");
  }
  return *code;
}

}  // namespace

void bind_graph(py::module_& m) {
  py::class_<graph::Graph>(m, "Graph")
      .def_property_readonly("num_ops", &graph::Graph::num_ops)
      .def_property_readonly("inputs", [](const graph::Graph& g) {
        std::vector<std::pair<std::string, std::string>> out;
        for (graph::NodeId id : g.inputs()) out.emplace_back(g.node(id).name, g.type(id).to_string());
        return out;
      })
      .def("__str__", [](const graph::Graph& g) { return graph::to_string(g); });

  py::module_ frontend = m.def_submodule("frontend", "model importers (compiler/frontend)");
  // `model`: a path, the serialized bytes, or an onnx.ModelProto; `shape`: fixes inputs'
  // shapes ({"data": (1, 3, 224, 224)}), as relay.frontend.from_onnx's shape dict.
  frontend.def("from_onnx", [](const py::object& model, const py::object& shape) {
        frontend::OnnxOptions opt;
        if (!shape.is_none()) opt.input_shapes = shape.cast<std::map<std::string, std::vector<int64_t>>>();
        if (py::isinstance<py::str>(model)) return frontend::import_onnx_file(model.cast<std::string>(), opt);
        if (py::isinstance<py::bytes>(model)) return frontend::import_onnx_bytes(model.cast<std::string>(), opt);
        if (py::hasattr(model, "SerializeToString"))
          return frontend::import_onnx_bytes(model.attr("SerializeToString")().cast<std::string>(), opt, "<onnx.ModelProto>");
        throw CompileError("from_onnx: expected a path, bytes or an onnx.ModelProto, got " +
                           py::repr(model).cast<std::string>());
      }, py::arg("model"), py::arg("shape") = py::none());

  py::class_<GraphModule>(m, "GraphModule")
      .def_property_readonly("num_inputs", [](const GraphModule& g) { return g.ex->num_inputs(); })
      .def_property_readonly("num_outputs", [](const GraphModule& g) { return g.ex->num_outputs(); })
      .def_property_readonly("input_names", [](const GraphModule& g) {
        std::vector<std::string> names;
        for (const auto& in : g.ex->plan().inputs) names.push_back(in.name);
        return names;
      })
      .def_property_readonly("target", [](const GraphModule& g) { return g.target; })
      .def_property_readonly("num_kernels", [](const GraphModule& g) { return g.ex->plan().kernels.size(); })
      .def_property_readonly("kernel_names", [](const GraphModule& g) {
        std::vector<std::string> names;
        for (const auto& k : g.ex->plan().kernels) names.push_back(k.name);
        return names;
      })
      .def_property_readonly("accelerator", [](const GraphModule& g) { return g.ex->plan().accelerator; })
      // TVM's graph_executor: set_input(name or index, array), run(), get_output(k)
      .def("set_input", [](GraphModule& g, const py::object& key, const py::object& value) {
        set_input(*g.ex, input_index(*g.ex, key), value);
      })
      .def("run", [](GraphModule& g) {
        py::gil_scoped_release release;
        g.ex->run();
      })
      .def("get_output", [](const GraphModule& g, size_t k) {
        if (k >= g.ex->num_outputs())
          throw CompileError("output " + std::to_string(k) + ": the model has " + std::to_string(g.ex->num_outputs()) +
                             " outputs");
        return output_array(*g.ex, k);
      })
      // module(x, ...) sets the inputs in order, runs, and returns the outputs (one
      // array, or a list when the model has several).
      .def("__call__", [](GraphModule& g, const py::args& args) -> py::object {
        if (args.size() != g.ex->num_inputs())
          throw CompileError("the model takes " + std::to_string(g.ex->num_inputs()) + " inputs, got " +
                             std::to_string(args.size()));
        for (size_t k = 0; k < args.size(); ++k) set_input(*g.ex, k, args[k]);
        {
          py::gil_scoped_release release;
          g.ex->run();
        }
        if (g.ex->num_outputs() == 1) return py::cast(output_array(*g.ex, 0));
        py::list out;
        for (size_t k = 0; k < g.ex->num_outputs(); ++k) out.append(output_array(*g.ex, k));
        return out;
      })
      // The host kernels' code for a linker (TVM's export_library): an object file for any
      // target, a shared library (and its C header) for this machine's.
      .def("export_object", [](const GraphModule& g, const std::string& path) { host_code(g).export_object(path); })
      .def("export_library", [](const GraphModule& g, const std::string& path) { host_code(g).export_library(path); })
      .def("get_source", [](const GraphModule& g, const std::string& fmt) { return module_source(host_code(g), fmt); },
           py::arg("fmt") = "ll")
      // TVM's module.time_evaluator("run", dev, number, repeat)(): times Executor::run on
      // the inputs set last, in C++ (no Python in the loop), after one untimed run; each
      // of `repeat` results is the mean of `number` runs, in seconds.
      .def("time_evaluator", [](const GraphModule& g, const std::string& name, const py::object&, int number,
                                int repeat) {
        if (name != "run") throw CompileError("time_evaluator: a graph module times 'run', not '" + name + "'");
        return py::cpp_function([ex = g.ex, number, repeat]() {
          std::vector<double> results;
          {
            py::gil_scoped_release release;
            ex->run();
            for (int r = 0; r < std::max(repeat, 1); ++r) {
              auto t0 = std::chrono::steady_clock::now();
              for (int i = 0; i < std::max(number, 1); ++i) ex->run();
              results.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                                std::max(number, 1));
            }
          }
          double mean = 0;
          for (double r : results) mean += r;
          mean /= static_cast<double>(results.size());
          return py::module_::import("types").attr("SimpleNamespace")(py::arg("mean") = mean, py::arg("results") = results,
                                                                      py::arg("number") = number);
        });
      }, py::arg("func_name") = "run", py::arg("dev") = py::none(), py::arg("number") = 10, py::arg("repeat") = 1)
      .def("save", [](const GraphModule& g, const std::string& path) {
        if (g.backend.empty()) throw CompileError("this module was loaded from a .kiln file: copy that file instead");
        graph::save_model(path, *g.ex, g.backend, g.target);
      });

  m.def("build_model", [](const graph::Graph& g, const std::string& target) {
        graph::CompileOptions options;
        options.target = target::Target::parse(target);
        py::gil_scoped_release release;
        graph::CompiledModel cm = graph::compile(g, options);
        const target::Target host = cm.target.host_target();
        auto ex = std::make_shared<graph::Executor>(graph::make_executor(cm));
        return GraphModule{ex, host.backend(), host.str()};
      }, py::arg("graph"), py::arg("target") = "cpu");
  m.def("load_module", [](const std::string& path) {
        auto ex = std::make_shared<graph::Executor>(graph::load_model(path));
        return GraphModule{ex, "", ""};
      });
}

}  // namespace kiln::python
