#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "codegen/llvm/codegen.h"
#include "driver/driver.h"
#include "ops/numpy_loops.h"
#include "runtime/data_dependent.h"
#include "runtime/elementwise.h"
#include "runtime/executor.h"
#include "runtime/thread_pool.h"
#include "schedule/default_schedule.h"
#include "stage_testing.h"

// Every compiled stage is checked against the reference executor on the same inputs: bit for bit
// (NaNs compare equal whatever their payload), within a few ulps for transcendentals and float
// reductions. Stages are compiled without the disk cache (kernel_cache_test.cc tests that).
namespace strider {
namespace {

using namespace testing;

#define SKIP_WITHOUT_LLVM() \
  if (!llvm_backend_available()) GTEST_SKIP() << "built without LLVM"

enum class Outcome { Same, BothThrewDomainError, Refused };

// Runs the stage compiled and the graph on the reference executor from the same inputs (every Arg
// storage filled by fill(), seed = storage index), and compares every Arg storage.
Outcome check(const Graph& g, const Stage& s, Tolerance tol = {}, bool small_ints = false,
              std::string* ir = nullptr) {
  Memory ref(g), got(g);
  for (size_t k = 0; k < g.storages.size(); ++k)
    if (g.storages[k].kind == StorageKind::Arg) {
      fill(g.storages[k].dtype, ref.at(k), g.storages[k].size, static_cast<uint32_t>(k) * 7 + 1, small_ints && k == 1);
      std::memcpy(got.at(k), ref.at(k), g.storages[k].size * itemsize(g.storages[k].dtype));
    }
  bool ref_domain_error = false, ref_refused = false;
  try {
    run_reference(g, ref.ptrs);
  } catch (const std::domain_error&) {
    ref_domain_error = true;
  } catch (const std::logic_error&) {
    ref_refused = true;  // the reference has no loop for this op and dtype
  }
  // every other check compiles the stage quickly as well (Effort::kQuick, a first call's code): it
  // must compute what the full compile does
  static int checks = 0;
  std::vector<std::unique_ptr<CompiledStage>> compiled;
  try {
    compiled.push_back(compile_stage(g, s, nullptr));
    if (checks++ % 2 == 1) compiled.push_back(compile_stage(g, s, nullptr, Effort::kQuick));
  } catch (const std::invalid_argument& e) {
    // a stage that reads what it overwrites in another order is refused whatever the reference does
    if (std::string(e.what()).find("in an order one loop nest would change") != std::string::npos) return Outcome::Refused;
    EXPECT_TRUE(ref_refused) << "refused what the reference runs: " << e.what() << "\n" << print_graph(g);
    return Outcome::Refused;
  }
  EXPECT_FALSE(ref_refused) << "compiled what the reference refuses:\n" << print_graph(g);
  if (ir) *ir = compiled[0]->llvm_ir();
  for (size_t effort = 0; effort < compiled.size(); ++effort) {
    Memory run(g);
    for (size_t k = 0; k < g.storages.size(); ++k)
      if (g.storages[k].kind == StorageKind::Arg)
        std::memcpy(run.at(k), got.at(k), g.storages[k].size * itemsize(g.storages[k].dtype));
    std::vector<char*> bases = run.bases();
    for (int r : s.registers) bases[r] = nullptr;
    if (ref_domain_error) {
      EXPECT_THROW(compiled[effort]->run(bases.data()), std::domain_error);
      continue;
    }
    compiled[effort]->run(bases.data());
    for (size_t k = 0; k < g.storages.size(); ++k)
      if (g.storages[k].kind == StorageKind::Arg) {
        std::string diff = compare(g, static_cast<int>(k), ref.at(k), run.at(k), tol);
        EXPECT_EQ(diff, "") << (effort ? "compiled quickly:\n" : "") << print_graph(g);
        if (!diff.empty()) break;
      }
  }
  return ref_domain_error ? Outcome::BothThrewDomainError : Outcome::Same;
}

TEST(LlvmCodegen, UnaryOpsOnEveryDtype) {
  SKIP_WITHOUT_LLVM();
  int compiled = 0, refused = 0;
  for (OpCode op : ops_of_kind(OpKind::Unary)) {
    if (op == OpCode::cast) continue;
    for (DType t : kDTypes) {
      const DType u = is_predicate(op) ? DType::Bool : t;
      Graph g = parse_graph(unary_graph(op, t, u, 203));
      SCOPED_TRACE(std::string(op_name(op)) + " on " + dtype_name(t));
      Outcome o = check(g, stage_of(g, {203}, {0}), {transcendental(op) ? 4.0 : 0.0});
      (o == Outcome::Refused ? refused : compiled)++;
    }
  }
  EXPECT_GT(compiled, 100);  // NumPy's loops (ops.def)
  EXPECT_GT(refused, 0);  // invert on floats, ...
}

TEST(LlvmCodegen, CastsBetweenEveryPairOfDtypes) {
  SKIP_WITHOUT_LLVM();
  for (DType t : kDTypes)
    for (DType u : kDTypes) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " -> " + dtype_name(u));
      Graph g = parse_graph(unary_graph(OpCode::cast, t, u, 203));
      EXPECT_EQ(check(g, stage_of(g, {203}, {0})), Outcome::Same);
    }
}

TEST(LlvmCodegen, CastsOfNaNAndOutOfRangeGiveIntMin) {
  SKIP_WITHOUT_LLVM();
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f64[6] arg 0
    %s1 = storage i32[6] arg 1
    %s2 = storage i64[6] arg 2
    op0 = cast(%s0[6]{1}+0) -> %s1[6]{1}+0
    op1 = cast(%s0[6]{1}+0) -> %s2[6]{1}+0
    return
  })");
  auto c = compile_stage(g, stage_of(g, {6}, {0, 1}), nullptr);
  double x[6] = {NAN, 1e300, -3e9, 3e9, -2.9, 0x1p63};
  int32_t a[6];
  int64_t b[6];
  char* bases[3] = {reinterpret_cast<char*>(x), reinterpret_cast<char*>(a), reinterpret_cast<char*>(b)};
  c->run(bases);
  const int32_t m32 = std::numeric_limits<int32_t>::min();
  const int64_t m64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(std::vector<int32_t>(a, a + 6), (std::vector<int32_t>{m32, m32, m32, m32, -2, m32}));
  EXPECT_EQ(std::vector<int64_t>(b, b + 6), (std::vector<int64_t>{m64, m64, -3000000000, 3000000000, -2, m64}));
}

TEST(LlvmCodegen, UnaryOpsChangingDtype) {
  SKIP_WITHOUT_LLVM();
  const std::tuple<OpCode, DType, DType> cases[] = {
      {OpCode::negative, DType::Int32, DType::Float64}, {OpCode::absolute, DType::Float64, DType::Int32},
      {OpCode::isnan, DType::Float32, DType::Int64},    {OpCode::sqrt, DType::Float64, DType::Float32},
      {OpCode::floor, DType::Float32, DType::Int64},    {OpCode::logical_not, DType::Int32, DType::Float32}};
  for (auto [op, t, u] : cases) {
    Graph g = parse_graph(unary_graph(op, t, u, 67));
    EXPECT_EQ(check(g, stage_of(g, {67}, {0})), Outcome::Same) << op_name(op);
  }
}

TEST(LlvmCodegen, BinaryOpsOnEveryDtype) {
  SKIP_WITHOUT_LLVM();
  int compiled = 0, refused = 0;
  for (OpCode op : ops_of_kind(OpKind::Binary))
    for (DType t : kDTypes) {
      const DType u = is_comparison(op) ? DType::Bool : t;
      Graph g = parse_graph(binary_graph(op, t, u, 731));
      SCOPED_TRACE(std::string(op_name(op)) + " on " + dtype_name(t));
      // integer powers take small exponents here (a negative one is tested on its own)
      const bool small = op == OpCode::power && !is_float(t);
      // logaddexp composes exp and log1p and cancels: its error grows with the cancellation
      Outcome o = check(g, stage_of(g, {731}, {0}), {op == OpCode::logaddexp ? 256.0 : transcendental(op) ? 4.0 : 0.0}, small);
      (o == Outcome::Refused ? refused : compiled)++;
    }
  EXPECT_GT(compiled, 100);
  EXPECT_GT(refused, 0);
}

TEST(LlvmCodegen, IntegerDivisionEdgeCases) {
  SKIP_WITHOUT_LLVM();
  for (DType t : {DType::Int32, DType::Int64}) {
    Graph g = typed(R"(graph @t {
      %s0 = storage T[6] arg 0
      %s1 = storage T[6] arg 1
      %s2 = storage T[6] arg 2
      %s3 = storage T[6] arg 3
      %s4 = storage T[6] arg 4
      op0 = floor_divide(%s0[6]{1}+0, %s1[6]{1}+0) -> %s2[6]{1}+0
      op1 = remainder(%s0[6]{1}+0, %s1[6]{1}+0) -> %s3[6]{1}+0
      op2 = fmod(%s0[6]{1}+0, %s1[6]{1}+0) -> %s4[6]{1}+0
      return
    })", t);
    auto c = compile_stage(g, stage_of(g, {6}, {0, 1, 2}), nullptr);
    Memory m(g);
    const int64_t lo = t == DType::Int32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
    const int64_t a[6] = {7, -7, 5, lo, lo, -9};
    const int64_t b[6] = {2, 2, 0, -1, 1, -4};
    for (int i = 0; i < 6; ++i) {
      std::memcpy(m.at(0) + i * itemsize(t), &a[i], itemsize(t));
      std::memcpy(m.at(1) + i * itemsize(t), &b[i], itemsize(t));
    }
    std::vector<char*> bases = m.bases();
    c->run(bases.data());
    auto get = [&](int s, int i) {
      return t == DType::Int32 ? int64_t{reinterpret_cast<int32_t*>(m.at(s))[i]} : reinterpret_cast<int64_t*>(m.at(s))[i];
    };
    EXPECT_EQ(get(2, 0), 3);
    EXPECT_EQ(get(2, 1), -4);
    EXPECT_EQ(get(2, 2), 0);
    EXPECT_EQ(get(2, 3), lo);  // INT_MIN // -1 wraps
    EXPECT_EQ(get(2, 5), 2);
    EXPECT_EQ(get(3, 1), 1);
    EXPECT_EQ(get(3, 2), 0);
    EXPECT_EQ(get(3, 3), 0);
    EXPECT_EQ(get(3, 5), -1);
    EXPECT_EQ(get(4, 1), -1);
    EXPECT_EQ(get(4, 3), 0);
  }
}

TEST(LlvmCodegen, NegativeIntegerPowerThrowsLikeTheReference) {
  SKIP_WITHOUT_LLVM();
  Graph g = parse_graph(binary_graph(OpCode::power, DType::Int64, DType::Int64, 40));
  EXPECT_EQ(check(g, stage_of(g, {40}, {0})), Outcome::BothThrewDomainError);
}

TEST(LlvmCodegen, FloatSpecialCases) {
  SKIP_WITHOUT_LLVM();
  // npy_divmod's signed zeros and infinities, the 0.5 power, NaN-aware extrema
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f64[8] arg 0
    %s1 = storage f64[8] arg 1
    %s2 = storage f64[8] arg 2
    %s3 = storage f64[8] arg 3
    %s4 = storage f64[8] arg 4
    %s5 = storage f64[8] arg 5
    op0 = floor_divide(%s0[8]{1}+0, %s1[8]{1}+0) -> %s2[8]{1}+0
    op1 = remainder(%s0[8]{1}+0, %s1[8]{1}+0) -> %s3[8]{1}+0
    op2 = power(%s0[8]{1}+0, %s1[8]{1}+0) -> %s4[8]{1}+0
    op3 = minimum(%s0[8]{1}+0, %s1[8]{1}+0) -> %s5[8]{1}+0
    return
  })");
  auto c = compile_stage(g, stage_of(g, {8}, {0, 1, 2, 3}), nullptr);
  double a[8] = {-0.0, 5.0, -5.0, 1.0, -INFINITY, NAN, 4.0, -0.0};
  double b[8] = {3.0, -0.0, 3.0, INFINITY, 0.5, 1.0, 0.5, 0.0};
  double q[8], r[8], p[8], mn[8];
  char* bases[6] = {(char*)a, (char*)b, (char*)q, (char*)r, (char*)p, (char*)mn};
  c->run(bases);
  EXPECT_TRUE(q[0] == 0 && std::signbit(q[0]));
  EXPECT_EQ(q[1], -INFINITY);
  EXPECT_EQ(q[2], -2.0);
  EXPECT_EQ(r[2], 1.0);
  EXPECT_TRUE(std::isnan(r[1]));
  EXPECT_TRUE(std::isnan(p[4]));  // sqrt(-inf), where pow would give +inf
  EXPECT_EQ(p[6], 2.0);
  EXPECT_TRUE(std::isnan(mn[5]));
  EXPECT_TRUE(mn[7] == 0 && !std::signbit(mn[7]));  // float64's loop takes the second operand of a tie
}

