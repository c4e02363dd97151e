#pragma once
// Search spaces as in AutoTVM: a template declares knobs, each with a finite list of
// choices; a configuration picks one choice per knob. The space is a mixed-radix
// number system: knob k is digit k with radix = its number of choices, knob 0 the
// least significant digit, so every configuration has one index in [0, size()).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::tuner {

enum class KnobKind { Split, Reorder, Annotate, Categorical };
const char* knob_kind_name(KnobKind k);

// One choice of a knob. Split: the factors, outermost first (their product is the
// split axis' extent). Reorder: a permutation of the template's loops. Annotate and
// Categorical: the chosen name (e.g. "unroll", "vectorize", "none").
struct Choice {
  std::vector<int64_t> ints;
  std::string name;
  std::string to_string() const;
};

struct Knob {
  std::string name;
  KnobKind kind = KnobKind::Categorical;
  std::vector<Choice> choices;
};

// How a split knob picks its factor lists.
enum class SplitPolicy {
  Factors,     // every divisor (of the extent) for each inner part
  PowerOfTwo,  // only power-of-two inner parts that divide the extent
};

class ConfigSpace;

// A point of a space: one choice per knob, and its index.
class Config {
 public:
  Config() = default;
  Config(const ConfigSpace* space, int64_t index);
  int64_t index() const { return index_; }
  const std::vector<int>& digits() const { return digits_; }
  // The chosen entity of a knob by name (std::out_of_range naming the knob otherwise).
  const Choice& operator[](const std::string& knob) const;
  // Split: the innermost factor; Categorical/Annotate: the name; Reorder: the order.
  int64_t factor(const std::string& knob, size_t part = 1) const { return (*this)[knob].ints.at(part); }
  const std::string& name(const std::string& knob) const { return (*this)[knob].name; }
  // {"knob": "choice", ...} for records and messages.
  std::map<std::string, std::string> describe() const;

 private:
  const ConfigSpace* space_ = nullptr;
  int64_t index_ = -1;
  std::vector<int> digits_;
};

class ConfigSpace {
 public:
  // Split `extent` into `parts` factors (outermost first); inner factors are limited to
  // `max_inner` (0: no limit) and filtered by `policy`.
  void define_split(const std::string& name, int64_t extent, int parts, SplitPolicy policy, int64_t max_inner = 0,
                    int64_t min_inner = 1);
  // A split with an explicit list of innermost factors (each must divide `extent`), and
  // `partial` ones that need not: their outer factor rounds up, the last tile partial.
  void define_split_list(const std::string& name, int64_t extent, const std::vector<int64_t>& inner,
                         const std::vector<int64_t>& partial = {});
  // Permutations of loop positions, given as explicit orders.
  void define_reorder(const std::string& name, const std::vector<std::vector<int64_t>>& orders);
  // Loop annotations, e.g. {"none", "unroll"} or {"none", "unroll", "vectorize"}.
  void define_annotate(const std::string& name, const std::vector<std::string>& choices);
  void define_knob(const std::string& name, const std::vector<std::string>& choices);

  const std::vector<Knob>& knobs() const { return knobs_; }
  const Knob& knob(const std::string& name) const;
  int knob_index(const std::string& name) const;  // -1 if none
  int64_t size() const;
  // Mixed-radix decoding and encoding; std::out_of_range for an index outside the space.
  Config get(int64_t index) const;
  std::vector<int> digits(int64_t index) const;
  int64_t index_of(const std::vector<int>& digits) const;
  // The index of the configuration whose choices print as `choices` (record loading);
  // -1 if a knob or a choice is unknown.
  int64_t index_of(const std::map<std::string, std::string>& choices) const;

 private:
  void add(Knob k);
  std::vector<Knob> knobs_;
};

}  // namespace kiln::tuner
