#include <gtest/gtest.h>

#include "schedule/default_schedule.h"
#include "transforms/passes.h"
#include "view_oracle.h"

namespace strider {
namespace {

// The one stage of a graph, fused and not yet scheduled.
Stage stage_of(const std::string& text) {
  Graph g = parse_graph(text);
  StageGraph sg = fuse_stages(g, build_storage_table(g));
  EXPECT_EQ(sg.stages.size(), 1u);
  return sg.stages[0];
}

// The order a stage visits a view's elements.
const auto visit = oracle::offsets;

const char* kAdd = R"(graph @f {
  %s0 = storage f32[48] arg 0
  %s1 = storage f32[48] arg 1
  %s2 = storage f32[24] temp
  op0 = add(%s0[4,6]{12,1}+0, %s1[4,6]{6,1}+0) -> %s2[4,6]{6,1}+0
  return %s2[4,6]{6,1}+0
})";

std::vector<Primitive> sched(const std::string& text) { return parse_schedule(text); }

TEST(Schedule, SplitAndFuseKeepTheVisitingOrder) {
  Graph g = parse_graph(kAdd);
  Stage s = stage_of(kAdd);
  std::vector<int64_t> before = visit(s.ops[0].inputs[0]);
  apply_schedule(g, s, sched("split(i1, i1o, i1i, 3)"));
  EXPECT_EQ(s.domain, (Shape{4, 2, 3}));
  EXPECT_EQ(s.loops, (std::vector<std::string>{"i0", "i1o", "i1i"}));
  EXPECT_EQ(visit(s.ops[0].inputs[0]), before);
  Stage t = stage_of(kAdd);
  apply_schedule(g, t, sched("split(i1, i1o, i1i, 3) fuse(i1o, i1i, f)"));
  EXPECT_EQ(t.domain, (Shape{4, 6}));
  EXPECT_EQ(visit(t.ops[0].inputs[0]), before);
  EXPECT_EQ(print_schedule(t.schedule), "split(i1, i1o, i1i, 3) fuse(i1o, i1i, f)");
}

TEST(Schedule, SplitWithATailRoundsTheDomainUpAndRecordsTheTail) {
  Graph g = parse_graph(kAdd);
  Stage s = stage_of(kAdd);
  apply_schedule(g, s, sched("split(i1, a, b, 4) reorder(b, i0, a)"));
  EXPECT_EQ(s.domain, (Shape{4, 4, 2}));
  EXPECT_EQ(s.loops, (std::vector<std::string>{"b", "i0", "a"}));
  ASSERT_EQ(s.tails.size(), 1u);
  EXPECT_EQ(s.tails[0], (Tail{"a", "b", 4, 6}));
  EXPECT_EQ(print_tails(s), " tails [a*4+b<6]");
}

TEST(Schedule, ReorderTransposesEveryViewAndTileComposes) {
  Graph g = parse_graph(kAdd);
  Stage s = stage_of(kAdd);
  apply_schedule(g, s, sched("reorder(i1, i0)"));
  EXPECT_EQ(s.domain, (Shape{6, 4}));
  EXPECT_EQ(s.ops[0].output.strides, (Shape{1, 6}));
  Stage t = stage_of(kAdd);
  apply_schedule(g, t, sched("tile(i0, i1, i0o, i1o, i0i, i1i, 2, 3) vectorize(i1i, 2) parallel(i0o)"));
  EXPECT_EQ(t.loops, (std::vector<std::string>{"i0o", "i1o", "i0i", "i1i"}));
  EXPECT_EQ(t.domain, (Shape{2, 2, 2, 3}));
  EXPECT_EQ(t.schedule.vector_width, 2);
  EXPECT_TRUE(t.schedule.parallel);
}