TEST(LlvmCodegen, AnExtremumOfALoopInvariantOperandRunsInAVersionForNoNaN) {
  SKIP_WITHOUT_LLVM();
  // NMS's np.maximum(x1[i], x1[order[1:]]): the stage tests the invariant operands for a NaN once
  // and runs one of two loops; both must be NumPy's maximum and minimum: the NaN of either
  // operand, the second operand of a tie of zeros
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[64] arg 0
    %s1 = storage f32[1] arg 1
    %s2 = storage f32[64] arg 2
    %s3 = storage f32[64] arg 3
    %s4 = storage f64[64] arg 4
    %s5 = storage f64[1] arg 5
    %s6 = storage f64[64] arg 6
    op0 = maximum(%s1[64]{0}+0, %s0[64]{1}+0) -> %s2[64]{1}+0
    op1 = minimum(%s1[64]{0}+0, %s0[64]{1}+0) -> %s3[64]{1}+0
    op2 = maximum(%s5[64]{0}+0, %s4[64]{1}+0) -> %s6[64]{1}+0
    return
  })");
  const Stage s = stage_of(g, {64}, {0, 1, 2});
  auto c = compile_stage(g, s, nullptr);
  const std::string ir = c->llvm_ir();
  const std::regex loop("\\nvector\\.body[0-9]*:");  // the vectorizer's loops, one per version
  EXPECT_EQ(std::distance(std::sregex_iterator(ir.begin(), ir.end(), loop), std::sregex_iterator()), 2) << ir;
  const float values[] = {NAN, -0.0f, 0.0f, 1.5f, -1.0f, 2.0f, INFINITY, -INFINITY, -NAN, 0.75f};
  for (float a : values) {
    Memory ref(g), got(g);
    for (Memory* m : {&ref, &got}) {
      for (int i = 0; i < 64; ++i) {
        reinterpret_cast<float*>(m->at(0))[i] = values[(i * 7) % 10];
        reinterpret_cast<double*>(m->at(4))[i] = values[(i * 3) % 10];
      }
      *reinterpret_cast<float*>(m->at(1)) = a;
      *reinterpret_cast<double*>(m->at(5)) = a;
    }
    run_reference(g, ref.ptrs);
    c->run(got.bases().data());
    for (int k : {2, 3, 6}) {
      const size_t bytes = g.storages[k].size * itemsize(g.storages[k].dtype);
      EXPECT_EQ(std::memcmp(ref.at(k), got.at(k), bytes), 0) << "a=" << a << " %s" << k << "\n" << compare(g, k, ref.at(k), got.at(k), {});
    }
  }
}

TEST(LlvmCodegen, AnExtremumOfAnOperandReusedAlongALoopRunsInAVersionForNoNaN) {
  SKIP_WITHOUT_LLVM();
  // mmdet's bbox_overlaps: every anchor's corner (reused along the gt boxes' loop) against every
  // gt box's; the stage tests the anchors' corners for a NaN before its loops, serial or split
  // across the thread pool, and either version must be the reference's bit for bit
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[160] arg 0
    %s1 = storage f32[64] arg 1
    %s2 = storage f32[640] arg 2
    %s3 = storage f32[640] arg 3
    op0 = maximum(%s0[40,16]{4,0}+0, %s1[40,16]{0,4}+0) -> %s2[40,16]{16,1}+0
    op1 = minimum(%s0[40,16]{4,0}+2, %s1[40,16]{0,4}+2) -> %s3[40,16]{16,1}+0
    return
  })");
  for (bool parallel : {false, true}) {
    auto c = compile_stage(g, stage_of(g, {40, 16}, {0, 1}, {}, 8, parallel), nullptr);
    EXPECT_NE(c->llvm_ir().find("versions.end"), std::string::npos) << c->llvm_ir();  // the two versions
    for (int nan_at : {-1, 0, 2, 77, 159, 158}) {
      Memory ref(g), got(g);
      for (Memory* m : {&ref, &got}) {
        float* a = reinterpret_cast<float*>(m->at(0));
        float* b = reinterpret_cast<float*>(m->at(1));
        for (int i = 0; i < 160; ++i) a[i] = (i % 5 == 0) ? -0.0f : static_cast<float>((i * 37) % 23) - 11.0f;
        for (int i = 0; i < 64; ++i) b[i] = (i % 7 == 0) ? 0.0f : (i % 11 == 0) ? NAN : static_cast<float>((i * 13) % 17) - 8.0f;
        if (nan_at >= 0) a[nan_at] = NAN;
      }
      run_reference(g, ref.ptrs);
      c->run(got.bases().data());
      for (int k : {2, 3})
        EXPECT_EQ(std::memcmp(ref.at(k), got.at(k), 640 * sizeof(float)), 0)
            << "parallel=" << parallel << " NaN at " << nan_at << " %s" << k << "\n" << compare(g, k, ref.at(k), got.at(k), {});
    }
  }
}

TEST(LlvmCodegen, WhereOnEveryDtype) {
  SKIP_WITHOUT_LLVM();
  for (DType t : kDTypes) {
    std::string text = R"(graph @t {
      %s0 = storage bool[300] arg 0
      %s1 = storage T[300] arg 1
      %s2 = storage T[20] arg 2
      %s3 = storage T[300] arg 3
      op0 = where(%s0[300]{1}+0, %s1[300]{-1}+299, %s2[300]{0}+3) -> %s3[300]{1}+0
      return
    })";
    Graph g = typed(text, t);
    EXPECT_EQ(check(g, stage_of(g, {300}, {0})), Outcome::Same) << dtype_name(t);
  }
}

TEST(LlvmCodegen, ArangeOnEveryDtype) {
  SKIP_WITHOUT_LLVM();
  for (DType t : kDTypes) {
    for (int64_t n : {1, 2, 50}) {
      std::string text = "graph @t {\n %s0 = storage T[2] arg 0\n %s1 = storage T[" + std::to_string(2 * n) +
                         "] arg 1\n op0 = arange(%s0[]{}+0, %s0[]{}+1) -> %s1[" + std::to_string(n) +
                         "]{2}+1\n return\n}";
      Graph g = typed(text, t);
      EXPECT_EQ(check(g, stage_of(g, {n}, {0})), Outcome::Same) << dtype_name(t) << " n=" << n;
    }
  }
}

TEST(LlvmCodegen, StridedNegativeAndBroadcastViewsWithRegisters) {
  SKIP_WITHOUT_LLVM();
  // t = x[::-1, 1::2] * row (a register); out.T = t + x[:, 0::2]; a 0-d constant scales it
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[1200] arg 0
    %s1 = storage f32[20] arg 1
    %s2 = storage f32[600] temp
    %s3 = storage f32[600] arg 2
    %s4 = storage f32[1] const 0x0000c03f
    %s5 = storage f32[600] temp
    op0 = multiply(%s0[30,20]{-40,2}+1161, %s1[30,20]{0,1}+0) -> %s2[30,20]{20,1}+0
    op1 = add(%s2[30,20]{20,1}+0, %s0[30,20]{40,2}+0) -> %s5[30,20]{20,1}+0
    op2 = multiply(%s5[30,20]{20,1}+0, %s4[30,20]{0,0}+0) -> %s3[30,20]{1,30}+0
    return
  })");
  for (int w : {1, 4, 8, 16})
    EXPECT_EQ(check(g, stage_of(g, {30, 20}, {0, 1, 2}, {2, 5}, w)), Outcome::Same) << "width " << w;
  // the same with the temps in memory
  EXPECT_EQ(check(g, stage_of(g, {30, 20}, {0, 1, 2}, {}, 8)), Outcome::Same);
}

TEST(LlvmCodegen, InPlaceWriteThroughAView) {
  SKIP_WITHOUT_LLVM();
  // boxes[:, 0::2] = clip(boxes[:, 0::2] * 2, 0, 10): reads and writes one view of one storage
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[400] arg 0
    %s1 = storage f32[2] const 0x0000000000002041
    %s2 = storage f32[200] temp
    %s3 = storage f32[200] temp
    %s4 = storage f32[200] temp
    op0 = add(%s0[100,2]{4,2}+0, %s0[100,2]{4,2}+0) -> %s2[100,2]{2,1}+0
    op1 = maximum(%s2[100,2]{2,1}+0, %s1[100,2]{0,0}+0) -> %s3[100,2]{2,1}+0
    op2 = minimum(%s3[100,2]{2,1}+0, %s1[100,2]{0,0}+1) -> %s4[100,2]{2,1}+0
    op3 = copy(%s4[100,2]{2,1}+0) -> %s0[100,2]{4,2}+0
    return
  })");
  EXPECT_EQ(check(g, stage_of(g, {100, 2}, {0, 1, 2, 3}, {2, 3, 4})), Outcome::Same);
}

TEST(LlvmCodegen, RefusesReadsTheLoopWouldReorder) {
  SKIP_WITHOUT_LLVM();
  // x[1:] = x[:-1]: NumPy reads everything first, one loop would smear x[0]
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[5] arg 0
    op0 = copy(%s0[4]{1}+0) -> %s0[4]{1}+1
    return
  })");
  EXPECT_THROW(compile_stage(g, stage_of(g, {4}, {0}), nullptr), std::invalid_argument);
  // x[:-1] = x[1:] reads ahead of its writes: fine
  Graph h = parse_graph(R"(graph @t {
    %s0 = storage f32[500] arg 0
    op0 = copy(%s0[499]{1}+1) -> %s0[499]{1}+0
    return
  })");
  EXPECT_EQ(check(h, stage_of(h, {499}, {0})), Outcome::Same);
}

TEST(LlvmCodegen, ReductionsOnEveryDtypeAndAxes) {
  SKIP_WITHOUT_LLVM();
  const std::vector<std::vector<int>> axes_list = {{2}, {1}, {0}, {0, 2}, {1, 2}, {0, 1}, {0, 1, 2}};
  for (OpCode op : ops_of_kind(OpKind::Reduce))
    for (DType t : kDTypes)
      for (const auto& axes : axes_list) {
        const DType u = op == OpCode::argmax || op == OpCode::argmin ? DType::Int64
                      : op == OpCode::any || op == OpCode::all       ? DType::Bool
                                                                     : t;
        Graph g = parse_graph(reduce_graph(op, t, u, {5, 7, 37}, axes));
        SCOPED_TRACE(std::string(op_name(op)) + " on " + dtype_name(t) + " axes " + std::to_string(axes.size()) +
                     " from " + std::to_string(axes[0]));
        const bool reassociates = is_float(t) && (op == OpCode::sum || op == OpCode::prod);
        EXPECT_EQ(check(g, stage_of(g, {5, 7, 37}, {0}), reassociates ? Tolerance{64, 1e4} : Tolerance{}), Outcome::Same);
      }
}

