#include "tuner/cost_model.h"

#include <fmt/format.h>
#include <xgboost/c_api.h>

#include <limits>
#include <stdexcept>

#include "support/error.h"

namespace kiln::tuner {

namespace {

void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(fmt::format("XGBoost {}: {}", what, XGBGetLastError()));
}

// A DMatrix that frees itself.
class Matrix {
 public:
  Matrix(const std::vector<std::vector<float>>& x, size_t cols) {
    std::vector<float> flat;
    flat.reserve(x.size() * cols);
    for (const auto& row : x) {
      if (row.size() != cols) throw Error(fmt::format("feature rows of {} and {} values", row.size(), cols));
      flat.insert(flat.end(), row.begin(), row.end());
    }
    check(XGDMatrixCreateFromMat(flat.data(), x.size(), cols, std::numeric_limits<float>::quiet_NaN(), &h), "DMatrix");
  }
  ~Matrix() { XGDMatrixFree(h); }
  DMatrixHandle h = nullptr;
};

}  // namespace

CostModel::CostModel(uint64_t seed, int rounds) : seed_(seed), rounds_(rounds) {}

CostModel::~CostModel() {
  if (booster_) XGBoosterFree(booster_);
}

void CostModel::fit(const std::vector<std::vector<float>>& x, const std::vector<float>& y, const std::vector<unsigned>& groups) {
  if (x.empty()) throw Error("no samples to train the cost model on");
  if (y.size() != x.size()) throw Error("labels and samples differ in number");
  Matrix m(x, x[0].size());
  check(XGDMatrixSetFloatInfo(m.h, "label", y.data(), y.size()), "labels");
  check(XGDMatrixSetUIntInfo(m.h, "group", groups.data(), groups.size()), "groups");
  BoosterHandle b = nullptr;
  check(XGBoosterCreate(&m.h, 1, &b), "booster");
  auto set = [&](const char* k, const std::string& v) { check(XGBoosterSetParam(b, k, v.c_str()), k); };
  try {
    set("objective", "rank:pairwise");
    set("max_depth", "6");
    set("eta", "0.1");
    set("gamma", "0.0001");
    set("min_child_weight", "1");
    set("subsample", "1.0");
    set("tree_method", "exact");
    // One thread: the parent of the measuring workers keeps no OpenMP pool spinning.
    set("nthread", "1");
    set("seed", std::to_string(seed_ % 2147483647));
    set("verbosity", "0");
    for (int i = 0; i < rounds_; ++i) check(XGBoosterUpdateOneIter(b, i, m.h), "training");
  } catch (...) {
    XGBoosterFree(b);
    throw;
  }
  if (booster_) XGBoosterFree(booster_);
  booster_ = b;
  num_features_ = x[0].size();
}

std::vector<float> CostModel::predict(const std::vector<std::vector<float>>& x) const {
  if (!booster_) throw std::logic_error("the cost model is not trained");
  if (x.empty()) return {};
  Matrix m(x, num_features_);
  bst_ulong len = 0;
  const float* out = nullptr;
  check(XGBoosterPredict(booster_, m.h, 0, 0, 0, &len, &out), "prediction");
  return std::vector<float>(out, out + len);
}

}  // namespace kiln::tuner