TEST(Schedule, IllegalPrimitivesNameTheLoopAndTheReason) {
  Graph g = parse_graph(kAdd);
  auto refused = [&](const std::string& text, const std::string& reason) {
    Stage s = stage_of(kAdd);
    try {
      apply_schedule(g, s, sched(text));
      ADD_FAILURE() << text << " was accepted";
    } catch (const ScheduleError& e) {
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  };
  refused("split(i1, a, b, 4) fuse(a, b, f)", "a has a tail (a * 4 + b < 6): split or fuse it before");
  refused("split(i1, a, b, 4) split(b, c, d, 2)", "b has a tail");
  refused("vectorize(i0, 8)", "i0 is not the innermost loop (i1 is)");
  refused("parallel(i1)", "only the outermost loop (i0) runs in parallel");
  refused("split(j, a, b, 2)", "no loop named j (the loops are i0, i1)");
  refused("fuse(i0, i1, f)", "%s0 does not walk i0 and i1 as one stride");
  refused("compute_root(%s2)", "%s2 is not a register of this stage");
  refused("skew(i0)", "unknown primitive");
}

TEST(Schedule, ReorderThatBreaksADependenceIsRefused) {
  // a[0:3, 1:4] = -a[1:4, 0:3]: the store at (r, c) overwrites what point (r - 1, c + 1) reads,
  // which row order visits before it and column order after it
  const char* text = R"(graph @f {
    %s0 = storage f64[16] arg 0
    %s1 = storage f64[9] temp
    op0 = negative(%s0[3,3]{4,1}+4) -> %s1[3,3]{3,1}+0
    op1 = copy(%s1[3,3]{3,1}+0) -> %s0[3,3]{4,1}+1
    return
  })";
  Graph g = parse_graph(text);
  Stage s = stage_of(text);
  try {
    apply_schedule(g, s, sched("reorder(i1, i0)"));
    ADD_FAILURE() << "reorder accepted";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("at a later point of the loop"), std::string::npos) << e.what();
  }
}

TEST(Schedule, ComputeRootStoresARegisterAndComputeInlineTakesItBack) {
  const char* text = R"(graph @f {
    %s0 = storage f32[8] arg 0
    %s1 = storage f32[8] temp
    %s2 = storage f32[8] temp
    op0 = exp(%s0[8]{1}+0) -> %s1[8]{1}+0
    op1 = negative(%s1[8]{1}+0) -> %s2[8]{1}+0
    return %s2[8]{1}+0
  })";
  Graph g = parse_graph(text);
  Stage s = stage_of(text);
  EXPECT_EQ(s.inlinable, (std::vector<int>{1}));
  apply_schedule(g, s, sched("compute_root(%s1)"));
  EXPECT_TRUE(s.registers.empty());
  apply_schedule(g, s, sched("compute_root(%s1) compute_inline(%s1)"));
  EXPECT_EQ(s.registers, (std::vector<int>{1}));
}

TEST(Schedule, ReductionLoopsSplitAndStayInOrder) {
  const char* text = R"(graph @f {
    %s0 = storage f32[24] arg 0
    %s1 = storage f32[4] temp
    op0 = sum(%s0[4,6]{6,1}+0) axes=[1] -> %s1[4]{1}+0
    return %s1[4]{1}+0
  })";
  Graph g = parse_graph(text);
  Stage s = stage_of(text);
  apply_schedule(g, s, sched("split(i1, r0, r1, 2) split(i0, a, b, 2)"));
  EXPECT_EQ(s.domain, (Shape{2, 2, 3, 2}));
  EXPECT_EQ(s.reduce_axes, (std::vector<int>{2, 3}));
  EXPECT_EQ(s.ops.back().axes, s.reduce_axes);
  EXPECT_EQ(s.ops.back().output.shape, (Shape{2, 2}));
  Stage u = stage_of(text);
  EXPECT_THROW(apply_schedule(g, u, sched("split(i1, r0, r1, 2) reorder(i0, r1, r0)")), ScheduleError);
  Stage t = stage_of(text);
  EXPECT_THROW(apply_schedule(g, t, sched("parallel(i0) reorder(i1, i0)")), ScheduleError);
}

TEST(Schedule, ParallelNeedsIndependentOuterIterations) {
  // x[:4] = -x[1:]: row r reads row r + 1, which iteration r + 1 stores; legal in order (one
  // stage), but not in parallel
  const char* shifted = R"(graph @f {
    %s0 = storage f32[20] arg 0
    %s1 = storage f32[16] temp
    op0 = negative(%s0[4,4]{4,1}+4) -> %s1[4,4]{4,1}+0
    op1 = copy(%s1[4,4]{4,1}+0) -> %s0[4,4]{4,1}+0
    return
  })";
  Graph g = parse_graph(shifted);
  Stage s = stage_of(shifted);
  try {
    apply_schedule(g, s, sched("parallel(i0)"));
    ADD_FAILURE() << "parallel accepted";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("two iterations of i0 touch one element of %s0"), std::string::npos) << e.what();
  }
  Graph g2 = parse_graph(kAdd);
  Stage t = stage_of(kAdd);
  apply_schedule(g2, t, sched("parallel(i0)"));
  EXPECT_TRUE(t.schedule.parallel);
}

