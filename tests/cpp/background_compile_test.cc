#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "codegen/llvm/codegen.h"
#include "driver/driver.h"
#include "runtime/background_compile.h"
#include "runtime/executor.h"

// A program's stages compiling on background threads while its first call runs: each group
// compiled once, by a worker or by a caller waiting for it; a stage that must wait gets its
// kernel, the others run on the reference executor meanwhile; results alike either way.
namespace strider {
namespace {

// A flag threads wait on until the test opens it.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(m);
    open = true;
    cv.notify_all();
  }
};

// Occupies every compile worker until released: groups started after it queue behind.
struct BusyWorkers {
  Gate gate;
  std::shared_ptr<BackgroundCompile> job;
  BusyWorkers() {
    const size_t groups = 2 * std::max(2u, std::thread::hardware_concurrency());
    job = std::make_shared<BackgroundCompile>(0, std::vector<BackgroundCompile::Group>(groups), std::vector<char>{},
                                              [this](size_t) { gate.wait(); }, [] {});
    BackgroundCompile::start(job);
  }
  ~BusyWorkers() {
    gate.release();
    job->wait();
  }
};

class Stub final : public CompiledStage {
 public:
  void run(char* const*) const override {}
  const std::string& llvm_ir() const override { return ir_; }
  bool from_disk() const override { return false; }

 private:
  std::string ir_;
};

TEST(BackgroundCompile, EachGroupCompilesOnceAndFinishesAfterTheLast) {
  std::vector<Stub> kernels(6);
  std::vector<std::atomic<int>> runs(3);
  std::atomic<int> finished{0}, groups_done_at_finish{-1};
  std::shared_ptr<BackgroundCompile> job;
  job = std::make_shared<BackgroundCompile>(
      6, std::vector<BackgroundCompile::Group>{{{0, 3}}, {{1, 4}}, {{2, 5}}}, std::vector<char>(6, 1),
      [&](size_t g) {
        ++runs[g];
        for (size_t i : {g, g + 3}) job->publish(i, &kernels[i]);
      },
      [&] {
        groups_done_at_finish = runs[0] + runs[1] + runs[2];
        ++finished;
      });
  BackgroundCompile::start(job);
  EXPECT_EQ(job->await(4), &kernels[4]);  // its group, compiled here or by a worker
  job->wait();
  EXPECT_TRUE(job->done());
  for (auto& r : runs) EXPECT_EQ(r.load(), 1);
  EXPECT_EQ(finished.load(), 1);
  EXPECT_EQ(groups_done_at_finish.load(), 3);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(job->kernel(i), &kernels[i]);
}

TEST(BackgroundCompile, AStageThatNeedNotWaitDoesNotWait) {
  BusyWorkers busy;
  Gate compiling;
  Stub kernel;
  std::shared_ptr<BackgroundCompile> job;
  job = std::make_shared<BackgroundCompile>(
      2, std::vector<BackgroundCompile::Group>{{{0}}, {{1}}}, std::vector<char>{0, 1},
      [&](size_t g) {
        if (g == 0) compiling.wait();
        job->publish(g, &kernel);
      },
      [] {});
  BackgroundCompile::start(job);
  EXPECT_EQ(job->await(0), nullptr);   // the reference runs it meanwhile
  EXPECT_EQ(job->await(1), &kernel);   // compiled here: the workers are busy
  EXPECT_FALSE(job->done());
  compiling.release();
  job->wait();  // compiles group 0 here
  EXPECT_EQ(job->kernel(0), &kernel);
}

