#include "tuner/records.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "support/error.h"
#include "support/file.h"
#include "support/json.h"

namespace kiln::tuner {

std::string Record::to_json() const {
  nlohmann::json j;
  j["version"] = 1;
  j["template"] = template_name;
  j["workload"] = workload;
  j["target"] = target;
  j["config"] = config;
  j["knobs"] = knobs;
  if (ok()) j["cost"] = cost;
  else j["cost"] = nullptr;
  j["unit"] = unit;
  j["error"] = error;
  j["flops"] = flops;
  j["trial"] = trial;
  j["tuner"] = tuner;
  j["timestamp"] = timestamp;
  if (!detail.empty()) j["detail"] = detail;
  return j.dump();
}

Record Record::from_json(const std::string& line) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) throw Error("not a JSON object");
  auto field = [&](const char* name) -> const nlohmann::json& {
    if (!j.contains(name)) throw Error(fmt::format("no field '{}'", name));
    return j.at(name);
  };
  Record r;
  try {
    if (json_integer<int>(field("version"), "version") != 1) throw Error("unknown version");
    r.template_name = field("template").get<std::string>();
    r.workload = field("workload").get<std::string>();
    r.target = field("target").get<std::string>();
    r.config = json_integer<int64_t>(field("config"), "config");
    r.knobs = field("knobs").get<std::map<std::string, std::string>>();
    r.error = field("error").get<std::string>();
    if (r.ok()) r.cost = field("cost").get<double>();
    r.unit = field("unit").get<std::string>();
    r.flops = j.value("flops", 0.0);
    if (j.contains("trial")) r.trial = json_integer<int>(j.at("trial"), "trial");
    r.tuner = j.value("tuner", "");
    if (j.contains("timestamp")) r.timestamp = json_integer<int64_t>(j.at("timestamp"), "timestamp");
    if (j.contains("detail")) {
      if (!j.at("detail").is_object()) throw Error("field 'detail' must be an object");
      r.detail = j.at("detail");
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("bad field: ") + e.what());
  }
  if (r.config < 0) throw Error("field 'config' is negative");
  if (r.ok() && !(r.cost > 0)) throw Error("field 'cost' must be positive");
  return r;
}

std::vector<Record> load_records(const std::string& path, IfMissing if_missing) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (if_missing == IfMissing::kEmpty) return {};
    throw Error(fmt::format("{}: no such records file (kiln tune -r FILE writes one)", path));
  }
  const std::string text = read_file(path);
  std::vector<Record> out;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    ++line_no;
    size_t nl = text.find('\n', pos);
    bool last_unterminated = nl == std::string::npos;
    std::string line = text.substr(pos, last_unterminated ? std::string::npos : nl - pos);
    pos = last_unterminated ? text.size() : nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.push_back(Record::from_json(line));
    } catch (const Error& e) {
      if (last_unterminated) {
        std::cerr << fmt::format("kiln: warning: {}:{}: an unfinished last record is ignored ({})\n", path, line_no, e.what());
        break;
      }
      throw Error(fmt::format("{}:{}: {}", path, line_no, e.what()));
    }
  }
  return out;
}

RecordWriter::RecordWriter(const std::string& path) : path_(path) {
  fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(fmt::format("cannot open records file '{}' for appending: {}", path, strerror(errno)));
  // A line left unfinished by a killed run must not glue onto the next record.
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (in && in.tellg() > 0) {
    in.seekg(-1, std::ios::end);
    char c = 0;
    in.get(c);
    if (c != '\n' && ::write(fd_, "\n", 1) != 1) throw Error("cannot write to '" + path + "'");
  }
}

RecordWriter::~RecordWriter() {
  if (fd_ >= 0) close(fd_);
}

void RecordWriter::append(const Record& r) {
  std::string line = r.to_json() + "\n";
  // One write() per record (O_APPEND), then fsync: a kill leaves whole lines.
  ssize_t n = ::write(fd_, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) throw Error("cannot append to '" + path_ + "'");
  fsync(fd_);
}

std::map<std::string, Record> best_records(const std::vector<Record>& records, const std::string& target) {
  std::map<std::string, Record> best;
  for (const Record& r : records) {
    if (!r.ok() || r.in_model() || r.target != target) continue;
    const Template* t = nullptr;
    try {
      t = &find_template(r.template_name);
      Workload w = Workload::from_key(r.workload);
      if (t->space(w).index_of(r.knobs) != r.config) continue;  // the space changed since
    } catch (const std::exception&) {
      continue;
    }
    auto it = best.find(r.workload);
    if (it == best.end() || r.cost < it->second.cost) best[r.workload] = r;
  }
  return best;
}

Record record_of(const Template& t, const Workload& w, const ConfigSpace& space, const std::string& target, int64_t config,
                 const MeasureResult& mr, int trial, const std::string& tuner) {
  Record r;
  r.template_name = t.name;
  r.workload = w.key();
  r.target = target;
  r.config = config;
  r.knobs = space.get(config).describe();
  r.cost = mr.ok() ? mr.cost : 0;
  r.unit = mr.unit;
  r.error = mr.error;
  r.flops = w.flops();
  r.trial = trial;
  r.tuner = tuner;
  r.timestamp = static_cast<int64_t>(std::time(nullptr));
  r.detail = mr.detail;
  return r;
}

}  // namespace kiln::tuner
