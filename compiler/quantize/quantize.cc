#include "compiler/quantize/quantize.h"

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "compiler/frontend/onnx/external_data.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/graph/executor.h"
#include "compiler/support/error.h"

namespace kiln::quantize {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw CompileError(msg); }

// Values kept per tensor for the percentile and KL methods (a regular subsample beyond).
constexpr int64_t kKeep = int64_t{1} << 22;

int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return def;
}
double attr_float(const onnx::NodeProto& n, const std::string& name, double def) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.f();
  return def;
}

std::string node_label(const onnx::NodeProto& n) { return n.name().empty() ? n.op_type() + " -> " + n.output(0) : n.name(); }

// A float initializer's values.
std::vector<float> floats_of(const onnx::TensorProto& t) {
  if (t.data_type() != onnx::TensorProto::FLOAT) fail("initializer '" + t.name() + "' is not float32");
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  if (t.has_raw_data()) {
    if (t.raw_data().size() != v.size() * 4) fail("initializer '" + t.name() + "' has the wrong amount of data");
    std::memcpy(v.data(), t.raw_data().data(), v.size() * 4);
  } else {
    if (t.float_data_size() != n) fail("initializer '" + t.name() + "' has the wrong amount of data");
    std::copy(t.float_data().begin(), t.float_data().end(), v.begin());
  }
  return v;
}

// The scale for |x| <= threshold in int8 (a power of two, rounded up, when asked).
double scale_for(double threshold, bool power2) {
  if (!(threshold > 0)) threshold = 1e-8;
  double s = threshold / 127.0;
  return power2 ? std::ldexp(1.0, static_cast<int>(std::ceil(std::log2(s)))) : static_cast<double>(static_cast<float>(s));
}

struct Observed {
  double amax = 0;
  std::vector<float> values;
};

class Quantizer {
 public:
  Quantizer(onnx::ModelProto model, const Options& opt, std::string source)
      : m_(std::move(model)), opt_(opt), source_(std::move(source)) {}

  std::string run(const std::vector<graph::ConstData>& samples, Report* report);

 private:
  onnx::ModelProto m_;
  const Options& opt_;
  std::string source_;
  std::map<std::string, const onnx::TensorProto*> inits_;
  std::map<std::string, double> scale_;        // observed tensor -> its scale
  std::map<std::string, std::string> dq_name_;  // observed tensor -> its dequantized copy
  std::vector<int> selected_;                  // node indices quantized

  bool is_init(const std::string& n) const { return inits_.count(n) != 0; }
  void select_nodes(Report* r);
  std::vector<std::string> activation_inputs(const onnx::NodeProto& n) const;
  std::map<std::string, Observed> observe(const std::vector<std::string>& tensors, const std::vector<graph::ConstData>& samples);
  std::string write();

  // Helpers that add to the output model.
  onnx::TensorProto* add_init(const std::string& name, int type, const std::vector<int64_t>& dims) {
    onnx::TensorProto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    return t;
  }
  // A DequantizeLinear (or QuantizeLinear) node `out = op(in, scale, zp)`, per axis when axis >= 0.
  void add_qdq_node(const std::string& op, const std::string& in, const std::string& scale, const std::string& zp,
                    const std::string& out, int64_t axis = -1) {
    onnx::NodeProto* n = m_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(out + "_" + op);
    *n->add_input() = in;
    *n->add_input() = scale;
    *n->add_input() = zp;
    *n->add_output() = out;
    if (axis < 0) return;
    auto* a = n->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
  }
  std::string add_scale(const std::string& name, const std::vector<double>& s, int zp_type, std::string* zp) {
    std::vector<int64_t> dims;
    if (s.size() > 1) dims.push_back(static_cast<int64_t>(s.size()));
    onnx::TensorProto* t = add_init(name + "_scale", onnx::TensorProto::FLOAT, dims);
    for (double v : s) t->add_float_data(static_cast<float>(v));
    onnx::TensorProto* z = add_init(name + "_zero_point", zp_type, dims);
    for (size_t i = 0; i < s.size(); ++i) z->add_int32_data(0);
    *zp = z->name();
    return t->name();
  }
};

