#pragma once
// Integer helpers every layer uses: division that rounds toward negative infinity (the
// loop IR's Div and Mod, index arithmetic), rounding up to a block, and the divisors
// that tilings choose from (all of them, or the largest within a budget).
#include <concepts>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace kiln {

// a / b rounded toward negative infinity; b != 0. floordiv(INT64_MIN, -1) wraps to
// INT64_MIN (the two's-complement result) instead of overflowing.
constexpr int64_t floordiv(int64_t a, int64_t b) {
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// a - floordiv(a, b) * b: zero or of b's sign; b != 0.
constexpr int64_t floormod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t m = a % b;
  return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}

// a / b rounded up, for a >= 0 and b > 0: how many blocks of b hold a. Computed in the
// common type of the two (a size and an int block give the size's type).
template <std::integral A, std::integral B>
constexpr std::common_type_t<A, B> ceil_div(A a, B b) {
  using T = std::common_type_t<A, B>;
  return (static_cast<T>(a) + static_cast<T>(b) - 1) / static_cast<T>(b);
}

// a rounded up to a multiple of b, for a >= 0 and b > 0.
template <std::integral A, std::integral B>
constexpr std::common_type_t<A, B> round_up(A a, B b) {
  return ceil_div(a, b) * static_cast<std::common_type_t<A, B>>(b);
}

// The divisors of n > 0, ascending; none for n < 1.
template <std::integral T>
std::vector<T> divisors(T n) {
  std::vector<T> low, high;
  for (T i = 1; i <= n / i; ++i) {
    if (n % i != 0) continue;
    low.push_back(i);
    if (i != n / i) high.push_back(n / i);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// The largest divisor of n that is at most `most` (1 when none above 1 is), for n >= 1:
// the tile or unroll factor that fits a budget and divides the extent.
template <std::integral T>
constexpr T largest_divisor_at_most(T n, T most) {
  for (T f = n < most ? n : most; f > 1; --f)
    if (n % f == 0) return f;
  return 1;
}

}  // namespace kiln
