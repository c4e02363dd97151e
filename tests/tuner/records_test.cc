// Records: JSON round trip, errors naming file:line, an unfinished last line, the best
// record per workload; applying records at compile time.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backend-cpu/graph_backend.h"
#include "compiler/graph/executor.h"
#include "tuner/apply.h"
#include "tuner/records.h"

namespace kiln::tuner {
namespace {

namespace fs = std::filesystem;

fs::path temp_file(const std::string& name) {
  fs::path p = fs::temp_directory_path() / (name + "-" + std::to_string(getpid()) + ".jsonl");
  fs::remove(p);
  return p;
}

Record sample(int64_t config, double cost, const std::string& error = "", const std::string& tmpl = "matmul.cpu",
              const std::string& key = "matmul:M=64,N=64,K=64") {
  Workload w = parse_workload(key);
  const Template& t = find_template(tmpl);
  ConfigSpace s = t.space(w);
  Record r;
  r.template_name = t.name;
  r.workload = w.key();
  r.config = config;
  r.knobs = s.get(config).describe();
  r.cost = cost;
  r.error = error;
  r.flops = w.flops();
  r.trial = static_cast<int>(config);
  r.tuner = "random";
  r.timestamp = 1700000000;
  return r;
}

TEST(Records, ATemplatesOwnWorkloadKeepsItsArgumentsAsText) {
  Workload w{"tutorial/conv2d", {}, "(1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1))", 2.5e9};
  EXPECT_FALSE(w.in_op_library());
  EXPECT_EQ(w.key(), "tutorial/conv2d:(1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1))");
  EXPECT_EQ(w.flops(), 2.5e9);
  Workload back = Workload::from_key(w.key());
  EXPECT_EQ(back.op, "tutorial/conv2d");
  EXPECT_EQ(back.args, w.args);
  EXPECT_EQ(back, w);
  // An op library key is still read as --op reads it, errors included.
  Workload m = Workload::from_key("matmul:M=2,N=3,K=4");
  EXPECT_TRUE(m.in_op_library());
  EXPECT_EQ(m.at("K"), 4);
  EXPECT_THROW(Workload::from_key("matmul:M=2,N=3"), std::invalid_argument);
}

TEST(Records, RoundTrip) {
  fs::path p = temp_file("kiln-records-rt");
  {
    RecordWriter out(p.string());
    out.append(sample(3, 0.5e-3));
    out.append(sample(7, 0, "crash: worker died of signal 11 (Segmentation fault)"));
  }
  std::vector<Record> rs = load_records(p.string());
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].to_json(), sample(3, 0.5e-3).to_json());
  EXPECT_EQ(rs[1].to_json(), sample(7, 0, "crash: worker died of signal 11 (Segmentation fault)").to_json());
  EXPECT_TRUE(rs[0].ok());
  EXPECT_FALSE(rs[1].ok());
  EXPECT_DOUBLE_EQ(rs[0].cost, 0.5e-3);
  EXPECT_EQ(rs[0].knobs, sample(3, 1).knobs);
  fs::remove(p);
}

TEST(Records, BadLineNamesFileAndLine) {
  fs::path p = temp_file("kiln-records-bad");
  {
    std::ofstream f(p);
    f << sample(1, 1e-3).to_json() << "\n\n" << R"({"version":1,"template":"matmul.cpu"})" << "\n";
  }
  try {
    load_records(p.string());
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(p.string() + ":3: no field 'workload'"), std::string::npos) << e.what();
  }
  {
    std::ofstream f(p);
    f << "not json\n";
  }
  EXPECT_THROW(load_records(p.string()), std::invalid_argument);
  fs::remove(p);
}

// Found by tests/fuzz/records_fuzz: a config of 8.9e28 was cast to int64 (undefined
// behaviour). Integer fields take JSON integers of their type's range, nothing else.
TEST(Records, IntegerFieldsRefuseFloatsAndOutOfRangeValues) {
  std::string good = sample(1, 1e-3).to_json();
  auto error = [&](const std::string& field, const std::string& value) -> std::string {
    nlohmann::json j = nlohmann::json::parse(good);
    j[field] = nlohmann::json::parse(value);
    try {
      Record::from_json(j.dump());
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error("config", "8.9e28"), "bad field: [json.exception.type_error.302] 'config' must be an integer, got 8.9e+28");
  EXPECT_EQ(error("config", "1.0"), "bad field: [json.exception.type_error.302] 'config' must be an integer, got 1.0");
  EXPECT_EQ(error("version", "true"), "bad field: [json.exception.type_error.302] 'version' must be an integer, got true");
  EXPECT_EQ(error("trial", "4294967296"),
            "bad field: [json.exception.out_of_range.406] 'trial' is 4294967296, outside -2147483648 to 2147483647");
  EXPECT_EQ(error("timestamp", "1e300"),
            "bad field: [json.exception.type_error.302] 'timestamp' must be an integer, got 1e+300");
  EXPECT_EQ(Record::from_json(good).to_json(), good);
}

TEST(Records, UnfinishedLastLineIsDroppedAndTheWriterStartsANewLine) {
  fs::path p = temp_file("kiln-records-cut");
  std::string line = sample(2, 1e-3).to_json();
  {
    std::ofstream f(p);
    f << sample(1, 2e-3).to_json() << "\n" << line.substr(0, line.size() / 2);
  }
  EXPECT_EQ(load_records(p.string()).size(), 1u);
  {
    RecordWriter out(p.string());
    out.append(sample(4, 3e-3));
  }
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("\n" + sample(4, 3e-3).to_json() + "\n"), std::string::npos);
  EXPECT_THROW(load_records(p.string()), std::invalid_argument);  // the cut line is now in the middle
  fs::remove(p);
}