void Quantizer::select_nodes(Report* r) {
  std::set<std::string> skip(opt_.skip.begin(), opt_.skip.end());
  const auto& nodes = m_.graph().node();
  if (!opt_.skip_given) {
    for (const auto& n : nodes)
      if (n.op_type() == "Conv") {
        skip.insert(node_label(n));
        break;
      }
  }
  std::set<std::string> names;
  for (const auto& n : nodes) names.insert(node_label(n));
  for (const std::string& s : opt_.skip)
    if (!names.count(s)) fail(fmt::format("{}: --skip names node '{}', which the model does not have", source_, s));
  for (int i = 0; i < nodes.size(); ++i) {
    const onnx::NodeProto& n = nodes[i];
    const std::string& op = n.op_type();
    bool ok = false;
    if (op == "Conv") ok = n.input_size() >= 2 && is_init(n.input(1));
    else if (op == "Gemm")
      ok = n.input_size() >= 2 && is_init(n.input(1)) && attr_int(n, "transA", 0) == 0 && attr_float(n, "alpha", 1) == 1 &&
           attr_float(n, "beta", 1) == 1;
    else if (op == "MatMul") ok = is_init(n.input(1)) && inits_.at(n.input(1))->dims_size() == 2;
    else if (op == "Add") ok = n.input_size() == 2 && !is_init(n.input(0)) && !is_init(n.input(1));
    else if (op == "MaxPool") ok = n.output_size() == 1;
    if (!ok) continue;
    if (skip.count(node_label(n))) {
      if (r) r->skipped.push_back(node_label(n));
      continue;
    }
    selected_.push_back(i);
  }
  if (r) r->quantized_nodes = static_cast<int>(selected_.size());
}

std::vector<std::string> Quantizer::activation_inputs(const onnx::NodeProto& n) const {
  if (n.op_type() == "Add") return {n.input(0), n.input(1)};
  return {n.input(0)};
}

std::map<std::string, Observed> Quantizer::observe(const std::vector<std::string>& tensors,
                                                    const std::vector<graph::ConstData>& samples) {
  // The model with every observed tensor as an output, run through the executor.
  onnx::ModelProto probe = m_;
  std::set<std::string> outs;
  for (const auto& o : probe.graph().output()) outs.insert(o.name());
  std::string input = probe.graph().input(0).name();
  for (const auto& t : probe.graph().input())
    if (!is_init(t.name())) {
      input = t.name();
      break;
    }
  std::vector<std::string> order;
  for (const std::string& t : tensors) {
    if (t == input) continue;
    order.push_back(t);
    if (!outs.count(t)) probe.mutable_graph()->add_output()->set_name(t);
  }
  graph::Graph g = frontend::import_onnx_bytes(probe.SerializeAsString(), {}, source_);
  if (g.inputs().size() != 1) fail(fmt::format("{}: the model has {} inputs; kiln quantize takes models with one", source_, g.inputs().size()));
  graph::Executor ex = graph::make_executor(graph::compile(g), opt_.backend);
  std::map<std::string, size_t> out_index;
  for (size_t k = 0; k < g.output_names().size(); ++k) out_index[g.output_names()[k]] = k;
  std::map<std::string, Observed> obs;
  auto record = [&](const std::string& name, const float* v, int64_t n) {
    Observed& o = obs[name];
    int64_t stride = std::max<int64_t>(1, n * static_cast<int64_t>(samples.size()) / kKeep);
    for (int64_t i = 0; i < n; ++i) {
      o.amax = std::max(o.amax, static_cast<double>(std::fabs(v[i])));
      if (i % stride == 0) o.values.push_back(v[i]);
    }
  };
  for (const auto& s : samples) {
    if (s->dtype() != ex.input_type(0).dtype || s->shape() != ex.input_type(0).shape)
      fail(fmt::format("a calibration input is {}[{}]; the model's input '{}' is {}", s->dtype().to_string(),
                       fmt::join(s->shape(), ", "), input, ex.input_type(0).to_string()));
    ex.set_input(0, s->data(), s->size() * s->dtype().storage_bytes());
    ex.run();
    if (std::find(tensors.begin(), tensors.end(), input) != tensors.end())
      record(input, reinterpret_cast<const float*>(s->data()), s->size());
    for (const std::string& t : order) {
      size_t k = out_index.at(t);
      if (ex.output_type(k).dtype != ir::DataType::Float(32)) fail(fmt::format("{}: tensor '{}' is not float32", source_, t));
      record(t, static_cast<const float*>(ex.output(k)), ex.output_type(k).size());
    }
  }
  return obs;
}

