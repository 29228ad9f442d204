#pragma once

#include <cstdint>
#include <functional>

namespace strider {

/// Runs fn over [0, n) split into contiguous chunks on the process-wide pool (hardware_concurrency
/// threads in all: the workers plus the caller, which takes chunks too), and returns when every
/// chunk is done. Runs fn(0, n) inline when n < 2, when the machine has one core, when called
/// from inside a parallel_for (nested parallelism never oversubscribes), and in a forked child.
/// Several host threads may call it at once: they share the workers, and each caller finishes its
/// own chunks when the workers are busy. The first exception thrown by fn is rethrown here once
/// every chunk has finished.
void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

/// parallel_for with the workers that are awake (spinning for work, or busy with another call's),
/// and the sleeping ones only where a parallel_for began in the last millisecond; the caller runs
/// the chunks no worker claims. For work whose wake-ups cost more than they save after other work
/// (a worker woken late holds a chunk its caller then waits for), but that nearly halves when
/// calls follow one another (a loop of calls, a batch's images).
void parallel_for_warm(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

/// Threads a parallel_for uses at most (workers plus the caller).
int parallel_threads();
/// Counts threads outside the pool that keep a core busy (background_compile.h's workers while
/// they compile: a first call's loop trips would otherwise share that core with a worker and
/// wait on its chunks), by delta. parallel_for_warm leaves them their cores.
void pool_cores_taken(int delta);

}  // namespace strider