TEST(Records, BestPerWorkloadSkipsErrors) {
  std::vector<Record> rs = {sample(1, 3e-3), sample(2, 1e-3), sample(3, 0, "timeout: killed after 1 s"), sample(4, 2e-3)};
  auto best = best_records(rs);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best.begin()->second.config, 2);
  Record stale = sample(5, 1e-6);
  stale.knobs["tile_i"] = "[1,64]";  // not what index 5 decodes to any more
  rs.push_back(stale);
  EXPECT_EQ(best_records(rs).begin()->second.config, 2);
}

// A graph with a matmul and a conv2d_nchwc: the matmul's record is applied, the
// convolution warns, and the results equal the reference interpreter's.
TEST(Apply, RecordsScheduleAnchorsAndMissingOnesWarn) {
  cpu::register_graph_backend();
  graph::Graph g;
  auto f32 = ir::DataType::Float(32);
  graph::NodeId a = g.add_input("a", {f32, {64, 64}});
  graph::NodeId b = g.add_input("b", {f32, {64, 64}});
  graph::NodeId mm = g.add_op("matmul", {a, b}, {}, "mm");
  graph::NodeId r = g.add_op("relu", {mm}, {}, "relu");
  graph::NodeId x = g.add_input("x", {f32, {1, 16, 8, 8}});
  graph::NodeId w = g.add_input("w", {f32, {2, 16, 3, 3, 16}});
  graph::NodeId cv = g.add_op("conv2d_nchwc", {x, w},
                              {{"strides", std::vector<int64_t>{1, 1}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                               {"dilations", std::vector<int64_t>{1, 1}}},
                              "conv");
  g.add_output(r, "y");
  g.add_output(cv, "z");

  fs::path p = temp_file("kiln-records-apply");
  Record rec = sample(0, 1e-3);
  {
    const Template& t = find_template("matmul.cpu");
    ConfigSpace s = t.space(parse_workload(rec.workload));
    rec.config = s.index_of({{"tile_i", "[16,4]"}, {"tile_j", "[2,32]"}, {"tile_k", "[16,4]"}, {"order", "[0,2,1]"}, {"block_i", "4"},
                             {"unroll_i", "unroll"}, {"parallel", "fused"}, {"pack_b", "panel"}});
    rec.knobs = s.get(rec.config).describe();
    RecordWriter(p.string()).append(rec);
  }
  std::ostringstream warn;
  ApplyStats stats;
  graph::CompileOptions o;
  o.optimize = false;
  o.schedule_hook = records_hook(p.string(), warn, &stats);
  graph::CompiledModel tuned = graph::compile(g, o);
  EXPECT_EQ(stats.applied, std::set<std::string>{"matmul:M=64,N=64,K=64"});
  EXPECT_NE(warn.str().find("warning: no tuning record in " + p.string() +
                            " for conv2d:N=1,C=16,H=8,W=8,O=32,KH=3,KW=3,stride=1,pad=1,block=16 (node 'conv')"),
            std::string::npos)
      << warn.str();
  graph::CompileOptions plain;
  plain.optimize = false;
  graph::CompiledModel def = graph::compile(g, plain);

  graph::Executor te = graph::make_executor(tuned, "cpu");
  graph::Executor ref = graph::make_executor(def, "interp");
  for (size_t k = 0; k < te.num_inputs(); ++k) {
    std::vector<float> v(static_cast<size_t>(te.input_type(k).size()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37 + k * 11) % 17) / 8.0f - 1.0f;
    te.set_input(k, v.data(), static_cast<int64_t>(v.size() * 4));
    ref.set_input(k, v.data(), static_cast<int64_t>(v.size() * 4));
  }
  te.run();
  ref.run();
  for (size_t k = 0; k < te.num_outputs(); ++k) {
    const float* x1 = static_cast<const float*>(te.output(k));
    const float* x2 = static_cast<const float*>(ref.output(k));
    for (int64_t i = 0; i < te.output_type(k).size(); ++i) ASSERT_NEAR(x1[i], x2[i], 1e-3) << "output " << k << " at " << i;
  }
  fs::remove(p);
}


// A record applies only where the tuner measured it at least kDefaultMargin faster than
// the default schedule's record in the same file; within the margin the anchor keeps
// the default, with a note.
TEST(Apply, ARecordWithinTheMarginOfTheDefaultKeepsTheDefault) {
  cpu::register_graph_backend();
  const Template& t = find_template("matmul_packed.cpu");
  Workload w = parse_workload("matmul_packed:M=16,N=64,K=32,block=32");
  const int64_t d = t.default_config(w);
  ASSERT_GE(d, 0);
  const int64_t other = d == 0 ? 1 : 0;
  graph::NodeId node = -1;
  graph::Graph g = workload_graph(w, &node);
  for (double gain : {0.02, 0.10}) {
    fs::path p = temp_file("kiln-records-margin");
    {
      RecordWriter out(p.string());
      out.append(sample(d, 1e-3, "", t.name, w.key()));
      out.append(sample(other, 1e-3 / (1 + gain), "", t.name, w.key()));
    }
    std::ostringstream warn;
    ApplyStats stats;
    graph::CompileOptions o;
    o.optimize = false;
    o.schedule_hook = records_hook(p.string(), warn, &stats);
    graph::compile(g, o);
    bool kept = gain < kDefaultMargin;
    EXPECT_EQ(stats.kept_default.count(w.key()), kept ? 1u : 0u) << gain;
    EXPECT_EQ(stats.applied.count(w.key()), kept ? 0u : 1u) << gain;
    EXPECT_EQ(warn.str().find("it keeps the default schedule") != std::string::npos, kept) << warn.str();
    fs::remove(p);
  }
}

}  // namespace
}  // namespace kiln::tuner
