#pragma once
// Tuning records: one JSON object per line (docs/tuning.md, "Records"), appended and
// flushed after every measurement, so an interrupted run loses nothing.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tuner/measure.h"

namespace kiln::tuner {

// The `tuner` of the records that `kiln tune MODEL` makes by timing a candidate's
// kernels inside the whole model (in_model.h): their cost is not comparable with a
// measurement alone, so the search and best_records pass them by, and records_hook
// (apply.h) chooses among them where a workload has any.
inline constexpr const char* kInModelTuner = "in-model";

struct Record {
  std::string template_name;
  std::string workload;  // Workload::key()
  std::string target = "cpu";
  int64_t config = -1;
  std::map<std::string, std::string> knobs;  // the configuration in words
  double cost = 0;       // when error is empty
  std::string unit = "s";
  std::string error;
  double flops = 0;      // of the workload (GFLOP/s = flops / cost / 1e9)
  int trial = 0;
  std::string tuner;
  int64_t timestamp = 0;  // seconds since the epoch
  nlohmann::json detail = nlohmann::json::object();  // MeasureResult::detail, when it has any

  bool ok() const { return error.empty(); }
  bool in_model() const { return tuner == kInModelTuner; }
  std::string to_json() const;
  // Throws std::invalid_argument naming the field.
  static Record from_json(const std::string& line);
};

// What load_records makes of a path with no file: records that kiln tune starts or
// resumes are empty until written; records given to apply must exist.
enum class IfMissing { kEmpty, kError };

// Reads every record of a file. A line that is not a record throws
// std::invalid_argument "FILE:LINE: why". A last line without its newline (a run
// killed while writing) is dropped with a warning on stderr. A missing file is empty,
// or with IfMissing::kError throws "FILE: no such records file"; a directory throws.
std::vector<Record> load_records(const std::string& path, IfMissing if_missing = IfMissing::kEmpty);

// Appends one record and flushes it to the file (fsync).
class RecordWriter {
 public:
  explicit RecordWriter(const std::string& path);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;
  void append(const Record& r);

 private:
  int fd_ = -1;
  std::string path_;
};

// The best (lowest-cost, error-free) record per workload key among `records` whose
// template serves `target`, measured alone (not in_model()); templates are checked against the registry and a record
// whose configuration no longer decodes is skipped.
std::map<std::string, Record> best_records(const std::vector<Record>& records, const std::string& target = "cpu");

// The record of one measurement of configuration `config` of template `t` on `w`.
Record record_of(const Template& t, const Workload& w, const ConfigSpace& space, const std::string& target, int64_t config,
                 const MeasureResult& mr, int trial, const std::string& tuner);

}  // namespace kiln::tuner
