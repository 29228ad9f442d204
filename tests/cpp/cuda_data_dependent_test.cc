#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <stdexcept>

#include "codegen/cuda/cuda_codegen.h"
#include "cuda_emulator.h"
#include "runtime/cuda_executor.h"
#include "runtime/data_dependent.h"
#include "stage_testing.h"

// The data-dependent ops' CUDA kernels (emit_cuda_data_dependent.cc) run on the CPU
// (cuda_emulator.h) in both thread orders and compared with the reference executor from the same
// inputs (NaNs, signed zeros, ties, empty and full masks, rooms smaller than the count), failures
// included: the error record must make raise_cuda_error throw what the reference throws.
namespace strider {
namespace {

using namespace testing;

struct Case {
  std::string label;
  Graph g;
  std::function<void(Memory&)> set = nullptr;  // after the random fill: indices, sorted arrays, extents
};

template <typename T>
T* typed_at(Memory& m, int s) {
  return reinterpret_cast<T*>(m.at(s));
}

// What the reference throws (empty: nothing), as "type: message".
std::string failure(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::out_of_range& e) {
    return std::string("out_of_range: ") + e.what();
  } catch (const std::invalid_argument& e) {
    return std::string("invalid_argument: ") + e.what();
  } catch (const AssertionFailed& e) {
    return std::string("AssertionFailed: ") + e.what();
  } catch (const std::domain_error& e) {
    return std::string("domain_error: ") + e.what();
  } catch (const LoopBoundExceeded& e) {
    return std::string("LoopBoundExceeded: ") + e.what();
  }
  return "";
}

// Emits each case's one-op stage, runs it emulated with blocks and threads first first and last
// first, and compares every Arg storage (or the failure) with the reference's. Returns how many ran.
int check_cases(const std::vector<Case>& cases) {
  std::vector<CudaStage> emitted;
  for (const Case& c : cases) emitted.push_back(emit_cuda_stage(c.g, stage_of(c.g, {}, {0})));
  CudaEmulator emulator(emitted);
  for (const char* reverse : {"0", "1"}) {
    setenv("STRIDER_EMU_REVERSE", reverse, 1);
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case& c = cases[k];
      SCOPED_TRACE(c.label + (reverse[0] == '1' ? " (last first)" : ""));
      Memory ref(c.g), got(c.g);
      for (size_t s = 0; s < c.g.storages.size(); ++s)
        if (c.g.storages[s].kind == StorageKind::Arg) fill(c.g.storages[s].dtype, ref.at(s), c.g.storages[s].size, static_cast<uint32_t>(s) * 7 + 1);
      if (c.set) c.set(ref);
      for (size_t s = 0; s < c.g.storages.size(); ++s)
        if (c.g.storages[s].kind == StorageKind::Arg)
          std::memcpy(got.at(s), ref.at(s), c.g.storages[s].size * itemsize(c.g.storages[s].dtype));
      const std::string want = failure([&] { run_reference(c.g, ref.ptrs); });
      const std::array<int64_t, kCudaErrorWords> record = emulator.run(k, got.bases());
      EXPECT_EQ(failure([&] { raise_cuda_error(c.g, record.data()); }), want);
      if (!want.empty()) continue;  // elements before the failure may differ, as on the host
      for (size_t s = 0; s < c.g.storages.size(); ++s)
        if (c.g.storages[s].kind == StorageKind::Arg) {
          const std::string diff = compare(c.g, static_cast<int>(s), ref.at(s), got.at(s), {});
          EXPECT_EQ(diff, "") << print_graph(c.g);
          if (!diff.empty()) break;
        }
    }
  }
  unsetenv("STRIDER_EMU_REVERSE");
  return static_cast<int>(cases.size());
}

Graph graph(const std::string& storages, const std::string& op) {
  return parse_graph("graph @t {\n" + storages + " op0 = " + op + "\n return\n}");
}

// Sets the 0-d i64 storage s to v.
std::function<void(Memory&)> set_i64(int s, int64_t v) {
  return [s, v](Memory& m) { *typed_at<int64_t>(m, s) = v; };
}