TEST(BackgroundCompile, AStageInTwoGroupsWaitsForTheFirstWhoseKernelTheSecondsReplaces) {
  BusyWorkers busy;
  Stub quick, full;
  std::vector<std::atomic<int>> runs(2);
  std::shared_ptr<BackgroundCompile> job;
  job = std::make_shared<BackgroundCompile>(
      1, std::vector<BackgroundCompile::Group>{{{0}}, {{0}}}, std::vector<char>{1},
      [&](size_t g) {
        ++runs[g];
        if (g == 0) job->publish(0, &quick, 0);
        else job->publish(0, &full);
      },
      [] {});
  BackgroundCompile::start(job);
  EXPECT_EQ(job->await(0), &quick);  // the first group, compiled here: the workers are busy
  EXPECT_EQ(runs[1].load(), 0);
  EXPECT_EQ(job->await(0), &quick);  // it has a kernel: no wait for the second
  job->wait();
  EXPECT_EQ(job->kernel(0), &full);
  EXPECT_EQ(runs[0] + runs[1], 2);
}

TEST(BackgroundCompile, AProvisionalKernelNeverReplacesAPublishedOne) {
  Stub quick, full;
  auto job = std::make_shared<BackgroundCompile>(1, std::vector<BackgroundCompile::Group>{}, std::vector<char>{1},
                                                 [](size_t) {}, [] {});
  job->publish(0, nullptr, 0);  // (a quick compile that made none: nothing to publish)
  EXPECT_EQ(job->kernel(0), nullptr);
  job->publish(0, &full);
  job->publish(0, &quick, 0);  // came later than the full compile's
  EXPECT_EQ(job->kernel(0), &full);
}

TEST(BackgroundCompile, AKernelReplacesOnlyThoseOfLowerTiers) {
  // a loop's wide stage: quick (0), then vectorized (1), then O3 (final), whichever order their
  // groups finish in; a final null (the full compile refused the stage) still stands
  Stub quick, loops, full;
  for (const bool loops_last : {false, true}) {
    auto job = std::make_shared<BackgroundCompile>(1, std::vector<BackgroundCompile::Group>{}, std::vector<char>{1},
                                                   [](size_t) {}, [] {});
    job->publish(0, &quick, 0);
    EXPECT_EQ(job->kernel(0), &quick);
    if (!loops_last) {
      job->publish(0, &loops, 1);
      EXPECT_EQ(job->kernel(0), &loops);
      job->publish(0, &quick, 0);
      EXPECT_EQ(job->kernel(0), &loops);
    }
    job->publish(0, &full);
    job->publish(0, &loops, 1);
    EXPECT_EQ(job->kernel(0), &full);
  }
  auto refused = std::make_shared<BackgroundCompile>(1, std::vector<BackgroundCompile::Group>{}, std::vector<char>{1},
                                                     [](size_t) {}, [] {});
  refused->publish(0, &loops, 1);
  refused->publish(0, nullptr);
  EXPECT_EQ(refused->kernel(0), nullptr);
}

TEST(BackgroundCompile, CancelDropsTheGroupsNotStartedAndSkipsFinish) {
  BusyWorkers busy;
  std::atomic<int> runs{0}, finished{0};
  auto job = std::make_shared<BackgroundCompile>(3, std::vector<BackgroundCompile::Group>{{{0}}, {{1}}, {{2}}}, std::vector<char>(3, 0),
                                                 [&](size_t) { ++runs; }, [&] { ++finished; });
  BackgroundCompile::start(job);
  job->cancel();
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ(finished.load(), 0);
  job->wait();  // returns: nothing is left to run
}

TEST(BackgroundCompile, AGroupInterpretedAsLongAsItsCompileWouldTakeIsCompiledByTheCaller) {
  BusyWorkers busy;
  std::vector<std::atomic<int>> runs(2);
  const std::chrono::milliseconds cost(4);
  auto job = std::make_shared<BackgroundCompile>(
      3, std::vector<BackgroundCompile::Group>{{{0}, cost}, {{1}, cost}}, std::vector<char>(3, 0),
      [&](size_t g) { ++runs[g]; }, [] {});
  BackgroundCompile::start(job);
  job->interpreted(1, cost / 2);
  job->interpreted(2, cost * 2);  // no group: never compiled
  EXPECT_EQ(runs[0] + runs[1], 0);  // within its cost: the reference runs on
  job->interpreted(1, cost / 2);
  EXPECT_EQ(runs[1].load(), 1);  // compiled here, the workers being busy
  EXPECT_EQ(runs[0].load(), 0);  // not interpreted: left to the workers
  EXPECT_FALSE(job->done());
  job->wait();
  EXPECT_EQ(runs[0].load(), 1);
}

