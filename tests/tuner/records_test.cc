// Records: JSON round trip, errors naming file:line, an unfinished last line, the best
// record per workload; applying records at compile time (a Winograd convolution's
// too); choosing among them inside the
// model (tuner/in_model.h): which in-model records apply (the margin, the threads),
// that they decide over the records measured alone, and select_in_model on a model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backend-cpu/graph_backend.h"
#include "compiler/graph/executor.h"
#include "compiler/interp/host_buffer.h"
#include "compiler/target/backend.h"
#include "tuner/apply.h"
#include "tuner/in_model.h"
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

// A path with no file: kiln tune starts its records there, but records given to apply
// must exist (a mistyped --records was a run with the default schedules and a warning
// per workload). A directory is an error either way.
TEST(Records, AMissingFileIsEmptyOnlyWhereTheTunerStartsOne) {
  const fs::path missing = temp_file("kiln-records-missing");
  EXPECT_TRUE(load_records(missing.string()).empty());
  auto error = [](const std::string& path, IfMissing m) -> std::string {
    try {
      load_records(path, m);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error(missing.string(), IfMissing::kError), missing.string() + ": no such records file (kiln tune -r FILE writes one)");
  const std::string dir = fs::temp_directory_path().string();
  EXPECT_EQ(error(dir, IfMissing::kEmpty), dir + ": is a directory, not a file");
  EXPECT_EQ(error(dir, IfMissing::kError), dir + ": is a directory, not a file");
  std::ostringstream warn;
  EXPECT_THROW(records_hook(missing.string(), warn), std::invalid_argument);
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


// Runs `tuned` and `ref` on one input (a fixed pattern, for their one input) and
// returns their first outputs.
std::pair<std::vector<float>, std::vector<float>> run_both(graph::Executor& tuned, graph::Executor& ref) {
  std::vector<float> v(static_cast<size_t>(tuned.input_type(0).size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 17) / 8.0f - 1.0f;
  tuned.set_input(0, v.data(), static_cast<int64_t>(v.size() * 4));
  ref.set_input(0, v.data(), static_cast<int64_t>(v.size() * 4));
  tuned.run();
  ref.run();
  auto out = [](const graph::Executor& e) {
    const float* y = static_cast<const float*>(e.output(0));
    return std::vector<float>(y, y + e.output_type(0).size());
  };
  return {out(tuned), out(ref)};
}

// Records of `w`'s default configuration and of `other` (faster), in a file the hook
// reads: `g` compiled with them applies a record to `w`, and computes what the reference
// interpreter does (its one output of `size` elements).
void expect_record_applies(const graph::Graph& g, const Template& t, const Workload& w, int64_t d, int64_t other, size_t size) {
  ConfigSpace s = t.space(w);
  fs::path p = temp_file("kiln-records-" + w.op);
  {
    RecordWriter out(p.string());
    MeasureResult mr;
    mr.cost = 1e-3;
    out.append(record_of(t, w, s, "cpu", d, mr, 0, "random"));
    mr.cost = 0.5e-3;
    out.append(record_of(t, w, s, "cpu", other, mr, 1, "random"));
  }
  std::ostringstream warn;
  ApplyStats stats;
  graph::CompileOptions o;
  o.schedule_hook = records_hook(p.string(), warn, &stats);
  graph::Executor tuned = graph::make_executor(graph::compile(g, o), "cpu");
  EXPECT_EQ(stats.applied.count(w.key()), 1u) << warn.str();
  graph::CompileOptions plain;
  plain.optimize = false;
  graph::Executor ref = graph::make_executor(graph::compile(g, plain), "interp");
  auto [a, b] = run_both(tuned, ref);
  ASSERT_EQ(a.size(), size);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-3) << "at " << i;
  fs::remove(p);
}

// A model's Winograd convolutions are workloads of their own (conv2d_winograd, found
// where the winograd_conv pass made them), and a record of conv2d_winograd.cpu schedules
// their products at compile time; the result still matches the reference interpreter.
TEST(Apply, RecordsScheduleAWinogradConvolutionsProducts) {
  cpu::register_graph_backend();
  auto f32 = ir::DataType::Float(32);
  graph::Graph g;
  graph::NodeId x = g.add_input("x", {f32, {1, 16, 16, 16}});
  graph::NodeId y = x;
  for (int k = 0; k < 2; ++k) {  // the first takes NCHW data (direct), the second blocked data (Winograd)
    std::vector<float> w(16 * 16 * 9);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 29 + static_cast<size_t>(k) * 7) % 23) / 46.0f - 0.25f;
    auto weight = std::make_shared<interp::HostBuffer>(f32, std::vector<int64_t>{16, 16, 3, 3});
    std::memcpy(weight->data(), w.data(), w.size() * sizeof(float));
    graph::NodeId c = g.add_op("conv2d", {y, g.add_constant("w" + std::to_string(k), weight)}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}},
                               "conv" + std::to_string(k));
    y = g.add_op("relu", {c});
  }
  g.add_output(y, "y");
  const std::string key = "conv2d_winograd:N=1,C=16,H=16,W=16,O=16,pad=1,tile=4,block=16,in_block=16";
  std::set<std::string> keys;
  for (const auto& [w, node] : model_workloads(g)) keys.insert(w.key());
  ASSERT_EQ(keys.count(key), 1u) << "the model's workloads: " << ::testing::PrintToString(keys);

  const Template& t = find_template("conv2d_winograd.cpu");
  Workload w = parse_workload(key);
  ASSERT_EQ(w.key(), key) << "--op's defaults are the pass's choices";
  ConfigSpace s = t.space(w);
  const int64_t d = t.default_config(w, machine_traits("cpu"));
  ASSERT_GE(d, 0);
  const int64_t other = s.index_of({{"tile_i", "[8,2]"}, {"tile_j", "[1,16]"}, {"tile_k", "[8,2]"},
                                    {"order", t.space(w).get(d).name("order") == "tiles" ? "slices" : "tiles"}});
  ASSERT_GE(other, 0);
  ASSERT_NE(other, d);
  expect_record_applies(g, t, w, d, other, 16u * 16 * 16);
}

