#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <random>
#include <vector>

#include "analysis/overlap.h"

namespace strider {
namespace {

View v(Shape shape, Shape strides, int64_t offset) { return View{0, shape, strides, offset}; }

TEST(Overlap, InterleavedColumnsNeverOverlap) {
  // x[:, 0::2] and x[:, 1::2] of a (4, 6) array: ranges intersect, elements do not
  auto r = footprints_overlap(v({4, 3}, {6, 2}, 0), v({4, 3}, {6, 2}, 1));
  EXPECT_FALSE(r.overlap);
  EXPECT_EQ(r.method, OverlapMethod::Exact);
}

TEST(Overlap, ShiftedSlicesOverlap) {
  // x[1:] and x[:-1]
  EXPECT_TRUE(footprints_overlap(v({9}, {1}, 1), v({9}, {1}, 0)).overlap);
}

TEST(Overlap, DisjointRangesUseTheCheapTest) {
  auto r = footprints_overlap(v({5}, {1}, 0), v({5}, {1}, 5));
  EXPECT_FALSE(r.overlap);
  EXPECT_EQ(r.method, OverlapMethod::Bounds);
}

TEST(Overlap, ReversedAndBroadcastViews) {
  // x[::-1] (offset 9, stride -1) against x[0:1] broadcast to 10 elements
  EXPECT_TRUE(footprints_overlap(v({10}, {-1}, 9), v({10}, {0}, 0)).overlap);
  // reversed even elements against odd elements
  EXPECT_FALSE(footprints_overlap(v({5}, {-2}, 8), v({5}, {2}, 1)).overlap);
}

TEST(Overlap, BoxColumnsOfFour) {
  // boxes[:, 0::4] vs boxes[:, 2::4] of (100, 4), and vs the (x1, y1) pair boxes[:, 0:2]
  View x1 = v({100, 1}, {4, 4}, 0);
  EXPECT_FALSE(footprints_overlap(x1, v({100, 1}, {4, 4}, 2)).overlap);
  EXPECT_TRUE(footprints_overlap(x1, v({100, 2}, {4, 1}, 0)).overlap);
}

TEST(Overlap, DifferentStoragesOrEmptyViewsNeverOverlap) {
  View a = v({4}, {1}, 0);
  View b = a;
  b.storage = 1;
  EXPECT_FALSE(footprints_overlap(a, b).overlap);
  EXPECT_FALSE(footprints_overlap(a, v({0}, {1}, 0)).overlap);
}

// Every element a view touches, sorted, by walking its index box.
std::vector<int64_t> elements(const View& x) {
  std::vector<int64_t> out;
  std::vector<int64_t> i(x.ndim(), 0);
  for (bool more = x.numel() > 0; more;) {
    int64_t off = x.offset;
    for (int k = 0; k < x.ndim(); ++k) off += i[k] * x.strides[k];
    out.push_back(off);
    int k = x.ndim() - 1;
    while (k >= 0 && ++i[k] == x.shape[k]) i[k--] = 0;
    more = k >= 0;
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Overlap, ListedAndIslAnswersAgreeWithTheElements) {
  // small views are listed (a few thousand boxes' columns took isl 1-2 ms a question), large ones
  // go to isl: both against the elements themselves, over random strides (negative, zero, of
  // extent-1 axes), offsets and shapes
  std::mt19937 rng(3);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int agreed = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const bool large = trial % 10 == 0;  // past the listing's 2^18 elements
    auto random_view = [&] {
      const int nd = large ? 1 : pick(1, 3);
      Shape shape, strides;
      int64_t offset = pick(0, 40);
      for (int k = 0; k < nd; ++k) {
        shape.push_back(large ? pick(150000, 200000) : pick(1, 12));
        strides.push_back(pick(-3, 7));
        if (strides.back() < 0) offset += -strides.back() * (shape.back() - 1);
      }
      return v(shape, strides, offset);
    };
    const View a = random_view(), b = random_view();
    const std::vector<int64_t> ea = elements(a), eb = elements(b);
    std::vector<int64_t> both;
    std::set_intersection(ea.begin(), ea.end(), eb.begin(), eb.end(), std::back_inserter(both));
    const bool want = !both.empty();
    ASSERT_EQ(footprints_overlap(a, b).overlap, want) << "trial " << trial;
    ++agreed;
  }
  EXPECT_EQ(agreed, 400);
}

TEST(FusionOrder, ShiftedStoreAfterItsReadIsReordered) {
  // read x[:-1] at point i, then store x[1:] at point j: fused, point j = i - 1 overwrites x[i] first
  EXPECT_TRUE(reordered_when_fused(v({9}, {1}, 0), v({9}, {1}, 1)));
  // the other way round (store x[1:], later read x[:-1]) the store of point i - 1 lands before the read of point i
  EXPECT_FALSE(reordered_when_fused(v({9}, {1}, 1), v({9}, {1}, 0)));
}

TEST(FusionOrder, SameDenseViewAndDisjointColumnsAreSafe) {
  EXPECT_FALSE(reordered_when_fused(v({4, 3}, {3, 1}, 0), v({4, 3}, {3, 1}, 0)));
  EXPECT_FALSE(reordered_when_fused(v({4, 3}, {6, 2}, 0), v({4, 3}, {6, 2}, 1)));
}

TEST(FusionOrder, TransposedAndReversedAccessesAreReordered) {
  // a += a.T point by point would read elements already updated
  EXPECT_TRUE(reordered_when_fused(v({3, 3}, {1, 3}, 0), v({3, 3}, {3, 1}, 0)));
  EXPECT_TRUE(reordered_when_fused(v({5}, {-1}, 4), v({5}, {1}, 0)));
  // broadcast reads of x[0], then a store to all of x: point 0's store lands before points 1..4 read
  EXPECT_TRUE(reordered_when_fused(v({5}, {0}, 0), v({5}, {1}, 0)));
  // a store to all of x, then broadcast reads of x[0]: point 0 stores x[0] before any point reads it
  EXPECT_FALSE(reordered_when_fused(v({5}, {1}, 0), v({5}, {0}, 0)));
}

TEST(PointsAtOnce, ShiftsAreSharedBetweenPointsInEitherDirection) {
  // store x[1:] then read x[:-1] keeps its order in one loop nest, but not across threads
  EXPECT_FALSE(reordered_when_fused(v({9}, {1}, 1), v({9}, {1}, 0)));
  EXPECT_TRUE(shared_between_points(v({9}, {1}, 1), v({9}, {1}, 0)));
  EXPECT_TRUE(shared_between_points(v({9}, {1}, 0), v({9}, {1}, 1)));
  // a[::-1] against a: the middle element of an odd length meets itself only
  EXPECT_TRUE(shared_between_points(v({5}, {-1}, 4), v({5}, {1}, 0)));
  EXPECT_FALSE(shared_between_points(v({1}, {-1}, 0), v({1}, {1}, 0)));
  // a broadcast read of x[0] against a store to x: the store of point 0 meets the reads of 1..4
  EXPECT_TRUE(shared_between_points(v({5}, {0}, 0), v({5}, {1}, 0)));
}

TEST(PointsAtOnce, SameInjectiveViewsAndDisjointColumnsAreIndependent) {
  EXPECT_FALSE(shared_between_points(v({4, 3}, {3, 1}, 0), v({4, 3}, {3, 1}, 0)));
  EXPECT_FALSE(shared_between_points(v({4, 3}, {6, 2}, 0), v({4, 3}, {6, 2}, 1)));
  // x.T against x: the diagonal is the same point, every other element is not
  EXPECT_TRUE(shared_between_points(v({3, 3}, {1, 3}, 0), v({3, 3}, {3, 1}, 0)));
  EXPECT_FALSE(shared_between_points(v({}, {}, 0), v({}, {}, 0)));
}

}  // namespace
}  // namespace strider