TEST(Schedule, PointsThatEachWaitOnACacheLineGoParallelSooner) {
  // 8 x m points of `x > 0.25`: a contiguous x stays on one thread (up to kWarmParallelWork
  // points, the work of so cheap a point); a column of 85-float rows (one cache line per point)
  // is split across the pool from a quarter of kParallelMinPoints on: 8 x 8192 points, not one
  // image's 25,200 (waking the pool costs more than such a column)
  auto parallel = [](int64_t m, int64_t row) {
    const std::string n = std::to_string(8 * m * row), r = std::to_string(row), ms = std::to_string(m);
    const std::string text = "graph @f {\n  %s0 = storage f32[" + n + "] arg 0\n  %s1 = storage bool[" +
                             std::to_string(8 * m) + "] temp\n" +
                             "  %s2 = storage f32[1] const 0x0000803e\n  op0 = greater(%s0[8," + ms + "]{" +
                             std::to_string(m * row) + "," + r + "}+0, %s2[8," + ms + "]{0,0}+0) -> %s1[8," + ms + "]{" +
                             ms + ",1}+0\n  return %s1[8," + ms + "]{" + ms + ",1}+0\n}";
    Graph g = parse_graph(text);
    for (const Primitive& p : default_schedule(g, stage_of(text)))
      if (p.verb == "parallel") return true;
    return false;
  };
  EXPECT_FALSE(parallel(8192, 1));
  EXPECT_TRUE(parallel(8192, 85));
  EXPECT_FALSE(parallel(3150, 85));
}

// Soft-NMS's decay, x[b:b + n, 4] *= exp(x[b:b + n, 0] - x[b:b + n, 2]) over rows of 5, b and n
// known at run time: gathers of the rows' columns and a scatter into column 4, all by the rows'
// positions (b + i) * 5; or, with `idx`, by indices from an argument instead.
std::string decay(int64_t rows, bool idx = false) {
  const std::string n = std::to_string(rows), size = std::to_string(5 * rows), at = idx ? "%s11" : "%s8";
  const std::string v = "[?%s2<=" + n + "]{1}+0";
  return "graph @f {\n  %s0 = storage f32[" + size + "] arg 0\n  %s1 = storage i64[1] arg 1\n"
         "  %s2 = storage i64[1] arg 2\n  %s3 = storage i64[1] const 0x0000000000000000\n"
         "  %s4 = storage i64[1] const 0x0100000000000000\n  %s5 = storage i64[1] const 0x0500000000000000\n"
         "  %s6 = storage i64[" + n + "] temp\n  %s7 = storage i64[" + n + "] temp\n  %s8 = storage i64[" + n + "] temp\n"
         "  %s9 = storage f32[" + n + "] temp\n  %s10 = storage f32[" + n + "] temp\n  %s11 = storage i64[" + n + "] arg 3\n"
         "  %s12 = storage f32[" + n + "] temp\n  %s13 = storage f32[" + n + "] temp\n  %s14 = storage f32[" + n + "] temp\n"
         "  %s15 = storage f32[" + n + "] temp\n"
         "  op0 = arange(%s3[]{}+0, %s4[]{}+0) -> %s6" + v + "\n"
         "  op1 = add(%s6" + v + ", %s1[?%s2<=" + n + "]{0}+0) -> %s7" + v + "\n"
         "  op2 = multiply(%s7" + v + ", %s5[?%s2<=" + n + "]{0}+0) -> %s8" + v + "\n"
         "  op3 = take(%s0[" + size + "]{1}+0, " + at + v + ") -> %s9" + v + "\n"
         "  op4 = take(%s0[" + std::to_string(5 * rows - 2) + "]{1}+2, " + at + v + ") -> %s10" + v + "\n"
         "  op5 = subtract(%s9" + v + ", %s10" + v + ") -> %s12" + v + "\n"
         "  op6 = exp(%s12" + v + ") -> %s13" + v + "\n"
         "  op7 = take(%s0[" + std::to_string(5 * rows - 4) + "]{1}+4, " + at + v + ") -> %s14" + v + "\n"
         "  op8 = multiply(%s14" + v + ", %s13" + v + ") -> %s15" + v + "\n"
         "  op9 = put(" + at + v + ", %s15" + v + ") -> %s0[" + std::to_string(5 * rows - 4) + "]{1}+4\n  return\n}";
}

