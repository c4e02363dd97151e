// Target::parse is the one reader of a target string: the kinds are the backend
// registry's names, each backend says which options its kind takes, and every error
// names the string. The backends here are fakes registered by the test (compiler/
// knows no real one): a host "cpu" that checks its LLVM strings, an accelerator
// "npu" with two options.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/graph/executor.h"
#include "compiler/graph/strategy.h"
#include "compiler/support/error.h"
#include "compiler/target/backend.h"
#include "compiler/target/target.h"

namespace kiln {
namespace {

using target::Target;

class FakeBackend : public target::Backend {
 public:
  FakeBackend(std::string name, bool host, std::vector<std::string> options)
      : name_(std::move(name)), host_(host), options_(std::move(options)) {}
  std::string name() const override { return name_; }
  bool is_host() const override { return host_; }
  std::vector<std::string> option_names() const override { return options_; }
  // As the CPU backend: an LLVM string with a word it does not know is refused.
  void check(const Target& t) const override {
    if (t.str().find("-nosuch") != std::string::npos) throw CompileError("the fake CPU does not know -nosuch");
  }
  std::unique_ptr<target::KernelModule> build(const std::vector<schedule::LoweredFunc>&, const std::string&) const override {
    return nullptr;
  }

 private:
  std::string name_;
  bool host_;
  std::vector<std::string> options_;
};

class TargetParse : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    target::register_backend("cpu", [] { return std::make_unique<FakeBackend>("cpu", true, std::vector<std::string>{}); });
    target::register_backend("npu", [] {
      return std::make_unique<FakeBackend>("npu", false, std::vector<std::string>{"config", "device"});
    });
  }
};

