#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "driver/driver.h"
#include "runtime/executor.h"

namespace strider {
namespace {

TEST(Executor, OverlappingAssignmentReadsBeforeWriting) {
  // x[1:] = x[:-1]: NumPy's result is a shift, not a smear
  Program p = lower(parse_graph(R"(graph @f {
    %s0 = storage f32[5] arg 0
    op0 = copy(%s0[4]{1}+0) -> %s0[4]{1}+1
    return
  })"));
  float x[5] = {1, 2, 3, 4, 5};
  execute(p, {x});
  EXPECT_EQ(x[0], 1);
  EXPECT_EQ(x[1], 1);
  EXPECT_EQ(x[4], 4);
}

TEST(Executor, IntegerSemanticsMatchNumPy) {
  Program p = lower(parse_graph(R"(graph @f {
    %s0 = storage i32[4] arg 0
    %s1 = storage i32[4] arg 1
    %s2 = storage i32[4] arg 2
    %s3 = storage i32[4] arg 3
    op0 = floor_divide(%s0[4]{1}+0, %s1[4]{1}+0) -> %s2[4]{1}+0
    op1 = remainder(%s0[4]{1}+0, %s1[4]{1}+0) -> %s3[4]{1}+0
    return
  })"));
  int32_t a[4] = {7, -7, 5, std::numeric_limits<int32_t>::min()};
  int32_t b[4] = {2, 2, 0, -1};
  int32_t q[4], r[4];
  execute(p, {a, b, q, r});
  EXPECT_EQ(q[0], 3);
  EXPECT_EQ(q[1], -4);
  EXPECT_EQ(q[2], 0);
  EXPECT_EQ(q[3], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(r[1], 1);
  EXPECT_EQ(r[2], 0);
  EXPECT_EQ(r[3], 0);
}

TEST(Executor, ReductionsPropagateNaNAndKeepFirstIndex) {
  Program p = lower(parse_graph(R"(graph @f {
    %s0 = storage f64[6] arg 0
    %s1 = storage i64[2] arg 1
    %s2 = storage f64[2] arg 2
    op0 = argmax(%s0[2,3]{3,1}+0) axes=[1] -> %s1[2]{1}+0
    op1 = max(%s0[2,3]{3,1}+0) axes=[1] -> %s2[2]{1}+0
    return
  })"));
  double x[6] = {1, 5, 5, 2, NAN, 9};
  int64_t arg[2];
  double mx[2];
  execute(p, {x, arg, mx});
  EXPECT_EQ(arg[0], 1);
  EXPECT_EQ(arg[1], 1);
  EXPECT_EQ(mx[0], 5);
  EXPECT_TRUE(std::isnan(mx[1]));
}

TEST(Executor, BothExtremeOrdersAgree) {
  const char* text = R"(graph @f {
    %s0 = storage f64[8] arg 0
    %s1 = storage f64[4] temp
    %s2 = storage f64[4] temp
    op0 = exp(%s0[4]{2}+0) -> %s1[4]{1}+0
    op1 = negative(%s0[4]{2}+1) -> %s2[4]{1}+0
    op2 = copy(%s1[4]{1}+0) -> %s0[4]{2}+1
    op3 = copy(%s2[4]{1}+0) -> %s0[4]{2}+0
    return
  })";
  Program p = lower(parse_graph(text));
  double a[8] = {0, 1, 2, 3, 4, 5, 6, 7}, b[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  execute(p, {a, nullptr, nullptr}, false);
  execute(p, {b, nullptr, nullptr}, true);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(a[i], b[i]);
  EXPECT_EQ(a[0], -1);
  EXPECT_EQ(a[1], 1);
}

}  // namespace
}  // namespace strider

namespace strider {
namespace {

TEST(Executor, RunTimeExtentsBoundTheLoops) {
  // %s1 holds how many of the 8 elements are live (a mask count, say): only those are touched
  Program p = lower(parse_graph(R"(graph @f {
    %s0 = storage f32[8] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage f32[8] arg 2
    op0 = negative(%s0[?%s1<=8]{1}+0) -> %s2[?%s1<=8]{1}+0
    return
  })"));
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t n = 3;
  execute(p, {x, &n, y});
  EXPECT_EQ(y[2], -3);
  EXPECT_EQ(y[3], 0);
  n = 100;  // clamped to the static bound
  execute(p, {x, &n, y});
  EXPECT_EQ(y[7], -8);
}

}  // namespace
}  // namespace strider
