// ONNX's backend conformance suites as GoogleTest cases, one per test folder that is
// not on tests/onnx/exclusions.txt (CTest label onnx).
//
//   onnx_conformance_test                       the GoogleTest cases (CTest runs them)
//   onnx_conformance_test --report [--all] [--only TEXT] [--write DOC]
//       runs every case in this process, prints the pass count per suite and each
//       failure; --all runs the excluded ones too, --only the cases whose
//       "suite/name" contains TEXT; --write replaces the coverage table
//       between the markers in DOC (docs/models.md) with the per-operator results.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "backend-cpu/graph_backend.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/frontend/onnx/onnx_version.h"
#include "tests/onnx/conformance.h"

namespace kiln::conformance {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kSuites = {"node", "pytorch-converted", "pytorch-operator", "simple"};
constexpr const char* kBegin = "<!-- onnx-coverage:begin (tests/onnx/conformance_test --report --write) -->";
constexpr const char* kEnd = "<!-- onnx-coverage:end -->";

std::string gtest_suite(const std::string& suite) {
  std::string s = "Onnx_" + suite;
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
}

class Case : public ::testing::Test {
 public:
  explicit Case(fs::path dir) : dir_(std::move(dir)) {}
  void TestBody() override {
    CaseResult r = run_case(dir_);
    EXPECT_TRUE(r.passed) << dir_.string() << ": " << r.message;
  }

