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

// A list of "key  reason" lines ('#' starts a comment line), keyed by its first word;
// an entry without a reason, or listed twice, is an error naming the line.
std::map<std::string, std::string> read_reasons(const std::filesystem::path& file);
// The exclusion list (tests/onnx/exclusions.txt): read_reasons with "suite/test_name" keys.
std::map<std::string, std::string> read_exclusions(const std::filesystem::path& file);

// The operators of ONNX's default domain up to `max_opset` that libonnx's schema
// registry knows, sorted; those deprecated in favour of another (Upsample) left out.
std::vector<std::string> onnx_operators(int max_opset);

struct SuiteCase {
  std::string suite, name;
  std::filesystem::path dir;
  std::string key() const { return suite + "/" + name; }
};
// Every test folder of the suites under `data_dir`, sorted.
std::vector<SuiteCase> list_cases(const std::filesystem::path& data_dir, const std::vector<std::string>& suites);

}  // namespace kiln::conformance
