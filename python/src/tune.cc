// kiln.tune's C++ half: the tuner's spaces, templates defined in Python, the tuning
// loop with its search policies and measurers (a pool of forked workers, MPI ranks),
// records and the best of them, as thin pybind11 wrappers of tuner/. python/kiln/tune.py
// gives them AutoTVM's names.
//
// A Python template is registered as an ordinary tuner::Template whose space and lower
// functions call back into Python. The GIL stays held for the whole tuning loop: the
// measurer forks its workers from this thread, so each worker starts holding it too and
// can lower its candidate through the template (the worker then leaves with _exit, never
// running Python's shutdown).
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include "compiler/ir/node.h"
#include "compiler/support/error.h"
#include "python/src/bindings.h"
#include "tuner/features.h"
#include "tuner/measure.h"
#include "tuner/mpi.h"
#include "tuner/policy.h"
#include "tuner/records.h"
#include "tuner/template.h"
#include "tuner/tuner.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

using tuner::ConfigSpace;

tuner::SplitPolicy split_policy(const std::string& name) {
  if (name == "factors") return tuner::SplitPolicy::Factors;
  if (name == "power2") return tuner::SplitPolicy::PowerOfTwo;
  throw Error("define_split: policy '" + name + "' is not one of factors, power2");
}

int64_t extent_of(const std::string& knob, const py::object& axis) {
  if (py::isinstance<py::int_>(axis)) return axis.cast<int64_t>();
  const ir::IterVar iv = axis.cast<ir::IterVar>();
  const int64_t* e = ir::as_const_int(iv->dom.extent);
  if (!e) throw Error("define_split '" + knob + "': axis " + iv->var.name() + " has no constant extent");
  return *e;
}

// A configuration as Python reads it: {knob: (factors, name)}. Split and reorder
// choices have factors or an order, the others a name.
py::dict choices_of(const tuner::Config& c) {
  py::dict d;
  for (const auto& [knob, text] : c.describe()) {
    const tuner::Choice& ch = c[knob];
    d[py::str(knob)] = py::make_tuple(ch.ints, ch.name);
  }
  return d;
}

// Measurement options as MeasureOptions, from the keyword arguments of kiln.tune.
tuner::MeasureOptions measure_options(const py::dict& o) {
  tuner::MeasureOptions m;
  if (o.contains("timeout")) m.timeout_s = o["timeout"].cast<double>();
  if (o.contains("repeat")) m.repeat = o["repeat"].cast<int>();
  if (o.contains("warmup")) m.warmup = o["warmup"].cast<int>();
  if (o.contains("min_repeat_ms")) m.min_repeat_ms = o["min_repeat_ms"].cast<double>();
  if (o.contains("target")) m.target = o["target"].cast<std::string>();
  return m;
}

}  // namespace