TEST(CudaDataDependent, NonzeroAndCompressWriteTheKeptInOrderUpToTheRoom) {
  SKIP_WITHOUT_EMULATOR();
  std::vector<Case> cases;
  // nonzero of a 2-d float view (NaN and -0.0 among the values): the exact count, less, none
  const Graph nz = graph(" %s0 = storage f32[70] arg 0\n %s1 = storage i64[1] arg 1\n %s2 = storage i64[35] arg 2\n",
                         "nonzero(%s0[5,7]{14,2}+1) -> %s2[?%s1<=35]{1}+0");
  auto count_nonzero = [](Memory& m) {
    int64_t n = 0;
    for (int i = 0; i < 35; ++i) n += typed_at<float>(m, 0)[1 + 2 * i] != 0.0f;
    return n;
  };
  for (int64_t less : {0, 3, 100})
    cases.push_back({"nonzero 2-d room-" + std::to_string(less), nz, [=](Memory& m) { *typed_at<int64_t>(m, 1) = count_nonzero(m) - less; }});
  // a bool mask over several tiles: full, sparse
  const Graph big = graph(" %s0 = storage bool[5000] arg 0\n %s1 = storage i64[1] arg 1\n %s2 = storage i64[5000] arg 2\n",
                          "nonzero(%s0[5000]{1}+0) -> %s2[?%s1<=5000]{1}+0");
  for (int every : {1, 3, 997})
    cases.push_back({"nonzero 5000 every " + std::to_string(every), big, [=](Memory& m) {
                       for (int i = 0; i < 5000; ++i) m.at(0)[i] = i % every == 0;
                       *typed_at<int64_t>(m, 1) = (5000 + every - 1) / every;
                     }});
  // compress rows of 3 by a mask, into a transposed output
  const Graph rows = graph(" %s0 = storage bool[3000] arg 0\n %s1 = storage f64[9000] arg 1\n %s2 = storage i64[1] arg 2\n"
                           " %s3 = storage f64[9000] arg 3\n",
                           "compress(%s0[3000]{1}+0, %s1[3000,3]{3,1}+0) -> %s3[?%s2<=3000,3]{1,3000}+0");
  for (int every : {1, 2, 1500})
    cases.push_back({"compress every " + std::to_string(every), rows, [=](Memory& m) {
                       int64_t n = 0;
                       for (int i = 0; i < 3000; ++i) n += m.at(0)[i] = i % every == 1 % every;
                       *typed_at<int64_t>(m, 2) = n - (every == 2);
                     }});
  EXPECT_EQ(check_cases(cases), 9);
}

TEST(CudaDataDependent, TakePutAndUfuncAtMoveRowsAndNameTheFirstBadIndex) {
  SKIP_WITHOUT_EMULATOR();
  const std::string st = " %s0 = storage f32[200] arg 0\n %s1 = storage i64[30] arg 1\n %s2 = storage f32[120] arg 2\n";
  const Graph take = graph(st, "take(%s0[50,4]{4,1}+0, %s1[6,5]{5,1}+0) -> %s2[6,5,4]{20,4,1}+0");
  const Graph put = graph(st, "put(%s1[30]{1}+0, %s2[30,4]{4,1}+0) -> %s0[50,4]{1,50}+0");
  const Graph add_at = graph(st, "add_at(%s1[30]{1}+0, %s2[30,4]{4,1}+0) -> %s0[50,4]{4,1}+0");
  const std::string st_i64 =
      " %s0 = storage i64[200] arg 0\n %s1 = storage i64[30] arg 1\n %s2 = storage i64[30] arg 2\n";
  const Graph add_at_i64 = graph(st_i64, "add_at(%s1[30]{1}+0, %s2[30]{1}+0) -> %s0[50]{4}+3");
  const Graph maximum_at = graph(st, "maximum_at(%s1[30]{1}+0, %s2[30,4]{4,1}+0) -> %s0[50,4]{1,50}+0");
  const Graph minimum_at_i64 = graph(st_i64, "minimum_at(%s1[30]{1}+0, %s2[30]{1}+0) -> %s0[50]{4}+3");
  // values in another dtype: NumPy's loop for the two, each step cast back (np.add.at of float64
  // values into float32, of int64 ones into uint8)
  const Graph add_at_f64 = graph(" %s0 = storage f32[200] arg 0\n %s1 = storage i64[30] arg 1\n %s2 = storage f64[120] arg 2\n",
                                 "add_at(%s1[30]{1}+0, %s2[30,4]{4,1}+0) -> %s0[50,4]{4,1}+0");
  const Graph maximum_at_u8 = graph(" %s0 = storage u8[200] arg 0\n %s1 = storage i64[30] arg 1\n %s2 = storage i64[30] arg 2\n",
                                    "maximum_at(%s1[30]{1}+0, %s2[30]{1}+0) -> %s0[50]{4}+3");
  // few distinct rows: repeated indices (put's last write, add_at's order of rounding)
  auto indices = [](int64_t bad_at, int64_t bad2_at) {
    return [=](Memory& m) {
      for (int i = 0; i < 30; ++i) typed_at<int64_t>(m, 1)[i] = (i * 7) % 11;
      if (bad_at >= 0) typed_at<int64_t>(m, 1)[bad_at] = 50;
      if (bad2_at >= 0) typed_at<int64_t>(m, 1)[bad2_at] = -1;
    };
  };
  std::vector<Case> cases;
  for (const auto& [label, g] : {std::pair<std::string, Graph>{"take", take}, {"put", put}, {"add_at", add_at},
                                 {"add_at i64", add_at_i64}, {"maximum_at", maximum_at},
                                 {"minimum_at i64", minimum_at_i64}, {"add_at f32 of f64", add_at_f64},
                                 {"maximum_at u8 of i64", maximum_at_u8}}) {
    cases.push_back({label, g, indices(-1, -1)});
    cases.push_back({label + " bad", g, indices(17, 23)});  // 17 is named, not 23
  }
  EXPECT_EQ(check_cases(cases), 16);
}

