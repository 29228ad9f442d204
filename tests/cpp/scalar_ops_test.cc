// ops/scalar_ops.inc's float16 conversions, written out in integer arithmetic for the reference
// executor and CUDA, checked against the host compiler's _Float16 (IEEE round to nearest even,
// F16C where the CPU has it): every half, the rounding boundaries between them, random floats
// and doubles.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "ops/scalar_ops.h"

namespace strider {
namespace {

uint16_t bits_of(_Float16 h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

_Float16 half_of(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return h;
}

// the same half, or NaN for NaN (payloads may differ)
void expect_same_half(uint16_t got, uint16_t want, double from) {
  const bool got_nan = (got & 0x7fffu) > 0x7c00u, want_nan = (want & 0x7fffu) > 0x7c00u;
  if (got_nan || want_nan) {
    EXPECT_TRUE(got_nan && want_nan) << from;
    return;
  }
  EXPECT_EQ(got, want) << std::hexfloat << from;
}

TEST(ScalarOps, EveryHalfWidensExactlyAndRoundsBackToItself) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = st::half_to_float(static_cast<unsigned short>(b));
    const float want = static_cast<float>(half_of(static_cast<uint16_t>(b)));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f));
      continue;
    }
    ASSERT_EQ(std::memcmp(&f, &want, 4), 0) << b;
    EXPECT_EQ(st::float_to_half(f), b);
    EXPECT_EQ(st::double_to_half(f), b);
  }
}

TEST(ScalarOps, FloatsRoundToNearestEvenHalf) {
  // between consecutive halves: the midpoint (a tie) and the floats and doubles just around it
  for (uint32_t b = 0; b < 0x7c00u; ++b) {
    const double lo = st::half_to_float(static_cast<unsigned short>(b));
    const double hi = b + 1 == 0x7c00u ? 65520.0 : st::half_to_float(static_cast<unsigned short>(b + 1));
    const double mid = (lo + hi) / 2;
    for (double d : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e9), -mid}) {
      const float f = static_cast<float>(d);
      for (float g : {f, std::nextafterf(f, 0.0f), std::nextafterf(f, 1e9f)}) {
        expect_same_half(st::float_to_half(g), bits_of(static_cast<_Float16>(g)), g);
        expect_same_half(st::float_to_half(-g), bits_of(static_cast<_Float16>(-g)), -g);
      }
      expect_same_half(st::double_to_half(d), bits_of(static_cast<_Float16>(d)), d);
    }
  }
  std::mt19937_64 rng(7);
  for (int k = 0; k < 1 << 21; ++k) {
    const uint64_t r = rng();
    float f;
    const uint32_t fb = static_cast<uint32_t>(r);
    std::memcpy(&f, &fb, 4);
    expect_same_half(st::float_to_half(f), bits_of(static_cast<_Float16>(f)), f);
    double d;
    std::memcpy(&d, &r, 8);
    expect_same_half(st::double_to_half(d), bits_of(static_cast<_Float16>(d)), d);
    // doubles of half's range, where rounding happens
    const double near = std::ldexp(static_cast<double>(r >> 11) / 9007199254740992.0, static_cast<int>(r % 45) - 28);
    expect_same_half(st::double_to_half(near), bits_of(static_cast<_Float16>(near)), near);
    expect_same_half(st::float_to_half(static_cast<float>(near)), bits_of(static_cast<_Float16>(static_cast<float>(near))), near);
  }
}

}  // namespace
}  // namespace strider