TEST(BackgroundCompile, AThreadWaitingForAGroupAnotherCompilesCompilesTheNextMeanwhile) {
  BusyWorkers busy;
  Gate started, go;
  Stub kernel;
  std::atomic<bool> second_done{false};
  std::thread::id second_by;
  std::shared_ptr<BackgroundCompile> job;
  job = std::make_shared<BackgroundCompile>(
      2, std::vector<BackgroundCompile::Group>{{{0}}, {{1}}}, std::vector<char>{1, 1},
      [&](size_t g) {
        if (g == 0) {
          started.release();
          go.wait();
        } else {
          second_by = std::this_thread::get_id();
          second_done = true;
        }
        job->publish(g, &kernel);
      },
      [] {});
  BackgroundCompile::start(job);
  std::thread first([&] { job->await(0); });  // compiles group 0, held at the gate
  started.wait();
  std::thread opener([&] {  // (a caller that only waited would never compile group 1: then after 2 s)
    for (int ms = 0; ms < 2000 && !second_done; ++ms) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    go.release();
  });
  EXPECT_EQ(job->await(0), &kernel);
  EXPECT_EQ(second_by, std::this_thread::get_id());
  first.join();
  opener.join();
}

TEST(BackgroundCompile, AThreadWaitingForAGroupTakesNoneExpectedToTakeLongerMeanwhile) {
  // a quick group's waiter that took a full group would wait for that instead
  BusyWorkers busy;
  Gate started, go;
  Stub kernel;
  std::atomic<bool> second_started{false};
  std::shared_ptr<BackgroundCompile> job;
  using std::chrono::milliseconds;
  job = std::make_shared<BackgroundCompile>(
      2, std::vector<BackgroundCompile::Group>{{{0}, milliseconds(2)}, {{1}, milliseconds(60)}}, std::vector<char>{1, 1},
      [&](size_t g) {
        if (g == 0) {
          started.release();
          go.wait();
        } else {
          second_started = true;
        }
        job->publish(g, &kernel);
      },
      [] {});
  BackgroundCompile::start(job);
  std::thread first([&] { job->await(0); });  // compiles group 0, held at the gate
  started.wait();
  std::thread opener([&] {  // (the group the waiter must not take would start within 200 ms)
    std::this_thread::sleep_for(milliseconds(200));
    go.release();
  });
  EXPECT_EQ(job->await(0), &kernel);
  EXPECT_FALSE(second_started);
  first.join();
  opener.join();
  job->wait();
  EXPECT_TRUE(second_started);
}

TEST(BackgroundCompile, CancelWaitsForAFinishUnderWay) {
  Gate finishing, finish;
  std::atomic<bool> finished{false}, cancelled{false};
  auto job = std::make_shared<BackgroundCompile>(1, std::vector<BackgroundCompile::Group>{{{0}}}, std::vector<char>{0},
                                                 [](size_t) {}, [&] {
                                                   finishing.release();
                                                   finish.wait();
                                                   finished = true;
                                                 });
  BackgroundCompile::start(job);
  finishing.wait();
  std::thread owner([&] {
    job->cancel();  // the program going away: finish() writes into it
    cancelled = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(cancelled.load());
  finish.release();
  owner.join();
  EXPECT_TRUE(finished.load());
}

// Two stages: a fused chain whose middle lives in registers when compiled, ending in a max
// (the reference runs it alike: it need not wait), then a float32 exp and sum (its kernel may
// differ from the reference within ulps: it waits for it).
const char* kProgram = R"(graph @f {
    %s0 = storage f32[64] arg 0
    %s1 = storage f32[64] arg 1
    %s2 = storage f32[64] arg 2
    %s3 = storage f32[64] arg 3
    %s4 = storage f32[1] arg 4
    %s5 = storage f32[1] arg 5
    %s6 = storage f32[64] temp
    op0 = multiply(%s0[64]{1}+0, %s1[64]{1}+0) -> %s6[64]{1}+0
    op1 = add(%s6[64]{1}+0, %s0[64]{1}+0) -> %s2[64]{1}+0
    op2 = max(%s2[64]{1}+0) axes=[0] -> %s4[]{}+0
    op3 = exp(%s2[64]{1}+0) -> %s3[64]{1}+0
    op4 = sum(%s3[64]{1}+0) axes=[0] -> %s5[]{}+0
    return
  })";

