#pragma once

#include "ir/view.h"

namespace strider {

/// How an overlap question was settled, for the logs and the tests.
enum class OverlapMethod { Disjoint, Bounds, Exact };

struct OverlapResult {
  bool overlap = false;
  OverlapMethod method = OverlapMethod::Bounds;
};

/// Whether two views of one storage share an element: a bounding-range test first, then an
/// exact integer test (isl) on {i, j : off_a + sum i_k a_k = off_b + sum j_k b_k} over the index
/// boxes when the ranges intersect. Views of different storages never overlap.
OverlapResult footprints_overlap(const View& a, const View& b);

}  // namespace strider
