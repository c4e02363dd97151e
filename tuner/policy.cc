#include "tuner/policy.h"

#include <fmt/format.h>

#include <stdexcept>

#include "support/error.h"
#include "tuner/tuner.h"
#include "tuner/xgb_tuner.h"

namespace kiln::tuner {

Tuner::Tuner(const TuneTask& task) : task_(task), space_(task.space), rng_(task.options.seed * 0x9E3779B97F4A7C15ull + 1) {
  for (const Record* r : task.earlier) visited_.insert(r->config);
}

void Tuner::update(const std::vector<MeasureInput>&, const std::vector<MeasureResult>&) {}

bool Tuner::has_next() const { return static_cast<int64_t>(visited_.size()) < space_.size(); }

bool Tuner::take(int64_t index, std::vector<int64_t>* batch) {
  if (index < 0 || index >= space_.size() || !visited_.insert(index).second) return false;
  batch->push_back(index);
  return true;
}

int64_t Tuner::random_unvisited() {
  const int64_t size = space_.size();
  if (static_cast<int64_t>(visited_.size()) >= size) return -1;
  for (int tries = 0; tries < 1000; ++tries) {
    int64_t i = std::uniform_int_distribution<int64_t>(0, size - 1)(rng_);
    if (!visited(i)) return i;
  }
  for (int64_t i = 0; i < size; ++i)
    if (!visited(i)) return i;
  return -1;
}

void Tuner::fill_random(int n, std::vector<int64_t>* batch) {
  while (static_cast<int>(batch->size()) < n) {
    int64_t i = random_unvisited();
    if (i < 0) return;
    take(i, batch);
  }
}

std::vector<int64_t> GridTuner::next_batch(int n) {
  std::vector<int64_t> batch;
  while (static_cast<int>(batch.size()) < n && next_ < space_.size()) take(next_++, &batch);
  return batch;
}

std::vector<int64_t> RandomTuner::next_batch(int n) {
  std::vector<int64_t> batch;
  fill_random(n, &batch);
  return batch;
}

namespace {

template <class T>
std::unique_ptr<Tuner> make(const TuneTask& task) {
  return std::make_unique<T>(task);
}

std::unique_ptr<Tuner> make_xgb(const TuneTask& task) {
  if (task.options.transfer) return std::make_unique<XgbTransferTuner>(task);
  return std::make_unique<XgbTuner>(task);
}

// The built-in policies; a new one is one line here (or a register_tuner call).
std::map<std::string, TunerFactory>& registry() {
  static std::map<std::string, TunerFactory> r = {
      {"grid", make<GridTuner>},
      {"random", make<RandomTuner>},
      {"xgb", make_xgb},  // XgbTransferTuner, or XgbTuner without TuneOptions::transfer
  };
  return r;
}

}  // namespace

void register_tuner(const std::string& name, TunerFactory make) {
  if (name.empty() || !make) throw std::invalid_argument("a tuner needs a name and a factory");
  registry()[name] = std::move(make);
}

std::vector<std::string> tuner_names() {
  std::vector<std::string> r;
  for (const auto& [name, make] : registry()) r.push_back(name);
  return r;
}

bool has_tuner(const std::string& name) { return registry().count(name) > 0; }

std::string unknown_tuner_message(const std::string& name) {
  std::vector<std::string> names = tuner_names();
  std::string known = names.size() == 1 ? names[0]
                                        : fmt::format("{} or {}", fmt::join(names.begin(), names.end() - 1, ", "), names.back());
  return fmt::format("unknown tuner '{}' ({})", name, known);
}

std::unique_ptr<Tuner> make_tuner(const std::string& name, const TuneTask& task) {
  auto it = registry().find(name);
  if (it == registry().end()) throw Error(unknown_tuner_message(name));
  return it->second(task);
}

}  // namespace kiln::tuner