struct Buffers {
  std::vector<float> a, b, c, d, e, f;
  Buffers() : a(64), b(64), c(64, 0), d(64, 0), e(1, 0), f(1, 0) {
    for (int i = 0; i < 64; ++i) a[i] = 0.25f * i - 3, b[i] = std::sin(0.5f * i);
  }
  std::vector<void*> ptrs() { return {a.data(), b.data(), c.data(), d.data(), e.data(), f.data(), nullptr}; }
  bool operator==(const Buffers& o) const {
    auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
      return std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
    };
    return same(c, o.c) && same(d, o.d) && same(e, o.e) && same(f, o.f);
  }
};

TEST(BackgroundCompile, AFirstRunWhileCompilingGivesTheCompiledResults) {
  if (!llvm_backend_available()) GTEST_SKIP() << "built without LLVM";
  Program compiled = lower(parse_graph(kProgram));
  Buffers want;
  execute(compiled, want.ptrs());
  std::shared_ptr<Program> p;
  Buffers first;
  {
    BusyWorkers busy;  // the stages that need not wait run on the reference executor
    p = lower_in_background(parse_graph(kProgram));
    execute(*p, first.ptrs());
    // the first stage ran on the reference executor (its group queued behind the busy workers,
    // and it need not wait), storing the register its kernel keeps; the second waited for its
    // group, which the call compiled
    ASSERT_EQ(p->stages.stages.size(), 2u);
    EXPECT_NE(p->kernel(1), nullptr);
  }
  EXPECT_TRUE(first == want);
  p->settle();
  EXPECT_EQ(p->compiled + p->disk_hits, compiled.compiled + compiled.disk_hits);
  EXPECT_EQ(p->fallbacks, compiled.fallbacks);
  EXPECT_EQ(p->unstored, compiled.unstored);
  Buffers later;
  execute(*p, later.ptrs());
  EXPECT_TRUE(later == want);
}

// A float32 exp and sum (no quick kernel stands in for it: it waits for its full one), then three
// small stages the reference computes alike, of other lengths.
const char* kWaitFirstProgram = R"(graph @f {
    %s0 = storage f32[64] arg 0
    %s1 = storage f32[1] arg 1
    %s2 = storage f32[32] arg 2
    %s3 = storage f32[16] arg 3
    %s4 = storage f32[8] arg 4
    %s5 = storage f32[64] temp
    op0 = exp(%s0[64]{1}+0) -> %s5[64]{1}+0
    op1 = sum(%s5[64]{1}+0) axes=[0] -> %s1[]{}+0
    op2 = multiply(%s2[32]{1}+0, %s2[32]{1}+0) -> %s2[32]{1}+0
    op3 = add(%s3[16]{1}+0, %s3[16]{1}+0) -> %s3[16]{1}+0
    op4 = subtract(%s4[8]{1}+0, %s4[8]{1}+0) -> %s4[8]{1}+0
    return
  })";

