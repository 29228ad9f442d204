#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/kernel.h"
#include "runtime/kernel_cache.h"
#include "schedule/loop_nest.h"

// The CUDA backend's code generation: a Stage (normalized by codegen/stage_plan.h, as for LLVM)
// becomes self-contained CUDA C (no #include, so NVRTC compiles it anywhere) with one extern "C"
// __global__ kernel per stage (two for a grid-wide reduction), named after the stage's key.
// Shapes, strides and offsets are compile-time constants; run-time extents are read on the device.
//
// Elementwise stages flatten their domain and run a grid-stride loop, one point per thread per
// trip; each view's element offset is computed from the point's indices (negative strides,
// stride-0 broadcasts and strided stores as they come). Register temporaries are locals. Where
// the innermost extent is a multiple of 4 and some view walks it contiguously from multiples of
// 4, a vector path takes 4 points per trip with float4 (int4, 2 x double2, ...) loads and stores
// of those views, when their base addresses are aligned at run time (a NumPy slice need not be).
// A data-dependent op (alone in its stage) has kernels of its own (data_dependent_emitter.h):
// compaction by block counts and a scan, a radix sort a block per row (or, for few long rows, a
// launch of tiles a pass), scans a thread per row (a block per long row of integers).
// Reductions pick one of five shapes (emit_cuda_reduce.cc): a thread per output element (the
// innermost axis is kept, or rows are short), a warp per output (__shfl_down_sync), a block per
// output (warps, then shared memory), and for few very long rows or columns two kernels: the
// first folds chunks of each (a block or a thread per chunk) into scratch memory, the second
// folds the chunks.
//
// Semantics are the reference's, op for op: each op calls its function in ops/scalar_ops.inc,
// the reference executor's own (integer wrap-around and division by zero, float-to-int
// conversions, NaN propagation in maximum/minimum, NumPy's floor division and remainder),
// compiled with -fmad=false and no fast-math, so add, subtract, multiply, divide, sqrt, the
// comparisons, conversions and rounding functions give the reference's bits. Except:
// - transcendentals call CUDA's libdevice functions (log1p, pow, ...), whose error the CUDA
//   Math API documents per function (at most 4 ulp for float, 2 for double, most 1 or 2); float32
//   exp is the reference's arithmetic (fmaf, a division), NumPy's bits;
// - float sum and prod fold in a tree, in double as the reference (ops/reduce_spec.h) folds in
//   order, so a float64 result may differ from the reference's by the tree's rounding: within
//   n * 2^-53 * sum(|x|) for n elements;
// - integer power with a negative exponent sets the error flag (the launcher raises the
//   reference's domain_error); NaN payloads may differ where the hardware picks one of two NaNs.
namespace strider {

/// Emits one stage; throws std::invalid_argument naming the op for anything the backend cannot
/// compile (what make_plan refuses, an op/dtype pair without a loop in the reference, a stage
/// whose points share an element one of them writes, a reduction split with a tail). A split with
/// a tail in an elementwise stage skips the points past the axis's extent. A compute_at group is ignored: each of its stages is emitted as its own kernel,
/// so a runtime runs every stage in order and allocates the group's folded temporaries.
CudaStage emit_cuda_stage(const Graph& g, const Stage& s);

/// NVRTC options every stage is compiled with (after -arch=sm_XX): C++17, no FMA contraction.
const std::vector<std::string>& cuda_compile_options();

/// The key of the cubin of stages compiled together, from named parts: strider (version),
/// codegen (a hash of this backend's sources), nvrtc (version), arch ("sm_90"), options, and a
/// stage part per stage, in order (its stage_text, the storages it names, the op its error
/// record names).
CacheKey cuda_group_cache_key(const Graph& g, const std::vector<const Stage*>& stages, const std::string& arch,
                              const std::string& nvrtc_version);

/// Compiles emitted stages (emit_cuda_stage's, `emitted[i]` of `stages[i]`, no kernel twice) with
/// NVRTC for `arch` as one program, whose fixed cost and prelude are then paid once for all of
/// them (the prelude is guarded: each source stays self-contained), or loads the cubin from `cache`
/// (keyed by cuda_group_cache_key; a compiled one is stored); *from_disk says which. Throws
/// std::runtime_error when NVRTC is unavailable or fails (with its log).
std::string compile_cuda_group(const Graph& g, const std::vector<const Stage*>& stages,
                               const std::vector<const CudaStage*>& emitted, const std::string& arch,
                               bool* from_disk, DiskCache* cache = DiskCache::process());

/// A stage compiled for one architecture: its CUDA C and launches, and the cubin.
struct CudaCompiled {
  CudaStage stage;
  std::string cubin;
  bool from_disk = false;  // loaded from the disk cache instead of compiled
};

/// Emits and compiles one stage (compile_cuda_group of it alone). Throws std::invalid_argument
/// where emit_cuda_stage does.
CudaCompiled compile_cuda_stage(const Graph& g, const Stage& s, const std::string& arch,
                                DiskCache* cache = DiskCache::process());

}  // namespace strider