TEST(Schedule, AScatterIntoItsOwnRowsGoesParallelOnWarmWorkers) {
  // each point gathers and scatters only its own row (its position (b + i) * 5 cannot repeat):
  // the points split across threads, from far fewer than kParallelMinPoints (a point's exp,
  // gathers and scatter are work enough for the pool's warm workers, a loop's trips)
  auto parallel = [](const std::string& text) {  // the scatter's stage
    Graph g = parse_graph(text);
    StageGraph sg = fuse_stages(g, build_storage_table(g));
    const Stage& s = sg.stages.back();
    EXPECT_TRUE(is_domain_scatter(s.ops.back()));
    for (const Primitive& p : default_schedule(g, s))
      if (p.verb == "parallel") return true;
    return false;
  };
  EXPECT_TRUE(parallel(decay(4096)));
  EXPECT_FALSE(parallel(decay(1024)));  // too little work even for warm workers
  Graph g = parse_graph(decay(64));
  Stage s = stage_of(decay(64));
  ASSERT_TRUE(is_domain_scatter(s.ops.back()));
  apply_schedule(g, s, sched("parallel(i0)"));
  EXPECT_TRUE(s.schedule.parallel);
  // by indices from an argument, which may repeat (the last write wins, in the points' order),
  // the scatter stays on one thread, and a user's parallel is refused
  EXPECT_FALSE(parallel(decay(4096, true)));
  Graph h = parse_graph(decay(64, true));
  StageGraph sg = fuse_stages(h, build_storage_table(h));
  Stage& last = sg.stages.back();
  ASSERT_TRUE(is_domain_scatter(last.ops.back()));
  EXPECT_THROW(apply_schedule(h, last, sched("parallel(i0)")), ScheduleError);
}

TEST(Schedule, AWideCompactionGoesParallelUnlessItCompressesInPlace) {
  // x[x[:, c] > t] counted in its stage: parallel by default from kParallelCompactionPoints rows
  // of a cache line each, not for contiguous elements or fewer rows (emit_compress.cc's chunks);
  // the reduced loop is legal only for such a compaction, and never for one in place, whose
  // moves would reach what the chunk before it has yet to move
  auto compaction = [](int64_t m, int64_t row, bool in_place) {
    const std::string n = std::to_string(m), size = std::to_string(m * row), r = std::to_string(row);
    const std::string out = in_place ? "%s0[?%s2<=" + n + "]{" + r + "}+0" : "%s3[?%s2<=" + n + "]{1}+0";
    return "graph @f {\n  %s0 = storage f32[" + size + "] arg 0\n  %s1 = storage f32[1] arg 1\n"
           "  %s2 = storage i64[1] arg 2\n  %s3 = storage f32[" + n + "] arg 3\n  %s4 = storage bool[" + n + "] temp\n"
           "  %s5 = storage i64[" + n + "] temp\n"
           "  op0 = greater(%s0[" + n + "]{" + r + "}+0, %s1[" + n + "]{0}+0) -> %s4[" + n + "]{1}+0\n"
           "  op1 = cast(%s4[" + n + "]{1}+0) -> %s5[" + n + "]{1}+0\n"
           "  op2 = sum(%s5[" + n + "]{1}+0) axes=[0] -> %s2[]{}+0\n"
           "  op3 = compress(%s4[" + n + "]{1}+0, %s0[" + n + "]{" + r + "}+1) -> " + out + "\n  return\n}";
  };
  auto by_default = [&](int64_t m, int64_t row, bool in_place) {
    const std::string text = compaction(m, row, in_place);
    Graph g = parse_graph(text);
    for (const Primitive& p : default_schedule(g, stage_of(text)))
      if (p.verb == "parallel") return true;
    return false;
  };
  EXPECT_TRUE(by_default(kParallelCompactionPoints, 85, false));
  EXPECT_FALSE(by_default(kParallelCompactionPoints - 1, 85, false));
  EXPECT_FALSE(by_default(4 * kParallelCompactionPoints, 1, false));
  EXPECT_FALSE(by_default(kParallelCompactionPoints, 85, true));
  const std::string text = compaction(100, 85, true);
  Graph g = parse_graph(text);
  Stage s = stage_of(text);
  try {
    apply_schedule(g, s, sched("parallel(i0)"));
    ADD_FAILURE() << "parallel accepted";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("op3 compresses in place"), std::string::npos) << e.what();
  }
  const std::string apart = compaction(100, 85, false);
  Graph g2 = parse_graph(apart);
  Stage t = stage_of(apart);
  apply_schedule(g2, t, sched("parallel(i0)"));
  EXPECT_TRUE(t.schedule.parallel);
}