TEST(BackgroundCompile, AFirstRunWaitsForTheStagesNoQuickKernelStandsInForAlone) {
  // the exp and sum stage compiles in a group of its own, not with the stages after it
  // (Soft-NMS's Gaussian decay: the first call waited 88 ms for seven stages, now 51-57 for one)
  if (!llvm_backend_available()) GTEST_SKIP() << "built without LLVM";
  std::vector<float> a(64), b(1), c(32), d(16), e(8);
  for (int i = 0; i < 64; ++i) a[i] = 0.1f * i;
  std::shared_ptr<Program> p;
  {
    BusyWorkers busy;
    p = std::make_shared<Program>(lower(parse_graph(kWaitFirstProgram), {}, false));
    compile_stages_in_background(*p, nullptr);
    execute(*p, {a.data(), b.data(), c.data(), d.data(), e.data(), nullptr});
    ASSERT_EQ(p->stages.stages.size(), 4u);
    EXPECT_NE(p->kernel(0), nullptr);  // compiled by the call
    for (size_t i = 1; i < 4; ++i) EXPECT_EQ(p->kernel(i), nullptr) << i;  // queued behind the busy workers
  }
  p->settle();
}

// One stage of 2^17 element-ops that the reference computes alike: it must wait for a kernel.
const char* kBigProgram = R"(graph @f {
    %s0 = storage f32[65536] arg 0
    %s1 = storage f32[65536] arg 1
    %s2 = storage f32[65536] arg 2
    op0 = multiply(%s0[65536]{1}+0, %s1[65536]{1}+0) -> %s2[65536]{1}+0
    op1 = add(%s2[65536]{1}+0, %s0[65536]{1}+0) -> %s2[65536]{1}+0
    return
  })";

TEST(BackgroundCompile, AFirstRunOfABigStageTheReferenceComputesAlikeRunsItsQuickKernel) {
  if (!llvm_backend_available()) GTEST_SKIP() << "built without LLVM";
  std::vector<float> a(65536), b(65536), want(65536, 0), got(65536, 0);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.01f * i), b[i] = 0.5f * i - 7;
  Program compiled = lower(parse_graph(kBigProgram));
  execute(compiled, {a.data(), b.data(), want.data()});
  std::shared_ptr<Program> p;
  {
    BusyWorkers busy;  // the full compile's group queues behind them
    p = std::make_shared<Program>(lower(parse_graph(kBigProgram), {}, false));
    compile_stages_in_background(*p, nullptr);  // (no disk cache: a stored kernel would be loaded instead)
    execute(*p, {a.data(), b.data(), got.data()});
    ASSERT_EQ(p->stages.stages.size(), 1u);
    ASSERT_EQ(p->quick_kernels.size(), 1u);
    EXPECT_NE(p->quick_kernels[0], nullptr);
    EXPECT_EQ(p->kernel(0), p->quick_kernels[0].get());  // compiled here, quickly
  }
  EXPECT_EQ(std::memcmp(got.data(), want.data(), 4 * want.size()), 0);
  p->settle();
  EXPECT_NE(p->kernel(0), p->quick_kernels[0].get());
  EXPECT_EQ(p->kernel(0), p->kernels[0].get());
  EXPECT_EQ(p->compiled + p->disk_hits, compiled.compiled + compiled.disk_hits);  // the quick one is not counted
  std::fill(got.begin(), got.end(), 0.0f);
  execute(*p, {a.data(), b.data(), got.data()});
  EXPECT_EQ(std::memcmp(got.data(), want.data(), 4 * want.size()), 0);
}

TEST(BackgroundCompile, EveryStageTheReferenceComputesAlikeGetsAQuickKernel) {
  // a loop's small stages run quick code once it comes, not the reference for as long as the
  // full compile takes (hard_nms's first call: 245 -> 96 ms)
  if (!llvm_backend_available()) GTEST_SKIP() << "built without LLVM";
  Program compiled = lower(parse_graph(kProgram));
  auto p = std::make_shared<Program>(lower(parse_graph(kProgram), {}, false));
  compile_stages_in_background(*p, nullptr);
  p->settle();
  ASSERT_EQ(p->quick_kernels.size(), 2u);
  EXPECT_NE(p->quick_kernels[0], nullptr);  // the small chain ending in a max
  EXPECT_EQ(p->quick_kernels[1], nullptr);  // exp and sum: O3's values may differ from quick code's
  Buffers want, got;
  execute(compiled, want.ptrs());
  execute(*p, got.ptrs());
  EXPECT_TRUE(got == want);
}

