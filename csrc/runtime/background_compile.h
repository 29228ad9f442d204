#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/kernel.h"

namespace strider {

/// A program's stages compiling on background threads while its first call runs (the driver's
/// compile_stages_in_background starts one): LLVM takes a few milliseconds a stage, and the
/// reference executor runs a small stage in microseconds, so the first call of a function with
/// tens of stages (an NMS loop) need not wait for all of them.
///
/// The stages compile in groups (one LLVM module each), on process-wide workers (one fewer than
/// the cores, at least one) and on any thread that waits for them, which compiles a group no
/// worker has taken yet, and expected to take no longer than the one it waits for, instead of
/// sleeping. A group's kernels are published when it is done: kernel() is safe to call from any
/// thread at any time. Thread-safe.
class BackgroundCompile {
 public:
  /// One module's stages, and what compiling it is expected to take.
  struct Group {
    std::vector<size_t> stages;
    std::chrono::nanoseconds cost{0};
  };

  /// `groups`: compiled in this order by the workers; a stage may be in two, the first making a
  /// kernel quickly that the second's replaces (driver/compile_stages.cc: a stage that must wait
  /// waits for the first); `must_wait`: per stage, whether a run needs its kernel (await waits
  /// for it) rather than the reference executor; `compile(g)` compiles group g and publishes its
  /// kernels; `finish()` runs once, after the last group, unless cancelled.
  BackgroundCompile(size_t stages, std::vector<Group> groups, std::vector<char> must_wait,
                    std::function<void(size_t)> compile, std::function<void()> finish);
  BackgroundCompile(const BackgroundCompile&) = delete;
  BackgroundCompile& operator=(const BackgroundCompile&) = delete;

  /// Queues every group on the workers.
  static void start(const std::shared_ptr<BackgroundCompile>& job);

  /// Called by compile(g) for each compiled stage of group g (null: it has no kernel), of `tier`:
  /// kFinal (the full compile's) always, a provisional one's (a quick kernel, 0, or a faster one
  /// made after it, 1) only where the stage has none of its tier or a higher one yet: the other
  /// groups' may have come first. The caller keeps every kernel it published alive while this
  /// job lives: a run may hold the one another replaced.
  static constexpr int kFinal = 2;
  void publish(size_t stage, const CompiledStage* kernel, int tier = kFinal);

  /// The stage's kernel where its group is done and compiled it; else null.
  const CompiledStage* kernel(size_t stage) const { return ready_[stage].load(std::memory_order_acquire); }

  /// kernel(stage), compiling or waiting for its group first where the stage must wait for it.
  const CompiledStage* await(size_t stage);

  /// Counts time the reference executor spent on a stage whose kernel is not ready. Once its
  /// group's stages have taken as long as compiling the group would, and no worker has started
  /// it, the caller compiles it (a loop's body interpreted trip after trip: as a ski rental, at
  /// most twice the better of interpreting on and compiling at once).
  void interpreted(size_t stage, std::chrono::nanoseconds spent);

  /// The groups, in the order the workers take them.
  const std::vector<Group>& groups() const { return groups_; }

  /// True when every group is done and finish() has run (or was skipped: cancelled).
  bool done() const { return done_.load(std::memory_order_acquire); }

  /// Returns once done(), compiling the groups no worker has started.
  void wait();

  /// Drops the groups no thread has started and waits for the others (an owner going away).
  void cancel();

  /// wait() for every job started and not yet done (before a fork, at exit).
  static void wait_all();

 private:
  friend class CompileWorkers;
  // Compiles group g where no thread has claimed it; false where one had.
  bool run_group(size_t g);
  void wait_group(size_t g);
  // Counts a group run or dropped; the last runs finish() and marks the job done.
  void group_done();

  static constexpr size_t kNoGroup = ~size_t{0};
  std::vector<Group> groups_;
  std::vector<size_t> group_of_;  // per stage: the first group it is in, or kNoGroup
  std::vector<char> must_wait_;
  std::function<void(size_t)> compile_;
  std::function<void()> finish_;
  std::unique_ptr<std::atomic<const CompiledStage*>[]> ready_;
  std::vector<int> tier_;  // per stage: the published kernel's tier, -1 before any (guarded by publish_m_)
  std::mutex publish_m_;
  std::unique_ptr<std::atomic<int>[]> state_;  // per group: 0 queued, 1 compiling, 2 done
  std::unique_ptr<std::atomic<int64_t>[]> interpreted_ns_;  // per group
  std::atomic<size_t> groups_done_{0};
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> done_{false};
  std::mutex m_;
  std::condition_variable changed_;  // a group done
};

}  // namespace strider
