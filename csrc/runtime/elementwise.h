#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "ir/graph.h"

// Scalar semantics of every elementwise op, matching NumPy's loops (npy_math and the ufunc
// inner loops): integer ops wrap, division by zero gives NumPy's values, NaNs propagate as NumPy
// propagates them.
namespace strider::detail {

template <typename T>
using Unsigned = std::make_unsigned_t<std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>>;

template <typename U, typename T>
U convert(T x) {
  if constexpr (std::is_same_v<U, bool>) {
    return x != T(0);
  } else if constexpr (std::is_integral_v<U> && std::is_floating_point_v<T>) {
    // out-of-range and NaN conversions give what x86's cvtt* gives, as NumPy does on x86
    if (!(x >= T(-0x1p63) && x < T(0x1p63))) return std::numeric_limits<U>::min();
    auto wide = static_cast<int64_t>(x);
    if constexpr (sizeof(U) < sizeof(int64_t))
      if (wide < std::numeric_limits<U>::min() || wide > std::numeric_limits<U>::max())
        return std::numeric_limits<U>::min();
    return static_cast<U>(wide);
  } else {
    return static_cast<U>(x);
  }
}

template <typename T>
T wrap_add(T a, T b) { return static_cast<T>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b)); }
template <typename T>
T wrap_sub(T a, T b) { return static_cast<T>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b)); }
template <typename T>
T wrap_mul(T a, T b) { return static_cast<T>(static_cast<Unsigned<T>>(a) * static_cast<Unsigned<T>>(b)); }

// npy_divmod: floor division and the matching remainder for floats.
template <typename T>
T float_floor_divide(T a, T b, T* mod_out) {
  T mod = std::fmod(a, b);
  if (b == 0) {
    *mod_out = mod;
    return a / b;
  }
  T div = (a - mod) / b;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= T(1);
    }
  } else {
    mod = std::copysign(T(0), b);
  }
  T floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > T(0.5)) floordiv += T(1);
  } else {
    floordiv = std::copysign(T(0), a / b);
  }
  *mod_out = mod;
  return floordiv;
}

template <typename T>
T unary_same(OpCode op, T x) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case OpCode::invert:
      case OpCode::logical_not: return !x;
      default: return x;  // positive, absolute, floor, ceil, ... are the identity on bool
    }
  } else if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case OpCode::negative: return wrap_sub(T(0), x);
      case OpCode::absolute: return x < 0 ? wrap_sub(T(0), x) : x;
      case OpCode::sign: return static_cast<T>((x > 0) - (x < 0));
      case OpCode::square: return wrap_mul(x, x);
      case OpCode::reciprocal: return x == 0 ? T(0) : static_cast<T>(1 / x);
      case OpCode::invert: return static_cast<T>(~x);
      default: return x;  // positive, floor, ceil, trunc, rint on integers
    }
  } else {
    switch (op) {
      case OpCode::negative: return -x;
      case OpCode::positive: return x;
      case OpCode::absolute: return std::fabs(x);
      case OpCode::sign: return std::isnan(x) ? x : static_cast<T>((x > 0) - (x < 0));
      case OpCode::square: return x * x;
      case OpCode::reciprocal: return T(1) / x;
      case OpCode::sqrt: return std::sqrt(x);
      case OpCode::cbrt: return std::cbrt(x);
      case OpCode::exp: return std::exp(x);
      case OpCode::exp2: return std::exp2(x);
      case OpCode::expm1: return std::expm1(x);
      case OpCode::log: return std::log(x);
      case OpCode::log2: return std::log2(x);
      case OpCode::log10: return std::log10(x);
      case OpCode::log1p: return std::log1p(x);
      case OpCode::sin: return std::sin(x);
      case OpCode::cos: return std::cos(x);
      case OpCode::tan: return std::tan(x);
      case OpCode::arcsin: return std::asin(x);
      case OpCode::arccos: return std::acos(x);
      case OpCode::arctan: return std::atan(x);
      case OpCode::sinh: return std::sinh(x);
      case OpCode::cosh: return std::cosh(x);
      case OpCode::tanh: return std::tanh(x);
      case OpCode::arcsinh: return std::asinh(x);
      case OpCode::arccosh: return std::acosh(x);
      case OpCode::arctanh: return std::atanh(x);
      case OpCode::floor: return std::floor(x);
      case OpCode::ceil: return std::ceil(x);
      case OpCode::trunc: return std::trunc(x);
      case OpCode::rint: return std::nearbyint(x);
      default: throw std::logic_error(std::string(op_name(op)) + " has no float loop");
    }
  }
}

template <typename T>
bool unary_predicate(OpCode op, T x) {
  switch (op) {
    case OpCode::logical_not: return !(x != T(0));
    case OpCode::isfinite: if constexpr (std::is_floating_point_v<T>) return std::isfinite(x); else return true;
    case OpCode::isnan: if constexpr (std::is_floating_point_v<T>) return std::isnan(x); else return false;
    case OpCode::isinf: if constexpr (std::is_floating_point_v<T>) return std::isinf(x); else return false;
    case OpCode::signbit: if constexpr (std::is_floating_point_v<T>) return std::signbit(x); else return x < T(0);
    default: throw std::logic_error(std::string(op_name(op)) + " is not a predicate");
  }
}

