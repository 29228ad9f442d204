#pragma once

#include <cstdint>
#include <vector>

#include "schedule/loop_nest.h"

namespace strider {

/// Points a stage needs before its outer loop is split across threads. Measured on the 2-core
/// development machine with `out[...] = np.sqrt(a * b + 1.0)` (float32, serial against
/// parallel schedules): parallel lost below 2^17 points, broke even near 2^18 and won 1.3x at
/// 2^20 while the other core was partly busy.
constexpr int64_t kParallelMinPoints = int64_t{1} << 18;

/// The automatic schedule of a stage: innermost loop vectorized at the host's SIMD width when
/// every access walks it contiguously, outer loop parallel when the stage is large.
std::vector<Primitive> default_schedule(const Graph& g, const Stage& s);

}  // namespace strider