TEST(CudaDataDependent, AppendWritesARowOrABlockAndFailsPastTheRoom) {
  SKIP_WITHOUT_EMULATOR();
  const std::string st = " %s0 = storage i64[1] arg 0\n %s1 = storage f32[6] arg 1\n %s2 = storage i64[1] arg 2\n"
                         " %s3 = storage f32[10] arg 3\n";
  const Graph block = graph(st, "append(%s0[]{}+0, %s1[?%s2<=3,2]{2,1}+0) -> %s3[5,2]{2,1}+0");
  const Graph row = graph(st, "append(%s0[]{}+0, %s1[2]{1}+0) -> %s3[5,2]{2,1}+0");
  auto at = [](int64_t length, int64_t count) {
    return [=](Memory& m) {
      *typed_at<int64_t>(m, 0) = length;
      *typed_at<int64_t>(m, 2) = count;
    };
  };
  EXPECT_EQ(check_cases({{"block", block, at(1, 3)}, {"empty block at the end", block, at(5, 0)},
                         {"block past the room", block, at(3, 3)}, {"row", row, at(4, 0)},
                         {"row past the room", row, at(5, 0)}}), 5);
}

// "h\x01 \x02" and "ok" as a const i32 storage's bytes
std::string code_points(const std::string& text) {
  std::string hex;
  for (unsigned char c : text) {
    char b[9];
    std::snprintf(b, sizeof b, "%02x000000", c);
    hex += b;
  }
  return hex;
}

TEST(CudaDataDependent, ChecksPassThroughOrRaiseTheReferencesErrors) {
  SKIP_WITHOUT_EMULATOR();
  std::vector<Case> cases;
  const std::string idx = " %s0 = storage i64[40] arg 0\n %s1 = storage i64[1] arg 1\n %s2 = storage i64[40] arg 2\n";
  for (int axis : {1, -1}) {
    const Graph g = graph(idx, "check_index(%s0[8,5]{1,8}+0, %s1[]{}+0) axes=[" + std::to_string(axis) + "] -> %s2[8,5]{5,1}+0");
    auto set = [](int64_t bad, int64_t bad2) {
      return [=](Memory& m) {
        for (int i = 0; i < 40; ++i) typed_at<int64_t>(m, 0)[i] = i % 20 - 10;
        *typed_at<int64_t>(m, 1) = 10;
        if (bad >= 0) typed_at<int64_t>(m, 0)[bad] = -11;
        if (bad2 >= 0) typed_at<int64_t>(m, 0)[bad2] = 12;
      };
    };
    cases.push_back({"check_index " + std::to_string(axis), g, set(-1, -1)});
    // C order of the view: element 16 is (0, 2), element 9 is (1, 1): 16 comes first
    cases.push_back({"check_index bad " + std::to_string(axis), g, set(9, 16)});
  }
  const Graph nonempty = graph(" %s0 = storage i64[1] arg 0\n %s1 = storage i64[1] arg 1\n",
                               "check_nonempty(%s0[]{}+0) axes=[2] -> %s1[]{}+0");
  for (int64_t n : {3, 0}) cases.push_back({"check_nonempty " + std::to_string(n), nonempty, set_i64(0, n)});
  const Graph assert_ = graph(" %s0 = storage bool[1] arg 0\n %s1 = storage i32[3] const 0x" + code_points("no!") + "\n %s2 = storage bool[1] arg 2\n",
                              "check_assert(%s0[]{}+0, %s1[3]{1}+0) -> %s2[]{}+0");
  for (char v : {1, 0}) cases.push_back({"check_assert " + std::to_string(v), assert_, [v](Memory& m) { m.at(0)[0] = v; }});
  const Graph equal = graph(" %s0 = storage i64[2] arg 0\n %s1 = storage i32[4] const 0x" + code_points("\x01<>\x02") + "\n %s2 = storage i64[1] arg 2\n",
                            "check_equal(%s0[]{}+0, %s0[]{}+1, %s1[4]{1}+0) -> %s2[]{}+0");
  for (int64_t b : {5, 6, 1})
    cases.push_back({"check_equal " + std::to_string(b), equal, [b](Memory& m) {
                       typed_at<int64_t>(m, 0)[0] = 5;
                       typed_at<int64_t>(m, 0)[1] = b;
                     }});
  EXPECT_EQ(check_cases(cases), 11);
}