inline bool is_predicate(OpCode op) {
  return op == OpCode::logical_not || op == OpCode::isfinite || op == OpCode::isnan ||
         op == OpCode::isinf || op == OpCode::signbit;
}

inline bool is_comparison(OpCode op) {
  switch (op) {
    case OpCode::equal: case OpCode::not_equal: case OpCode::less: case OpCode::less_equal:
    case OpCode::greater: case OpCode::greater_equal: case OpCode::logical_and:
    case OpCode::logical_or: case OpCode::logical_xor: return true;
    default: return false;
  }
}

template <typename T>
bool compare(OpCode op, T a, T b) {
  switch (op) {
    case OpCode::equal: return a == b;
    case OpCode::not_equal: return a != b;
    case OpCode::less: return a < b;
    case OpCode::less_equal: return a <= b;
    case OpCode::greater: return a > b;
    case OpCode::greater_equal: return a >= b;
    case OpCode::logical_and: return (a != T(0)) && (b != T(0));
    case OpCode::logical_or: return (a != T(0)) || (b != T(0));
    default: return (a != T(0)) != (b != T(0));  // logical_xor
  }
}

template <typename T>
T int_power(T base, T exp) {
  if (exp < 0) throw std::domain_error("Integers to negative integer powers are not allowed.");
  T result = 1;
  while (exp) {
    if (exp & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    exp = static_cast<T>(exp >> 1);
  }
  return result;
}

template <typename T>
T binary_same(OpCode op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case OpCode::add: case OpCode::maximum: case OpCode::fmax: case OpCode::bitwise_or: return a || b;
      case OpCode::multiply: case OpCode::minimum: case OpCode::fmin: case OpCode::bitwise_and: return a && b;
      case OpCode::bitwise_xor: return a != b;
      default: throw std::logic_error(std::string(op_name(op)) + " has no bool loop");
    }
  } else if constexpr (std::is_integral_v<T>) {
    constexpr int kBits = 8 * sizeof(T);
    switch (op) {
      case OpCode::add: return wrap_add(a, b);
      case OpCode::subtract: return wrap_sub(a, b);
      case OpCode::multiply: return wrap_mul(a, b);
      case OpCode::floor_divide: {
        if (b == 0) return 0;
        if (b == -1) return wrap_sub(T(0), a);
        T q = a / b;
        return (a % b != 0 && ((a < 0) != (b < 0))) ? T(q - 1) : q;
      }
      case OpCode::remainder: {
        if (b == 0 || b == -1) return 0;
        T r = a % b;
        return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
      }
      case OpCode::fmod: return (b == 0 || b == -1) ? T(0) : T(a % b);
      case OpCode::power: return int_power(a, b);
      case OpCode::maximum: case OpCode::fmax: return a >= b ? a : b;
      case OpCode::minimum: case OpCode::fmin: return a <= b ? a : b;
      case OpCode::bitwise_and: return a & b;
      case OpCode::bitwise_or: return a | b;
      case OpCode::bitwise_xor: return a ^ b;
      case OpCode::left_shift:
        return static_cast<Unsigned<T>>(b) < kBits ? static_cast<T>(static_cast<Unsigned<T>>(a) << b) : T(0);
      case OpCode::right_shift:
        return static_cast<Unsigned<T>>(b) < kBits ? static_cast<T>(a >> b) : T(a < 0 ? -1 : 0);
      default: throw std::logic_error(std::string(op_name(op)) + " has no integer loop");
    }
  } else {
    T mod;
    switch (op) {
      case OpCode::add: return a + b;
      case OpCode::subtract: return a - b;
      case OpCode::multiply: return a * b;
      case OpCode::divide: return a / b;
      case OpCode::floor_divide: return float_floor_divide(a, b, &mod);
      case OpCode::remainder:
        if (b == 0) return std::fmod(a, b);
        float_floor_divide(a, b, &mod);
        return mod;
      case OpCode::fmod: return std::fmod(a, b);
      case OpCode::power: return b == T(0.5) ? std::sqrt(a) : std::pow(a, b);  // NumPy's loop takes sqrt there
      case OpCode::maximum: return (a >= b || std::isnan(a)) ? a : b;
      case OpCode::minimum: return (a <= b || std::isnan(a)) ? a : b;
      case OpCode::fmax: return (a >= b || std::isnan(b)) ? a : b;
      case OpCode::fmin: return (a <= b || std::isnan(b)) ? a : b;
      case OpCode::arctan2: return std::atan2(a, b);
      case OpCode::hypot: return std::hypot(a, b);
      case OpCode::copysign: return std::copysign(a, b);
      case OpCode::logaddexp: {
        if (a == b) return a + static_cast<T>(0.693147180559945309417232121458176568);
        T d = a - b;
        if (d > 0) return a + std::log1p(std::exp(-d));
        if (d <= 0) return b + std::log1p(std::exp(d));
        return d;
      }
      default: throw std::logic_error(std::string(op_name(op)) + " has no float loop");
    }
  }
}

}  // namespace strider::detail
