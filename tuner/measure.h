#pragma once
// Measuring candidates. A measure function per target ("cpu": wall-clock seconds with
// warm-up and repeats; a backend registers its own, e.g. "vta": cycles on the rtl
// device) runs in a worker process: a LocalPool forks one per candidate (at most
// `jobs` at a time), an MpiPool (mpi.h) sends candidates to MPI ranks that do the
// same. A worker that crashes, fails or outlives its timeout is killed and its
// candidate recorded as an error; the tuner goes on. Workers on one host share a lock
// (host_lock_path()): builds hold it shared, so they run in parallel with each other,
// and timings exclusively, so a timing shares the machine with no other worker's
// timing or build. Time spent waiting for that lock does not count as the candidate's.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner/template.h"

namespace kiln::tuner {

struct MeasureOptions {
  double timeout_s = 20;      // build + run of one candidate (not waiting for the host lock)
  double max_lock_wait_s = 600;  // a worker waiting longer for the host lock is killed
  int warmup = 1;             // untimed runs first
  // Timed repeats; the cost is the fastest. Other work on a shared machine only ever
  // adds time, so the minimum is the least disturbed figure.
  int repeat = 5;
  double min_repeat_ms = 25;  // each repeat runs the kernel this long (at least once)
  std::string target = "llvm";  // the backend's target string
};

struct MeasureInput {
  std::string template_name;
  Workload workload;
  int64_t config = -1;
};

struct MeasureResult {
  double cost = 0;      // seconds ("s") or cycles ("cycles"); valid when error is empty
  std::string unit = "s";
  std::string error;    // "crash: ...", "timeout: ...", "error: ..."
  double elapsed_s = 0;  // build + run wall time of the worker
  // What else the measurement found, as a JSON object (a co-design evaluation's
  // resources, fmax and per-layer cycles: explore/); empty for a plain timing.
  nlohmann::json detail = nlohmann::json::object();
  bool ok() const { return error.empty(); }
  // One JSON object, as workers send it (pipe or MPI).
  std::string to_json() const;
  static MeasureResult from_json(const std::string& text);
};

// Runs in the worker: builds and times one candidate. Throws on failure.
using MeasureFn = std::function<MeasureResult(const Template&, const Workload&, const Config&, const MeasureOptions&)>;
void register_measure(const std::string& target, MeasureFn fn);
// The file whose flock keeps timings on this host apart (per user, in /tmp).
std::string host_lock_path();

// Holds that lock exclusively while it lives, for a timing outside the workers (the
// in-model runs of `kiln tune MODEL`, in_model.h); without the file, nothing.
class HostTimingLock {
 public:
  HostTimingLock();
  ~HostTimingLock();
  HostTimingLock(const HostTimingLock&) = delete;
  HostTimingLock& operator=(const HostTimingLock&) = delete;

 private:
  int fd_ = -1;
};
// The measurement itself, in this process (what a worker calls). Honours the
// test-only KILN_TUNER_INJECT="crash:INDEX,hang:INDEX,..." (configuration indices
// whose worker segfaults or hangs) so that isolation can be tested end to end.
MeasureResult measure_here(const MeasureInput& in, const MeasureOptions& opt);

class Measurer {
 public:
  virtual ~Measurer() = default;
  // Results in the order of `inputs`. The hook (set_on_result), if any, is called with
  // each input's index and result as soon as that one finishes, so that a caller whose
  // measurements take minutes records each before the batch ends.
  virtual std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) = 0;
  using ResultHook = std::function<void(size_t index, const MeasureResult&)>;
  void set_on_result(ResultHook hook) { on_result_ = std::move(hook); }
  virtual int parallelism() const = 0;
  virtual std::string describe() const = 0;

 protected:
  void finished(size_t index, const MeasureResult& r) const {
    if (on_result_) on_result_(index, r);
  }

 private:
  ResultHook on_result_;
};

// A pool of forked worker processes, `jobs` at a time.
class LocalPool : public Measurer {
 public:
  LocalPool(int jobs, MeasureOptions opt);
  std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) override;
  int parallelism() const override { return jobs_; }
  std::string describe() const override;

 private:
  int jobs_;
  MeasureOptions opt_;
};

// One candidate in a forked child with a timeout (what LocalPool and MPI ranks do).
MeasureResult measure_isolated(const MeasureInput& in, const MeasureOptions& opt);

// The CPU measure function ("cpu"): built through compiler/target's registry, so the
// "cpu" backend must be registered (kiln::cpu::register_graph_backend()).
MeasureResult measure_cpu(const Template& t, const Workload& w, const Config& c, const MeasureOptions& opt);
// A GPU target's ("opencl", "cuda"): the candidate built by that backend for
// MeasureOptions::target and run on its device; the cost is its kernels' time from the
// device's events (the copies to and from the device not counted), fastest of the repeats.
MeasureResult measure_gpu(const Template& t, const Workload& w, const Config& c, const MeasureOptions& opt);

}  // namespace kiln::tuner