TEST(LlvmCodegen, ArgmaxKeepsTheFirstIndexAndTheFirstNaN) {
  SKIP_WITHOUT_LLVM();
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f64[12] arg 0
    %s1 = storage i64[3] arg 1
    %s2 = storage f64[3] arg 2
    %s3 = storage i64[4] arg 3
    op0 = argmax(%s0[3,4]{4,1}+0) axes=[1] -> %s1[3]{1}+0
    op1 = max(%s0[3,4]{4,1}+0) axes=[1] -> %s2[3]{1}+0
    op2 = argmin(%s0[3,4]{4,1}+0) axes=[0] -> %s3[4]{1}+0
    return
  })");
  double x[12] = {1, 5, 5, 2, NAN, 9, NAN, 9, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  int64_t am[3], ai[4];
  double mx[3];
  char* bases[4] = {(char*)x, (char*)am, (char*)mx, (char*)ai};
  for (int k = 0; k < 3; ++k) compile_stage(g, stage_of(g, {3, 4}, {k}), nullptr)->run(bases);
  EXPECT_EQ(std::vector<int64_t>(am, am + 3), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(mx[0], 5);
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(mx[2], -INFINITY);
  EXPECT_EQ(std::vector<int64_t>(ai, ai + 4), (std::vector<int64_t>{1, 2, 1, 2}));
}

// Row extremes (max, min, argmax, argmin over the innermost axis) run in two passes: the
// extreme, then a scan for the element the reference keeps. Rows drawn from a small alphabet
// (NaNs of both signs, signed zeros, infinities, integer extremes, many ties), some rows without
// NaN, read directly (unit, strided, reversed) or through a register (row buffer, or the one-pass
// fold past its size), at vector widths 1 to 64 in turn: bit for bit, NaN payloads included.
TEST(LlvmCodegen, RowExtremesKeepTheFirstNaNAndTheFirstOfEquals) {
  SKIP_WITHOUT_LLVM();
  std::mt19937 rng(99);
  // ascending: each row draws from a random window of them (a row of zeros of both signs, of one
  // repeated value, ...), NaNs (of both signs) added to some rows
  const double falpha[] = {-INFINITY, -3.5, -1.0, -1e-40, -0.0, 0.0, 1e-40, 1.0, 2.0, 3.5, INFINITY};
  const int64_t ialpha[] = {std::numeric_limits<int64_t>::min(), std::numeric_limits<int32_t>::min(), -7, -1, 0, 1, 2, 7,
                            std::numeric_limits<int32_t>::max(), std::numeric_limits<int64_t>::max()};
  const OpCode codes[] = {OpCode::max, OpCode::min, OpCode::argmax, OpCode::argmin};
  int cases = 0;
  for (DType t : kDTypes)
    for (int64_t n : {17, 80, 5000})
      for (int access = 0; access < 4; ++access) {  // 0 unit, 1 strided (a transpose), 2 reversed, 3 register
        const int64_t rows = n >= 5000 ? 3 : 11;
        const int64_t size = rows * n;
        std::ostringstream in;
        if (access == 1) in << "%s0[" << rows << "," << n << "]{1," << rows << "}+0";
        else if (access == 2) in << "%s0[" << rows << "," << n << "]{" << n << ",-1}+" << n - 1;
        else in << "%s0[" << rows << "," << n << "]{" << n << ",1}+0";
        for (OpCode code : codes) {
          const bool arg = code == OpCode::argmax || code == OpCode::argmin;
          const DType u = arg ? DType::Int64 : t;
          std::ostringstream text;
          text << "graph @t {\n  %s0 = storage " << dtype_name(t) << "[" << size << "] arg 0\n  %s1 = storage "
               << dtype_name(u) << "[" << rows << "] arg 1\n  %s2 = storage " << dtype_name(t) << "[" << size
               << "] temp\n";
          std::string reduced = in.str();
          if (access == 3) {  // a copy into a register keeps every bit, NaN payloads too
            text << "  op0 = copy(" << in.str() << ") -> %s2[" << rows << "," << n << "]{" << n << ",1}+0\n";
            reduced = "%s2[" + std::to_string(rows) + "," + std::to_string(n) + "]{" + std::to_string(n) + ",1}+0";
          }
          text << "  op" << (access == 3) << " = " << op_name(code) << "(" << reduced << ") axes=[1] -> %s1[" << rows
               << "]{1}+0\n  return\n}";
          Graph g = parse_graph(text.str());
          Memory ref(g), got(g);
          const int nan_rows = static_cast<int>(rng() % 3);  // 0: no NaN anywhere, 1: some rows, 2: many
          for (int64_t r = 0; r < rows; ++r) {
            const bool nan_row = nan_rows == 2 || (nan_rows == 1 && r % 2 == 0);
            const int fa = static_cast<int>(rng() % 11), fb = static_cast<int>(rng() % 11);
            const int ia = static_cast<int>(rng() % 10), ib = static_cast<int>(rng() % 10);
            for (int64_t j = 0; j < n; ++j) {
              const int64_t i = access == 1 ? j * rows + r : r * n + j;
              double f = falpha[std::min(fa, fb) + rng() % (std::abs(fa - fb) + 1)];
              if (nan_row && rng() % 16 == 0) f = rng() % 2 ? NAN : -NAN;  // a few NaNs per row
              const int64_t k = ialpha[std::min(ia, ib) + rng() % (std::abs(ia - ib) + 1)];
              const uint64_t payload = static_cast<uint64_t>(i);
              dispatch_dtype(t, [&](auto tag) {
                using T = decltype(tag);
                T& x = reinterpret_cast<T*>(ref.at(0))[i];
                if constexpr (std::is_same_v<T, bool>) {
                  x = rng() % 2;
                } else if constexpr (std::is_same_v<T, st::half>) {
                  x.bits = st::double_to_half(f);
                  if (std::isnan(f)) x.bits |= static_cast<uint16_t>(payload & 0x1ff);  // a payload of its own
                } else if constexpr (std::is_floating_point_v<T>) {
                  x = static_cast<T>(f);
                  if (std::isnan(f)) {  // a payload of its own per element
                    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
                    Bits b;
                    std::memcpy(&b, &x, sizeof b);
                    b |= static_cast<Bits>(payload & 0x3fffff);
                    std::memcpy(&x, &b, sizeof b);
                  }
                } else {
                  x = static_cast<T>(k);  // the low bits: each integer dtype's extremes among others
                }
              });
            }
          }
          std::memcpy(got.at(0), ref.at(0), size * itemsize(t));
          run_reference(g, ref.ptrs);
          {
            const int width = 1 << (cases % 7);  // 1, 2, ..., 64 in turn
            SCOPED_TRACE(std::string(op_name(code)) + " " + dtype_name(t) + " n=" + std::to_string(n) + " access " +
                         std::to_string(access) + " width " + std::to_string(width));
            Stage s = stage_of(g, {rows, n}, access == 3 ? std::vector<int>{0, 1} : std::vector<int>{0},
                               access == 3 ? std::vector<int>{2} : std::vector<int>{}, width);
            std::vector<char*> bases = got.bases();
            bases[2] = nullptr;
            std::memset(got.at(1), 0x5a, rows * itemsize(u));
            compile_stage(g, s, nullptr)->run(bases.data());
            ASSERT_EQ(std::memcmp(ref.at(1), got.at(1), rows * itemsize(u)), 0)
                << compare(g, 1, ref.at(1), got.at(1), {}) << "\n" << print_graph(g);
            ++cases;
          }
        }
      }
  EXPECT_EQ(cases, static_cast<int>(std::size(kDTypes)) * 3 * 4 * 4);
}

TEST(LlvmCodegen, ReductionWithAnElementwisePrologue) {
  SKIP_WITHOUT_LLVM();
  // sum((a - b[None, :]) ** 2, axis=1) and the same over axis 0, the difference in a register
  for (int axis : {0, 1}) {
    std::string text = R"(graph @t {
      %s0 = storage f32[6400] arg 0
      %s1 = storage f32[64] arg 1
      %s2 = storage f32[6400] temp
      %s3 = storage f32[6400] temp
      %s4 = storage f32[100] arg 2
      op0 = subtract(%s0[100,64]{64,1}+0, %s1[100,64]{0,1}+0) -> %s2[100,64]{64,1}+0
      op1 = multiply(%s2[100,64]{64,1}+0, %s2[100,64]{64,1}+0) -> %s3[100,64]{64,1}+0
      op2 = sum(%s3[100,64]{64,1}+0) axes=[A] -> %s4[N]{1}+0
      return
    })";
    text.replace(text.find("A]"), 1, std::to_string(axis));
    text.replace(text.find("[N]"), 3, axis == 1 ? "[100]" : "[64]");
    Graph g = parse_graph(text);
    EXPECT_EQ(check(g, stage_of(g, {100, 64}, {0, 1, 2}, {2, 3}), {64, 1e4}), Outcome::Same);
  }
}

TEST(LlvmCodegen, IntegerSumsWrap) {
  SKIP_WITHOUT_LLVM();
  Graph g = parse_graph(reduce_graph(OpCode::sum, DType::Int32, DType::Int32, {1000}, {0}));
  auto c = compile_stage(g, stage_of(g, {1000}, {0}), nullptr);
  std::vector<int32_t> x(1000, std::numeric_limits<int32_t>::max());
  int32_t out = 0;
  char* bases[2] = {reinterpret_cast<char*>(x.data()), reinterpret_cast<char*>(&out)};
  c->run(bases);
  EXPECT_EQ(out, static_cast<int32_t>(static_cast<uint32_t>(std::numeric_limits<int32_t>::max()) * 1000u));
}

TEST(LlvmCodegen, ReductionsWithoutIdentityOverEmptyAxesAreRefused) {
  SKIP_WITHOUT_LLVM();
  Graph g = parse_graph(reduce_graph(OpCode::argmax, DType::Float32, DType::Int64, {3, 0}, {1}));
  EXPECT_THROW(compile_stage(g, stage_of(g, {3, 0}, {0}), nullptr), std::invalid_argument);
  Graph h = parse_graph(reduce_graph(OpCode::sum, DType::Float32, DType::Float32, {3, 0}, {1}));
  EXPECT_EQ(check(h, stage_of(h, {3, 0}, {0})), Outcome::Same);
}

TEST(LlvmCodegen, ParallelStagesMatchTheReference) {
  SKIP_WITHOUT_LLVM();
  // 1000 x 150 points: elementwise, a row reduction and a column reduction
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[150000] arg 0
    %s1 = storage f32[150] arg 1
    %s2 = storage f32[150000] arg 2
    op0 = add(%s0[1000,150]{150,1}+0, %s1[1000,150]{0,1}+0) -> %s2[1000,150]{150,1}+0
    return
  })");
  EXPECT_EQ(check(g, stage_of(g, {1000, 150}, {0}, {}, 8, true)), Outcome::Same);
  for (OpCode op : {OpCode::sum, OpCode::argmax, OpCode::max}) {
    const DType u = op == OpCode::argmax ? DType::Int64 : DType::Float64;
    Graph r = parse_graph(reduce_graph(op, DType::Float64, u, {400, 30, 20}, {1}));
    EXPECT_EQ(check(r, stage_of(r, {400, 30, 20}, {0}, {}, 4, true), {64, 1e4}), Outcome::Same) << op_name(op);
    Graph c = parse_graph(reduce_graph(op, DType::Float64, u, {400, 300}, {1}));
    EXPECT_EQ(check(c, stage_of(c, {400, 300}, {0}, {}, 4, true), {64, 1e4}), Outcome::Same) << op_name(op);
  }
}

TEST(LlvmCodegen, CompiledStagesRunFromManyThreads) {
  SKIP_WITHOUT_LLVM();
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f64[200000] arg 0
    %s1 = storage f64[200000] arg 1
    op0 = sqrt(%s0[200000]{1}+0) -> %s1[200000]{1}+0
    return
  })");
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto c = compile_stage(g, stage_of(g, {200000}, {0}, {}, 4, true), nullptr);  // compiles concurrently too
      std::vector<double> x(200000), y(200000);
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i + t);
      char* bases[2] = {reinterpret_cast<char*>(x.data()), reinterpret_cast<char*>(y.data())};
      for (int rep = 0; rep < 5; ++rep) c->run(bases);
      for (size_t i = 0; i < x.size(); ++i)
        if (y[i] != std::sqrt(x[i])) ++wrong;
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(LlvmCodegen, ContiguousLoopsVectorize) {
  SKIP_WITHOUT_LLVM();
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[1024] arg 0
    %s1 = storage f32[1024] arg 1
    %s2 = storage f32[1024] arg 2
    op0 = add(%s0[1024]{1}+0, %s1[1024]{1}+0) -> %s2[1024]{1}+0
    return
  })");
  const std::string ir = compile_stage(g, stage_of(g, {1024}, {0}, {}, 8), nullptr)->llvm_ir();
  EXPECT_NE(ir.find("<8 x float>"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("fma"), std::string::npos);
  const std::string scalar = compile_stage(g, stage_of(g, {1024}, {0}, {}, 1), nullptr)->llvm_ir();
  EXPECT_EQ(scalar.find("x float>"), std::string::npos) << scalar;
}

TEST(LlvmCodegen, AShortLoopAroundAnUnrolledInnermostOneStaysScalar) {
  SKIP_WITHOUT_LLVM();
  // grid_anchors' base[None] + shifts[:, None] over (n, 3, 4): LLVM unrolls the loop of 4 whole,
  // which leaves the loop of 3 innermost; vectorized, its accesses 4 apart and its 3 trips of 4
  // lanes became masked gathers and scatters, 12x slower than a contiguous add
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[12] arg 0
    %s1 = storage f32[256] arg 1
    %s2 = storage f32[768] arg 2
    op0 = add(%s0[64,3,4]{0,4,1}+0, %s1[64,3,4]{4,0,1}+0) -> %s2[64,3,4]{12,4,1}+0
    return
  })");
  std::string ir;
  EXPECT_EQ(check(g, stage_of(g, {64, 3, 4}, {0}, {}, 1), {}, false, &ir), Outcome::Same);
  EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("masked.scatter"), std::string::npos) << ir;
}

TEST(LlvmCodegen, Float16OpsOnEveryHalfKeepTheirVectors) {
  SKIP_WITHOUT_LLVM();
  // x86 without AVX512-FP16 took fneg, fcmp, frem and the rounding, sign, min/max and sqrt
  // intrinsics of half vectors apart lane by lane (half_ops.cc): every half, and every half against
  // a shuffle of them, computed on float lanes give the reference's bits (signaling NaNs quieted)
  constexpr int64_t n = 65536;
  std::vector<uint16_t> every(n), shuffled(n);
  for (int64_t i = 0; i < n; ++i) every[i] = shuffled[i] = static_cast<uint16_t>(i);
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
#if defined(__x86_64__)
  const bool split = !__builtin_cpu_supports("avx512fp16");
#else
  const bool split = false;
#endif
  const std::regex lane_op("(fneg|fcmp [a-z]+|frem|select <[0-9]+ x i1>,) <[0-9]+ x half>|call <[0-9]+ x half> @llvm\\.");
  auto run = [&](const std::string& text, OpCode op) {
    Graph g = parse_graph(text);
    SCOPED_TRACE(op_name(op));
    Memory ref(g), got(g);
    for (int k = 0; k < 2 && g.storages[k].dtype == DType::Float16; ++k) {
      std::memcpy(ref.at(k), (k ? shuffled : every).data(), n * 2);
      std::memcpy(got.at(k), (k ? shuffled : every).data(), n * 2);
    }
    run_reference(g, ref.ptrs);
    auto c = compile_stage(g, stage_of(g, {n}, {0}, {}, 32), nullptr);
    if (split) EXPECT_FALSE(std::regex_search(c->llvm_ir(), lane_op)) << c->llvm_ir();
    std::vector<char*> bases = got.bases();
    c->run(bases.data());
    const int out = static_cast<int>(g.storages.size()) - 1;
    EXPECT_EQ(compare(g, out, ref.at(out), got.at(out), {}), "");
  };
  for (OpCode op : {OpCode::negative, OpCode::absolute, OpCode::sqrt, OpCode::floor, OpCode::ceil, OpCode::trunc,
                    OpCode::rint, OpCode::sign, OpCode::isnan, OpCode::isfinite, OpCode::signbit})
    run(unary_graph(op, DType::Float16, is_predicate(op) ? DType::Bool : DType::Float16, n), op);
  for (OpCode op : {OpCode::minimum, OpCode::maximum, OpCode::fmin, OpCode::fmax, OpCode::fmod,
                    OpCode::less, OpCode::equal, OpCode::not_equal, OpCode::greater_equal})
    run(binary_graph(op, DType::Float16, is_comparison(op) ? DType::Bool : DType::Float16, n), op);
}

// The distinct alias scopes the memory accesses of a stage's IR name.
size_t alias_scopes(const std::string& ir) {
  std::set<std::string> scopes;
  const std::regex scope("!alias.scope (![0-9]+)");
  for (auto it = std::sregex_iterator(ir.begin(), ir.end(), scope); it != std::sregex_iterator(); ++it)
    scopes.insert((*it)[1]);
  return scopes.size();
}

TEST(LlvmCodegen, WritesToOtherColumnsOfAStorageLeaveItsReadColumnInARegister) {
  SKIP_WITHOUT_LLVM();
  // x[:, 5:] *= x[:, 4:5]: the columns written never hold the one read, so the read is loaded
  // once per row and the row vectorizes; x[:, :-1] *= x[:, 1:] reads what it writes, so its
  // accesses keep the storage's one alias scope (and the reference's answer)
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[2040] arg 0
    op0 = multiply(%s0[24,80]{85,1}+5, %s0[24,80]{85,0}+4) -> %s0[24,80]{85,1}+5
    return
  })");
  std::string ir;
  EXPECT_EQ(check(g, stage_of(g, {24, 80}, {0}), {}, false, &ir), Outcome::Same);
  EXPECT_NE(ir.find("<8 x float>"), std::string::npos) << ir;
  EXPECT_EQ(alias_scopes(ir), 2u) << ir;
  Graph shifted = parse_graph(R"(graph @t {
    %s0 = storage f32[2040] arg 0
    op0 = multiply(%s0[24,84]{85,1}+0, %s0[24,84]{85,1}+1) -> %s0[24,84]{85,1}+0
    return
  })");
  EXPECT_EQ(check(shifted, stage_of(shifted, {24, 84}, {0}), {}, false, &ir), Outcome::Same);
  EXPECT_EQ(alias_scopes(ir), 1u) << ir;
}