TEST(Schedule, AShortInnermostLoopVectorizesWhenTheAxesMergeIntoALongerOne) {
  // max over a (64, 4) array read whole is one loop of 256 once the plan merges its axes; the
  // boxes of every other row of (64, 8) stay 4-point rows
  auto vectorized = [](const char* view) {
    const std::string text = std::string("graph @f {\n  %s0 = storage f32[512] arg 0\n  %s1 = storage f32[1] temp\n") +
                             "  op0 = max(" + view + ") axes=[0,1] -> %s1[]{}+0\n  return %s1[]{}+0\n}";
    Graph g = parse_graph(text);
    for (const Primitive& p : default_schedule(g, stage_of(text)))
      if (p.verb == "vectorize") return true;
    return false;
  };
  EXPECT_TRUE(vectorized("%s0[64,4]{4,1}+0"));
  EXPECT_FALSE(vectorized("%s0[64,4]{8,1}+0"));
}

TEST(Schedule, AFloatStageTakesTheLanesOfItsFloatsNotOfItsInt64Positions) {
  // float32 values made from int64 (positions, an arange: Soft-NMS's IoU) take the lanes of
  // float32, the int64 two registers a vector; int64 alone, or float64 beside float32, keep theirs
  auto lanes = [](const char* in, const char* out, const char* view = "%s0[256]{1}+0", const char* to = "%s1[256]{1}+0") {
    const std::string text = std::string("graph @f {\n  %s0 = storage ") + in + "[512] arg 0\n  %s1 = storage " + out +
                             "[256] temp\n  op0 = cast(" + view + ") -> " + to + "\n  return " + to + "\n}";
    Graph g = parse_graph(text);
    for (const Primitive& p : default_schedule(g, stage_of(text)))
      if (p.verb == "vectorize") return p.factors[0];
    return int64_t{0};
  };
  const int64_t f32 = lanes("f32", "f32");
  ASSERT_GE(f32, 4);
  EXPECT_EQ(lanes("i64", "f32"), f32);
  EXPECT_EQ(lanes("f32", "i64"), f32);
  EXPECT_EQ(lanes("i64", "i64"), f32 / 2);
  EXPECT_EQ(lanes("f64", "f32"), f32 / 2);
  // rows of 4 that do not merge into one loop: no more lanes than int64's, where those fit a row
  const int64_t row = lanes("i64", "f32", "%s0[64,4]{8,1}+0", "%s1[64,4]{4,1}+0");
  EXPECT_EQ(row, f32 / 2 <= 4 ? f32 / 2 : 0);
}

TEST(Schedule, AReductionWhoseInnerLoopIsStridedFoldsItsContiguousAxisInnermost) {
  // m @ m.T of a (16, 512) m: over [i, k, j], m[i, k] (invariant in j) times m[j, k] (a row apart
  // in j), summed over k: k goes innermost, every load then contiguous, and vectorizes. m @ w of a
  // (512, 16) w walks j contiguously already and keeps its order.
  auto schedule_of = [](const char* b) {
    const std::string text = std::string("graph @f {\n  %s0 = storage f32[8192] arg 0\n  %s1 = storage f32[8192] arg 1\n"
                                         "  %s2 = storage f32[131072] temp\n  %s3 = storage f32[256] temp\n"
                                         "  op0 = multiply(%s0[16,512,16]{512,1,0}+0, ") + b +
                             ") -> %s2[16,512,16]{8192,16,1}+0\n"
                             "  op1 = sum(%s2[16,512,16]{8192,16,1}+0) axes=[1] -> %s3[16,16]{16,1}+0\n  return %s3[16,16]{16,1}+0\n}";
    Graph g = parse_graph(text);
    return print_schedule(Schedule{default_schedule(g, stage_of(text))});
  };
  const std::string t = schedule_of("%s1[16,512,16]{0,1,512}+0");
  EXPECT_EQ(t.rfind("reorder(i0, i2, i1) vectorize(i1, ", 0), 0u) << t;
  const std::string w = schedule_of("%s1[16,512,16]{0,16,1}+0");
  EXPECT_EQ(w.find("reorder"), std::string::npos) << w;
  EXPECT_NE(w.find("vectorize(i2, "), std::string::npos) << w;
}

}  // namespace
}  // namespace strider
