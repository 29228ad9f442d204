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

/// Points a stage of `ops` over a domain of `rank` axes needs before its outer loop is split
/// across threads: kParallelMinPoints, a quarter of it when a load walks the innermost axis a
/// cache line or more apart (each point then waits on its own line: a column of YOLO's (n, 85)
/// rows, 201,600 points of it, ran 2x faster on two threads; 25,200 of them, one image, ran in
/// 45 us on one thread against 60-90 us on two when the worker had gone to sleep between calls,
/// as it has after any other work: waking it costs more than the column).
int64_t parallel_min_points(const Graph& g, const std::vector<Op>& ops, int rank);

/// Work (warm_parallel_min_points' units) a stage's points add up to from which its outer loop is split
/// across the pool's warm workers (thread_pool.h's parallel_for_warm: the ones still polling
/// after the last parallel call, or woken within a millisecond of it), short of
/// parallel_min_points. A trip of Soft-NMS's Gaussian decay (a gather of each of 5 columns, a
/// scatter, a division in IoU, exp) over 3,000 rows took 10.5 us on one thread, 6 us on two.
constexpr int64_t kWarmParallelWork = int64_t{1} << 17;

/// Points from which a stage of `ops` runs on the warm workers: kWarmParallelWork over the
/// work of a point (in cheap vector ops: a gather or scatter 8, its lanes moved one at a time; a
/// libm function 16; a division 4; any other op 1), at most parallel_min_points.
int64_t warm_parallel_min_points(const Graph& g, const std::vector<Op>& ops, int rank);

/// Points from which a compaction counting its mask runs in parallel where every point loads a
/// cache line of its own (emit_compress.cc's chunks, on the warm workers: thread_pool.h). One
/// image of YOLOv5's prologue (25,200 rows of 85 floats) took 55-65 us against 80-85 us serially
/// in a loop of calls, and as long as serially after other work.
constexpr int64_t kParallelCompactionPoints = int64_t{1} << 14;

/// The automatic schedule of a stage: innermost loop vectorized at the host's SIMD width when
/// every access walks it contiguously, outer loop parallel when the stage is large.
std::vector<Primitive> default_schedule(const Graph& g, const Stage& s);

}  // namespace strider