// A model's grouped convolutions (RegNet's groups of 8 after a 1x1 convolution, so on
// NCHWc data) are workloads with their groups, and a record schedules them; the result
// matches the reference interpreter.
TEST(Apply, RecordsScheduleAGroupedConvolution) {
  cpu::register_graph_backend();
  auto f32 = ir::DataType::Float(32);
  auto constant = [&](std::vector<int64_t> shape, size_t seed) {
    auto buf = std::make_shared<interp::HostBuffer>(f32, shape);
    for (int64_t i = 0; i < buf->size(); ++i) buf->set(i, static_cast<double>((static_cast<size_t>(i) * 29 + seed) % 23) / 46.0 - 0.25);
    return buf;
  };
  graph::Graph g;
  graph::NodeId x = g.add_input("x", {f32, {1, 16, 10, 10}});
  graph::NodeId c1 = g.add_op("conv2d", {x, g.add_constant("w1", constant({48, 16, 1, 1}, 1))}, {}, "expand");
  graph::NodeId c2 = g.add_op("conv2d", {g.add_op("relu", {c1}), g.add_constant("w2", constant({48, 8, 3, 3}, 2))},
                              {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"groups", int64_t{6}}}, "grouped");
  g.add_output(g.add_op("relu", {c2}), "y");
  const std::string key = "conv2d:N=1,C=48,H=10,W=10,O=48,KH=3,KW=3,stride=1,pad=1,block=8,in_block=16,groups=6";
  std::set<std::string> keys;
  for (const auto& [w, node] : model_workloads(g)) keys.insert(w.key());
  ASSERT_EQ(keys.count(key), 1u) << "the model's workloads: " << ::testing::PrintToString(keys);

  const Template& t = find_template("conv2d_nchwc.cpu");
  Workload w = parse_workload(key);
  ASSERT_EQ(w.key(), key);
  ConfigSpace s = t.space(w);
  const int64_t d = t.default_config(w, machine_traits("cpu"));
  ASSERT_GE(d, 0);
  expect_record_applies(g, t, w, d, (d + s.size() / 2) % s.size(), 48u * 10 * 10);
}