TEST(CudaDataDependent, ScansAlongTheLastAxisRoundAsTheReference) {
  SKIP_WITHOUT_EMULATOR();
  std::vector<Case> cases;
  for (const char* op : {"cumsum", "cumprod", "cummax", "cummin"})
    for (DType t : {DType::Float32, DType::Float64, DType::Int32, DType::Int64}) {
      // rows of a transposed view, one of them of a run-time length
      cases.push_back({std::string(op) + " " + dtype_name(t),
                       typed(std::string("graph @t {\n %s0 = storage T[350] arg 0\n %s1 = storage T[350] arg 1\n op0 = ") + op +
                                 "(%s0[7,50]{1,7}+0) -> %s1[7,50]{50,1}+0\n return\n}",
                             t)});
      cases.push_back({std::string(op) + " run-time " + dtype_name(t),
                       typed(std::string("graph @t {\n %s0 = storage T[350] arg 0\n %s1 = storage T[350] arg 1\n %s2 = storage i64[1] arg 2\n op0 = ") +
                                 op + "(%s0[?%s2<=350]{1}+0) -> %s1[?%s2<=350]{1}+0\n return\n}",
                             t),
                       set_i64(2, 123)});
    }
  // long rows of integers: a block per row, tiles carried (a run-time length ending inside a tile)
  for (const char* op : {"cumsum", "cumprod", "cummax", "cummin"})
    for (DType t : {DType::Int32, DType::Int64, DType::Bool}) {
      if (t == DType::Bool && std::string(op) != "cumsum" && std::string(op) != "cumprod") continue;
      cases.push_back({std::string(op) + " long rows " + dtype_name(t),
                       typed(std::string("graph @t {\n %s0 = storage T[6000] arg 0\n %s1 = storage T[6000] arg 1\n %s2 = storage i64[1] arg 2\n op0 = ") +
                                 op + "(%s0[2,?%s2<=3000]{1,2}+0) -> %s1[2,?%s2<=3000]{3000,1}+0\n return\n}",
                             t),
                       set_i64(2, 2900)});
    }
  EXPECT_EQ(check_cases(cases), 42);
}

// NumPy's order: -0.0 equal to 0.0, NaNs last
bool before(double a, double b) { return !std::isnan(a) && (std::isnan(b) || a < b); }