TEST(BackgroundCompile, Float32ExpAndLogGetAQuickKernelAndFloat64ExpNone) {
  // float32 exp and log are scalar_ops.inc's arithmetic wherever they run (Soft-NMS's Gaussian
  // decay, exp(-ov * ov / sigma), no longer waits for O3 on a first call); float64 exp calls libm,
  // whose vector variants O3 may call instead
  if (!llvm_backend_available()) GTEST_SKIP() << "built without LLVM";
  const char* text = R"(graph @f {
    %s0 = storage f32[64] arg 0
    %s1 = storage f32[64] arg 1
    %s2 = storage f64[32] arg 2
    %s3 = storage f64[32] arg 3
    op0 = exp(%s0[64]{1}+0) -> %s1[64]{1}+0
    op1 = log(%s1[64]{1}+0) -> %s1[64]{1}+0
    op2 = exp(%s2[32]{1}+0) -> %s3[32]{1}+0
    return
  })";
  auto p = std::make_shared<Program>(lower(parse_graph(text), {}, false));
  compile_stages_in_background(*p, nullptr);
  p->settle();
  ASSERT_EQ(p->stages.stages.size(), 2u);
  ASSERT_EQ(p->quick_kernels.size(), 2u);
  EXPECT_NE(p->quick_kernels[0], nullptr);
  EXPECT_EQ(p->quick_kernels[1], nullptr);
}

// A stage before a loop (a product over 64 elements), then a loop summing x[i] while i < n and
// scaling a 512-element array by that sum: a scalar stage, then a wide one.
const char* kLoopProgram = R"(graph @f {
    %s0 = storage f64[64] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage i64[1] const 0x0000000000000000
    %s3 = storage f64[1] temp
    %s4 = storage i64[1] temp
    %s5 = storage bool[1] temp
    %s6 = storage bool[1] temp
    %s7 = storage bool[1] temp
    %s8 = storage f64[64] arg 2
    %s9 = storage f64[1] temp
    %s10 = storage f64[1] temp
    %s11 = storage i64[1] const 0x0100000000000000
    %s12 = storage i64[1] temp
    %s13 = storage bool[1] temp
    %s14 = storage f64[512] arg 3
    %s15 = storage f64[512] temp
    op0 = multiply(%s0[64]{1}+0, %s0[64]{1}+0) -> %s8[64]{1}+0
    op1 = copy(%s8[]{}+0) -> %s3[]{}+0
    op2 = copy(%s2[]{}+0) -> %s4[]{}+0
    op3 = loop_begin(%s3[1]{1}+0, %s4[1]{1}+0, %s14[512]{1}+0) axes=[0] -> %s5[]{}+0
    op4 = less(%s4[]{}+0, %s1[]{}+0) -> %s6[]{}+0
    op5 = loop_while(%s6[]{}+0) axes=[0] -> %s7[]{}+0
    op6 = take(%s8[64]{1}+0, %s4[]{}+0) -> %s9[]{}+0
    op7 = add(%s3[]{}+0, %s9[]{}+0) -> %s10[]{}+0
    op8 = copy(%s10[]{}+0) -> %s3[]{}+0
    op9 = add(%s4[]{}+0, %s11[]{}+0) -> %s12[]{}+0
    op10 = copy(%s12[]{}+0) -> %s4[]{}+0
    op11 = multiply(%s14[512]{1}+0, %s3[512]{0}+0) -> %s15[512]{1}+0
    op12 = copy(%s15[512]{1}+0) -> %s14[512]{1}+0
    op13 = loop_end(%s3[1]{1}+0, %s4[1]{1}+0, %s14[512]{1}+0) axes=[0] -> %s13[]{}+0
    return %s3[]{}+0
  })";

