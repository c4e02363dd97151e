// Fuzzes the tuning-record reader (tuner/records.h, load_records): one JSON record a
// line. A record that reads must write back to a line that reads to the same JSON;
// anything else must be refused with std::invalid_argument naming the line.
#include <stdexcept>

#include "tests/fuzz/fuzz_util.h"
#include "tuner/records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = kiln::fuzz::write_scratch(data, size, ".jsonl");
  std::vector<kiln::tuner::Record> records;
  try {
    records = kiln::tuner::load_records(path);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  for (const auto& r : records) {
    std::string line = r.to_json();
    kiln::tuner::Record again;
    try {
      again = kiln::tuner::Record::from_json(line);
    } catch (const std::invalid_argument& e) {
      kiln::fuzz::fail(std::string("a record that was read does not read back: ") + e.what());
    }
    kiln::fuzz::check(again.to_json() == line, "to_json(from_json(to_json(r))) differs from to_json(r)");
  }
  return 0;
}
