// Calibration thresholds: the largest |x| (max), a percentile of |x|, or the threshold
// that minimizes the KL divergence between the histogram of |x| and its int8
// quantization (TensorRT's entropy calibration: 2048 bins, 128 levels).
#include <algorithm>
#include <cmath>

#include "compiler/quantize/quantize.h"
#include "compiler/support/error.h"

namespace kiln::quantize {

namespace {

double kl_threshold(const std::vector<float>& values, double amax) {
  constexpr int kBins = 2048, kLevels = 128;
  std::vector<double> hist(kBins, 0);
  for (float v : values) {
    int b = static_cast<int>(std::fabs(v) / amax * kBins);
    hist[std::min(b, kBins - 1)] += 1;
  }
  double best = amax, best_kl = INFINITY;
  for (int t = kLevels; t <= kBins; ++t) {
    // P: the first t bins, the outliers folded into the last one.
    std::vector<double> p(hist.begin(), hist.begin() + t);
    for (int i = t; i < kBins; ++i) p[t - 1] += hist[i];
    // Q: the t bins merged into kLevels levels and spread back over their non-empty bins.
    std::vector<double> q(t, 0);
    for (int l = 0; l < kLevels; ++l) {
      int lo = l * t / kLevels, hi = (l + 1) * t / kLevels;
      double sum = 0;
      int nonzero = 0;
      for (int i = lo; i < hi; ++i) {
        sum += hist[i];
        nonzero += hist[i] > 0;
      }
      for (int i = lo; i < hi; ++i)
        if (hist[i] > 0) q[i] = sum / nonzero;
    }
    double ps = 0, qs = 0;
    for (int i = 0; i < t; ++i) {
      ps += p[i];
      qs += q[i];
    }
    if (ps == 0 || qs == 0) continue;
    double kl = 0;
    for (int i = 0; i < t; ++i) {
      if (p[i] == 0) continue;
      double pi = p[i] / ps, qi = q[i] / qs;
      kl += qi > 0 ? pi * std::log(pi / qi) : pi * 30;  // an empty Q bin under P mass: heavily penalized
    }
    if (kl < best_kl) {
      best_kl = kl;
      best = (t + 0.5) * amax / kBins;
    }
  }
  return best;
}

}  // namespace

Method parse_method(const std::string& s) {
  if (s == "max") return Method::Max;
  if (s == "percentile") return Method::Percentile;
  if (s == "kl") return Method::KL;
  throw CompileError("unknown calibration method '" + s + "' (max, percentile or kl)");
}

double calibrate_threshold(const std::vector<float>& values, Method method, double percentile) {
  double amax = 0;
  for (float v : values) amax = std::max(amax, static_cast<double>(std::fabs(v)));
  if (amax == 0 || values.empty()) return 0;
  switch (method) {
    case Method::Max: return amax;
    case Method::Percentile: {
      std::vector<float> a(values.size());
      std::transform(values.begin(), values.end(), a.begin(), [](float v) { return std::fabs(v); });
      size_t k = std::min(a.size() - 1, static_cast<size_t>(percentile / 100.0 * static_cast<double>(a.size() - 1) + 0.5));
      std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(k), a.end());
      return std::max(static_cast<double>(a[k]), amax * 1e-6);
    }
    case Method::KL: return kl_threshold(values, amax);
  }
  return amax;
}

}  // namespace kiln::quantize