// The background compile's groups stage i is in, in the order the workers take them (its quick
// kernel's, then its O3 kernel's).
std::vector<size_t> groups_of(const Program& p, size_t i) {
  std::vector<size_t> at;
  const auto& groups = p.background.job->groups();
  for (size_t g = 0; g < groups.size(); ++g)
    if (std::count(groups[g].stages.begin(), groups[g].stages.end(), i)) at.push_back(g);
  return at;
}

TEST(BackgroundCompile, ALoopsStagesCompileBeforeTheStagesOutsideIt) {
  // while a first call runs a loop on quick kernels, the loop's O3 ones come first, in groups of
  // their own (greedy NMS on 6000 boxes ran its whole first call on quick kernels, the loop's O3
  // code queued with the stages before it); the quick kernels too
  if (!llvm_backend_available()) GTEST_SKIP() << "built without LLVM";
  BusyWorkers busy;
  Program p = lower(parse_graph(kLoopProgram), {}, false);
  compile_stages_in_background(p, nullptr);
  size_t first_body = p.stages.stages.size(), before = 0;
  for (size_t i = 0; i < p.stages.stages.size(); ++i) {
    const bool body = std::any_of(p.stages.stages[i].ops.begin(), p.stages.stages[i].ops.end(),
                                  [](const Op& op) { return op.code == OpCode::take; });
    if (body) first_body = i;
    if (!p.stages.stages[i].domain.empty() && p.stages.stages[i].domain[0] == 64) before = i;
  }
  ASSERT_LT(before, first_body) << print_stages(p.graph, p.stages);
  // each of the stage's groups (its quick kernel's, its O3 kernel's) after the body's of its kind
  const std::vector<size_t> body_at = groups_of(p, first_body), before_at = groups_of(p, before);
  ASSERT_EQ(body_at.size(), 2u);
  ASSERT_EQ(before_at.size(), 2u);
  for (size_t k = 0; k < 2; ++k) EXPECT_LT(body_at[k], before_at[k]) << k;
  p.background = {};
}

TEST(BackgroundCompile, ALoopsWideStagesGetAVectorizedKernelFirstAndCompileBeforeItsScalarOnes) {
  // of a loop's stages, those over many elements get a vectorized kernel (Effort::kLoops) in
  // place of a quick one, one stage a group, right after the quick kernels a first call waits
  // for and before those of the stages outside the loop, and their O3 kernels come first: O3
  // gains little on a scalar stage (Soft-NMS's IoU stage waited behind twenty scalar ones on 6000
  // boxes); the quick kernels stay in stage order, as the call waits for them
  if (!llvm_backend_available()) GTEST_SKIP() << "built without LLVM";
  BusyWorkers busy;
  Program p = lower(parse_graph(kLoopProgram), {}, false);
  compile_stages_in_background(p, nullptr);
  const size_t none = p.stages.stages.size();
  size_t scalar = none, wide = none, outside = none;
  for (size_t i = 0; i < p.stages.stages.size(); ++i)
    for (const Op& op : p.stages.stages[i].ops) {
      if (op.code == OpCode::take) scalar = i;
      if (op.code == OpCode::multiply && shape_numel(p.stages.stages[i].domain) == 512) wide = i;
      if (op.code == OpCode::multiply && shape_numel(p.stages.stages[i].domain) == 64) outside = i;
    }
  ASSERT_NE(outside, none) << print_stages(p.graph, p.stages);
  ASSERT_NE(scalar, none) << print_stages(p.graph, p.stages);
  ASSERT_NE(wide, none) << print_stages(p.graph, p.stages);
  ASSERT_LT(scalar, wide) << print_stages(p.graph, p.stages);
  const std::vector<size_t> scalar_at = groups_of(p, scalar), wide_at = groups_of(p, wide);
  ASSERT_EQ(scalar_at.size(), 2u);
  ASSERT_EQ(wide_at.size(), 2u);  // no quick kernel: the vectorized one, then O3's
  EXPECT_LT(wide_at[0], wide_at[1]);
  EXPECT_LT(wide_at[1], scalar_at[1]);
  EXPECT_EQ(p.background.job->groups()[wide_at[0]].stages.size(), 1u);
  const std::vector<size_t> outside_at = groups_of(p, outside);
  ASSERT_EQ(outside_at.size(), 2u);
  EXPECT_LT(wide_at[0], outside_at[0]);
  ASSERT_EQ(p.loop_kernels.size(), p.stages.stages.size());
  p.background = {};
}