void bind_tune(py::module_& m) {
  py::module_ t = m.def_submodule("tune", "the tuner (tuner/): spaces, templates, search policies, records");

  py::class_<ConfigSpace>(t, "ConfigSpace")
      .def(py::init<>())
      // `axis`: an IterVar with a constant extent, or the extent.
      .def("define_split", [](ConfigSpace& s, const std::string& name, const py::object& axis, int parts,
                              const std::string& policy, int64_t max_inner, int64_t min_inner) {
        s.define_split(name, extent_of(name, axis), parts, split_policy(policy), max_inner, min_inner);
      }, py::arg("name"), py::arg("axis"), py::arg("parts") = 2, py::arg("policy") = "factors",
         py::arg("max_inner") = 0, py::arg("min_inner") = 1)
      .def("define_split_list", &ConfigSpace::define_split_list, py::arg("name"), py::arg("extent"), py::arg("inner"),
           py::arg("partial") = std::vector<int64_t>{})
      .def("define_reorder", &ConfigSpace::define_reorder, py::arg("name"), py::arg("orders"))
      .def("define_knob", &ConfigSpace::define_knob, py::arg("name"), py::arg("choices"))
      .def("__len__", &ConfigSpace::size)
      .def_property_readonly("size", &ConfigSpace::size)
      // [(name, kind, [choice in words, ...]), ...] in definition order
      .def_property_readonly("knobs", [](const ConfigSpace& s) {
        py::list out;
        for (const tuner::Knob& k : s.knobs()) {
          std::vector<std::string> choices;
          for (const tuner::Choice& c : k.choices) choices.push_back(c.to_string());
          out.append(py::make_tuple(k.name, tuner::knob_kind_name(k.kind), choices));
        }
        return out;
      })
      // The configuration `index` as {knob: (factors, name)} (IndexError outside the space).
      .def("choices", [](const ConfigSpace& s, int64_t index) {
        if (index < 0 || index >= s.size())
          throw py::index_error("configuration " + std::to_string(index) + " is outside the space of " +
                                std::to_string(s.size()));
        return choices_of(s.get(index));
      })
      // The index of the configuration whose choices read {knob: "choice"} (-1 if none).
      .def("index_of", [](const ConfigSpace& s, const std::map<std::string, std::string>& knobs) {
        return s.index_of(knobs);
      })
      .def("__str__", [](const ConfigSpace& s) {
        std::string text = "ConfigSpace (" + std::to_string(s.size()) + " configurations)";
        for (const tuner::Knob& k : s.knobs())
          text += "\n  " + k.name + " (" + tuner::knob_kind_name(k.kind) + ", " + std::to_string(k.choices.size()) + ")";
        return text;
      });

  py::class_<tuner::Workload>(t, "Workload")
      // A Python template's workload: its name, its arguments in words, its flops.
      .def(py::init([](const std::string& op, const std::string& args, double flops) {
             return tuner::Workload{op, {}, args, flops};
           }), py::arg("op"), py::arg("args"), py::arg("flops") = 0.0)
      .def_readonly("op", &tuner::Workload::op)
      .def_readonly("args", &tuner::Workload::args)
      .def_property_readonly("key", &tuner::Workload::key)
      .def_property_readonly("flops", &tuner::Workload::flops)
      .def("__repr__", [](const tuner::Workload& w) { return "Workload(" + w.key() + ")"; });
  // An op library workload as `kiln tune --op` reads it: "matmul:M=64,N=64,K=64".
  t.def("parse_workload", &tuner::parse_workload);

  py::class_<tuner::Record>(t, "Record")
      .def_readonly("template_name", &tuner::Record::template_name)
      .def_readonly("workload", &tuner::Record::workload)
      .def_readonly("target", &tuner::Record::target)
      .def_readonly("config", &tuner::Record::config)
      .def_readonly("knobs", &tuner::Record::knobs)
      .def_readonly("cost", &tuner::Record::cost)
      .def_readonly("unit", &tuner::Record::unit)
      .def_readonly("error", &tuner::Record::error)
      .def_readonly("flops", &tuner::Record::flops)
      .def_readonly("trial", &tuner::Record::trial)
      .def_readonly("tuner", &tuner::Record::tuner)
      .def_property_readonly("ok", &tuner::Record::ok)
      .def("to_json", &tuner::Record::to_json)
      .def("__repr__", &tuner::Record::to_json);
  // missing_ok: a path with no file is no records (as kiln tune resumes), else an error.
  t.def(
      "load_records",
      [](const std::string& path, bool missing_ok) {
        return tuner::load_records(path, missing_ok ? tuner::IfMissing::kEmpty : tuner::IfMissing::kError);
      },
      py::arg("path"), py::arg("missing_ok") = true);
  // {workload key: the best record} of the records whose template serves `target`.
  t.def("best_records", &tuner::best_records, py::arg("records"), py::arg("target") = "cpu");

  // Registers a template written in Python: space(args) -> ConfigSpace and
  // lower(args, index, choices) -> [LoweredFunc], `args` the workload's arguments in words.
  t.def("register_template", [](const std::string& name, const py::function& space, const py::function& lower) {
        // Held for the life of the process: the registry outlives the interpreter, so
        // these references are never dropped (dropping one after Python has shut down
        // would crash the exit).
        auto* space_fn = new py::function(space);
        auto* lower_fn = new py::function(lower);
        tuner::Template tmpl;
        tmpl.name = name;
        tmpl.op = name;
        tmpl.target = "cpu";
        tmpl.space = [space_fn](const tuner::Workload& w) {
          py::gil_scoped_acquire gil;
          return (*space_fn)(w.args).cast<ConfigSpace>();
        };
        tmpl.lower = [lower_fn](const tuner::Workload& w, const tuner::Config& c) {
          py::gil_scoped_acquire gil;
          return (*lower_fn)(w.args, c.index(), choices_of(c)).cast<std::vector<schedule::LoweredFunc>>();
        };
        tmpl.apply = [name](const graph::AnchorStage&, const tuner::Workload&, const tuner::Config&) {
          throw Error("template '" + name + "' is written in Python: it schedules its own tensor expressions, "
                      "not an operator of a model");
        };
        tuner::register_template(std::move(tmpl));
      }, py::arg("name"), py::arg("space"), py::arg("lower"));
  t.def("template_names", &tuner::template_names);
  t.def("tuner_names", &tuner::tuner_names);
  t.def("float_ops", &tuner::float_ops, py::arg("funcs"));

  py::class_<tuner::TuneProgress>(t, "TuneProgress")
      .def_readonly("task", &tuner::TuneProgress::task)
      .def_readonly("done", &tuner::TuneProgress::done)
      .def_readonly("total", &tuner::TuneProgress::total)
      .def_readonly("errors", &tuner::TuneProgress::errors)
      .def_readonly("best_cost", &tuner::TuneProgress::best_cost)
      .def_readonly("best_gflops", &tuner::TuneProgress::best_gflops)
      .def_readonly("elapsed_s", &tuner::TuneProgress::elapsed_s)
      .def_readonly("eta_s", &tuner::TuneProgress::eta_s);

  py::class_<tuner::TuneResult>(t, "TuneResult")
      .def_readonly("measured", &tuner::TuneResult::measured)
      .def_readonly("errors", &tuner::TuneResult::errors)
      .def_readonly("stopped_early", &tuner::TuneResult::stopped_early)
      .def_readonly("best", &tuner::TuneResult::best)
      .def_readonly("best_curve", &tuner::TuneResult::best_curve)
      .def_readonly("records", &tuner::TuneResult::records)
      .def_readonly("transfer_records", &tuner::TuneResult::transfer_records);

  // MPI: under `mpirun -np N python3 script.py`, rank 0 tunes and ranks 1..N-1 measure.
  py::class_<tuner::MpiSession>(t, "MpiSession")
      .def(py::init<>())
      .def_property_readonly("rank", &tuner::MpiSession::rank)
      .def_property_readonly("size", &tuner::MpiSession::size)
      .def("serve", [](tuner::MpiSession& s, const py::dict& measure) { s.serve(measure_options(measure)); },
           py::arg("measure") = py::dict())
      .def("stop_workers", &tuner::MpiSession::stop_workers);
  t.def("launched_by_mpirun", &tuner::launched_by_mpirun);

  // One task's tuning loop (tuner::tune). `measure`: timeout, repeat, warmup,
  // min_repeat_ms, target; `jobs`: forked workers at a time; `mpi`: an MpiSession
  // whose ranks measure instead; `on_progress(TuneProgress)` after every batch.
  t.def("tune", [](const std::string& template_name, const tuner::Workload& w, const std::string& policy, int trials,
                   int early_stopping, const std::string& records, uint64_t seed, bool transfer, bool resume,
                   const py::dict& measure, int jobs, tuner::MpiSession* mpi, const py::object& on_progress) {
        const tuner::Template& tmpl = tuner::find_template(template_name);
        tuner::TuneOptions opt;
        opt.tuner = policy;
        opt.trials = trials;
        opt.early_stopping = early_stopping;
        opt.records = records;
        opt.seed = seed;
        opt.transfer = transfer;
        opt.resume = resume;
        if (!on_progress.is_none())
          opt.on_progress = [on_progress](const tuner::TuneProgress& p) { on_progress(p); };
        tuner::MeasureOptions mopt = measure_options(measure);
        opt.candidates_target = mopt.target;
        std::unique_ptr<tuner::Measurer> measurer;
        if (mpi && mpi->size() > 1)
          measurer = mpi->measurer(mopt);
        else
          measurer = std::make_unique<tuner::LocalPool>(std::max(1, jobs), mopt);
        return tuner::tune(tmpl, w, *measurer, opt);
      }, py::arg("template_name"), py::arg("workload"), py::arg("tuner") = "xgb", py::arg("trials") = 64,
         py::arg("early_stopping") = 0, py::arg("records") = "", py::arg("seed") = 0, py::arg("transfer") = true,
         py::arg("resume") = false, py::arg("measure") = py::dict(), py::arg("jobs") = 1, py::arg("mpi") = nullptr,
         py::arg("on_progress") = py::none());
}

}  // namespace kiln::python
