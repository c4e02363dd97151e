#pragma once
// Integers read from JSON that came from outside (model files, tuning records, VTA
// programs, configurations). nlohmann's get<int>() converts whatever number it finds:
// a float out of the type's range is undefined behaviour, a bool becomes 0 or 1, and a
// large integer is cut to the type's width. These accept a JSON integer that T holds
// exactly and refuse anything else, floats included (even 3.0: Kiln's writers never
// write one, and 1e300 or 2^53 + 1 would need a rule of their own).
//
// Header-only: a library that includes it links nlohmann_json itself.
#include <concepts>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

template <class T>
concept JsonInteger = std::integral<T> && !std::same_as<T, bool>;

// j's value when j is a JSON integer within T's range; nullopt for anything else.
template <JsonInteger T>
std::optional<T> try_json_integer(const nlohmann::json& j) {
  if (j.is_number_unsigned()) {
    auto v = *j.get_ptr<const nlohmann::json::number_unsigned_t*>();
    if (std::in_range<T>(v)) return static_cast<T>(v);
  } else if (j.is_number_integer()) {
    auto v = *j.get_ptr<const nlohmann::json::number_integer_t*>();
    if (std::in_range<T>(v)) return static_cast<T>(v);
  }
  return std::nullopt;
}

namespace json_detail {

static_assert(NLOHMANN_JSON_VERSION_MAJOR > 3 ||
                  (NLOHMANN_JSON_VERSION_MAJOR == 3 && NLOHMANN_JSON_VERSION_MINOR >= 11),
              "nlohmann_json 3.11 or later (Debian 12 has 3.11.2): create() takes the context by pointer");

template <class E>
[[noreturn]] void throw_json(int id, const std::string& what, const nlohmann::json& j) {
  throw E::create(id, what, &j);
}

}  // namespace json_detail

// j's value as a T, the value called `name` in the message. A JSON value that is not an
// integer throws nlohmann::json::type_error (302); an integer that T cannot hold,
// nlohmann::json::out_of_range (406). Both are nlohmann::json::exception, which every
// reader already turns into its own error naming the file.
template <JsonInteger T>
T json_integer(const nlohmann::json& j, std::string_view name) {
  if (std::optional<T> v = try_json_integer<T>(j)) return *v;
  if (!j.is_number_integer()) {
    bool show = j.is_number() || j.is_boolean() || j.is_null();  // short; a string or object may not be
    json_detail::throw_json<nlohmann::json::type_error>(
        302, "'" + std::string(name) + "' must be an integer, got " + (show ? j.dump() : std::string("a JSON ") + j.type_name()),
        j);
  }
  json_detail::throw_json<nlohmann::json::out_of_range>(
      406, "'" + std::string(name) + "' is " + j.dump() + ", outside " + std::to_string(+std::numeric_limits<T>::min()) +
               " to " + std::to_string(+std::numeric_limits<T>::max()),
      j);
}

// A JSON array of integers as a vector of T; the element i is called name[i].
template <JsonInteger T>
std::vector<T> json_integers(const nlohmann::json& j, std::string_view name) {
  if (!j.is_array())
    json_detail::throw_json<nlohmann::json::type_error>(
        302, "'" + std::string(name) + "' must be an array of integers, got a JSON " + std::string(j.type_name()), j);
  std::vector<T> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i)
    out.push_back(json_integer<T>(j[i], std::string(name) + "[" + std::to_string(i) + "]"));
  return out;
}

}  // namespace kiln
