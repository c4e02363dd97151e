#pragma once
// The cost model: gradient-boosted trees (XGBoost through its C API) with a ranking
// objective (rank:pairwise). It predicts a score per candidate whose order, not its
// value, matters: higher is faster. Candidates of one workload form one ranking
// group, so records of other workloads of the same operator (transfer) teach the
// model what is fast relative to its peers without mixing their scales.
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::tuner {

class CostModel {
 public:
  explicit CostModel(uint64_t seed = 0, int rounds = 100);
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // Trains from scratch. `x`: one feature row per sample (equal lengths); `y`: the
  // relevance (0 for failed candidates, else best cost of the group / cost); `groups`:
  // sizes of consecutive ranking groups summing to the number of rows.
  void fit(const std::vector<std::vector<float>>& x, const std::vector<float>& y, const std::vector<unsigned>& groups);
  bool trained() const { return booster_ != nullptr; }
  size_t num_features() const { return num_features_; }
  std::vector<float> predict(const std::vector<std::vector<float>>& x) const;

 private:
  void* booster_ = nullptr;
  uint64_t seed_;
  int rounds_;
  size_t num_features_ = 0;
};

}  // namespace kiln::tuner
