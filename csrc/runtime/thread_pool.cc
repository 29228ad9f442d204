#include "runtime/thread_pool.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace strider {

namespace {

// How long a worker that ran out of work, or a caller whose chunks are done, polls before it
// blocks: a stage's parallel_for usually follows the last one within microseconds, and a futex
// wake-up costs several of them on each side (yolov5_prologue spent a quarter of its time there).
constexpr auto kSpin = std::chrono::microseconds(50);

// Within this of the last parallel_for, parallel_for_warm wakes sleeping workers too: calls
// follow one another (a benchmark's loop, a batch's images), and a worker wakes in time to help.
constexpr auto kRecentCall = std::chrono::milliseconds(1);

// Polls ready() until it holds or kSpin has passed; returns whether it holds.
template <typename Ready>
bool spin_until(const Ready& ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1;; ++i) {
    if (ready()) return true;
    if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) return false;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

// Set while a thread runs chunks (a worker, or a caller inside parallel_for): nested calls run inline.
thread_local bool t_in_parallel = false;

// One parallel_for call: chunks are claimed with an atomic counter by the caller and by workers.
struct Job {
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0;
  int64_t chunks = 0;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex m;
  std::condition_variable finished;
  std::exception_ptr error;  // guarded by m

  // Claims and runs chunks until none is left. A worker holding a stale job claims nothing and never
  // touches fn, which may be gone by then.
  void work() {
    while (true) {
      const int64_t c = next.fetch_add(1);
      if (c >= chunks) return;
      try {
        (*fn)(n * c / chunks, n * (c + 1) / chunks);
      } catch (...) {
        std::lock_guard<std::mutex> lock(m);
        if (!error) error = std::current_exception();
      }
      if (done.fetch_add(1) + 1 == chunks) {
        std::lock_guard<std::mutex> lock(m);
        finished.notify_all();
      }
    }
  }
};

class Pool {
 public:
  Pool() : pid_(getpid()) {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i + 1 < hw; ++i) workers_.emplace_back([this] { loop(); });
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  void take_cores(int delta) { taken_.fetch_add(delta, std::memory_order_relaxed); }

  // cold (parallel_for): every sleeping worker may be woken; else (parallel_for_warm) only
  // after a recent call, and none whose core another thread keeps busy
  void run(int64_t n, const std::function<void(int64_t, int64_t)>& fn, bool cold) {
    // a forked child has no workers: its caller would still finish alone, but skip the queue
    if (n < 2 || workers_.empty() || t_in_parallel || getpid() != pid_) {
      fn(0, n);
      return;
    }
    const int64_t chunks = std::min<int64_t>(n, 4 * threads());  // a few chunks per thread balance uneven rows
    std::shared_ptr<Job> job;
    int64_t helpers = 0;
    int sleeping = 0;
    {
      std::lock_guard<std::mutex> lock(m_);
      const auto now = std::chrono::steady_clock::now();
      const bool wake = cold || now - last_call_ < kRecentCall;
      last_call_ = now;
      int64_t ready = static_cast<int64_t>(workers_.size()) - (wake ? 0 : sleepers_);
      if (!cold) ready = std::min<int64_t>(ready, static_cast<int64_t>(workers_.size()) - taken_.load(std::memory_order_relaxed));
      helpers = std::min<int64_t>(ready, chunks - 1);
      if (helpers > 0) {
        job = std::make_shared<Job>();
        job->fn = &fn;
        job->n = n;
        job->chunks = chunks;
        for (int64_t i = 0; i < helpers; ++i) queue_.push_back(job);
        queued_.store(static_cast<int64_t>(queue_.size()), std::memory_order_release);
        sleeping = wake ? sleepers_ : 0;  // the sleepers to wake
      }
    }
    if (!job) {  // no worker to share with: one chunk, here
      fn(0, n);
      return;
    }
    // a spinning worker takes the job without a wake-up (sleepers_ changes only under m_)
    if (sleeping == 1 || (sleeping > 1 && helpers == 1)) wake_.notify_one();
    else if (sleeping > 1) wake_.notify_all();
    t_in_parallel = true;
    job->work();
    t_in_parallel = false;
    spin_until([&] { return job->done.load(std::memory_order_acquire) == job->chunks; });
    std::unique_lock<std::mutex> lock(job->m);
    job->finished.wait(lock, [&] { return job->done.load() == job->chunks; });
    if (job->error) std::rethrow_exception(job->error);
  }

 private:
  void loop() {
    t_in_parallel = true;
    while (true) {
      std::shared_ptr<Job> job;
      spin_until([&] { return queued_.load(std::memory_order_acquire) > 0; });
      {
        std::unique_lock<std::mutex> lock(m_);
        if (stop_ || queue_.empty()) {
          ++sleepers_;
          wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
          --sleepers_;
        }
        if (stop_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        queued_.store(static_cast<int64_t>(queue_.size()), std::memory_order_release);
      }
      job->work();
    }
  }

  const pid_t pid_;
  std::vector<std::thread> workers_;
  std::mutex m_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::atomic<int64_t> queued_{0};  // queue_.size(), for spinning workers to poll without m_
  int sleepers_ = 0;                // workers blocked on wake_ (guarded by m_)
  std::atomic<int> taken_{0};       // cores threads outside the pool keep busy (pool_cores_taken)
  std::chrono::steady_clock::time_point last_call_;  // of run() with workers (guarded by m_)
  bool stop_ = false;
};

// Never destroyed: threads still calling parallel_for while the process exits must find it.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn) {
  if (n <= 0) return;
  pool().run(n, fn, true);
}

void parallel_for_warm(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn) {
  if (n <= 0) return;
  pool().run(n, fn, false);
}

int parallel_threads() { return pool().threads(); }

void pool_cores_taken(int delta) { pool().take_cores(delta); }

}  // namespace strider
