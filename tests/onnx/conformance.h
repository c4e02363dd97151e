#pragma once
// ONNX's backend conformance tests (Debian's libonnx-testdata): each test is a folder
// with model.onnx and test_data_set_0/{input,output}_N.pb. run_case imports the model
// with the inputs' shapes and values, compiles it for the CPU backend, runs it and
// compares every output as ONNX's backend runner does (rtol 1e-3, atol 1e-7).
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kiln::conformance {

struct CaseResult {
  bool passed = false;
  std::string message;            // why it failed ("" when it passed)
  std::set<std::string> op_types;  // the model's operators (for the coverage table)
};

// The operator types of dir/model.onnx (empty when it does not parse).
std::set<std::string> model_ops(const std::filesystem::path& dir);

// Runs the test in `dir`; never throws (a failure of any stage is a message).
CaseResult run_case(const std::filesystem::path& dir);

// The exclusion list: "suite/test_name  reason" lines, '#' comments. Keyed by
// "suite/test_name"; an entry without a reason is an error naming the line.
std::map<std::string, std::string> read_exclusions(const std::filesystem::path& file);

struct SuiteCase {
  std::string suite, name;
  std::filesystem::path dir;
  std::string key() const { return suite + "/" + name; }
};
// Every test folder of the suites under `data_dir`, sorted.
std::vector<SuiteCase> list_cases(const std::filesystem::path& data_dir, const std::vector<std::string>& suites);

}  // namespace kiln::conformance
