#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "runtime/data_dependent.h"
#include "runtime/executor.h"

namespace strider {
namespace {

// NumPy's stable order of float keys: -0.0 equal to 0.0, NaNs equal to each other and last.
std::vector<int64_t> reference_order(const std::vector<float>& keys) {
  std::vector<int64_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  auto less = [&](int64_t a, int64_t b) {
    const float x = keys[a], y = keys[b];
    if (std::isnan(x)) return false;
    return std::isnan(y) || x < y;
  };
  std::stable_sort(order.begin(), order.end(), less);
  return order;
}

std::string sort_graph(int64_t n, const char* op, const char* out) {
  const std::string s = std::to_string(n);
  return "graph @f {\n  %s0 = storage f32[" + s + "] arg 0\n  %s1 = storage " + out + "[" + s + "] arg 1\n  op0 = " +
         op + "(%s0[" + s + "]{1}+0) -> %s1[" + s + "]{1}+0\n  return\n}";
}

TEST(DataDependent, ArgsortIsStableWithNaNsLastOnBothPaths) {
  // below 256 keys a merge sort, to 2048 a sort of (key, position) words, above a radix sort of
  // such words: all must give NumPy's stable order
  for (int64_t n : {7, 255, 256, 2048, 2049, 5000, 70000}) {
    std::mt19937 rng(static_cast<unsigned>(n));
    std::uniform_int_distribution<int> pick(0, 9);
    std::vector<float> keys(n);
    for (float& k : keys) {
      const int r = pick(rng);
      k = r == 0 ? NAN : r == 1 ? -0.0f : r == 2 ? 0.0f : r == 3 ? -INFINITY : r == 4 ? INFINITY : static_cast<float>(pick(rng) - 4);
    }
    keys[0] = -std::numeric_limits<float>::quiet_NaN();  // a NaN with its sign bit set sorts last too
    const std::vector<int64_t> want_order = reference_order(keys);
    std::vector<int64_t> got(n);
    execute(lower(parse_graph(sort_graph(n, "argsort", "i64"))), {keys.data(), got.data()});
    EXPECT_EQ(got, want_order) << n << " keys";
    std::vector<float> sorted(n);
    execute(lower(parse_graph(sort_graph(n, "sort", "f32"))), {keys.data(), sorted.data()});
    for (int64_t i = 0; i < n; ++i) {
      const float want = keys[want_order[i]];
      EXPECT_TRUE(std::isnan(want) ? std::isnan(sorted[i]) : sorted[i] == want) << i;
    }
  }
}

TEST(DataDependent, ArgsortOfEveryKeyWidthAndOfManyRowsIsStable) {
  // 64-bit keys radix sort as (key, position) pairs, 8- and 16-bit ones as words like 32-bit
  // ones; 6 rows of 9,000 keys sort on the thread pool, each row on its own
  constexpr int64_t kRows = 6, kLen = 9000;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> pick(-300, 300);
  std::vector<int64_t> wide(kRows * kLen);
  for (int64_t& v : wide) v = pick(rng) * (int64_t{1} << 40) + pick(rng);
  auto want_rows = [&](auto less_of) {
    std::vector<int64_t> want(kRows * kLen);
    for (int64_t r = 0; r < kRows; ++r) {
      int64_t* row = want.data() + r * kLen;
      std::iota(row, row + kLen, 0);
      std::stable_sort(row, row + kLen, [&](int64_t a, int64_t b) { return less_of(r * kLen + a, r * kLen + b); });
    }
    return want;
  };
  auto run = [&](const char* dtype, void* keys) {
    const std::string shape = "[" + std::to_string(kRows) + "," + std::to_string(kLen) + "]{" + std::to_string(kLen) + ",1}+0";
    const std::string size = std::to_string(kRows * kLen);
    std::vector<int64_t> got(kRows * kLen);
    execute(lower(parse_graph("graph @f {\n  %s0 = storage " + std::string(dtype) + "[" + size + "] arg 0\n  %s1 = storage i64[" +
                              size + "] arg 1\n  op0 = argsort(%s0" + shape + ") -> %s1" + shape + "\n  return\n}")),
            {keys, got.data()});
    return got;
  };
  EXPECT_EQ(run("i64", wide.data()), want_rows([&](int64_t a, int64_t b) { return wide[a] < wide[b]; }));
  std::vector<double> real(wide.begin(), wide.end());
  real[5] = NAN;
  real[7] = -0.0;
  real[8] = 0.0;
  EXPECT_EQ(run("f64", real.data()), want_rows([&](int64_t a, int64_t b) {
    return !std::isnan(real[a]) && (std::isnan(real[b]) || real[a] < real[b]);
  }));
  std::vector<int8_t> small(wide.size());
  std::vector<uint16_t> medium(wide.size());
  for (size_t i = 0; i < wide.size(); ++i) {
    small[i] = static_cast<int8_t>(wide[i] % 100);
    medium[i] = static_cast<uint16_t>(wide[i]);
  }
  EXPECT_EQ(run("i8", small.data()), want_rows([&](int64_t a, int64_t b) { return small[a] < small[b]; }));
  EXPECT_EQ(run("u16", medium.data()), want_rows([&](int64_t a, int64_t b) { return medium[a] < medium[b]; }));
}

TEST(DataDependent, TopKIsTheStableOrdersHeadOrReversedTail) {
  // none, few of many selected (the candidates' buckets, each sorted by (key, position)), most of
  // a short row (its sorted (key, position) words) or most of a long one (the whole radix order):
  // each the first k of the stable order, or of its reverse
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(0, 6);
  std::normal_distribution<float> wide(0.0f, 1000.0f);
  for (int64_t n : {400, 5000, 5001}) {
    std::vector<float> keys(n);
    for (float& k : keys) k = pick(rng) == 0 ? NAN : static_cast<float>(pick(rng));
    if (n == 5001)  // keys over a wide range (the candidates' buckets split it finely), ties among them
      for (float& k : keys) k = pick(rng) == 0 ? -INFINITY : std::round(wide(rng)) / 8;
    std::vector<int64_t> want = reference_order(keys);
    const std::string ns = std::to_string(n);
    for (int reversed : {0, 1}) {
      for (int64_t k : {int64_t{0}, int64_t{5}, int64_t{300}, n - 100}) {
        const std::string text = "graph @f {\n  %s0 = storage f32[" + ns + "] arg 0\n  %s1 = storage i64[" +
                                 std::to_string(k) + "] arg 1\n  op0 = argsort(%s0[" + ns + "]{1}+0) axes=[" +
                                 std::to_string(reversed) + "," + std::to_string(k) + "] -> %s1[" + std::to_string(k) +
                                 "]{1}+0\n  return\n}";
        std::vector<int64_t> got(std::max<int64_t>(k, 1));  // memory even for none
        execute(lower(parse_graph(text)), {keys.data(), got.data()});
        for (int64_t i = 0; i < k; ++i) EXPECT_EQ(got[i], reversed ? want[n - 1 - i] : want[i]) << n << " " << k << " " << i;
      }
    }
  }
}

// One check_equal of two i64 arguments, its message "(\x01,) \x02 ", with `attrs`.
Program check_equal_program(const std::string& attrs) {
  return lower(parse_graph(R"(graph @f {
    %s0 = storage i64[1] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage i32[7] const 0x28000000010000002c00000029000000200000000200000020000000
    %s3 = storage i64[1] arg 2
    op0 = check_equal(%s0[]{}+0, %s1[]{}+0, %s2[7]{1}+0))" + attrs + R"( -> %s3[]{}+0
    return
  })"));
}

TEST(DataDependent, CheckEqualPassesALengthThroughOrRaisesNumPysBroadcastError) {
  Program p = check_equal_program("");
  int64_t a = 4, b = 4, out = 0;
  execute(p, {&a, &b, nullptr, &out});
  EXPECT_EQ(out, 4);
  for (int64_t other : {int64_t{3}, int64_t{1}}) {
    b = other;
    try {
      execute(p, {&a, &b, nullptr, &out});
      FAIL() << "no error";
    } catch (const std::invalid_argument& e) {
      // "(\x01,) \x02 " with the lengths in place; a length of 1, which NumPy broadcasts, is
      // RunInNumPy (the dispatcher runs the call in NumPy) and says where
      const std::string want = "(4,) " + std::to_string(other) + " ";
      EXPECT_EQ(std::string(e.what()).substr(0, want.size()), want);
      EXPECT_EQ(std::string(e.what()).size() > want.size(), other == 1) << e.what();
      EXPECT_EQ(dynamic_cast<const RunInNumPy*>(&e) != nullptr, other == 1);
    }
  }
}

TEST(DataDependent, CheckEqualOfAMasksLengthRaisesIndexErrorAndNeverBroadcasts) {
  // axes [6] (kIndexError): a boolean index's length against its axis's: NumPy's IndexError
  // (std::out_of_range), a length of 1 included
  const Program p = check_equal_program(" axes=[6]");
  int64_t a = 4, b = 4, out = 0;
  execute(p, {&a, &b, nullptr, &out});
  EXPECT_EQ(out, 4);
  for (int64_t other : {int64_t{3}, int64_t{1}}) {
    b = other;
    EXPECT_THROW(execute(p, {&a, &b, nullptr, &out}), std::out_of_range) << other;
  }
  EXPECT_THROW(verify_graph(parse_graph(R"(graph @g {
    %s0 = storage i64[1] arg 0
    %s1 = storage i32[1] const 0x28000000
    %s2 = storage i64[1] arg 1
    op0 = check_equal(%s0[]{}+0, %s0[]{}+0, %s1[1]{1}+0) axes=[1] -> %s2[]{}+0
    return
  })")), std::exception);
}

TEST(DataDependent, CheckAssertRaisesTheErrorItsAxesName) {
  // no axes: assert's AssertionError; 1: ValueError; 2: OverflowError (int() of a NaN or an
  // infinite float); 3: ZeroDivisionError (np.average); 4: RunInNumPy (the call runs in NumPy);
  // 5: UnboundLocalError (a variable a branch left unassigned); the message is the constant's
  // code points ("no")
  for (int kind : {-1, 1, 2, 3, 4, 5}) {
    const std::string axes = kind < 0 ? "" : " axes=[" + std::to_string(kind) + "]";
    Program p = lower(parse_graph(R"(graph @f {
      %s0 = storage bool[1] arg 0
      %s1 = storage i32[2] const 0x6e0000006f000000
      %s2 = storage bool[1] arg 1
      op0 = check_assert(%s0[]{}+0, %s1[2]{1}+0))" + axes + R"( -> %s2[]{}+0
      return
    })"));
    bool ok = true, out = false;
    execute(p, {&ok, nullptr, &out});
    EXPECT_TRUE(out);
    ok = false;
    try {
      execute(p, {&ok, nullptr, &out});
      ADD_FAILURE() << "no error";
    } catch (const AssertionFailed& e) {
      EXPECT_EQ(kind, -1);
      EXPECT_STREQ(e.what(), "no");
    } catch (const RunInNumPy& e) {
      EXPECT_EQ(kind, 4);
      EXPECT_STREQ(e.what(), "no");
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(kind, 1);
      EXPECT_STREQ(e.what(), "no");
    } catch (const std::overflow_error& e) {
      EXPECT_EQ(kind, 2);
      EXPECT_STREQ(e.what(), "no");
    } catch (const ZeroDivision& e) {
      EXPECT_EQ(kind, 3);
      EXPECT_STREQ(e.what(), "no");
    } catch (const UnboundLocal& e) {
      EXPECT_EQ(kind, 5);
      EXPECT_STREQ(e.what(), "no");
    }
  }
  EXPECT_THROW(verify_graph(parse_graph(R"(graph @f {
    %s0 = storage bool[1] arg 0
    %s1 = storage i32[2] const 0x6e0000006f000000
    %s2 = storage bool[1] arg 1
    op0 = check_assert(%s0[]{}+0, %s1[2]{1}+0) axes=[6] -> %s2[]{}+0
    return
  })")), std::logic_error);
}

TEST(DataDependent, TopKOfWideKeysIsTheStableOrdersHead) {
  // f64 keys do not fit a 64-bit word with their position: (key, position) pairs
  std::vector<double> keys = {2.0, -0.0, NAN, 1.5, 0.0, 2.0, -7.0, 1.5, NAN, 0.0, 2.0, 3.0, -0.0, 1.5, 9.0, 0.0, 2.0};
  std::vector<float> narrow(keys.begin(), keys.end());  // the same order
  const std::vector<int64_t> want = reference_order(narrow);
  const int64_t n = static_cast<int64_t>(keys.size());
  for (int reversed : {0, 1}) {
    const std::string text = "graph @f {\n  %s0 = storage f64[17] arg 0\n  %s1 = storage i64[2] arg 1\n  op0 = argsort("
                             "%s0[17]{1}+0) axes=[" + std::to_string(reversed) + ",2] -> %s1[2]{1}+0\n  return\n}";
    int64_t got[2];
    execute(lower(parse_graph(text)), {keys.data(), got});
    for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(got[i], reversed ? want[n - 1 - i] : want[i]) << reversed << " " << i;
  }
}

TEST(DataDependent, TopKWhoseSampleMisjudgesThePivotTakesEveryKey) {
  // the top-k's sample of 512 keys (one every n / 512) holds the smallest keys: its pivot lets
  // through fewer than k, so every key is a candidate, and the answer is still the stable head
  constexpr int64_t n = 5120, k = 600;
  std::vector<float> keys(n);
  for (int64_t i = 0; i < n; ++i) keys[i] = i % 10 == 0 ? static_cast<float>(i / 10) : static_cast<float>(1000 + (i * 7919) % n);
  const std::vector<int64_t> want = reference_order(keys);
  const std::string ns = std::to_string(n), ks = std::to_string(k);
  std::vector<int64_t> got(k);
  execute(lower(parse_graph("graph @f {\n  %s0 = storage f32[" + ns + "] arg 0\n  %s1 = storage i64[" + ks +
                            "] arg 1\n  op0 = argsort(%s0[" + ns + "]{1}+0) axes=[0," + ks + "] -> %s1[" + ks +
                            "]{1}+0\n  return\n}")),
          {keys.data(), got.data()});
  EXPECT_EQ(got, std::vector<int64_t>(want.begin(), want.begin() + k));
}

TEST(DataDependent, CompressSkipsEmptyWordsOfTheMaskAndStopsAtTheCount) {
  // a word of false, a word of true, scattered bits, a tail shorter than a word: elements and rows
  Program p = lower(parse_graph(R"(graph @f {
    %s0 = storage bool[37] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage f32[37] arg 2
    %s3 = storage f32[37] arg 3
    %s4 = storage f32[74] arg 4
    %s5 = storage f32[74] arg 5
    op0 = compress(%s0[37]{1}+0, %s2[37]{1}+0) -> %s3[?%s1<=37]{1}+0
    op1 = compress(%s0[37]{1}+0, %s4[37,2]{2,1}+0) -> %s5[?%s1<=37,2]{2,1}+0
    return
  })"));
  bool mask[37] = {};
  for (int i = 8; i < 16; ++i) mask[i] = true;
  for (int i : {17, 22, 23, 31, 33, 36}) mask[i] = true;
  std::vector<float> x(37), rows(74), got(37, -1), got_rows(74, -1), want, want_rows;
  for (int i = 0; i < 74; ++i) rows[i] = static_cast<float>(100 + i);
  for (int i = 0; i < 37; ++i) {
    x[i] = static_cast<float>(i);
    if (mask[i]) {
      want.push_back(x[i]);
      want_rows.insert(want_rows.end(), {rows[2 * i], rows[2 * i + 1]});
    }
  }
  // the whole count, or a smaller one (around the rows prefetched ahead: 8)
  for (int64_t count : {int64_t(want.size()), int64_t(5), int64_t(8), int64_t(9)}) {
    std::fill(got.begin(), got.end(), -1);
    std::fill(got_rows.begin(), got_rows.end(), -1);
    execute(p, {mask, &count, x.data(), got.data(), rows.data(), got_rows.data()});
    for (int64_t i = 0; i < count; ++i) EXPECT_EQ(got[i], want[i]) << count << " " << i;
    for (int64_t i = 0; i < 2 * count; ++i) EXPECT_EQ(got_rows[i], want_rows[i]) << count << " " << i;
    EXPECT_EQ(got_rows[2 * count], -1);  // rows past the count: untouched
  }
}

TEST(DataDependent, CompressRowsOfEveryWidthInOrder) {
  // rows of 5 and 8 floats (copied as fixed-size blocks), 7 (element by element) and 20 (a cache
  // line and more: prefetched ahead), up to the count or a smaller one
  constexpr int64_t kRows = 4001;
  std::mt19937 rng(3);
  std::vector<char> mask(kRows);
  for (char& b : mask) b = rng() % 5 < 3;
  for (int64_t width : {5, 7, 8, 20}) {
    const std::string size = std::to_string(kRows * width), w = std::to_string(width);
    Program p = lower(parse_graph("graph @f {\n  %s0 = storage bool[4001] arg 0\n  %s1 = storage i64[1] arg 1\n"
                                  "  %s2 = storage f32[" + size + "] arg 2\n  %s3 = storage f32[" + size + "] arg 3\n"
                                  "  op0 = compress(%s0[4001]{1}+0, %s2[4001," + w + "]{" + w + ",1}+0) -> %s3[?%s1<=4001," +
                                  w + "]{" + w + ",1}+0\n  return\n}"));
    std::vector<float> rows(kRows * width), want;
    std::iota(rows.begin(), rows.end(), 0.0f);
    for (int64_t i = 0; i < kRows; ++i)
      if (mask[i]) want.insert(want.end(), rows.begin() + i * width, rows.begin() + (i + 1) * width);
    const int64_t all = static_cast<int64_t>(want.size()) / width;
    for (int64_t count : {all, all - 100, int64_t{3}}) {
      std::vector<float> got(kRows * width, -1);
      execute(p, {mask.data(), &count, rows.data(), got.data()});
      for (int64_t i = 0; i < count * width; ++i) ASSERT_EQ(got[i], want[i]) << width << " " << count << " " << i;
      EXPECT_EQ(got[count * width], -1) << width << " " << count;
    }
  }
}

TEST(DataDependent, CompressInPlaceMovesEveryRowBeforeOverwritingIt) {
  // compress_in_place's form: x[1:][m] written over x from its start (shifted by one) and over
  // itself (not shifted), for masks of whole kept words, scattered drops and a short tail, in
  // i64 and f32
  constexpr int64_t kN = 1003;
  std::mt19937 rng(5);
  for (int keep_in_8 : {8, 7, 3, 0}) {
    std::vector<char> mask(kN);
    for (char& b : mask) b = static_cast<int>(rng() % 8) < keep_in_8;
    for (int64_t shift : {1, 0}) {
      const std::string n = std::to_string(kN - shift), s = std::to_string(shift);
      for (const char* dt : {"i64", "f32"}) {
        Program p = lower(parse_graph(std::string("graph @f {\n  %s0 = storage bool[") + n + "] arg 0\n"
                                      "  %s1 = storage i64[1] arg 1\n  %s2 = storage " + dt + "[1003] arg 2\n"
                                      "  op0 = compress(%s0[" + n + "]{1}+0, %s2[" + n + "]{1}+" + s +
                                      ") -> %s2[?%s1<=" + n + "]{1}+0\n  return\n}"));
        std::vector<int64_t> x(kN), want;
        std::iota(x.begin(), x.end(), 10);
        for (int64_t i = 0; i + shift < kN; ++i)
          if (mask[i]) want.push_back(x[i + shift]);
        int64_t count = static_cast<int64_t>(want.size());
        if (dt[0] == 'i') {
          execute(p, {mask.data(), &count, x.data()});
          for (int64_t i = 0; i < count; ++i) ASSERT_EQ(x[i], want[i]) << keep_in_8 << " " << shift << " " << i;
        } else {
          std::vector<float> f(x.begin(), x.end());
          execute(p, {mask.data(), &count, f.data()});
          for (int64_t i = 0; i < count; ++i)
            ASSERT_EQ(f[i], static_cast<float>(want[i])) << keep_in_8 << " " << shift << " " << i;
        }
      }
    }
  }
}

TEST(DataDependent, SortRowsAlongTheLastAxisOfAStridedView) {
  // rows of a transposed 3x4 view: each column of the buffer is one row to sort
  Program p = lower(parse_graph(R"(graph @f {
    %s0 = storage i64[12] arg 0
    %s1 = storage i64[12] arg 1
    op0 = argsort(%s0[4,3]{1,4}+0) -> %s1[4,3]{3,1}+0
    return
  })"));
  int64_t x[12] = {5, 1, 9, 7, 2, 2, 8, -3, 0, 4, 4, -1};
  int64_t got[12];
  execute(p, {x, got});
  // row r holds x[r], x[r + 4], x[r + 8]
  const int64_t want[12] = {2, 1, 0, 0, 1, 2, 2, 1, 0, 1, 2, 0};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(got[i], want[i]) << i;
}

TEST(DataDependent, NonzeroTakeAndPutFollowTheRunTimeCount) {
  Program p = lower(parse_graph(R"(graph @f {
    %s0 = storage f64[6] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage i64[6] arg 2
    %s3 = storage f64[6] arg 3
    %s4 = storage f64[6] arg 4
    op0 = nonzero(%s0[2,3]{3,1}+0) -> %s2[?%s1<=6]{1}+0
    op1 = take(%s0[6]{1}+0, %s2[?%s1<=6]{1}+0) -> %s3[?%s1<=6]{1}+0
    op2 = put(%s2[?%s1<=6]{1}+0, %s3[?%s1<=6]{1}+0) -> %s4[6]{1}+0
    return
  })"));
  double x[6] = {0, NAN, -0.0, 3, 0, 7};
  int64_t count = 3;  // as count_nonzero computes it before
  int64_t idx[6] = {-1, -1, -1, -1, -1, -1};
  double taken[6] = {}, put_into[6] = {9, 9, 9, 9, 9, 9};
  execute(p, {x, &count, idx, taken, put_into});
  EXPECT_EQ(idx[0], 1);
  EXPECT_EQ(idx[1], 3);
  EXPECT_EQ(idx[2], 5);
  EXPECT_EQ(idx[3], -1);  // past the count: untouched
  EXPECT_TRUE(std::isnan(taken[0]));
  EXPECT_EQ(taken[2], 7);
  EXPECT_EQ(put_into[0], 9);
  EXPECT_EQ(put_into[3], 3);
  EXPECT_EQ(put_into[5], 7);
}

TEST(DataDependent, NonzeroOfAContiguousMaskMatchesTheElementwiseWalk) {
  // words of true, of false and mixed, bytes other than 0 and 1 (NumPy's bool reads them as
  // true), a tail shorter than a word, and a room that stops the indices short
  Program p = lower(parse_graph(R"(graph @f {
    %s0 = storage bool[29] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage i64[29] arg 2
    op0 = nonzero(%s0[29]{1}+0) -> %s2[?%s1<=29]{1}+0
    return
  })"));
  uint8_t m[29] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 7, 1, 1, 1, 0, 1, 1};
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 29; ++i)
    if (m[i]) want.push_back(i);
  for (int64_t room : {static_cast<int64_t>(want.size()), int64_t{9}, int64_t{3}}) {
    std::vector<int64_t> got(29, -1);
    int64_t count = room;
    execute(p, {m, &count, got.data()});
    for (int64_t k = 0; k < room; ++k) EXPECT_EQ(got[k], want[k]) << "room " << room << " at " << k;
  }
}

TEST(DataDependent, AppendWritesARowOrABlockFromTheLengthAndOutgrowsItsRoom) {
  const std::string storages = R"(
    %s0 = storage i64[1] arg 0
    %s1 = storage f32[6] arg 1
    %s2 = storage i64[1] arg 2
    %s3 = storage f32[10] arg 3)";
  Program block = lower(parse_graph("graph @f {" + storages + R"(
    op0 = append(%s0[]{}+0, %s1[?%s2<=3,2]{2,1}+0) -> %s3[5,2]{2,1}+0
    return
  })"));
  Program row = lower(parse_graph("graph @f {" + storages + R"(
    op0 = append(%s0[]{}+0, %s1[2]{1}+0) -> %s3[5,2]{2,1}+0
    return
  })"));
  float items[6] = {1, 2, 3, 4, 5, 6}, out[10];
  auto run = [&](Program& p, int64_t length, int64_t count) {
    std::fill(out, out + 10, -1.0f);
    execute(p, {&length, items, &count, out});
  };
  run(block, 1, 2);  // two rows of the block (its run-time count) at rows 1 and 2
  const float want[10] = {-1, -1, 1, 2, 3, 4, -1, -1, -1, -1};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(out[i], want[i]) << i;
  run(block, 5, 0);  // no row, at the end: nothing written, no error
  EXPECT_EQ(out[9], -1.0f);
  run(row, 4, 0);
  EXPECT_EQ(out[8], 1.0f);
  EXPECT_EQ(out[9], 2.0f);
  EXPECT_THROW(run(block, 3, 3), LoopBoundExceeded);
  EXPECT_THROW(run(row, 5, 0), LoopBoundExceeded);
}

TEST(DataDependent, CheckIndexRaisesNumPysIndexErrorAtTheFirstBadIndex) {
  Program p = lower(parse_graph(R"(graph @f {
    %s0 = storage i64[4] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage i64[4] arg 2
    op0 = check_index(%s0[4]{1}+0, %s1[]{}+0) axes=[1] -> %s2[4]{1}+0
    return
  })"));
  int64_t size = 5, out[4];
  int64_t good[4] = {0, -1, 4, -5};
  execute(p, {good, &size, out});
  EXPECT_EQ(out[1], 4);
  EXPECT_EQ(out[3], 0);
  int64_t bad[4] = {0, 7, -6, 1};
  try {
    execute(p, {bad, &size, out});
    FAIL() << "no error";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "index 7 is out of bounds for axis 1 with size 5");
  }
}

TEST(DataDependent, CheckIndexOfAKthRaisesNumPysValueErrorWithTheKthMadeNonNegative) {
  Program p = lower(parse_graph(R"(graph @f {
    %s0 = storage i64[1] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage i64[1] arg 2
    op0 = check_index(%s0[]{}+0, %s1[]{}+0) axes=[-1] -> %s2[]{}+0
    return
  })"));
  int64_t size = 5, out = 0, kth = -2;
  execute(p, {&kth, &size, &out});
  EXPECT_EQ(out, 3);
  kth = -6;
  try {
    execute(p, {&kth, &size, &out});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "kth(=-1) out of bounds (5)");
  }
}

}  // namespace
}  // namespace strider
