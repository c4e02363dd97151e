#include "tuner/space.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "support/error.h"
#include "support/integer.h"

namespace kiln::tuner {

const char* knob_kind_name(KnobKind k) {
  switch (k) {
    case KnobKind::Split: return "split";
    case KnobKind::Reorder: return "reorder";
    case KnobKind::Annotate: return "annotate";
    case KnobKind::Categorical: return "categorical";
  }
  return "?";
}

std::string Choice::to_string() const {
  if (!name.empty()) return name;
  return fmt::format("[{}]", fmt::join(ints, ","));
}

Config::Config(const ConfigSpace* space, int64_t index) : space_(space), index_(index), digits_(space->digits(index)) {}

const Choice& Config::operator[](const std::string& knob) const {
  int k = space_->knob_index(knob);
  if (k < 0) throw std::out_of_range("the space has no knob '" + knob + "'");
  return space_->knobs()[k].choices[digits_[k]];
}

std::map<std::string, std::string> Config::describe() const {
  std::map<std::string, std::string> r;
  for (size_t k = 0; k < digits_.size(); ++k) r[space_->knobs()[k].name] = space_->knobs()[k].choices[digits_[k]].to_string();
  return r;
}

namespace {

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// All ordered factorizations of `extent` into `parts` factors whose inner factors pass `ok`.
void factor_lists(int64_t extent, int parts, const std::vector<int64_t>& prefix,
                  const std::function<bool(int64_t)>& ok, std::vector<std::vector<int64_t>>* out) {
  if (parts == 1) {
    std::vector<int64_t> l = prefix;
    l.insert(l.begin(), extent);  // the outermost part takes what is left
    out->push_back(l);
    return;
  }
  for (int64_t f : divisors(extent)) {
    if (!ok(f)) continue;
    std::vector<int64_t> p = prefix;
    p.insert(p.begin(), f);
    factor_lists(extent / f, parts - 1, p, ok, out);
  }
}

}  // namespace

void ConfigSpace::add(Knob k) {
  if (knob_index(k.name) >= 0) throw Error("knob '" + k.name + "' defined twice");
  if (k.choices.empty()) throw Error("knob '" + k.name + "' has no choices");
  knobs_.push_back(std::move(k));
}

void ConfigSpace::define_split(const std::string& name, int64_t extent, int parts, SplitPolicy policy, int64_t max_inner,
                               int64_t min_inner) {
  if (extent < 1 || parts < 2) throw Error(fmt::format("split '{}': extent {} into {} parts", name, extent, parts));
  auto ok = [&](int64_t f) {
    if (max_inner > 0 && f > max_inner) return false;
    if (f < min_inner && f != extent) return false;
    return policy == SplitPolicy::Factors || power_of_two(f);
  };
  std::vector<std::vector<int64_t>> lists;
  factor_lists(extent, parts, {}, ok, &lists);
  Knob k{name, KnobKind::Split, {}};
  for (auto& l : lists) k.choices.push_back(Choice{std::move(l), ""});
  add(std::move(k));
}

void ConfigSpace::define_split_list(const std::string& name, int64_t extent, const std::vector<int64_t>& inner,
                                    const std::vector<int64_t>& partial) {
  Knob k{name, KnobKind::Split, {}};
  for (int64_t f : inner) {
    if (f < 1 || extent % f) throw Error(fmt::format("split '{}': {} does not divide {}", name, f, extent));
    k.choices.push_back(Choice{{extent / f, f}, ""});
  }
  for (int64_t f : partial) {
    if (f < 1 || f > extent) throw Error(fmt::format("split '{}': a partial tile of {} in {}", name, f, extent));
    k.choices.push_back(Choice{{ceil_div(extent, f), f}, ""});
  }
  add(std::move(k));
}

void ConfigSpace::define_reorder(const std::string& name, const std::vector<std::vector<int64_t>>& orders) {
  Knob k{name, KnobKind::Reorder, {}};
  for (const auto& o : orders) k.choices.push_back(Choice{o, ""});
  add(std::move(k));
}

void ConfigSpace::define_annotate(const std::string& name, const std::vector<std::string>& choices) {
  Knob k{name, KnobKind::Annotate, {}};
  for (const auto& c : choices) k.choices.push_back(Choice{{}, c});
  add(std::move(k));
}

void ConfigSpace::define_knob(const std::string& name, const std::vector<std::string>& choices) {
  Knob k{name, KnobKind::Categorical, {}};
  for (const auto& c : choices) k.choices.push_back(Choice{{}, c});
  add(std::move(k));
}

const Knob& ConfigSpace::knob(const std::string& name) const {
  int k = knob_index(name);
  if (k < 0) throw std::out_of_range("the space has no knob '" + name + "'");
  return knobs_[k];
}

int ConfigSpace::knob_index(const std::string& name) const {
  for (size_t k = 0; k < knobs_.size(); ++k)
    if (knobs_[k].name == name) return static_cast<int>(k);
  return -1;
}

int64_t ConfigSpace::size() const {
  int64_t n = 1;
  for (const auto& k : knobs_) n *= static_cast<int64_t>(k.choices.size());
  return n;
}

std::vector<int> ConfigSpace::digits(int64_t index) const {
  if (index < 0 || index >= size()) throw std::out_of_range(fmt::format("configuration {} is outside the space of {}", index, size()));
  std::vector<int> d;
  for (const auto& k : knobs_) {
    int64_t radix = static_cast<int64_t>(k.choices.size());
    d.push_back(static_cast<int>(index % radix));
    index /= radix;
  }
  return d;
}

int64_t ConfigSpace::index_of(const std::vector<int>& digits) const {
  if (digits.size() != knobs_.size()) throw std::out_of_range("wrong number of knob digits");
  int64_t index = 0;
  for (size_t k = knobs_.size(); k-- > 0;) {
    int64_t radix = static_cast<int64_t>(knobs_[k].choices.size());
    if (digits[k] < 0 || digits[k] >= radix) throw std::out_of_range("knob '" + knobs_[k].name + "': choice out of range");
    index = index * radix + digits[k];
  }
  return index;
}

int64_t ConfigSpace::index_of(const std::map<std::string, std::string>& choices) const {
  if (choices.size() != knobs_.size()) return -1;
  std::vector<int> d;
  for (const auto& k : knobs_) {
    auto it = choices.find(k.name);
    if (it == choices.end()) return -1;
    int found = -1;
    for (size_t c = 0; c < k.choices.size(); ++c)
      if (k.choices[c].to_string() == it->second) found = static_cast<int>(c);
    if (found < 0) return -1;
    d.push_back(found);
  }
  return index_of(d);
}

Config ConfigSpace::get(int64_t index) const { return Config(this, index); }

}  // namespace kiln::tuner