// A product whose reduction AlterLayout splits into chunks (a long k for the rows to
// stay in L2: BERT-base's 3072 -> 768 layers here) is tuned and scheduled chunk by
// chunk: each chunk reads its slice of the data through a strided slice fused into its
// kernel, and is still an anchor (`kiln tune` missed them, a third of BERT-base's time).
TEST(Apply, AChunkedReductionsProductsAreWorkloads) {
  cpu::register_graph_backend();
  const ir::DataType f32 = ir::DataType::Float(32);
  graph::Graph g;
  graph::NodeId x = g.add_input("x", {f32, {64, 4096}});
  auto b = std::make_shared<interp::HostBuffer>(f32, std::vector<int64_t>{4096, 64});
  auto* v = reinterpret_cast<float*>(b->data());
  for (int64_t i = 0; i < 4096 * 64; ++i) v[i] = static_cast<float>(i % 13) / 13.0f - 0.5f;
  g.add_output(g.add_op("matmul", {x, g.add_constant("w", b)}, {}, "fc"), "y");
  const target::Target small_l2 = target::Target::parse("llvm -l2-cache=256K");

  std::optional<Workload> chunk;
  for (const auto& [w, node] : model_workloads(g, small_l2))
    if (w.op == "matmul_packed" && w.at("K") < 4096) chunk = w;
  ASSERT_TRUE(chunk) << "no chunk of the reduction among the model's workloads";
  EXPECT_EQ(chunk->at("M"), 64);
  EXPECT_EQ(chunk->at("N"), 64);

  // A record for the chunks applies to them, and the result still matches.
  const Template& t = find_template("matmul_packed.cpu");
  ConfigSpace s = t.space(*chunk);
  const int64_t d = t.default_config(*chunk, machine_traits("cpu")), other = d == 0 ? 1 : 0;
  fs::path p = temp_file("kiln-records-chunks");
  {
    RecordWriter out(p.string());
    MeasureResult mr;
    mr.cost = 1e-3;
    out.append(record_of(t, *chunk, s, "cpu", d, mr, 0, "random"));
    mr.cost = 0.5e-3;
    out.append(record_of(t, *chunk, s, "cpu", other, mr, 1, "random"));
  }
  std::ostringstream warn;
  ApplyStats stats;
  graph::CompileOptions o;
  o.target = small_l2;
  o.schedule_hook = records_hook(p.string(), warn, &stats);
  graph::Executor tuned = graph::make_executor(graph::compile(g, o), "cpu");
  EXPECT_EQ(stats.applied, std::set<std::string>{chunk->key()}) << warn.str();
  graph::CompileOptions plain;
  plain.optimize = false;
  graph::Executor ref = graph::make_executor(graph::compile(g, plain), "interp");
  auto [y1, y2] = run_both(tuned, ref);
  float largest = 0;
  for (float y : y2) largest = std::max(largest, std::abs(y));
  ASSERT_GT(largest, 1.0f);
  for (size_t i = 0; i < y1.size(); ++i) ASSERT_NEAR(y1[i], y2[i], 1e-4f * largest) << "at " << i;
  fs::remove(p);
}

// Compiles `g` (not optimized) with the records of `p` and returns what was applied.
ApplyStats compile_with_records(const graph::Graph& g, const fs::path& p, std::ostream& warn) {
  ApplyStats stats;
  graph::CompileOptions o;
  o.optimize = false;
  o.schedule_hook = records_hook(p.string(), warn, &stats);
  graph::compile(g, o);
  return stats;
}