TEST(BackgroundCompile, ALoopsWideCompactionGetsAQuickKernelBeforeItsVectorizedOne) {
  // a compaction's vectorized code takes several times as long as its quick code (py_cpu_nms's
  // IoU stage and its compress: 49 ms against 9), so a first call waits for the quick kernel
  if (!llvm_backend_available()) GTEST_SKIP() << "built without LLVM";
  BusyWorkers busy;
  Program p = lower(parse_graph(R"(graph @f {
    %s0 = storage f64[1] arg 0
    %s1 = storage i64[1] arg 1
    %s2 = storage i64[1] const 0x0000000000000000
    %s3 = storage f64[1] temp
    %s4 = storage i64[1] temp
    %s5 = storage bool[1] temp
    %s6 = storage bool[1] temp
    %s7 = storage bool[1] temp
    %s8 = storage i64[1] const 0x0100000000000000
    %s9 = storage i64[1] temp
    %s10 = storage f64[512] arg 2
    %s11 = storage bool[512] temp
    %s12 = storage i64[512] temp
    %s13 = storage i64[1] temp
    %s14 = storage f64[512] temp
    %s15 = storage f64[1] temp
    %s16 = storage bool[1] temp
    op0 = copy(%s0[]{}+0) -> %s3[]{}+0
    op1 = copy(%s2[]{}+0) -> %s4[]{}+0
    op2 = loop_begin(%s3[1]{1}+0, %s4[1]{1}+0) axes=[0] -> %s5[]{}+0
    op3 = less(%s4[]{}+0, %s1[]{}+0) -> %s6[]{}+0
    op4 = loop_while(%s6[]{}+0) axes=[0] -> %s7[]{}+0
    op5 = add(%s4[]{}+0, %s8[]{}+0) -> %s9[]{}+0
    op6 = copy(%s9[]{}+0) -> %s4[]{}+0
    op7 = greater(%s10[512]{1}+0, %s3[512]{0}+0) -> %s11[512]{1}+0
    op8 = cast(%s11[512]{1}+0) -> %s12[512]{1}+0
    op9 = sum(%s12[512]{1}+0) axes=[0] -> %s13[]{}+0
    op10 = compress(%s11[512]{1}+0, %s10[512]{1}+0) -> %s14[?%s13<=512]{1}+0
    op11 = sum(%s14[?%s13<=512]{1}+0) axes=[0] -> %s15[]{}+0
    op12 = copy(%s15[]{}+0) -> %s3[]{}+0
    op13 = loop_end(%s3[1]{1}+0, %s4[1]{1}+0) axes=[0] -> %s16[]{}+0
    return %s3[]{}+0
  })"), {}, false);
  compile_stages_in_background(p, nullptr);
  size_t compaction = p.stages.stages.size();
  for (size_t i = 0; i < p.stages.stages.size(); ++i)
    for (const Op& op : p.stages.stages[i].ops)
      if (op.code == OpCode::compress) compaction = i;
  ASSERT_LT(compaction, p.stages.stages.size()) << print_stages(p.graph, p.stages);
  ASSERT_EQ(groups_of(p, compaction).size(), 3u) << print_stages(p.graph, p.stages);  // quick, vectorized, O3
  p.background = {};
}

TEST(BackgroundCompile, AProgramGoingAwayWhileCompilingWaitsForIt) {
  if (!llvm_backend_available()) GTEST_SKIP() << "built without LLVM";
  for (int i = 0; i < 4; ++i) lower_in_background(parse_graph(kProgram));  // destroyed at once
  BackgroundCompile::wait_all();
}

}  // namespace
}  // namespace strider