std::string Quantizer::write() {
  onnx::GraphProto* gp = m_.mutable_graph();
  std::vector<onnx::NodeProto> old(gp->node().begin(), gp->node().end());
  gp->clear_node();
  std::set<int> sel(selected_.begin(), selected_.end());
  auto emit_qdq = [&](const std::string& t) {
    if (dq_name_.count(t)) return;
    std::string zp;
    std::string s = add_scale(t + "_q", {scale_.at(t)}, onnx::TensorProto::INT8, &zp);
    add_qdq_node("QuantizeLinear", t, s, zp, t + "_quantized");
    add_qdq_node("DequantizeLinear", t + "_quantized", s, zp, t + "_dequantized");
    dq_name_[t] = t + "_dequantized";
  };
  // Tensors without a producing node (graph inputs) first.
  std::set<std::string> produced;
  for (const auto& n : old)
    for (const auto& o : n.output()) produced.insert(o);
  for (const auto& [t, s] : scale_)
    if (!produced.count(t)) emit_qdq(t);
  for (int i = 0; i < static_cast<int>(old.size()); ++i) {
    onnx::NodeProto n = old[i];
    // Every reader of a quantized tensor reads its dequantized copy.
    for (int k = 0; k < n.input_size(); ++k)
      if (dq_name_.count(n.input(k))) n.set_input(k, dq_name_.at(n.input(k)));
    if (sel.count(i)) {
      const std::string& op = n.op_type();
      if (op == "Conv" || op == "Gemm" || op == "MatMul") {
        const onnx::TensorProto& w = *inits_.at(old[i].input(1));
        std::vector<float> wv = floats_of(w);
        std::vector<int64_t> dims(w.dims().begin(), w.dims().end());
        int axis = op == "Conv" ? 0 : op == "MatMul" ? 1 : attr_int(n, "transB", 0) ? 0 : 1;
        int64_t channels = opt_.per_channel ? dims[axis] : 1;
        int64_t inner = 1;
        for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
        auto channel_of = [&](int64_t idx) { return opt_.per_channel ? (idx / inner) % dims[axis] : 0; };
        std::vector<double> amax(static_cast<size_t>(channels), 0);
        for (int64_t j = 0; j < static_cast<int64_t>(wv.size()); ++j)
          amax[channel_of(j)] = std::max(amax[channel_of(j)], static_cast<double>(std::fabs(wv[j])));
        std::vector<double> ws;
        for (double a : amax) ws.push_back(scale_for(a, opt_.power2));
        std::string base = node_label(old[i]) + "_weight";
        std::string zp;
        std::string s = add_scale(base, ws, onnx::TensorProto::INT8, &zp);
        onnx::TensorProto* wq = add_init(base + "_quantized", onnx::TensorProto::INT8, dims);
        for (int64_t j = 0; j < static_cast<int64_t>(wv.size()); ++j)
          wq->add_int32_data(static_cast<int>(std::clamp(std::nearbyint(wv[j] / ws[channel_of(j)]), -127.0, 127.0)));
        add_qdq_node("DequantizeLinear", wq->name(), s, zp, base + "_dequantized", opt_.per_channel ? axis : -1);
        n.set_input(1, base + "_dequantized");
        // The bias in int32 at scale s_x * s_w.
        if (op != "MatMul" && n.input_size() > 2 && is_init(old[i].input(2))) {
          const onnx::TensorProto& b = *inits_.at(old[i].input(2));
          std::vector<float> bv = floats_of(b);
          double sx = scale_.at(old[i].input(0));
          std::vector<double> bs;
          for (double x : ws) bs.push_back(static_cast<double>(static_cast<float>(sx * x)));
          std::string bbase = node_label(old[i]) + "_bias";
          std::string bzp;
          std::string bsn = add_scale(bbase, bs, onnx::TensorProto::INT32, &bzp);
          std::vector<int64_t> bdims(b.dims().begin(), b.dims().end());
          onnx::TensorProto* bq = add_init(bbase + "_quantized", onnx::TensorProto::INT32, bdims);
          for (size_t j = 0; j < bv.size(); ++j) {
            double v = std::nearbyint(bv[j] / bs[opt_.per_channel ? j % bs.size() : 0]);
            bq->add_int32_data(static_cast<int32_t>(std::clamp(v, -2147483647.0, 2147483647.0)));
          }
          if (opt_.per_channel && static_cast<int64_t>(bv.size()) != channels)
            fail(fmt::format("{}: node '{}': the bias has {} values for {} channels", source_, node_label(old[i]), bv.size(), channels));
          add_qdq_node("DequantizeLinear", bq->name(), bsn, bzp, bbase + "_dequantized",
                       opt_.per_channel ? static_cast<int64_t>(bdims.size()) - 1 : -1);
          n.set_input(2, bbase + "_dequantized");
        }
      }
    }
    *gp->add_node() = n;
    for (const auto& o : n.output())
      if (scale_.count(o)) emit_qdq(o);
  }
  // The weights and biases that were replaced are no longer read by anything.
  std::set<std::string> used;
  for (const auto& n : gp->node())
    for (const auto& i : n.input()) used.insert(i);
  for (const auto& o : gp->output()) used.insert(o.name());
  auto* inits = gp->mutable_initializer();
  for (int k = inits->size() - 1; k >= 0; --k)
    if (!used.count(inits->Get(k).name())) inits->DeleteSubrange(k, 1);
  try {
    onnx::checker::check_model(m_);
  } catch (const std::exception& e) {
    fail(fmt::format("{}: the quantized model does not pass onnx::checker: {}", source_, e.what()));
  }
  return m_.SerializeAsString();
}