std::string error_of(const std::string& text) {
  try {
    Target::parse(text);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST_F(TargetParse, ReadsKindsAndOptions) {
  Target t = Target::parse("npu -config=tiny -device=rtl");
  EXPECT_EQ(t.kind(), "npu");
  EXPECT_EQ(t.option("config"), "tiny");
  EXPECT_EQ(t.option("device"), "rtl");
  EXPECT_EQ(t.option("seed", "7"), "7");
  EXPECT_FALSE(t.is_host());
  EXPECT_EQ(t.str(), "npu -config=tiny -device=rtl");
  EXPECT_EQ(Target::parse(t.str()), t);
  EXPECT_TRUE(Target::parse("cpu").is_host());
  EXPECT_TRUE(Target::parse("interp").is_host());  // the registry's built-in backend
  // "llvm ..." is the CPU kind with its string kept whole for the CPU backend.
  Target l = Target::parse("llvm -mcpu=znver4");
  EXPECT_EQ(l.kind(), "cpu");
  EXPECT_EQ(l.str(), "llvm -mcpu=znver4");
}

TEST_F(TargetParse, TheHostOfEachKind) {
  EXPECT_EQ(Target::parse("cpu").host_target().str(), "cpu");
  EXPECT_EQ(Target::parse("llvm -mcpu=znver4").host(), "llvm -mcpu=znver4");
  EXPECT_EQ(Target::parse("interp").host_target().backend(), "interp");
  Target npu = Target::parse("npu -config=tiny");
  EXPECT_EQ(npu.host_target().backend(), "cpu");
  EXPECT_EQ(npu.host(), "llvm");
  EXPECT_EQ(Target::parse("npu -host=interp").host_target().backend(), "interp");
}

TEST_F(TargetParse, AnUnknownKindNamesItAndListsTheKinds) {
  std::string e = error_of("tpu");
  EXPECT_TRUE(has(e, "no target 'tpu'")) << e;
  EXPECT_TRUE(has(e, "targets: cpu, interp, npu")) << e;
  e = error_of("tpu -config=tiny");
  EXPECT_TRUE(has(e, "target 'tpu -config=tiny'")) << e;
  EXPECT_TRUE(has(e, "targets: cpu, interp, npu")) << e;
  // The backend registry and the graph's strategies say the same.
  try {
    target::make_backend("tpu");
    ADD_FAILURE() << "make_backend(tpu)";
  } catch (const CompileError& err) {
    EXPECT_EQ(std::string(err.what()), target::unknown_target_message("tpu"));
  }
  try {
    graph::make_strategy("tpu");
    ADD_FAILURE() << "make_strategy(tpu)";
  } catch (const CompileError& err) {
    EXPECT_EQ(std::string(err.what()), target::unknown_target_message("tpu"));
  }
  EXPECT_EQ(graph::make_strategy("cpu"), nullptr);     // host kinds have no strategy
  EXPECT_EQ(graph::make_strategy("interp"), nullptr);
}

TEST_F(TargetParse, AnUnknownOptionNamesTheStringAndTheKindsOptions) {
  std::string e = error_of("npu -config=tiny -colour=red");
  EXPECT_TRUE(has(e, "target 'npu -config=tiny -colour=red'")) << e;
  EXPECT_TRUE(has(e, "npu takes no option -colour")) << e;
  EXPECT_TRUE(has(e, "-config -device -host")) << e;
  e = error_of("cpu -config=tiny");
  EXPECT_TRUE(has(e, "cpu takes no option -config (it takes none)")) << e;
  EXPECT_TRUE(has(error_of("interp -host=cpu"), "interp takes no option -host")) << error_of("interp -host=cpu");
  // A CPU target's LLVM string is its backend's to check.
  EXPECT_TRUE(has(error_of("llvm -nosuch=1"), "does not know -nosuch")) << error_of("llvm -nosuch=1");
}

TEST_F(TargetParse, MalformedStringsAreErrorsNamingThem) {
  EXPECT_TRUE(has(error_of(""), "empty target string"));
  EXPECT_TRUE(has(error_of("   "), "empty target string"));
  std::string e = error_of("npu config=tiny");
  EXPECT_TRUE(has(e, "target 'npu config=tiny'") && has(e, "'config=tiny' is not -key=value")) << e;
  EXPECT_TRUE(has(error_of("npu -=tiny"), "is not -key=value"));
  EXPECT_TRUE(has(error_of("npu -config"), "is not -key=value"));
  e = error_of("npu -config=a -config=b");
  EXPECT_TRUE(has(e, "option -config given twice")) << e;
}

TEST_F(TargetParse, AnAcceleratorsHostIsAHostTarget) {
  std::string e = error_of("npu -host=npu");
  EXPECT_TRUE(has(e, "-host=npu is not a host target (cpu, interp)")) << e;
  e = error_of("npu -host=tpu");
  EXPECT_TRUE(has(e, "target 'npu -host=tpu': -host: no target 'tpu'")) << e;
}

TEST_F(TargetParse, CheckCoversOptionsSetAfterParsing) {
  Target t = Target::parse("npu");
  t.set_option("device", "rtl");
  EXPECT_NO_THROW(t.check());
  t.set_option("colour", "red");
  EXPECT_THROW(t.check(), CompileError);
  EXPECT_THROW(Target("tpu").check(), CompileError);
}

// A model compiled for "interp" runs whole on its host, the interpreter, through
// make_executor(model): no strategy, the interpreter's (default) machine.
TEST_F(TargetParse, AnInterpTargetRunsOnTheInterpreter) {
  using ir::DataType;
  graph::Graph g;
  graph::NodeId x = g.add_input("x", {DataType::Float(32), {2, 3}});
  g.add_output(g.add_op("relu", {x}), "y");
  graph::CompileOptions o;
  o.target = Target::parse("interp");
  graph::CompiledModel m = graph::compile(g, o);
  EXPECT_EQ(m.target.host_target().backend(), "interp");
  graph::Executor ex = graph::make_executor(m);
  EXPECT_EQ(ex.accelerator(), nullptr);
  std::vector<float> in{-1, 2, -3, 4, 0, -0.5f}, want{0, 2, 0, 4, 0, 0};
  ex.set_input(0, in.data(), static_cast<int64_t>(in.size() * sizeof(float)));
  ex.run();
  std::vector<float> out(6);
  std::memcpy(out.data(), ex.output(0), out.size() * sizeof(float));
  EXPECT_EQ(out, want);
}

}  // namespace
}  // namespace kiln
