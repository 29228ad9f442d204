#include "runtime/background_compile.h"

#include <unistd.h>

#include <algorithm>
#include <deque>
#include <thread>
#include <utility>

#include "runtime/thread_pool.h"

namespace strider {

// The process's compile workers and their queue of (job, group). Never destroyed: a worker may
// still wait on it while the process exits. A forked child starts workers of its own.
class CompileWorkers {
 public:
  static CompileWorkers& get() {
    static CompileWorkers* w = new CompileWorkers;
    return *w;
  }

  void push(const std::shared_ptr<BackgroundCompile>& job) {
    std::lock_guard<std::mutex> lock(m_);
    if (pid_ != getpid()) {  // the parent's threads are not this process's
      pid_ = getpid();
      started_ = 0;
      queue_.clear();
      jobs_.clear();
    }
    for (size_t g = 0; g < job->groups_.size(); ++g) queue_.emplace_back(job, g);
    jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(), [](const auto& j) { return j.expired(); }), jobs_.end());
    jobs_.push_back(job);
    const unsigned hw = std::max(2u, std::thread::hardware_concurrency());
    for (; started_ < hw - 1; ++started_) std::thread([this] { loop(); }).detach();
    wake_.notify_all();
  }

  std::vector<std::shared_ptr<BackgroundCompile>> live() {
    std::lock_guard<std::mutex> lock(m_);
    std::vector<std::shared_ptr<BackgroundCompile>> out;
    for (const auto& j : jobs_)
      if (auto job = j.lock()) out.push_back(std::move(job));
    return out;
  }

 private:
  void loop() {
    while (true) {
      std::pair<std::shared_ptr<BackgroundCompile>, size_t> task;
      {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [&] { return !queue_.empty(); });
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      pool_cores_taken(1);
      task.first->run_group(task.second);
      pool_cores_taken(-1);
    }
  }

  std::mutex m_;
  std::condition_variable wake_;
  std::deque<std::pair<std::shared_ptr<BackgroundCompile>, size_t>> queue_;
  std::vector<std::weak_ptr<BackgroundCompile>> jobs_;  // for wait_all
  pid_t pid_ = getpid();
  unsigned started_ = 0;
};

BackgroundCompile::BackgroundCompile(size_t stages, std::vector<Group> groups, std::vector<char> must_wait,
                                     std::function<void(size_t)> compile, std::function<void()> finish)
    : groups_(std::move(groups)), group_of_(stages, kNoGroup), must_wait_(std::move(must_wait)),
      compile_(std::move(compile)), finish_(std::move(finish)), ready_(new std::atomic<const CompiledStage*>[stages]),
      state_(new std::atomic<int>[groups_.size()]), interpreted_ns_(new std::atomic<int64_t>[groups_.size()]) {
  for (size_t i = 0; i < stages; ++i) ready_[i].store(nullptr, std::memory_order_relaxed);
  tier_.assign(stages, -1);
  for (size_t g = 0; g < groups_.size(); ++g) {
    state_[g].store(0, std::memory_order_relaxed);
    interpreted_ns_[g].store(0, std::memory_order_relaxed);
    for (size_t i : groups_[g].stages)
      if (group_of_[i] == kNoGroup) group_of_[i] = g;
  }
  must_wait_.resize(stages, 0);
}

void BackgroundCompile::start(const std::shared_ptr<BackgroundCompile>& job) {
  if (job->groups_.empty()) {
    job->finish_();
    job->done_.store(true, std::memory_order_release);
    return;
  }
  CompileWorkers::get().push(job);
}

void BackgroundCompile::publish(size_t stage, const CompiledStage* kernel, int tier) {
  if (!kernel && tier != kFinal) return;
  std::lock_guard<std::mutex> lock(publish_m_);
  if (tier <= tier_[stage]) return;
  tier_[stage] = tier;
  ready_[stage].store(kernel, std::memory_order_release);
}

bool BackgroundCompile::run_group(size_t g) {
  int queued = 0;
  if (!state_[g].compare_exchange_strong(queued, 1)) return false;
  if (!cancelled_.load()) compile_(g);
  {
    std::lock_guard<std::mutex> lock(m_);
    state_[g].store(2, std::memory_order_release);
    changed_.notify_all();
  }
  group_done();
  return true;
}

void BackgroundCompile::group_done() {
  // the last group's thread runs finish(), then marks the job done: an owner cancelling waits
  // for that, not for the count
  if (groups_done_.fetch_add(1) + 1 != groups_.size()) return;
  if (!cancelled_.load()) finish_();
  std::lock_guard<std::mutex> lock(m_);
  done_.store(true, std::memory_order_release);
  changed_.notify_all();
}

void BackgroundCompile::wait_group(size_t g) {
  if (run_group(g)) return;
  // another thread compiles it: compile the next groups meanwhile, as a worker would, those
  // expected to take no longer than it (a quick group's waiter that took a full group would wait
  // for that instead: 25 ms became 170 in multiclass_nms's first call)
  for (size_t h = g + 1; h < groups_.size() && state_[g].load(std::memory_order_acquire) != 2; ++h)
    if (groups_[h].cost <= groups_[g].cost) run_group(h);
  std::unique_lock<std::mutex> lock(m_);
  changed_.wait(lock, [&] { return state_[g].load(std::memory_order_acquire) == 2; });
}

const CompiledStage* BackgroundCompile::await(size_t stage) {
  const size_t g = group_of_[stage];
  if (g != kNoGroup && must_wait_[stage] && state_[g].load(std::memory_order_acquire) != 2) wait_group(g);
  return kernel(stage);
}

void BackgroundCompile::interpreted(size_t stage, std::chrono::nanoseconds spent) {
  const size_t g = group_of_[stage];
  if (g == kNoGroup || state_[g].load(std::memory_order_relaxed) != 0) return;
  if (interpreted_ns_[g].fetch_add(spent.count()) + spent.count() >= groups_[g].cost.count()) run_group(g);
}

void BackgroundCompile::wait() {
  for (size_t g = 0; g < groups_.size() && !done(); ++g) run_group(g);
  std::unique_lock<std::mutex> lock(m_);
  changed_.wait(lock, [&] { return done(); });
}

void BackgroundCompile::cancel() {
  cancelled_.store(true);
  for (size_t g = 0; g < groups_.size(); ++g) {
    int queued = 0;
    if (state_[g].compare_exchange_strong(queued, 2)) group_done();
  }
  std::unique_lock<std::mutex> lock(m_);
  changed_.wait(lock, [&] { return done(); });
}

void BackgroundCompile::wait_all() {
  for (const auto& job : CompileWorkers::get().live()) job->wait();
}

}  // namespace strider