TEST(LlvmCodegen, TranscendentalsCallLibmvecInVectorLoops) {
  SKIP_WITHOUT_LLVM();
  // (float32 log is NumPy's algorithm inline: float32 log2 stands for the libm ones)
  for (int width : {8, 16}) {
    Graph g = parse_graph(unary_graph(OpCode::log2, DType::Float32, DType::Float32, 4000));
    std::string ir;
    EXPECT_EQ(check(g, stage_of(g, {4000}, {0}, {}, width), {4}, false, &ir), Outcome::Same);
    if (ir.find("_ZGV") == std::string::npos) GTEST_SKIP() << "no libmvec on this host";
    // 16 lanes: the AVX-512 variant where LLVM keeps 512-bit vectors whole, else two AVX2 calls
    const bool wide = width == 16 && host_vector_width(DType::Float32) >= 16;
    EXPECT_NE(ir.find(wide ? "call <16 x float> @_ZGVeN16v_log2f" : "call <8 x float> @_ZGVdN8v_log2f"), std::string::npos) << ir;
  }
  Graph g = parse_graph(binary_graph(OpCode::arctan2, DType::Float64, DType::Float64, 4000));
  std::string ir;
  EXPECT_EQ(check(g, stage_of(g, {4000}, {0}, {}, 4), {4}, false, &ir), Outcome::Same);
  EXPECT_NE(ir.find("_ZGVdN4vv_atan2"), std::string::npos) << ir;
}

// A stand-in for NumPy's loop of log on float64 (ufunc loop ABI): 2x + 0.25, so that its
// results show who computed them; it keeps the most elements one call passed.
std::atomic<intptr_t> widest_log_call{0};
void fake_numpy_log(char** args, const intptr_t* dims, const intptr_t* steps, void*) {
  if (dims[0] > widest_log_call) widest_log_call = dims[0];
  for (intptr_t i = 0; i < dims[0]; ++i) {
    const double x = *reinterpret_cast<const double*>(args[0] + i * steps[0]);
    *reinterpret_cast<double*>(args[1] + i * steps[1]) = 2 * x + 0.25;
  }
}

TEST(LlvmCodegen, AnInstalledNumPyLoopComputesItsOpInVectorLoopsAndTheReference) {
  SKIP_WITHOUT_LLVM();
  set_numpy_loop(OpCode::log, DType::Float64, &fake_numpy_log, nullptr);
  EXPECT_TRUE(numpy_decides(OpCode::log, DType::Float64));
  EXPECT_FALSE(numpy_decides(OpCode::log, DType::Float32));
  EXPECT_FALSE(numpy_computes(OpCode::exp, DType::Float32)) << "float32 exp is NumPy's algorithm inline";
  Graph g = parse_graph(unary_graph(OpCode::log, DType::Float64, DType::Float64, 1003));
  std::string ir;
  widest_log_call = 0;
  EXPECT_EQ(check(g, stage_of(g, {1003}, {0}, {}, 8), {}, false, &ir), Outcome::Same);
  EXPECT_NE(ir.find("call <8 x double> @strider_vm_numpy_log_f64_8"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("@_ZGVeN8v_log"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("@_ZGVdN4v_log"), std::string::npos) << ir;
  EXPECT_GE(widest_log_call.load(), 8) << "the vector loop hands the loop whole vectors";
  Memory m(g);
  const double x[3] = {1.0, -3.5, 1e300};
  std::memcpy(m.at(0), x, sizeof x);
  compile_stage(g, stage_of(g, {1003}, {0}, {}, 8), nullptr)->run(m.bases().data());
  EXPECT_EQ(reinterpret_cast<const double*>(m.at(1))[0], 2.25);
  EXPECT_EQ(reinterpret_cast<const double*>(m.at(1))[1], -6.75);
  EXPECT_EQ(reinterpret_cast<const double*>(m.at(1))[2], 2e300);
  set_numpy_loop(OpCode::log, DType::Float64, nullptr, nullptr);
  EXPECT_FALSE(numpy_decides(OpCode::log, DType::Float64));
}

TEST(LlvmCodegen, Float32ExpIsNumPysArithmeticInVectorLoops) {
  // ops/scalar_ops.inc's exp for float32 (NumPy's SIMD algorithm): fma and a division per lane,
  // no call, so it vectorizes wherever the loop does
  SKIP_WITHOUT_LLVM();
  Graph g = parse_graph(unary_graph(OpCode::exp, DType::Float32, DType::Float32, 4000));
  std::string ir;
  EXPECT_EQ(check(g, stage_of(g, {4000}, {0}, {}, 8), {4}, false, &ir), Outcome::Same);
  EXPECT_NE(ir.find("x float> @llvm.fma.v"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("expf"), std::string::npos) << ir;
}

TEST(LlvmCodegen, Float32ExpAndLogAreTheReferencesBitForBitAtEitherEffort) {
  // a first call runs their quick kernels while the O3 ones compile (driver's interpreted_alike):
  // the quick code, the vectorized O3 code and the reference must agree to the bit, specials,
  // subnormals and both ends of exp's range included
  SKIP_WITHOUT_LLVM();
  std::vector<float> x;
  for (float v : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, 1e-40f, 1.17549435e-38f, 88.7228394f, 88.7228317f,
                  -103.972084f, -103.972076f, -87.3365479f, 3.40282347e38f, -1.0f, 0.707106769f, 0.707106829f})
    x.push_back(v);
  std::mt19937 rng(11);
  while (x.size() < 4099) {  // an odd count: a vector loop's remainder runs scalar code
    const float e = std::uniform_real_distribution<float>(-110.0f, 100.0f)(rng);
    x.push_back(x.size() % 2 ? e : std::ldexp(std::uniform_real_distribution<float>(0.5f, 1.0f)(rng), static_cast<int>(e * 1.4f)));
  }
  const int64_t n = static_cast<int64_t>(x.size());
  for (OpCode op : {OpCode::exp, OpCode::log}) {
    Graph g = parse_graph(unary_graph(op, DType::Float32, DType::Float32, n));
    const Stage s = stage_of(g, {n}, {0}, {}, 8);
    Memory ref(g);
    std::memcpy(ref.at(0), x.data(), 4 * x.size());
    run_reference(g, ref.ptrs);
    for (Effort effort : {Effort::kFull, Effort::kQuick}) {
      Memory run(g);
      std::memcpy(run.at(0), x.data(), 4 * x.size());
      compile_stage(g, s, nullptr, effort)->run(run.bases().data());
      for (int64_t i = 0; i < n; ++i) {
        uint32_t want, got;
        std::memcpy(&want, ref.at(1) + 4 * i, 4);
        std::memcpy(&got, run.at(1) + 4 * i, 4);
        ASSERT_EQ(got, want) << op_name(op) << "(" << x[i] << ") " << (effort == Effort::kQuick ? "quick" : "full");
      }
    }
  }
}

TEST(LlvmCodegen, RunTimeExtentsBoundTheLoops) {
  SKIP_WITHOUT_LLVM();
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[16] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage f32[16] arg 2
    %s3 = storage f32[2] arg 3
    op0 = negative(%s0[?%s1<=8,2]{2,1}+0) -> %s2[?%s1<=8,2]{2,1}+0
    op1 = sum(%s0[?%s1<=8,2]{2,1}+0) axes=[0] -> %s3[2]{1}+0
    return
  })");
  float x[16], y[16], s[2];
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i + 1), y[i] = 0;
  int64_t n = 3;
  char* bases[4] = {(char*)x, (char*)&n, (char*)y, (char*)s};
  auto neg = compile_stage(g, stage_of(g, {8, 2}, {0}), nullptr);
  auto sum = compile_stage(g, stage_of(g, {8, 2}, {1}), nullptr);
  neg->run(bases);
  sum->run(bases);
  EXPECT_EQ(y[5], -6);
  EXPECT_EQ(y[6], 0);
  EXPECT_EQ(s[0], 1 + 3 + 5);
  n = 100;  // clamped to the static bound
  neg->run(bases);
  EXPECT_EQ(y[15], -16);
  // the entry reads the extent of the axis it splits across the thread pool
  auto parallel = compile_stage(g, stage_of(g, {8, 2}, {0}, {}, 8, true), nullptr);
  for (float& v : y) v = 0;
  n = 5;
  parallel->run(bases);
  EXPECT_EQ(y[9], -10);
  EXPECT_EQ(y[10], 0);
  n = -4;  // clamped to 0
  parallel->run(bases);
  EXPECT_EQ(y[0], -1);
}

TEST(LlvmCodegen, ARunTimeExtentOfFewPointsRunsItsParallelStageOnTheCaller) {
  SKIP_WITHOUT_LLVM();
  // a bound worth the pool: a call's extent below kParallelMinPoints runs serially, above it on
  // the pool; both cover exactly the extent's rows
  constexpr int64_t kRows = 300000;
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[300000] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage f32[300000] arg 2
    op0 = negative(%s0[?%s1<=300000]{1}+0) -> %s2[?%s1<=300000]{1}+0
    return
  })");
  std::vector<float> x(kRows), y(kRows);
  for (int64_t i = 0; i < kRows; ++i) x[i] = static_cast<float>(i % 1000);
  int64_t n = 0;
  char* bases[3] = {(char*)x.data(), (char*)&n, (char*)y.data()};
  auto stage = compile_stage(g, stage_of(g, {kRows}, {0}, {}, 8, true), nullptr);
  for (int64_t rows : {int64_t{7}, kParallelMinPoints + 12345}) {
    std::fill(y.begin(), y.end(), 1.0f);
    n = rows;
    stage->run(bases);
    EXPECT_EQ(y[rows - 1], -x[rows - 1]) << rows;
    EXPECT_EQ(y[rows], 1.0f) << rows;
  }
}

TEST(LlvmCodegen, AMaxOverARunTimeExtentCompilesWhereCheckNonemptyPassedItsLength) {
  SKIP_WITHOUT_LLVM();
  // a length check_nonempty passed through is at least 1: the fold has an element; any other
  // run-time extent may be 0, which a max cannot fold
  const char* text = R"(graph @t {
    %s0 = storage f32[100] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage i64[1] arg 2
    %s3 = storage f32[1] arg 3
    op0 = check_nonempty(%s1[]{}+0) axes=[0] -> %s2[]{}+0
    op1 = max(%s0[?%s2<=100]{1}+0) axes=[0] -> %s3[]{}+0
    op2 = max(%s0[?%s1<=100]{1}+0) axes=[0] -> %s3[]{}+0
    return
  })";
  Graph g = parse_graph(text);
  std::vector<float> x(100);
  for (int i = 0; i < 100; ++i) x[i] = static_cast<float>((i * 37) % 101);
  int64_t n = 7, checked = 7;
  float out = 0;
  char* bases[4] = {(char*)x.data(), (char*)&n, (char*)&checked, (char*)&out};
  compile_stage(g, stage_of(g, {100}, {1}), nullptr)->run(bases);
  EXPECT_EQ(out, *std::max_element(x.begin(), x.begin() + 7));
  try {
    compile_stage(g, stage_of(g, {100}, {2}), nullptr);
    ADD_FAILURE() << "a max over an unchecked run-time extent compiled";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("may be zero"), std::string::npos) << e.what();
  }
}

// Row extremes over a run-time length (soft-NMS's argmax over the rest of a column, every trip
// shorter): lengths across whole vectors and the tail, ties and NaNs, the first of each as
// NumPy's answer.
TEST(LlvmCodegen, RowExtremesOverARunTimeLength) {
  SKIP_WITHOUT_LLVM();
  std::mt19937 rng(7);
  const float alpha[] = {-2.0f, -0.0f, 0.0f, 1.0f, 3.0f, 3.0f, NAN};
  for (OpCode code : {OpCode::max, OpCode::min, OpCode::argmax, OpCode::argmin}) {
    const bool arg = code == OpCode::argmax || code == OpCode::argmin, up = code == OpCode::max || code == OpCode::argmax;
    std::ostringstream text;
    text << "graph @t {\n  %s0 = storage f32[50] arg 0\n  %s1 = storage i64[1] arg 1\n  %s2 = storage i64[1] arg 2\n"
         << "  %s3 = storage " << (arg ? "i64" : "f32") << "[1] arg 3\n"
         << "  op0 = check_nonempty(%s1[]{}+0) axes=[0] -> %s2[]{}+0\n"
         << "  op1 = " << op_name(code) << "(%s0[?%s2<=50]{1}+0) axes=[0] -> %s3[]{}+0\n  return\n}";
    Graph g = parse_graph(text.str());
    auto stage = compile_stage(g, stage_of(g, {50}, {1}), nullptr);
    for (int64_t n = 1; n <= 50; ++n)
      for (int draw = 0; draw < 4; ++draw) {
        std::vector<float> x(50, 99.0f);  // past the length: larger than anything in it
        for (int64_t i = 0; i < n; ++i) x[i] = alpha[rng() % (draw == 0 ? 6 : 7)];
        int64_t length = n, checked = n;
        int64_t out_i = -1;
        float out_f = 0;
        char* bases[4] = {(char*)x.data(), (char*)&length, (char*)&checked, arg ? (char*)&out_i : (char*)&out_f};
        stage->run(bases);
        int64_t k = 0;  // the first NaN, else the first extreme
        for (int64_t i = 0; i < n; ++i) {
          if (std::isnan(x[k])) break;
          if (std::isnan(x[i]) || (up ? x[i] > x[k] : x[i] < x[k])) k = i;
        }
        if (arg) {
          EXPECT_EQ(out_i, k) << op_name(code) << " n=" << n;
        } else {
          EXPECT_TRUE(std::isnan(x[k]) ? std::isnan(out_f) : out_f == x[k]) << op_name(code) << " n=" << n;
        }
      }
  }
}

