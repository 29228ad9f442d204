#pragma once

#include <vector>

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

/// A cut of a loop domain (the tail of a split): the points with
/// i[outer] * factor + i[inner] >= extent are not in it.
struct TailBound {
  int outer = 0, inner = 0;
  int64_t factor = 1, extent = 0;
};

/// For two accesses over one loop domain (both views have the domain's shape), where `earlier`
/// happens before `later` in program order: whether running them fused, point by point in
/// lexicographic order, could reorder them, i.e. whether some point i > j has
/// earlier(i) == later(j). Exact (isl) after cheap tests; `tails` cut the domain.
bool reordered_when_fused(const View& earlier, const View& later, const std::vector<TailBound>& tails = {});

/// For two accesses over one loop domain: whether points with different outermost indices
/// touch a common element (so the outer loop's iterations are not independent).
bool shared_across_outer(const View& a, const View& b, const std::vector<TailBound>& tails = {});

/// For two accesses over one loop domain: whether two different points touch a common element
/// (so the points cannot all run at once).
bool shared_between_points(const View& a, const View& b, const std::vector<TailBound>& tails = {});

/// For accesses over two loop domains whose first `prefix` loops are the same (compute_at):
/// whether points that differ on those loops touch a common element.
bool shared_across_prefix(const View& a, const View& b, int prefix, const std::vector<TailBound>& tails = {});

}  // namespace strider
