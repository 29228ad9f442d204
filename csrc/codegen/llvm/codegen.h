#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/kernel.h"
#include "runtime/kernel_cache.h"
#include "schedule/loop_nest.h"

// The CPU backend: a Stage becomes one LLVM module (IRBuilder), optimized at O3 for the host CPU
// (its features, AllowFPOpFusion=Strict, no fast-math flags on elementwise ops) and JIT-compiled
// by one process-wide ORC LLJIT.
//
// Results are bit-identical to the reference executor (ops/scalar_ops.inc) for every op except:
// - the unary transcendentals of float32 and float64 (float32 exp and log aside, which scalar_ops.inc
//   computes) call NumPy's own loops where the Python module installed them (ops/numpy_loops.h:
//   STRIDER_NUMPY_MATH=1), as the reference does: a scalar call passes one element, its vector
//   variants a whole vector;
// - the other transcendentals (power, arctan2, hypot, logaddexp, and the unary ones without
//   NumPy's loops): in vectorized loops they call glibc's libmvec (_ZGVdN8v_expf, on AVX-512
//   hosts _ZGVeN16v_expf, ...; glibc documents at most 4 ulp of error for each), in scalar loops
//   and remainders the same libm function as the reference (LLVM may fold a call on a constant,
//   or pow(x, 2) into x * x, within an ulp);
// - float sum and prod, which the loop vectorizer may reassociate (both accumulate in double, as
//   the reference does in order: ops/reduce_spec.h).
// NaN payloads may differ where the hardware picks one of two NaN operands.
//
// Compiled stages are an object file; with a disk cache it is stored under the stages' key
// (stage_cache_key) and a later process links the stored object instead of compiling.
namespace strider {

/// False when built without LLVM (a stub is compiled then) or when the JIT cannot start.
bool llvm_backend_available();

/// How much work LLVM puts into a stage's code. kFull: O3 and the aggressive code generator.
/// kQuick, what a first call can wait for: a few cleanups after the scalar ops are inlined (no
/// loop or SLP vectorizer, no unrolling), then the fast instruction selector and register
/// allocator; about a sixth of kFull's compile time for code two to four times slower, computing
/// the same values bit for bit (the vectorizers never reassociate an op or call libmvec here:
/// background_compile.h's stages that may use it are those the reference executor computes alike).
/// kLoops: kQuick's cleanups, then the loop vectorizer, and the default code generator: the first
/// kernel of a loop nest over many elements that a loop runs trip after trip (an NMS loop's IoU
/// stage), nearly as fast as kFull's for a third of its compile time, the same values again.
enum class Effort { kQuick, kLoops, kFull };

/// Compiles one stage (shapes, strides, offsets are compile-time constants: the graph is specialized
/// per call signature). Throws std::invalid_argument naming the op for anything it cannot compile
/// (the caller then falls back to the reference executor for that stage): an op/dtype pair the
/// reference has no loop for, a stage reading and writing overlapping regions of one storage in an
/// order the loop nest would change, a reduction without identity over an empty or run-time-sized
/// axis; also when LLVM itself fails (the message says so). Thread-safe. A parallel schedule runs
/// serially unless no element written at one row of axis 0 is touched at another.
///
/// With a cache, an intact entry for the stage's key is linked instead (no IR, no optimization,
/// no codegen), and a compiled stage is stored; a missing or damaged entry is compiled and
/// written over.
std::unique_ptr<CompiledStage> compile_stage(const Graph& g, const Stage& s, DiskCache* cache = DiskCache::process(),
                                             Effort effort = Effort::kFull);

/// Stages compiled together, and why the others are refused.
struct CompiledGroup {
  std::vector<std::unique_ptr<CompiledStage>> kernels;  // per stage; null where refused
  std::vector<std::string> refused;                     // per stage: compile_stage's message, or ""
};

/// compile_stage for several stages at once: one LLVM module, one optimization and one object
/// file for all of them, so that what a module costs whatever its size (about 3 ms: the scalar
/// ops' bitcode, the pass pipelines, linking) is paid once. Identical stages share one function.
/// Results are each stage's as compile_stage gives them; with a cache, the group is one entry,
/// keyed by all its stages. Should LLVM fail on the module, each stage is compiled alone, so
/// that only the one it fails on is refused. Thread-safe. A quicker compile (kQuick, kLoops)
/// loads the cache's entry where there is one but never stores its own.
CompiledGroup compile_stage_group(const Graph& g, const std::vector<const Stage*>& stages,
                                  DiskCache* cache = DiskCache::process(), Effort effort = Effort::kFull);

/// The stage's disk-cache key, from named parts: strider (the package version), llvm (its
/// version), codegen (the entry format and a hash of the backend's sources), target (triple, CPU,
/// features, libmvec), stage (its full text: domain, ops and views, registers, schedule, and the
/// dtype and kind of every storage it touches, with the bytes of constants the code embeds).
CacheKey stage_cache_key(const Graph& g, const Stage& s);
/// A group's key: the same parts, with one stage part per stage in order.
CacheKey stage_cache_key(const Graph& g, const std::vector<const Stage*>& stages);

/// Lanes of `t` in one vector register of the width LLVM prefers on this host (a default for
/// Schedule::vector_width); 1 without LLVM.
int host_vector_width(DType t);

/// How compiled compresses move contiguous 4- and 8-byte elements (emit_compress.cc, jit.h's
/// VectorCompress): "avx512", "avx2" or "none" (one at a time; also without LLVM).
std::string vector_compress();
/// Makes later compiles move them that way, where the host can (tests run every way their host
/// has): false, changing nothing, where it cannot. A stage's key names the way.
bool use_vector_compress(const std::string& how);

}  // namespace strider