TEST(LlvmCodegen, StagesFromTheFusionPassMatchTheReference) {
  SKIP_WITHOUT_LLVM();
  // a delta2bbox-like chain: strided reads, register temps, in-place writes into the argument
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[4000] arg 0
    %s1 = storage f32[4000] arg 1
    %s2 = storage f32[2000] temp
    %s3 = storage f32[2000] temp
    %s4 = storage f32[1] const 0x0000003f
    %s5 = storage f32[2000] temp
    op0 = exp(%s1[1000,2]{4,1}+2) -> %s2[1000,2]{2,1}+0
    op1 = multiply(%s2[1000,2]{2,1}+0, %s4[1000,2]{0,0}+0) -> %s3[1000,2]{2,1}+0
    op2 = add(%s3[1000,2]{2,1}+0, %s0[1000,2]{4,1}+0) -> %s5[1000,2]{2,1}+0
    op3 = copy(%s5[1000,2]{2,1}+0) -> %s0[1000,2]{4,1}+2
    return
  })");
  Memory ref(g), got(g);
  fill(DType::Float32, ref.at(0), 4000, 1);
  fill(DType::Float32, ref.at(1), 4000, 2);
  std::memcpy(got.at(0), ref.at(0), 16000);
  std::memcpy(got.at(1), ref.at(1), 16000);
  Program jit = lower(g);
  run_reference(g, ref.ptrs);
  execute(jit, got.ptrs);
  EXPECT_EQ(compare(g, 0, ref.at(0), got.at(0), {4, 10}), "");
  for (size_t i = 0; i < jit.kernels.size(); ++i) EXPECT_TRUE(jit.kernels[i]) << jit.fallbacks[i];
}

TEST(LlvmCodegen, ChecksAndAppendsOfOneElementRunInTheirZeroDStage) {
  SKIP_WITHOUT_LLVM();
  // an NMS loop's trip: i = order[0] checked against the order's length, keep.append(i), a read
  // at i, a length checked nonempty and the list's length checked against it; the argument
  // writes before a failing check happen and those after it do not, and each failure is the
  // library's own exception
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage i64[1] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage f32[8] arg 2
    %s3 = storage f32[1] arg 3
    %s4 = storage i64[1] temp
    %s5 = storage i64[1] arg 4
    %s6 = storage i64[4] arg 5
    %s7 = storage f32[1] arg 6
    %s8 = storage i64[1] const 0x0100000000000000
    %s9 = storage i64[1] arg 7
    %s10 = storage i32[2] const 0x2800000029000000
    %s11 = storage i64[1] temp
    %s12 = storage i64[1] temp
    %s13 = storage i64[1] temp
    op0 = copy(%s2[]{}+7) -> %s3[]{}+0
    op1 = check_index(%s0[]{}+0, %s1[]{}+0) axes=[0] -> %s4[]{}+0
    op2 = append(%s5[]{}+0, %s4[]{}+0) -> %s6[4]{1}+0
    op3 = add(%s5[]{}+0, %s8[]{}+0) -> %s13[]{}+0
    op4 = copy(%s13[]{}+0) -> %s5[]{}+0
    op5 = take(%s2[8]{1}+0, %s4[]{}+0) -> %s7[]{}+0
    op6 = check_nonempty(%s9[]{}+0) axes=[2] -> %s11[]{}+0
    op7 = check_equal(%s5[]{}+0, %s11[]{}+0, %s10[2]{1}+0) -> %s12[]{}+0
    op8 = copy(%s12[]{}+0) -> %s9[]{}+0
    return
  })");
  Program jit = lower(g);
  ASSERT_EQ(jit.stages.stages.size(), 1u) << print_stages(g, jit.stages);
  ASSERT_TRUE(jit.kernels[0]) << jit.fallbacks[0];
  ASSERT_EQ(print_graph(jit.graph), print_graph(g));  // the same storages: one Memory layout serves both
  auto outcome = [&](Memory& m, auto&& run) {
    try {
      run(m);
    } catch (const LoopBoundExceeded& e) {
      return std::string("LoopBoundExceeded: ") + e.what();
    } catch (const std::out_of_range& e) {
      return std::string("IndexError: ") + e.what();
    } catch (const std::invalid_argument& e) {
      return std::string("ValueError: ") + e.what();
    }
    return std::string("ok");
  };
  int failures = 0;
  for (int64_t i : {-9, -8, -1, 0, 5, 7, 8})
    for (int64_t length : {-1, 0, 2, 3, 4})
      for (int64_t expected : {-1, 0, 3, 4}) {
        Memory ref(g), got(g);
        for (Memory* m : {&ref, &got}) {
          fill(DType::Float32, m->at(2), 8, 3);
          *reinterpret_cast<int64_t*>(m->at(0)) = i;
          *reinterpret_cast<int64_t*>(m->at(1)) = 8;
          *reinterpret_cast<int64_t*>(m->at(5)) = length;
          *reinterpret_cast<int64_t*>(m->at(9)) = expected;
        }
        const std::string want = outcome(ref, [&](Memory& m) { run_reference(g, m.ptrs); });
        const std::string have = outcome(got, [&](Memory& m) { execute(jit, m.ptrs); });
        failures += want != "ok";
        EXPECT_EQ(have, want) << "i=" << i << " length=" << length << " expected=" << expected;
        for (int s : {3, 5, 6, 7, 9})
          EXPECT_EQ(compare(g, s, ref.at(s), got.at(s), {}), "") << "i=" << i << " length=" << length << " expected=" << expected;
      }
  EXPECT_GT(failures, 20);  // every check fails somewhere
}

TEST(LlvmCodegen, APutOfOneElementRowsRunsInTheStageThatComputesItsValues) {
  SKIP_WITHOUT_LLVM();
  // Soft-NMS's trip over rows of 5: `x[b:b + n, 4] *= x[b:b + n, 0] - x[b:b + n, 2]` by the
  // positions (arange + b) * 5 over a run-time length, the scores written back in the stage that
  // gathers the columns (fuse_stages' scatter), then `a[k] = a[k] + 1` at a 0-d index in a 0-d
  // stage; every row start and length, at every effort, against the reference
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[40] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage i64[1] arg 2
    %s3 = storage f32[8] arg 3
    %s4 = storage i64[1] arg 4
    %s5 = storage i64[1] const 0x0000000000000000
    %s6 = storage i64[1] const 0x0100000000000000
    %s7 = storage i64[1] const 0x0500000000000000
    %s8 = storage i64[8] temp
    %s9 = storage i64[8] temp
    %s10 = storage i64[8] temp
    %s11 = storage f32[8] temp
    %s12 = storage f32[8] temp
    %s13 = storage f32[8] temp
    %s14 = storage f32[8] temp
    %s15 = storage f32[8] temp
    %s16 = storage f32[1] temp
    %s17 = storage f32[1] const 0x0000803f
    %s18 = storage f32[1] temp
    op0 = arange(%s5[]{}+0, %s6[]{}+0) -> %s8[?%s2<=8]{1}+0
    op1 = add(%s8[?%s2<=8]{1}+0, %s1[?%s2<=8]{0}+0) -> %s9[?%s2<=8]{1}+0
    op2 = multiply(%s9[?%s2<=8]{1}+0, %s7[?%s2<=8]{0}+0) -> %s10[?%s2<=8]{1}+0
    op3 = take(%s0[40]{1}+0, %s10[?%s2<=8]{1}+0) -> %s11[?%s2<=8]{1}+0
    op4 = take(%s0[38]{1}+2, %s10[?%s2<=8]{1}+0) -> %s12[?%s2<=8]{1}+0
    op5 = subtract(%s11[?%s2<=8]{1}+0, %s12[?%s2<=8]{1}+0) -> %s13[?%s2<=8]{1}+0
    op6 = take(%s0[36]{1}+4, %s10[?%s2<=8]{1}+0) -> %s14[?%s2<=8]{1}+0
    op7 = multiply(%s14[?%s2<=8]{1}+0, %s13[?%s2<=8]{1}+0) -> %s15[?%s2<=8]{1}+0
    op8 = put(%s10[?%s2<=8]{1}+0, %s15[?%s2<=8]{1}+0) -> %s0[36]{1}+4
    op9 = take(%s3[8]{1}+0, %s4[]{}+0) -> %s16[]{}+0
    op10 = add(%s16[]{}+0, %s17[]{}+0) -> %s18[]{}+0
    op11 = put(%s4[]{}+0, %s18[]{}+0) -> %s3[8]{1}+0
    return
  })");
  Program jit = lower(g);
  // (the 0-d stage, which touches nothing the other does, runs before it)
  ASSERT_EQ(jit.stages.stages.size(), 2u) << print_stages(g, jit.stages);
  ASSERT_EQ(jit.stages.stages[0].op_ids.size(), 3u) << print_stages(g, jit.stages);
  ASSERT_EQ(jit.stages.stages[1].op_ids.size(), 9u) << print_stages(g, jit.stages);
  std::vector<std::unique_ptr<CompiledStage>> kernels;
  for (const Stage& s : jit.stages.stages)
    for (Effort effort : {Effort::kFull, Effort::kLoops, Effort::kQuick}) kernels.push_back(compile_stage(jit.graph, s, nullptr, effort));
  for (int64_t b = 0; b < 8; ++b)
    for (int64_t n = 0; b + n <= 8; ++n) {
      Memory ref(g);
      fill(DType::Float32, ref.at(0), 40, 5);
      fill(DType::Float32, ref.at(3), 8, 6);
      *reinterpret_cast<int64_t*>(ref.at(1)) = b;
      *reinterpret_cast<int64_t*>(ref.at(2)) = n;
      *reinterpret_cast<int64_t*>(ref.at(4)) = 7 - b;
      auto copy_of = [&] {
        auto m = std::make_unique<Memory>(g);
        for (int s = 0; s <= 4; ++s) std::memcpy(m->at(s), ref.at(s), g.storages[s].size * itemsize(g.storages[s].dtype));
        return m;
      };
      auto pipeline = copy_of();
      execute(jit, pipeline->ptrs);
      std::vector<std::unique_ptr<Memory>> efforts;
      for (int effort = 0; effort < 3; ++effort) {
        efforts.push_back(copy_of());
        for (size_t k = 0; k < 2; ++k) {
          std::vector<char*> bases = efforts.back()->bases();
          for (int r : jit.stages.stages[k].registers) bases[r] = nullptr;
          kernels[k * 3 + effort]->run(bases.data());
        }
      }
      run_reference(g, ref.ptrs);
      for (int s : {0, 3}) {
        EXPECT_EQ(compare(g, s, ref.at(s), pipeline->at(s), {}), "") << "b=" << b << " n=" << n;
        for (int effort = 0; effort < 3; ++effort)
          EXPECT_EQ(compare(g, s, ref.at(s), efforts[effort]->at(s), {}), "") << "b=" << b << " n=" << n << " effort " << effort;
      }
    }
}

TEST(LlvmCodegen, APutIntoItsOwnRowsSplitAcrossThreadsMatchesTheReference) {
  SKIP_WITHOUT_LLVM();
  // Soft-NMS's Gaussian decay over 4,096 rows of 5, `x[b:b + n, 4] *= exp(x[b:b + n, 0] -
  // x[b:b + n, 2])`: enough work a point (exp, three gathers, a scatter) for the pool's warm
  // workers from a few thousand rows; each point gathers and scatters only its own row, so every
  // split of the rows among threads writes what one thread does, bit for bit. Each length runs
  // three times in a row: the later calls find the workers warm.
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f32[20480] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage i64[1] arg 2
    %s3 = storage i64[1] const 0x0000000000000000
    %s4 = storage i64[1] const 0x0100000000000000
    %s5 = storage i64[1] const 0x0500000000000000
    %s6 = storage i64[4096] temp
    %s7 = storage i64[4096] temp
    %s8 = storage i64[4096] temp
    %s9 = storage f32[4096] temp
    %s10 = storage f32[4096] temp
    %s11 = storage f32[4096] temp
    %s12 = storage f32[4096] temp
    %s13 = storage f32[4096] temp
    %s14 = storage f32[4096] temp
    op0 = arange(%s3[]{}+0, %s4[]{}+0) -> %s6[?%s2<=4096]{1}+0
    op1 = add(%s6[?%s2<=4096]{1}+0, %s1[?%s2<=4096]{0}+0) -> %s7[?%s2<=4096]{1}+0
    op2 = multiply(%s7[?%s2<=4096]{1}+0, %s5[?%s2<=4096]{0}+0) -> %s8[?%s2<=4096]{1}+0
    op3 = take(%s0[20480]{1}+0, %s8[?%s2<=4096]{1}+0) -> %s9[?%s2<=4096]{1}+0
    op4 = take(%s0[20478]{1}+2, %s8[?%s2<=4096]{1}+0) -> %s10[?%s2<=4096]{1}+0
    op5 = subtract(%s9[?%s2<=4096]{1}+0, %s10[?%s2<=4096]{1}+0) -> %s11[?%s2<=4096]{1}+0
    op6 = exp(%s11[?%s2<=4096]{1}+0) -> %s12[?%s2<=4096]{1}+0
    op7 = take(%s0[20476]{1}+4, %s8[?%s2<=4096]{1}+0) -> %s13[?%s2<=4096]{1}+0
    op8 = multiply(%s13[?%s2<=4096]{1}+0, %s12[?%s2<=4096]{1}+0) -> %s14[?%s2<=4096]{1}+0
    op9 = put(%s8[?%s2<=4096]{1}+0, %s14[?%s2<=4096]{1}+0) -> %s0[20476]{1}+4
    return
  })");
  Program jit = lower(g);
  ASSERT_EQ(jit.stages.stages.size(), 1u) << print_stages(g, jit.stages);
  ASSERT_TRUE(jit.stages.stages[0].schedule.parallel) << print_stages(g, jit.stages);
  for (auto [b, n] : {std::pair<int64_t, int64_t>{0, 0}, {0, 1}, {3, 100}, {0, 2000}, {1, 3000}, {0, 4096}, {96, 4000}})
    for (int call = 0; call < 3; ++call) {
      Memory ref(g), got(g);
      for (Memory* m : {&ref, &got}) {
        fill(DType::Float32, m->at(0), 20480, 7 + call);
        *reinterpret_cast<int64_t*>(m->at(1)) = b;
        *reinterpret_cast<int64_t*>(m->at(2)) = n;
      }
      run_reference(g, ref.ptrs);
      execute(jit, got.ptrs);
      EXPECT_EQ(compare(g, 0, ref.at(0), got.at(0), {}), "") << "b=" << b << " n=" << n << " call " << call;
    }
}