// A record applies only where the tuner measured it at least kDefaultMargin faster than
// the default schedule's record in the same file; within the margin the anchor keeps
// the default, with a note.
TEST(Apply, ARecordWithinTheMarginOfTheDefaultKeepsTheDefault) {
  cpu::register_graph_backend();
  const Template& t = find_template("matmul_packed.cpu");
  Workload w = parse_workload("matmul_packed:M=16,N=64,K=32,block=32");
  const int64_t d = t.default_config(w, machine_traits("cpu"));
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
    ApplyStats stats = compile_with_records(g, p, warn);
    bool kept = gain < kDefaultMargin;
    EXPECT_EQ(stats.kept_default.count(w.key()), kept ? 1u : 0u) << gain;
    EXPECT_EQ(stats.applied.count(w.key()), kept ? 0u : 1u) << gain;
    EXPECT_EQ(warn.str().find("it keeps the default schedule") != std::string::npos, kept) << warn.str();
    fs::remove(p);
  }
}

const std::string kKey = "matmul_packed:M=16,N=64,K=32,block=32";

// A record of `config` of kKey: measured alone, or inside a model on `threads` threads.
Record record(int64_t config, double cost, bool in_model, int threads = 1) {
  const Template& t = find_template("matmul_packed.cpu");
  Workload w = parse_workload(kKey);
  MeasureResult mr;
  mr.cost = cost;
  if (in_model) mr.detail = {{"threads", threads}};
  return record_of(t, w, t.space(w), "cpu", config, mr, 0, in_model ? kInModelTuner : "random");
}

int64_t default_config() { return find_template("matmul_packed.cpu").default_config(parse_workload(kKey), machine_traits("cpu")); }

TEST(InModel, APickAppliesPastTheMarginOnItsThreads) {
  cpu::register_graph_backend();  // the default configuration is the host's
  const int64_t d = default_config();
  const int64_t other = d == 0 ? 1 : 0;
  for (double gain : {0.01, 0.05}) {
    std::vector<Record> rs = {record(d, 1e-3, true), record(other, 1e-3 / (1 + gain), true)};
    auto picks = in_model_picks(rs, machine_traits("cpu"), "cpu", 1);
    ASSERT_EQ(picks.count(kKey), 1u);
    EXPECT_EQ(picks.at(kKey).best.config, other);
    ASSERT_TRUE(picks.at(kKey).default_record);
    EXPECT_EQ(picks.at(kKey).applies, gain >= kInModelMargin) << gain;
  }
  // Where the default is the fastest it stays.
  EXPECT_FALSE(in_model_picks({record(d, 1e-3, true), record(other, 2e-3, true)}, machine_traits("cpu"), "cpu", 1).at(kKey).applies);
  // Records of two threads are not those of one; with 0 (any) they all count.
  std::vector<Record> two = {record(d, 1e-3, true, 2), record(other, 0.5e-3, true, 2)};
  EXPECT_TRUE(in_model_picks(two, machine_traits("cpu"), "cpu", 1).empty());
  EXPECT_TRUE(in_model_picks(two, machine_traits("cpu"), "cpu", 2).at(kKey).applies);
  EXPECT_TRUE(in_model_picks(two, machine_traits("cpu"), "cpu", 0).at(kKey).applies);
  // Records measured alone are no picks.
  EXPECT_TRUE(in_model_picks({record(d, 1e-3, false), record(other, 0.5e-3, false)}, machine_traits("cpu"), "cpu", 1).empty());
}

// The standalone records say `other` is 25% faster; inside the model it was not, so the
// anchor keeps the default. Where the in-model records are of other threads, the
// standalone records decide.
TEST(InModel, InModelRecordsDecideOverTheRecordsMeasuredAlone) {
  cpu::register_graph_backend();
  const int threads = target::make_backend("cpu")->threads();
  const int64_t d = default_config();
  const int64_t other = d == 0 ? 1 : 0;
  graph::NodeId node = -1;
  graph::Graph g = workload_graph(parse_workload(kKey), &node);
  for (int measured_on : {threads, threads + 1}) {
    fs::path p = temp_file("kiln-in-model-decides");
    {
      RecordWriter out(p.string());
      for (const Record& r : {record(d, 1e-3, false), record(other, 0.8e-3, false), record(d, 1e-3, true, measured_on),
                              record(other, 1.01e-3, true, measured_on)})
        out.append(r);
    }
    std::ostringstream warn;
    ApplyStats stats = compile_with_records(g, p, warn);
    const bool in_model = measured_on == threads;
    EXPECT_EQ(stats.kept_default.count(kKey), in_model ? 1u : 0u);
    EXPECT_EQ(stats.applied.count(kKey), in_model ? 0u : 1u);
    EXPECT_EQ(warn.str().find("faster than the default schedule inside the model") != std::string::npos, in_model)
        << warn.str();
    fs::remove(p);
  }
}