std::string Quantizer::run(const std::vector<graph::ConstData>& samples, Report* report) {
  int64_t opset = 0;
  for (const auto& o : m_.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset < 13)
    fail(fmt::format("{}: opset {}: kiln quantize writes QuantizeLinear with per-axis scales, which needs opset 13 or later; "
                     "re-export the model with opset 13",
                     source_, opset));
  if (samples.empty()) fail(source_ + ": no calibration inputs");
  for (const auto& t : m_.graph().initializer()) inits_[t.name()] = &t;
  select_nodes(report);
  if (selected_.empty()) fail(source_ + ": the model has no operator kiln quantize can quantize (Conv, Gemm, MatMul, Add, MaxPool)");
  std::vector<std::string> tensors;
  auto observe_tensor = [&](const std::string& t) {
    if (std::find(tensors.begin(), tensors.end(), t) == tensors.end()) tensors.push_back(t);
  };
  for (int i : selected_)
    for (const std::string& t : activation_inputs(m_.graph().node(i))) observe_tensor(t);
  // What a product or residual add writes (after a ReLU that is its one reader), so it
  // is requantized in integers too; the graph's outputs stay float.
  std::map<std::string, std::vector<const onnx::NodeProto*>> readers;
  for (const auto& n : m_.graph().node())
    for (const auto& in : n.input()) readers[in].push_back(&n);
  std::set<std::string> graph_outputs;
  for (const auto& o : m_.graph().output()) graph_outputs.insert(o.name());
  for (int i : selected_) {
    const onnx::NodeProto& n = m_.graph().node(i);
    if (n.op_type() == "MaxPool") continue;
    std::string t = n.output(0);
    const auto& r = readers[t];
    if (r.size() == 1 && r[0]->op_type() == "Relu" && !graph_outputs.count(t)) t = r[0]->output(0);
    if (!graph_outputs.count(t)) observe_tensor(t);
  }
  std::map<std::string, Observed> obs = observe(tensors, samples);
  // A max pool's output keeps its input's scale, so the pool runs on the int8 data.
  std::map<std::string, std::string> pooled_from;
  for (int i : selected_) {
    const onnx::NodeProto& n = m_.graph().node(i);
    if (n.op_type() == "MaxPool") pooled_from[n.output(0)] = n.input(0);
  }
  for (const std::string& t : tensors) {
    std::string src = t;
    while (pooled_from.count(src) && obs.count(pooled_from.at(src))) src = pooled_from.at(src);
    const Observed& o = obs.at(src);
    double th = opt_.method == Method::Max ? o.amax : calibrate_threshold(o.values, opt_.method, opt_.percentile);
    scale_[t] = scale_for(th, opt_.power2);
  }
  if (report) {
    report->observed_tensors = static_cast<int>(tensors.size());
    report->samples = static_cast<int>(samples.size());
  }
  return write();
}

}  // namespace

std::string quantize_onnx(const std::string& model_bytes, const std::vector<graph::ConstData>& samples, const Options& options,
                          const std::string& source, Report* report) {
  onnx::ModelProto model;
  if (model_bytes.empty() || !model.ParseFromString(model_bytes) || !model.has_graph())
    fail(source + ": not a valid ONNX model");
  frontend::load_external_data(model, options.model_dir, source);
  return Quantizer(std::move(model), options, source).run(samples, report);
}

}  // namespace kiln::quantize