TEST(LlvmCodegen, ScalarEmptyAndUnrolledStages) {
  SKIP_WITHOUT_LLVM();
  Graph scalar = parse_graph(R"(graph @t {
    %s0 = storage f64[3] arg 0
    %s1 = storage f64[1] arg 1
    op0 = hypot(%s0[]{}+0, %s0[]{}+2) -> %s1[]{}+0
    return
  })");
  EXPECT_EQ(check(scalar, stage_of(scalar, {}, {0})), Outcome::Same);
  Graph empty = parse_graph(R"(graph @t {
    %s0 = storage f32[10] arg 0
    %s1 = storage f32[10] arg 1
    op0 = negative(%s0[0,5]{5,1}+0) -> %s1[0,5]{5,1}+0
    return
  })");
  EXPECT_EQ(check(empty, stage_of(empty, {0, 5}, {0}, {}, 8, true)), Outcome::Same);
  Graph g = parse_graph(binary_graph(OpCode::multiply, DType::Int32, DType::Int32, 1001));
  std::string ir;
  EXPECT_EQ(check(g, stage_of(g, {1001}, {0}, {}, 8, false, 4), {}, false, &ir), Outcome::Same);
  EXPECT_NE(ir.find("<8 x i32>"), std::string::npos);
}

TEST(LlvmCodegen, ReductionsConvertToTheirOutputDtype) {
  SKIP_WITHOUT_LLVM();
  const std::tuple<OpCode, DType, DType> cases[] = {
      {OpCode::sum, DType::Float32, DType::Float64}, {OpCode::argmax, DType::Int32, DType::Int32},
      {OpCode::max, DType::Int32, DType::Float64},   {OpCode::prod, DType::Bool, DType::Int64},
      {OpCode::any, DType::Float64, DType::Int32},   {OpCode::min, DType::Float64, DType::Int64}};
  for (auto [op, t, u] : cases)
    for (const std::vector<int>& axes : {std::vector<int>{1, 2}, std::vector<int>{0}, std::vector<int>{1}}) {
      // unit axes are dropped, reduced ones too; the flat index stays right
      Graph g = parse_graph(reduce_graph(op, t, u, {9, 1, 40}, axes));
      Stage s = stage_of(g, {9, 1, 40}, {0});
      EXPECT_EQ(check(g, s, {64, 1e4}), Outcome::Same) << op_name(op);
    }
}

TEST(LlvmCodegen, ParallelStagesWithRowDependencesRunSerially) {
  SKIP_WITHOUT_LLVM();
  // y[i] = a[i] + 2; z[i] = y[i - 1] * 2: legal in order, racy across rows
  Graph g = parse_graph(R"(graph @t {
    %s0 = storage f64[1024512] arg 0
    %s1 = storage f64[1024512] arg 1
    %s2 = storage f64[1024000] arg 2
    %s3 = storage f64[1] const 0x0000000000000040
    op0 = add(%s0[2000,512]{512,1}+512, %s3[2000,512]{0,0}+0) -> %s1[2000,512]{512,1}+512
    op1 = multiply(%s1[2000,512]{512,1}+0, %s3[2000,512]{0,0}+0) -> %s2[2000,512]{512,1}+0
    return
  })");
  EXPECT_EQ(check(g, stage_of(g, {2000, 512}, {0, 1}, {}, 4, true)), Outcome::Same);
}

// A random stage: a chain of exact elementwise ops over random views (strided, reversed,
// transposed, broadcast) of two arguments, the temps in registers or memory, ending in a store
// through a random view (sometimes into an input, which the backend may refuse) or a reduction.
std::pair<Graph, Stage> random_stage(std::mt19937& rng) {
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  const int rank = 1 + pick(3);
  Shape domain(rank);
  for (int64_t& d : domain) d = 1 + pick(9);
  if (pick(25) == 0) domain[pick(rank)] = 0;
  const DType t = kDTypes[1 + pick(static_cast<int>(std::size(kDTypes)) - 1)];  // any but bool
  auto random_view = [&](int storage, bool write) {
    View v{storage, domain, Shape(rank, 0), 0};
    std::vector<int> order(rank);
    for (int d = 0; d < rank; ++d) order[d] = d;
    std::shuffle(order.begin(), order.end(), rng);
    int64_t stride = 1 + pick(2), low = 0;
    for (int k = rank - 1; k >= 0; --k) {
      const int d = order[k];
      if (!write && pick(4) == 0) continue;  // broadcast
      v.strides[d] = pick(3) == 0 ? -stride : stride;
      if (v.strides[d] < 0 && domain[d] > 0) low += v.strides[d] * (domain[d] - 1);
      stride *= std::max<int64_t>(1, domain[d]) * (1 + pick(2));
    }
    v.offset = -low + pick(3);
    return v;
  };
  Graph g;
  g.add_storage({t, 0, StorageKind::Arg, 0, {}});
  g.add_storage({t, 0, StorageKind::Arg, 1, {}});
  Stage s;
  s.domain = domain;
  auto operand = [&](const std::vector<View>& temps) {
    if (!temps.empty() && pick(2) == 0) return temps[pick(static_cast<int>(temps.size()))];
    return random_view(pick(2), false);
  };
  std::vector<View> temps;
  const OpCode exact_float[] = {OpCode::add, OpCode::subtract, OpCode::multiply, OpCode::divide, OpCode::maximum,
                                OpCode::fmin, OpCode::floor_divide, OpCode::remainder, OpCode::sqrt, OpCode::negative};
  const OpCode exact_int[] = {OpCode::add, OpCode::subtract, OpCode::multiply, OpCode::minimum, OpCode::floor_divide,
                              OpCode::remainder, OpCode::bitwise_xor, OpCode::right_shift, OpCode::absolute, OpCode::square};
  const int n_ops = 1 + pick(4);
  for (int k = 0; k < n_ops; ++k) {
    Op op;
    op.code = is_float(t) ? exact_float[pick(10)] : exact_int[pick(10)];
    op.inputs.push_back(operand(temps));
    if (op_kind(op.code) == OpKind::Binary) op.inputs.push_back(operand(temps));
    const int temp = g.add_storage({t, std::max<int64_t>(1, shape_numel(domain)), StorageKind::Temp, -1, {}});
    op.output = View{temp, domain, contiguous_strides(domain), 0};
    if (pick(3) > 0) s.registers.push_back(temp);
    temps.push_back(op.output);
    g.ops.push_back(op);
  }
  Op last;
  if (pick(3) == 0) {
    const OpCode codes[] = {OpCode::max, OpCode::argmin, OpCode::all, OpCode::sum, OpCode::argmax};
    last.code = codes[pick(is_float(t) ? 3 : 5)];  // float sums are checked with a tolerance elsewhere
    for (int d = 0; d < rank; ++d)
      if (pick(2) == 0) last.axes.push_back(d);
    if (last.axes.empty()) last.axes.push_back(pick(rank));
    Shape kept;
    for (int d = 0, k = 0; d < rank; ++d) {
      if (k < static_cast<int>(last.axes.size()) && last.axes[k] == d) ++k;
      else kept.push_back(domain[d]);
    }
    const DType u = last.code == OpCode::argmin || last.code == OpCode::argmax ? DType::Int64
                  : last.code == OpCode::all                                   ? DType::Bool
                                                                               : t;
    const int out = g.add_storage({u, std::max<int64_t>(1, shape_numel(kept)), StorageKind::Arg, 2, {}});
    last.inputs.push_back(temps.back());
    last.output = View{out, kept, contiguous_strides(kept), 0};
    s.reduce_axes = last.axes;
  } else {
    const int out = pick(4) == 0 ? pick(2) : g.add_storage({t, 0, StorageKind::Arg, 2, {}});
    last.code = OpCode::copy;
    last.inputs.push_back(temps.back());
    last.output = random_view(out, true);
  }
  g.ops.push_back(last);
  // storages as large as their views reach
  for (const Op& op : g.ops)
    for (const View* v : {&op.inputs[0], &op.inputs.back(), &op.output})
      if (v->numel() > 0) g.storages[v->storage].size = std::max(g.storages[v->storage].size, v->max_offset() + 1);
  for (Storage& st : g.storages) st.size = std::max<int64_t>(st.size, 1);
  for (size_t k = 0; k < g.ops.size(); ++k) {
    s.op_ids.push_back(static_cast<int>(k));
    s.ops.push_back(g.ops[k]);
  }
  s.schedule.vector_width = 1 << pick(5);
  s.schedule.parallel = pick(2) == 0;
  return {g, s};
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

// STRIDER_TEST_SEED and STRIDER_TEST_TRIALS run more of them.
TEST(LlvmCodegen, RandomStagesMatchTheReference) {
  SKIP_WITHOUT_LLVM();
  std::mt19937 rng(env_int("STRIDER_TEST_SEED", 1234));
  const int trials = env_int("STRIDER_TEST_TRIALS", 300);
  int compiled = 0, refused = 0;
  for (int trial = 0; trial < trials && !::testing::Test::HasFailure(); ++trial) {
    auto [g, s] = random_stage(rng);
    SCOPED_TRACE("trial " + std::to_string(trial));
    (check(g, s) == Outcome::Refused ? refused : compiled)++;
  }
  EXPECT_GT(compiled, trials * 2 / 3);
  EXPECT_GT(refused, 0);
}

// The same graphs through the whole pipeline (fuse_stages, default schedules, compile_stages).
TEST(LlvmCodegen, RandomGraphsThroughThePipeline) {
  SKIP_WITHOUT_LLVM();
  std::mt19937 rng(env_int("STRIDER_TEST_SEED", 1234) + 1);
  const int trials = env_int("STRIDER_TEST_TRIALS", 300) / 3;
  for (int trial = 0; trial < trials && !::testing::Test::HasFailure(); ++trial) {
    Graph g = random_stage(rng).first;
    SCOPED_TRACE("trial " + std::to_string(trial));
    Memory ref(g), got(g);
    for (int k = 0; k < 2; ++k) {
      fill(g.storages[k].dtype, ref.at(k), g.storages[k].size, k + 1);
      std::memcpy(got.at(k), ref.at(k), g.storages[k].size * itemsize(g.storages[k].dtype));
    }
    try {
      run_reference(g, ref.ptrs);
    } catch (const std::logic_error&) {
      continue;  // an argmax over nothing
    }
    Program p = lower(g);
    std::vector<void*> buffers;  // the pipeline may renumber storages: match arguments by index
    for (const Storage& st : p.graph.storages) {
      buffers.push_back(nullptr);
      for (size_t k = 0; k < g.storages.size(); ++k)
        if (st.kind == StorageKind::Arg && g.storages[k].kind == StorageKind::Arg && g.storages[k].arg == st.arg)
          buffers.back() = got.ptrs[k];
    }
    execute(p, buffers);
    for (size_t k = 0; k < g.storages.size(); ++k)
      if (g.storages[k].kind == StorageKind::Arg)
        EXPECT_EQ(compare(g, static_cast<int>(k), ref.at(k), got.at(k), {}), "") << print_graph(g) << print_stages(p.graph, p.stages);
  }
}

TEST(LlvmCodegen, HostVectorWidth) {
  SKIP_WITHOUT_LLVM();
  EXPECT_GE(host_vector_width(DType::Float32), 4);
  EXPECT_EQ(host_vector_width(DType::Float32), 2 * host_vector_width(DType::Float64));
}

TEST(ThreadPool, CoversTheRangeOnceAndNestsInline) {
  std::vector<std::atomic<int>> hits(10007);
  parallel_for(10007, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
    parallel_for(3, [&](int64_t, int64_t) {});  // nested: runs inline
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  EXPECT_GE(parallel_threads(), 1);
  EXPECT_THROW(parallel_for(100, [](int64_t b, int64_t) { if (b > 0) throw std::runtime_error("x"); }),
               std::runtime_error);
  int calls = 0;
  parallel_for(1, [&](int64_t b, int64_t e) { calls += static_cast<int>(e - b); });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPool, AWarmCallWakesNoWorkerAfterALongIdle) {
  // parallel_for_warm after the pool has been idle: the caller runs every chunk, no worker woken
  // (a worker still spinning could take one: wait out its spin, and the last call's millisecond)
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0}, covered{0};
  parallel_for_warm(64, [&](int64_t b, int64_t e) {
    covered += static_cast<int>(e - b);
    if (std::this_thread::get_id() != caller) ++elsewhere;
  });
  EXPECT_EQ(covered.load(), 64);
  EXPECT_EQ(elsewhere.load(), 0);
  // right after a call it covers the range as parallel_for does, on whichever threads take chunks
  std::vector<std::atomic<int>> hits(1000);
  for (int round = 0; round < 20; ++round)
    parallel_for_warm(1000, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i]++;
    });
  for (auto& h : hits) ASSERT_EQ(h.load(), 20);
}

// Runs `body` for each way of compressing vectors the host has (codegen.h's use_vector_compress),
// then puts the host's own back.
void for_each_vector_compress(const std::function<void(const std::string&)>& body) {
  const std::string host = vector_compress();
  for (const char* how : {"none", "avx2", "avx512"})
    if (use_vector_compress(how)) {
      SCOPED_TRACE(how);
      body(how);
    }
  use_vector_compress(host);
}

// Whether a compress compiled the way `how` moves vectors (emit_compress.cc): AVX-512's
// compressing store, AVX2's permutation.
bool moves_vectors(const std::string& ir, const std::string& how) {
  return ir.find(how == "avx512" ? "masked.compressstore" : "avx2.permd") != std::string::npos;
}

