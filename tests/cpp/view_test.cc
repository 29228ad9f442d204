#include <gtest/gtest.h>

#include "ir/view.h"
#include "view_oracle.h"

namespace strider {
namespace {

View dense(Shape shape) { return View{0, shape, contiguous_strides(shape), 0}; }

using oracle::offsets;

TEST(View, SliceWithStepAndNegativeStep) {
  View x = dense({4, 6});
  // x[:, 1::2]
  View odd = x.subscript({{IndexItem::Slice, 0, 1, 4}, {IndexItem::Slice, 1, 2, 3}});
  EXPECT_EQ(odd.shape, (Shape{4, 3}));
  EXPECT_EQ(odd.strides, (Shape{6, 2}));
  EXPECT_EQ(odd.offset, 1);
  // x[::-1, 0]
  View rev = x.subscript({{IndexItem::Slice, 3, -1, 4}, {IndexItem::Int, 0, 0, 0}});
  EXPECT_EQ(offsets(rev), (std::vector<int64_t>{18, 12, 6, 0}));
  EXPECT_EQ(rev.min_offset(), 0);
  EXPECT_EQ(rev.max_offset(), 18);
}

TEST(View, NewAxisAndBroadcast) {
  View x = dense({3});
  View col = x.subscript({{IndexItem::Slice, 0, 1, 3}, {IndexItem::NewAxis, 0, 0, 0}});
  EXPECT_EQ(col.shape, (Shape{3, 1}));
  View b = col.broadcast_to({2, 3, 4});
  EXPECT_EQ(b.strides, (Shape{0, 1, 0}));
  EXPECT_THROW(x.broadcast_to({4}), std::invalid_argument);
}

TEST(View, TransposeKeepsFootprint) {
  View x = dense({2, 3});
  View t = x.transpose({1, 0});
  EXPECT_EQ(t.shape, (Shape{3, 2}));
  EXPECT_EQ(offsets(t), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_FALSE(t.is_c_contiguous());
}

TEST(View, ReshapeAsViewWhenNumPyWould) {
  View x = dense({4, 6});
  auto r = x.reshape({2, 2, 6});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(offsets(*r), offsets(x));
  // x[:, ::2] reshaped to (4, 3, 1): strided but regroupable
  View s = x.subscript({{IndexItem::Slice, 0, 1, 4}, {IndexItem::Slice, 0, 2, 3}});
  auto r2 = s.reshape({4, 3, 1});
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(offsets(*r2), offsets(s));
  // the transpose cannot be flattened without a copy
  EXPECT_FALSE(x.transpose({1, 0}).reshape({24}).has_value());
  // x[:, ::2] of a 6-wide row is uniformly strided, so it flattens; x[:, :3] does not
  EXPECT_TRUE(s.reshape({12}).has_value());
  View head = x.subscript({{IndexItem::Slice, 0, 1, 4}, {IndexItem::Slice, 0, 1, 3}});
  EXPECT_FALSE(head.reshape({12}).has_value());
}

}  // namespace
}  // namespace strider

namespace strider {
namespace {

TEST(View, RunTimeExtentsFollowTheirDimension) {
  View x{0, {8, 4}, {4, 1}, 0, {5, -1}};
  View t = x.transpose({1, 0});
  EXPECT_EQ(t.extents, (std::vector<int>{-1, 5}));
  // the whole dynamic dimension and an int on the static one keep the extent
  View col = x.subscript({{IndexItem::Slice, 0, 1, 8}, {IndexItem::Int, 2, 0, 0}});
  EXPECT_EQ(col.extents, (std::vector<int>{5}));
  EXPECT_EQ(col.offset, 2);
  EXPECT_THROW(x.subscript({{IndexItem::Slice, 1, 1, 7}}), std::invalid_argument);
  EXPECT_THROW(x.reshape({32}), std::invalid_argument);
}

}  // namespace
}  // namespace strider