// A model of two dense layers (constant weights: AlterLayout's matmul_packed) with
// records of three configurations measured alone for each: every candidate is compiled
// into the model, the winners timed again, and the default's and each winner's
// in-model records appended, on this process's threads.
TEST(InModel, SelectsInsideTheModel) {
  cpu::register_graph_backend();
  const ir::DataType f32 = ir::DataType::Float(32);
  graph::Graph g;
  graph::NodeId x = g.add_input("x", {f32, {16, 32}});
  auto weight = [&](int64_t k, int64_t n, const std::string& name) {
    auto b = std::make_shared<interp::HostBuffer>(f32, std::vector<int64_t>{k, n});
    auto* v = reinterpret_cast<float*>(b->data());
    for (int64_t i = 0; i < k * n; ++i) v[i] = static_cast<float>(i % 7) / 7.0f - 0.5f;
    return g.add_constant(name, b);
  };
  graph::NodeId h = g.add_op("matmul", {x, weight(32, 64, "w1")}, {}, "fc1");
  graph::NodeId y = g.add_op("matmul", {g.add_op("relu", {h}, {}, "relu"), weight(64, 64, "w2")}, {}, "fc2");
  g.add_output(y, "y");

  fs::path p = temp_file("kiln-in-model-select");
  std::vector<std::pair<Workload, std::string>> ws = model_workloads(g);
  ASSERT_EQ(ws.size(), 2u);
  {
    RecordWriter out(p.string());
    for (const auto& [w, node] : ws) {
      const Template& t = find_template("matmul_packed.cpu");
      ConfigSpace s = t.space(w);
      ASSERT_GE(s.size(), 3);
      for (int64_t c = 0; c < 3; ++c) {
        MeasureResult mr;
        mr.cost = 1e-3 * (1 + c);
        out.append(record_of(t, w, s, "cpu", c, mr, static_cast<int>(c), "random"));
      }
    }
  }
  InModelOptions o;
  o.candidates = 2;
  o.rounds = 1;
  o.runs = 2;
  o.records = p.string();
  InModelResult r = select_in_model(g, o);
  ASSERT_EQ(r.choices.size(), 2u);
  int ranks = 0;
  for (const InModelChoice& c : r.choices) {
    EXPECT_EQ(c.template_name, "matmul_packed.cpu");
    EXPECT_GT(c.default_ms, 0);
    EXPECT_GT(c.best_ms, 0);
    ranks = std::max(ranks, c.candidates);
  }
  EXPECT_EQ(ranks, 3);  // the default and the two others fastest alone
  EXPECT_EQ(r.compiles, ranks + 2);
  EXPECT_GE(r.model_default_ms, r.choices[0].default_ms);
  const int threads = target::make_backend("cpu")->threads();
  std::set<std::string> with_default;
  for (const Record& rec : load_records(p.string())) {
    if (!rec.in_model()) continue;
    EXPECT_EQ(rec.detail.at("threads"), threads);
    const InModelChoice& c = rec.workload == r.choices[0].workload ? r.choices[0] : r.choices[1];
    EXPECT_TRUE(rec.config == c.default_config || rec.config == c.best_config) << rec.config;
    if (rec.config == c.default_config) with_default.insert(rec.workload);
  }
  EXPECT_EQ(with_default.size(), 2u);
  EXPECT_EQ(in_model_picks(load_records(p.string()), machine_traits("cpu"), "cpu", threads).size(), 2u);
  // Another target than the host CPU is refused, naming it.
  o.target = target::Target::parse("interp");
  EXPECT_THROW(select_in_model(g, o), std::exception);
  fs::remove(p);
}

}  // namespace
}  // namespace kiln::tuner