// The bytes of the widest plain vector store in `ir` (0: none)
int64_t widest_vector_store(const std::string& ir) {
  static const std::regex store(R"(store <(\d+) x i(\d+)>)");
  int64_t widest = 0;
  for (std::sregex_iterator m(ir.begin(), ir.end(), store), end; m != end; ++m)
    widest = std::max<int64_t>(widest, std::stoll((*m)[1]) * std::stoll((*m)[2]) / 8);
  return widest;
}

TEST(LlvmCodegen, CompressMatchesTheLibraryOnEveryLayout) {
  SKIP_WITHOUT_LLVM();
  // A 1-d compress is compiled (emit_compress.cc): vectors, each way the host has (AVX-512, AVX2),
  // where the mask, input and output are contiguous and elements have 4 or 8 bytes, one element
  // at a time elsewhere (and with neither). Every layout
  // the library takes: into another array, in place (the input moved towards the start, as
  // compress_in_place leaves it), reversed; counts below the kept elements end the room inside a
  // vector. The whole of every buffer must match the library's.
  constexpr int64_t kN = 1003;
  for_each_vector_compress([&](const std::string& how) {
    std::mt19937 rng(17);
    for (const char* dt : {"bool", "f16", "f32", "i64"})
      for (const std::string layout : {"into", "in place", "reversed"})
        for (int keep_in_8 : {8, 5, 0}) {
          const int64_t n = layout == "in place" ? kN - 1 : kN;
          const std::string ns = std::to_string(n), N = std::to_string(kN);
          const std::string src = layout == "in place" ? "%s2[" + ns + "]{1}+1"
                                  : layout == "reversed" ? "%s2[" + ns + "]{-1}+" + std::to_string(kN - 1)
                                                         : "%s2[" + ns + "]{1}+0";
          const std::string out = layout == "in place" ? "%s2" : "%s3";
          const Graph g = parse_graph("graph @f {\n  %s0 = storage bool[" + ns + "] arg 0\n  %s1 = storage i64[1] arg 1\n"
                                      "  %s2 = storage " + dt + "[" + N + "] arg 2\n  %s3 = storage " + dt + "[" + N + "] arg 3\n"
                                      "  op0 = compress(%s0[" + ns + "]{1}+0, " + src + ") -> " + out + "[?%s1<=" + ns +
                                      "]{1}+0\n  return\n}");
          const Program compiled = lower(g), reference = lower(g, {}, false);
          ASSERT_TRUE(compiled.kernels.at(0)) << compiled.fallbacks.at(0);
          const bool vector = how != "none" && layout != "reversed" && (dt[1] == '3' || dt[1] == '6');
          EXPECT_EQ(moves_vectors(compiled.kernels[0]->llvm_ir(), how), vector) << dt << " " << layout;
          // whole steps move 32 bytes at a time: 64, unaligned in place, are slower on AMD
          EXPECT_EQ(widest_vector_store(compiled.kernels[0]->llvm_ir()), vector ? 32 : 0) << dt << " " << layout;
          std::vector<char> mask(n);
          for (char& b : mask) b = static_cast<int>(rng() % 8) < keep_in_8;
          const int64_t kept = std::count(mask.begin(), mask.end(), 1);
          const size_t bytes = kN * itemsize(g.storages[2].dtype);
          std::vector<char> x(bytes);
          for (char& b : x) b = static_cast<char>(dt[0] == 'b' ? rng() % 2 : rng());
          for (int64_t count : {kept, kept / 2 + 3, int64_t{0}}) {
            std::vector<char> want_x = x, got_x = x, want_out(bytes, 7), got_out(bytes, 7);
            int64_t c = std::min(count, kept);
            execute(reference, {mask.data(), &c, want_x.data(), want_out.data()});
            execute(compiled, {mask.data(), &c, got_x.data(), got_out.data()});
            ASSERT_EQ(got_x, want_x) << dt << " " << layout << " " << keep_in_8 << " " << c;
            ASSERT_EQ(got_out, want_out) << dt << " " << layout << " " << keep_in_8 << " " << c;
          }
        }
  });
}

// The compresses of the two tests below, ops `op` on, by `mask` (a view without its strides) over
// `shape`: %s3 and %s4 in place, counted by `in_place`; %s5 into %s6 counted by `other`; when
// `narrow`, also the 2-byte %s7 into %s8 and the reversed %s9 into %s10.
std::string compress_columns(const std::string& mask, const std::string& shape, const std::string& in_place,
                             const std::string& other, const std::string& n, bool narrow, int op) {
  std::string text;
  auto add = [&](const std::string& src, const std::string& out, const std::string& count) {
    text += "  op" + std::to_string(op++) + " = compress(" + mask + "{1}+0, " + src + ") -> " + out + "[?" + count + "<=" + n + "]{1}+0\n";
  };
  add("%s3" + shape + "{1}+1", "%s3", in_place);
  add("%s4" + shape + "{1}+1", "%s4", in_place);
  add("%s5" + shape + "{1}+0", "%s6", other);
  if (narrow) {
    add("%s7" + shape + "{1}+0", "%s8", in_place);
    add("%s9" + shape + "{-1}+" + n, "%s10", other);
  }
  return text;
}

TEST(LlvmCodegen, CompressesByOneMaskShareAStageAndMatchTheLibrary) {
  SKIP_WITHOUT_LLVM();
  // Compresses by one mask share a stage (fuse_stages) and its one pass over the mask
  // (emit_compress.cc): 8-byte outputs move in two compressing stores of a 16-lane step, and
  // each output keeps its own room. Contiguous 4- and 8-byte operands only: vectors (each way the host
  // has: AVX-512, AVX2); with a 2-byte or a reversed one, one element at a time. The whole of
  // every buffer must match.
  constexpr int64_t kN = 1003;
  const std::string n = std::to_string(kN - 1), N = std::to_string(kN);
  for_each_vector_compress([&](const std::string& how) {
    std::mt19937 rng(23);
    for (const bool narrow : {false, true}) {
      std::string text = "graph @f {\n  %s0 = storage bool[" + n + "] arg 0\n  %s1 = storage i64[1] arg 1\n"
                         "  %s2 = storage i64[1] arg 2\n  %s3 = storage f32[" + N + "] arg 3\n"
                         "  %s4 = storage i64[" + N + "] arg 4\n  %s5 = storage f64[" + N + "] arg 5\n"
                         "  %s6 = storage f64[" + N + "] arg 6\n  %s7 = storage i16[" + N + "] arg 7\n"
                         "  %s8 = storage i16[" + N + "] arg 8\n  %s9 = storage f32[" + N + "] arg 9\n"
                         "  %s10 = storage f32[" + N + "] arg 10\n"
                         + compress_columns("%s0[" + n + "]", "[" + n + "]", "%s1", "%s2", n, narrow, 0);
      const Graph g = parse_graph(text + "  return\n}");
      const Program compiled = lower(g), reference = lower(g, {}, false);
      ASSERT_EQ(compiled.stages.stages.size(), 1u);
      ASSERT_TRUE(compiled.kernels.at(0)) << compiled.fallbacks.at(0);
      EXPECT_EQ(moves_vectors(compiled.kernels[0]->llvm_ir(), how), how != "none" && !narrow);
      for (int keep_in_8 : {8, 5, 0}) {
        std::vector<char> mask(kN - 1);
        for (char& b : mask) b = static_cast<int>(rng() % 8) < keep_in_8;
        const int64_t kept = std::count(mask.begin(), mask.end(), 1);
        std::vector<std::vector<char>> data;
        for (size_t s = 3; s < g.storages.size(); ++s) {
          data.emplace_back(kN * itemsize(g.storages[s].dtype));
          for (char& b : data.back()) b = static_cast<char>(rng());
        }
        for (int64_t room : {kept, kept / 2 + 3, int64_t{0}}) {
          int64_t a = kept, b = std::min(room, kept);  // the outputs' counts: their rooms
          std::vector<std::vector<char>> want = data, got = data;
          std::vector<void*> want_args = {mask.data(), &a, &b}, got_args = want_args;
          int64_t ga = a, gb = b;
          got_args[1] = &ga, got_args[2] = &gb;
          for (size_t k = 0; k < data.size(); ++k) want_args.push_back(want[k].data()), got_args.push_back(got[k].data());
          execute(reference, want_args);
          execute(compiled, got_args);
          for (size_t k = 0; k < data.size(); ++k)
            ASSERT_EQ(got[k], want[k]) << "storage %s" << k + 3 << (narrow ? " narrow" : "") << " " << keep_in_8 << " " << room;
        }
      }
    }
  });
}


TEST(LlvmCodegen, CompressesRunInThePassThatMakesAndCountsTheirMask) {
  SKIP_WITHOUT_LLVM();
  // Compresses by a mask join the stage that makes the mask and counts it (legality's
  // compress_conflict): blocks of the mask go to a stack slab and their elements move before the
  // next block is made (emit_compress.cc); the count is where the moves end. In place (the input
  // moved towards the start, read by the mask's op too) and into another array; run-time lengths
  // around the block and the step (the last step's lanes past the length masked off, each way the
  // host has: AVX-512, AVX2); with a 2-byte or a reversed operand, one element at a time.
  // The whole of every buffer and the count must match the reference's.
  constexpr int64_t kN = 1003;
  const std::string n = std::to_string(kN - 1), N = std::to_string(kN), dyn = "[?%s1<=" + n + "]";
  for_each_vector_compress([&](const std::string& how) {
    std::mt19937 rng(29);
    for (const bool narrow : {false, true}) {
      std::string text = "graph @f {\n  %s0 = storage f32[1] arg 0\n  %s1 = storage i64[1] arg 1\n"
                         "  %s2 = storage i64[1] arg 2\n  %s3 = storage f32[" + N + "] arg 3\n"
                         "  %s4 = storage i64[" + N + "] arg 4\n  %s5 = storage f64[" + N + "] arg 5\n"
                         "  %s6 = storage f64[" + N + "] arg 6\n  %s7 = storage i16[" + N + "] arg 7\n"
                         "  %s8 = storage i16[" + N + "] arg 8\n  %s9 = storage f32[" + N + "] arg 9\n"
                         "  %s10 = storage f32[" + N + "] arg 10\n  %s11 = storage bool[" + n + "] temp\n"
                         "  %s12 = storage i64[" + n + "] temp\n"
                         "  op0 = less_equal(%s3" + dyn + "{1}+1, %s0" + dyn + "{0}+0) -> %s11" + dyn + "{1}+0\n"
                         "  op1 = cast(%s11" + dyn + "{1}+0) -> %s12" + dyn + "{1}+0\n"
                         "  op2 = sum(%s12" + dyn + "{1}+0) axes=[0] -> %s2[]{}+0\n"
                         + compress_columns("%s11" + dyn, dyn, "%s2", "%s2", n, narrow, 3);
      const Graph g = parse_graph(text + "  return\n}");
      const Program compiled = lower(g), reference = lower(g, {}, false);
      ASSERT_EQ(compiled.stages.stages.size(), 1u) << print_stages(compiled.graph, compiled.stages);
      ASSERT_TRUE(compiled.kernels.at(0)) << compiled.fallbacks.at(0);
      EXPECT_EQ(moves_vectors(compiled.kernels[0]->llvm_ir(), how), how != "none" && !narrow);
      for (float threshold : {2.0f, 0.6f, -1.0f})
        for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{255}, int64_t{256},
                            int64_t{257}, int64_t{600}, kN - 1}) {
          std::vector<std::vector<char>> data;
          for (size_t s = 3; s <= 10; ++s) {
            data.emplace_back(kN * itemsize(g.storages[s].dtype));
            for (char& b : data.back()) b = static_cast<char>(rng());
          }
          std::uniform_real_distribution<float> unit(0.0f, 1.0f);
          for (int64_t i = 0; i < kN; ++i) reinterpret_cast<float*>(data[0].data())[i] = unit(rng);
          std::vector<std::vector<char>> want = data, got = data;
          int64_t want_len = len, got_len = len, want_count = -1, got_count = -1;
          float want_t = threshold, got_t = threshold;
          std::vector<void*> want_args = {&want_t, &want_len, &want_count}, got_args = {&got_t, &got_len, &got_count};
          for (size_t k = 0; k < data.size(); ++k) want_args.push_back(want[k].data()), got_args.push_back(got[k].data());
          for (auto* args : {&want_args, &got_args}) args->resize(g.storages.size(), nullptr);  // the temporaries
          execute(reference, want_args);
          execute(compiled, got_args);
          ASSERT_EQ(got_count, want_count) << (narrow ? "narrow " : "") << threshold << " " << len;
          for (size_t k = 0; k < data.size(); ++k)
            ASSERT_EQ(got[k], want[k]) << "storage %s" << k + 3 << (narrow ? " narrow " : " ") << threshold << " " << len;
        }
    }
  });
}