// In an unsorted array, NumPy's places come from its search: before NumPy 2.5 narrowed by the last
// needle's, from 2.5 halved for each needle alone. The emulated device must give them too.
TEST(CudaDataDependent, SearchsortedFindsNumPysPlacesInSortedAndUnsortedArrays) {
  SKIP_WITHOUT_EMULATOR();
  std::vector<Case> cases;
  for (DType t : {DType::Float32, DType::Int64})
    for (int right : {0, 1})
      for (int halving : {0, 1})
        for (bool sorted : {true, false}) {
        const Graph g = typed("graph @t {\n %s0 = storage T[300] arg 0\n %s1 = storage T[60] arg 1\n %s2 = storage i64[60] arg 2\n"
                              " op0 = searchsorted(%s0[300]{1}+0, %s1[6,10]{10,1}+0) axes=[" + std::to_string(right) + "," +
                                  std::to_string(halving) + "] -> %s2[6,10]{10,1}+0\n return\n}",
                              t);
        const std::string label = std::string("searchsorted ") + dtype_name(t) + (right ? " right" : " left") +
                                  (halving ? " halving" : "") + (sorted ? "" : " unsorted");
        cases.push_back({label, g, [t, sorted](Memory& m) {
                           if (t == DType::Int64) {
                             if (sorted) std::sort(typed_at<int64_t>(m, 0), typed_at<int64_t>(m, 0) + 300);
                             return;
                           }
                           float* a = typed_at<float>(m, 0);
                           for (int i = 0; i < 300; ++i) a[i] = std::round(a[i]);  // ties
                           if (sorted) std::stable_sort(a, a + 300, [](float x, float y) { return before(x, y); });
                           for (int i = 0; i < 60; ++i) typed_at<float>(m, 1)[i] = std::round(typed_at<float>(m, 1)[i]);
                         }});
        }
  EXPECT_EQ(check_cases(cases), 16);
}

TEST(CudaDataDependent, SortArgsortAndTopKAreNumPysStableOrder) {
  SKIP_WITHOUT_EMULATOR();
  std::vector<Case> cases;
  for (DType t : {DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::Bool})
    for (const char* op : {"sort", "argsort"}) {
      const std::string out = std::string(op) == "sort" ? "T" : "i64";
      auto g = [&](const std::string& axes, const std::string& k, const std::string& in) {
        return typed("graph @t {\n %s0 = storage T[1200] arg 0\n %s1 = storage " + out + "[1200] arg 1\n %s2 = storage i64[1] arg 2\n op0 = " +
                         op + "(" + in + ")" + axes + " -> %s1[3," + k + "]{" + k + ",1}+0\n return\n}",
                     t);
      };
      // few distinct values: ties everywhere (and the specials fill() puts first)
      auto ties = [t](Memory& m) {
        if (t == DType::Float32)
          for (int i = 30; i < 1200; ++i) typed_at<float>(m, 0)[i] = std::round(typed_at<float>(m, 0)[i] / 3);
      };
      const std::string label = std::string(op) + " " + dtype_name(t);
      cases.push_back({label, g("", "400", "%s0[3,400]{1,3}+0"), ties});
      cases.push_back({label + " top 5", g(" axes=[0,5]", "5", "%s0[3,400]{400,1}+0"), ties});
      cases.push_back({label + " bottom 7", g(" axes=[1,7]", "7", "%s0[3,400]{400,1}+0"), ties});
    }
  // a row of a run-time length
  const Graph run_time = parse_graph("graph @t {\n %s0 = storage f32[300] arg 0\n %s1 = storage i64[300] arg 1\n %s2 = storage i64[1] arg 2\n"
                                     " op0 = argsort(%s0[?%s2<=300]{1}+0) -> %s1[?%s2<=300]{1}+0\n return\n}");
  for (int64_t n : {0, 1, 257}) cases.push_back({"argsort of " + std::to_string(n), run_time, set_i64(2, n)});
  EXPECT_EQ(check_cases(cases), 33);
}

TEST(CudaDataDependent, FewLongRowsSortByTiles) {
  SKIP_WITHOUT_EMULATOR();
  std::vector<Case> cases;
  auto ties = [](Memory& m) {
    for (int i = 30; i < 18000; ++i) typed_at<float>(m, 0)[i] = std::round(typed_at<float>(m, 0)[i] * 50);
  };
  // a top-100 of 9000 scores (ties, NaNs, signed zeros), a sort of float64 rows of a run-time length
  cases.push_back({"argsort top 100 of 9000", parse_graph("graph @t {\n %s0 = storage f32[18000] arg 0\n %s1 = storage i64[100] arg 1\n"
                                                         " op0 = argsort(%s0[9000]{2}+1) axes=[1,100] -> %s1[100]{1}+0\n return\n}"),
                   ties});
  cases.push_back({"sort 2 rows of 8321 of 9000", parse_graph("graph @t {\n %s0 = storage f64[18000] arg 0\n %s1 = storage f64[18000] arg 1\n"
                                                             " %s2 = storage i64[1] arg 2\n op0 = sort(%s0[2,?%s2<=9000]{1,2}+0) -> "
                                                             "%s1[2,?%s2<=9000]{9000,1}+0\n return\n}"),
                   set_i64(2, 8321)});
  EXPECT_EQ(check_cases(cases), 2);
}

}  // namespace
}  // namespace strider