 private:
  fs::path dir_;
};

// The operators of ONNX's default domain (up to the newest opset Kiln reads) that the
// importer has no converter for, each with its reason from unsupported_ops.txt.
std::map<std::string, std::string> operators_left_out() {
  auto reasons = read_reasons(KILN_ONNX_UNSUPPORTED);
  auto ops = frontend::supported_onnx_ops();
  std::set<std::string> supported(ops.begin(), ops.end());
  std::map<std::string, std::string> r;
  for (const auto& op : onnx_operators(frontend::kMaxNativeOpset))
    if (!supported.count(op)) r[op] = reasons.count(op) ? reasons.at(op) : "";
  return r;
}

// docs/models.md's list of what Kiln leaves out is this file: it must name every
// operator the importer lacks, and only those.
TEST(OnnxOperators, EveryOperatorLeftOutSaysWhy) {
  auto reasons = read_reasons(KILN_ONNX_UNSUPPORTED);
  auto left_out = operators_left_out();
  auto ops = onnx_operators(frontend::kMaxNativeOpset);
  std::set<std::string> known(ops.begin(), ops.end());
  EXPECT_GT(known.size(), 150u) << "libonnx's schema registry looks empty";
  for (const auto& [op, why] : left_out)
    EXPECT_FALSE(why.empty()) << op << " is not imported and has no reason in tests/onnx/unsupported_ops.txt";
  for (const auto& [op, why] : reasons) {
    EXPECT_TRUE(known.count(op)) << op << " (unsupported_ops.txt) is not an operator of ONNX's default domain";
    EXPECT_TRUE(!known.count(op) || left_out.count(op)) << op << " is imported now: remove it from unsupported_ops.txt";
  }
}

// Runs a case in a child process so that a crash or a hang is a failure of that case
// (named as such), not the end of the report.
CaseResult run_isolated(const fs::path& dir) {
  int fds[2];
  if (pipe(fds) != 0) return run_case(dir);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(120);  // a hang ends the child
    CaseResult r = run_case(dir);
    std::string msg = (r.passed ? "1" : "0") + r.message;
    size_t off = 0;
    while (off < msg.size()) {
      ssize_t n = write(fds[1], msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CaseResult r;
  r.op_types = model_ops(dir);
  if (WIFSIGNALED(status)) {
    r.message = WTERMSIG(status) == SIGALRM ? "HANG: no result after 120 s" : fmt::format("CRASH: signal {}", WTERMSIG(status));
  } else if (msg.empty()) {
    r.message = "CRASH: the child exited without a result";
  } else {
    r.passed = msg[0] == '1';
    r.message = msg.substr(1);
  }
  return r;
}

struct OpRow {
  int tests = 0, passed = 0, excluded = 0;
};

std::string coverage_table(const std::map<std::string, OpRow>& ops, const std::map<std::string, std::array<int, 3>>& suites) {
  std::ostringstream o;
  o << kBegin << "\n\n";
  o << "| suite | tests | excluded | passed | of the rest |\n|---|---:|---:|---:|---:|\n";
  for (const auto& [s, c] : suites) {
    int rest = c[0] - c[1];
    o << fmt::format("| {} | {} | {} | {} | {:.1f}% |\n", s, c[0], c[1], c[2], rest ? 100.0 * c[2] / rest : 0.0);
  }
  o << "\nPer operator: the tests of all four suites whose model uses it.\n\n";
  o << "| operator | tests | excluded | passed | failed |\n|---|---:|---:|---:|---:|\n";
  for (const auto& [op, r] : ops)
    o << fmt::format("| {} | {} | {} | {} | {} |\n", op, r.tests, r.excluded, r.passed, r.tests - r.excluded - r.passed);
  auto left_out = operators_left_out();
  o << fmt::format("\nThe {} operators of ONNX's default domain (those of opsets up to {} that the ONNX library here "
                   "defines: libonnx 1.12's reach opset 17) that Kiln does not import, and why "
                   "(tests/onnx/unsupported_ops.txt):\n\n",
                   left_out.size(), frontend::kMaxNativeOpset);
  o << "| operator | why |\n|---|---|\n";
  for (const auto& [op, why] : left_out) o << fmt::format("| {} | {} |\n", op, why.empty() ? "(no reason given)" : why);
  o << "\n" << kEnd;
  return o.str();
}

void write_table(const fs::path& doc, const std::string& table) {
  std::ifstream in(doc);
  if (!in) throw std::runtime_error(doc.string() + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  auto b = text.find(kBegin), e = text.find(kEnd);
  if (b == std::string::npos || e == std::string::npos || e < b)
    throw std::runtime_error(doc.string() + ": the coverage markers are missing (" + kBegin + " ... " + kEnd + ")");
  text = text.substr(0, b) + table + text.substr(e + std::string(kEnd).size());
  std::ofstream(doc) << text;
}

int report(bool all, const std::string& doc, const std::string& only) {
  auto excl = read_exclusions(KILN_ONNX_EXCLUSIONS);
  std::map<std::string, OpRow> ops;
  std::map<std::string, std::array<int, 3>> suites;  // tests, excluded, passed
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& c : list_cases(KILN_ONNX_DATA_DIR, kSuites)) {
    if (!only.empty() && c.key().find(only) == std::string::npos) continue;
    auto& s = suites[c.suite];
    ++s[0];
    bool excluded = excl.count(c.key()) && !all;
    CaseResult r;
    if (excluded) {
      ++s[1];
      r.op_types = model_ops(c.dir);  // counted in the table, not run
    } else {
      r = run_isolated(c.dir);
    }
    s[2] += r.passed;
    for (const auto& op : r.op_types) {
      auto& row = ops[op];
      ++row.tests;
      row.excluded += excluded;
      row.passed += r.passed;
    }
    if (!excluded && !r.passed) std::printf("FAIL %s: %s\n", c.key().c_str(), r.message.substr(0, 400).c_str());
    std::fflush(stdout);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& [name, c] : suites)
    std::printf("%s: %d tests, %d excluded, %d passed (%.1f%% of the rest)\n", name.c_str(), c[0], c[1], c[2],
                c[0] - c[1] ? 100.0 * c[2] / (c[0] - c[1]) : 0.0);
  std::printf("%.1f s\n", secs);
  if (!doc.empty()) write_table(doc, coverage_table(ops, suites));
  return 0;
}

}  // namespace
}  // namespace kiln::conformance

int main(int argc, char** argv) {
  using namespace kiln::conformance;
  kiln::cpu::register_graph_backend();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "--report") {
    bool all = false;
    std::string doc, only;
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i] == "--all") all = true;
      else if (args[i] == "--only" && i + 1 < args.size()) only = args[++i];
      else if (args[i] == "--write" && i + 1 < args.size()) doc = args[++i];
      else {
        std::fprintf(stderr, "unknown argument '%s'\n", args[i].c_str());
        return 2;
      }
    }
    if (!doc.empty() && !only.empty()) {
      std::fprintf(stderr, "--write needs every case: leave out --only\n");
      return 2;
    }
    return report(all, doc, only);
  }
  ::testing::InitGoogleTest(&argc, argv);
  auto excl = read_exclusions(KILN_ONNX_EXCLUSIONS);
  for (const auto& c : list_cases(KILN_ONNX_DATA_DIR, kSuites)) {
    if (excl.count(c.key())) continue;
    fs::path dir = c.dir;
    ::testing::RegisterTest(gtest_suite(c.suite).c_str(), c.name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [dir]() -> ::testing::Test* { return new Case(dir); });
  }
  return RUN_ALL_TESTS();
}