TEST(LlvmCodegen, CompressesInPlaceInTemporariesStoreWholeVectors) {
  SKIP_WITHOUT_LLVM();
  // An NMS trip's candidates: temporaries compressed in place (the input moved towards the start)
  // by a mask the stage makes and counts. With AVX2 each step's permuted vector stores whole, its
  // lanes past the kept ones on elements already read (emit_compress.cc), and a step the length
  // ends inside stores its kept lanes alone. The kept elements and the count, copied out, must
  // match the reference's, and nothing past them may be written; lengths around the block and
  // the step.
  constexpr int64_t kN = 1003;
  const std::string n = std::to_string(kN - 1), N = std::to_string(kN), dyn = "[?%s1<=" + n + "]";
  const std::string kept = "[?%s2<=" + n + "]";
  for_each_vector_compress([&](const std::string& how) {
    std::mt19937 rng(31);
    const Graph g = parse_graph(
        "graph @f {\n  %s0 = storage f32[1] arg 0\n  %s1 = storage i64[1] arg 1\n  %s2 = storage i64[1] arg 2\n"
        "  %s3 = storage f32[" + N + "] arg 3\n  %s4 = storage i64[" + N + "] arg 4\n"
        "  %s5 = storage f32[" + N + "] arg 5\n  %s6 = storage i64[" + N + "] arg 6\n"
        "  %s7 = storage f32[" + N + "] temp\n  %s8 = storage i64[" + N + "] temp\n"
        "  %s9 = storage bool[" + n + "] temp\n  %s10 = storage i64[" + n + "] temp\n"
        "  op0 = copy(%s3[" + N + "]{1}+0) -> %s7[" + N + "]{1}+0\n  op1 = copy(%s4[" + N + "]{1}+0) -> %s8[" + N + "]{1}+0\n"
        "  op2 = less_equal(%s7" + dyn + "{1}+1, %s0" + dyn + "{0}+0) -> %s9" + dyn + "{1}+0\n"
        "  op3 = cast(%s9" + dyn + "{1}+0) -> %s10" + dyn + "{1}+0\n"
        "  op4 = sum(%s10" + dyn + "{1}+0) axes=[0] -> %s2[]{}+0\n"
        "  op5 = compress(%s9" + dyn + "{1}+0, %s7" + dyn + "{1}+1) -> %s7" + kept + "{1}+0\n"
        "  op6 = compress(%s9" + dyn + "{1}+0, %s8" + dyn + "{1}+1) -> %s8" + kept + "{1}+0\n"
        "  op7 = copy(%s7" + kept + "{1}+0) -> %s5" + kept + "{1}+0\n  op8 = copy(%s8" + kept + "{1}+0) -> %s6" + kept + "{1}+0\n"
        "  return\n}");
    const Program compiled = lower(g), reference = lower(g, {}, false);
    for (size_t i = 0; i < compiled.stages.stages.size(); ++i) ASSERT_TRUE(compiled.kernels.at(i)) << compiled.fallbacks.at(i);
    std::string ir;
    for (const auto& k : compiled.kernels) ir += k->llvm_ir();
    EXPECT_EQ(moves_vectors(ir, how), how != "none");
    // AVX2's whole stores keep nothing pending: no table of the lanes below a pending count
    EXPECT_EQ(ir.find("strider.compress.below") == std::string::npos, true) << how;
    // a step whose every lane is kept (most of an NMS trip's) moves as it is, unpermuted
    EXPECT_EQ(ir.find("step.whole") != std::string::npos, how != "none") << how;
    for (float threshold : {2.0f, 0.995f, 0.97f, 0.6f, -1.0f})
      for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{255}, int64_t{256},
                          int64_t{257}, int64_t{600}, kN - 1}) {
        std::vector<float> x(kN), want_x(kN, -5.0f), got_x(kN, -5.0f);
        std::vector<int64_t> order(kN), want_order(kN, -5), got_order(kN, -5);
        std::uniform_real_distribution<float> unit(0.0f, 1.0f);
        for (int64_t i = 0; i < kN; ++i) x[i] = unit(rng), order[i] = static_cast<int64_t>(rng());
        int64_t want_len = len, got_len = len, want_count = -1, got_count = -1;
        float want_t = threshold, got_t = threshold;
        std::vector<void*> want_args = {&want_t, &want_len, &want_count, x.data(), order.data(), want_x.data(), want_order.data()};
        std::vector<void*> got_args = {&got_t, &got_len, &got_count, x.data(), order.data(), got_x.data(), got_order.data()};
        for (auto* args : {&want_args, &got_args}) args->resize(g.storages.size(), nullptr);  // the temporaries
        execute(reference, want_args);
        execute(compiled, got_args);
        ASSERT_EQ(got_count, want_count) << threshold << " " << len;
        ASSERT_EQ(got_x, want_x) << threshold << " " << len;
        ASSERT_EQ(got_order, want_order) << threshold << " " << len;
      }
  });
}

TEST(LlvmCodegen, ARowCompactionPrefetchesItsPredicatesColumnAndTheKeptRows) {
  SKIP_WITHOUT_LLVM();
  // YOLOv5's x[x[:, 4] > t]: the predicate reads a float per row of 85, a cache line apart, which
  // the stage making the mask prefetches a page ahead (emit_compress.cc); past the last row the
  // address leaves the array, which a prefetch may. The rows and the count must match.
  constexpr int64_t kRows = 3000, kCols = 85;
  const std::string n = std::to_string(kRows), size = std::to_string(kRows * kCols);
  const Graph g = parse_graph(
      "graph @f {\n  %s0 = storage f32[" + size + "] arg 0\n  %s1 = storage f32[1] arg 1\n  %s2 = storage i64[1] arg 2\n"
      "  %s3 = storage f32[" + size + "] arg 3\n  %s4 = storage bool[" + n + "] temp\n  %s5 = storage i64[" + n + "] temp\n"
      "  op0 = greater(%s0[" + n + "]{85}+4, %s1[" + n + "]{0}+0) -> %s4[" + n + "]{1}+0\n"
      "  op1 = cast(%s4[" + n + "]{1}+0) -> %s5[" + n + "]{1}+0\n"
      "  op2 = sum(%s5[" + n + "]{1}+0) axes=[0] -> %s2[]{}+0\n"
      "  op3 = compress(%s4[" + n + "]{1}+0, %s0[" + n + ",85]{85,1}+0) -> %s3[?%s2<=" + n + ",85]{85,1}+0\n  return\n}");
  const Program compiled = lower(g), reference = lower(g, {}, false);
  ASSERT_EQ(compiled.stages.stages.size(), 1u) << print_stages(compiled.graph, compiled.stages);
  ASSERT_TRUE(compiled.kernels.at(0)) << compiled.fallbacks.at(0);
  // the column's prefetch, and the lines of each kept row of 340 bytes (7: its start may fall
  // anywhere in a line), requested for a block's kept rows before they move
  const std::string& ir = compiled.kernels[0]->llvm_ir();
  int prefetches = 0;
  for (size_t at = ir.find("call void @llvm.prefetch"); at != std::string::npos; at = ir.find("call void @llvm.prefetch", at + 1))
    ++prefetches;
  EXPECT_GE(prefetches, 8) << ir;
  std::mt19937 rng(37);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> x(kRows * kCols);
  for (float& v : x) v = unit(rng);
  for (float threshold : {0.9f, 0.25f, -1.0f, 2.0f}) {
    std::vector<float> want(x.size(), -3.0f), got(x.size(), -3.0f);
    int64_t want_count = -1, got_count = -1;
    float t = threshold;
    execute(reference, {x.data(), &t, &want_count, want.data(), nullptr, nullptr});
    execute(compiled, {x.data(), &t, &got_count, got.data(), nullptr, nullptr});
    ASSERT_EQ(got_count, want_count) << threshold;
    ASSERT_EQ(got, want) << threshold;
  }
}

TEST(LlvmCodegen, AWideRowCompactionRunsInChunksOnThePool) {
  SKIP_WITHOUT_LLVM();
  // x[x[:, 4] > t] over more rows than kParallelCompactionPoints, a cache line apart: the default
  // schedule runs the compaction in chunks on the pool (emit_compress.cc), each counting its part
  // of the mask, then moving its kept rows, and a column with them, after those of the chunks
  // before it. Calls in a row (the pool warm: both threads take chunks) and run-time lengths
  // below the threshold (every chunk on the caller), across chunk boundaries; the rows, the
  // column and the count must match the reference's, and nothing past them be written.
  constexpr int64_t kRows = 3 * kParallelCompactionPoints / 2 + 5, kCols = 85;
  const std::string n = std::to_string(kRows), size = std::to_string(kRows * kCols), dyn = "[?%s5<=" + n + "]";
  const Graph g = parse_graph(
      "graph @f {\n  %s0 = storage f32[" + size + "] arg 0\n  %s1 = storage f32[1] arg 1\n  %s2 = storage i64[1] arg 2\n"
      "  %s3 = storage f32[" + size + "] arg 3\n  %s4 = storage f32[" + n + "] arg 4\n  %s5 = storage i64[1] arg 5\n"
      "  %s6 = storage bool[" + n + "] temp\n  %s7 = storage i64[" + n + "] temp\n"
      "  op0 = greater(%s0" + dyn + "{85}+4, %s1" + dyn + "{0}+0) -> %s6" + dyn + "{1}+0\n"
      "  op1 = cast(%s6" + dyn + "{1}+0) -> %s7" + dyn + "{1}+0\n"
      "  op2 = sum(%s7" + dyn + "{1}+0) axes=[0] -> %s2[]{}+0\n"
      "  op3 = compress(%s6" + dyn + "{1}+0, %s0[?%s5<=" + n + ",85]{85,1}+0) -> %s3[?%s2<=" + n + ",85]{85,1}+0\n"
      "  op4 = compress(%s6" + dyn + "{1}+0, %s0" + dyn + "{85}+2) -> %s4[?%s2<=" + n + "]{1}+0\n  return\n}");
  const Program compiled = lower(g), reference = lower(g, {}, false);
  ASSERT_EQ(compiled.stages.stages.size(), 1u) << print_stages(compiled.graph, compiled.stages);
  EXPECT_NE(print_stages(compiled.graph, compiled.stages).find("parallel(i0)"), std::string::npos);
  ASSERT_TRUE(compiled.kernels.at(0)) << compiled.fallbacks.at(0);
  EXPECT_NE(compiled.kernels[0]->llvm_ir().find("strider_parallel_for_warm"), std::string::npos);
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> x(kRows * kCols);
  for (float& v : x) v = unit(rng);
  for (float threshold : {0.97f, 0.25f, -1.0f, 2.0f})
    for (int64_t len : {int64_t{0}, int64_t{1}, kParallelCompactionPoints - 1, kParallelCompactionPoints, kRows - 7, kRows})
      for (int call = 0; call < 4; ++call) {
        std::vector<float> want(x.size(), -3.0f), got(x.size(), -3.0f), want_col(kRows, -4.0f), got_col(kRows, -4.0f);
        int64_t want_count = -1, got_count = -1, want_len = len, got_len = len;
        float t = threshold;
        execute(reference, {x.data(), &t, &want_count, want.data(), want_col.data(), &want_len, nullptr, nullptr});
        execute(compiled, {x.data(), &t, &got_count, got.data(), got_col.data(), &got_len, nullptr, nullptr});
        ASSERT_EQ(got_count, want_count) << threshold << " " << len;
        ASSERT_EQ(got, want) << threshold << " " << len;
        ASSERT_EQ(got_col, want_col) << threshold << " " << len;
      }
}

TEST(LlvmCodegen, AChunkedCompactionMovesVectorsOfItsContiguousColumns) {
  SKIP_WITHOUT_LLVM();
  // The mask from a column of wide rows, the compresses of contiguous 4- and 8-byte columns:
  // each chunk moves them a vector at a time, each way the host has (AVX-512, AVX2), its own
  // last step masked; every buffer and the count must match the reference's.
  constexpr int64_t kRows = kParallelCompactionPoints + 1000, kCols = 20;
  const std::string n = std::to_string(kRows), size = std::to_string(kRows * kCols);
  for_each_vector_compress([&](const std::string& how) {
    const Graph g = parse_graph(
        "graph @f {\n  %s0 = storage f32[" + size + "] arg 0\n  %s1 = storage f32[1] arg 1\n  %s2 = storage i64[1] arg 2\n"
        "  %s3 = storage f32[" + n + "] arg 3\n  %s4 = storage i64[" + n + "] arg 4\n"
        "  %s5 = storage f32[" + n + "] arg 5\n  %s6 = storage i64[" + n + "] arg 6\n"
        "  %s7 = storage bool[" + n + "] temp\n  %s8 = storage i64[" + n + "] temp\n"
        "  op0 = less(%s0[" + n + "]{20}+3, %s1[" + n + "]{0}+0) -> %s7[" + n + "]{1}+0\n"
        "  op1 = cast(%s7[" + n + "]{1}+0) -> %s8[" + n + "]{1}+0\n"
        "  op2 = sum(%s8[" + n + "]{1}+0) axes=[0] -> %s2[]{}+0\n"
        "  op3 = compress(%s7[" + n + "]{1}+0, %s3[" + n + "]{1}+0) -> %s5[?%s2<=" + n + "]{1}+0\n"
        "  op4 = compress(%s7[" + n + "]{1}+0, %s4[" + n + "]{1}+0) -> %s6[?%s2<=" + n + "]{1}+0\n  return\n}");
    const Program compiled = lower(g), reference = lower(g, {}, false);
    ASSERT_EQ(compiled.stages.stages.size(), 1u) << print_stages(compiled.graph, compiled.stages);
    ASSERT_TRUE(compiled.kernels.at(0)) << compiled.fallbacks.at(0);
    const std::string& ir = compiled.kernels[0]->llvm_ir();
    EXPECT_NE(ir.find("strider_parallel_for_warm"), std::string::npos);
    EXPECT_EQ(moves_vectors(ir, how), how != "none");
    std::mt19937 rng(43);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::vector<float> x(kRows * kCols), a(kRows);
    std::vector<int64_t> b(kRows);
    for (float& v : x) v = unit(rng);
    for (int64_t i = 0; i < kRows; ++i) a[i] = unit(rng), b[i] = static_cast<int64_t>(rng());
    for (float threshold : {0.03f, 0.5f, 0.999f, 2.0f, -1.0f})
      for (int call = 0; call < 4; ++call) {
        std::vector<float> want_a(kRows, -2.0f), got_a(kRows, -2.0f);
        std::vector<int64_t> want_b(kRows, -2), got_b(kRows, -2);
        int64_t want_count = -1, got_count = -1;
        float t = threshold;
        execute(reference, {x.data(), &t, &want_count, a.data(), b.data(), want_a.data(), want_b.data(), nullptr, nullptr});
        execute(compiled, {x.data(), &t, &got_count, a.data(), b.data(), got_a.data(), got_b.data(), nullptr, nullptr});
        ASSERT_EQ(got_count, want_count) << how << " " << threshold;
        ASSERT_EQ(got_a, want_a) << how << " " << threshold;
        ASSERT_EQ(got_b, want_b) << how << " " << threshold;
      }
  });
}

}  // namespace
}  // namespace strider
