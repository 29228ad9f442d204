#pragma once

// What every backend (LLVM, CUDA) shares: a stage normalized for code generation, and the text
// that names everything a stage's code depends on (the base of each backend's cache key).

#include <set>
#include <string>
#include <vector>

#include "analysis/overlap.h"
#include "ir/graph.h"
#include "ops/reduce_spec.h"
#include "schedule/loop_nest.h"

namespace strider::detail {

/// Codegen's copy of a stage. Every view has the domain's rank (0-d inputs and the reduction's
/// output carry stride 0 on the axes they lack), axes of extent 1 are dropped and neighbouring
/// axes every view walks as one are merged, which keeps the iteration order.
struct StagePlan {
  Shape domain;
  std::vector<int> extent;    // per axis: the storage holding its run-time extent, or -1
  std::vector<bool> reduced;  // per axis: folded by the final reduction
  std::vector<Op> ops;
  std::vector<int> op_ids;    // graph op indices, for messages
  std::set<int> registers;
  bool reduction = false;     // the last op is a reduction
  ReduceSpec reduce;          // how it folds (when `reduction`)
  int vector_width = 1;       // a power of two
  int unroll = 1;
  bool parallel = false;      // split axis 0 across the thread pool
  bool compress = false;      // compresses by one mask the LLVM backend compiles (emit_compress.cc),
  size_t first_compress = 0;  // after this many ops that make and count the mask (a sum ends them)
  bool parallel_compress = false;  // those ops and the compresses by chunks on the thread pool
  std::string backend;        // "LLVM", "CUDA": who refuses, in messages
  std::vector<TailBound> tails;  // the stage's, by axis
  // compute_at: stages run first at each point of the outer `shared` axes (which every plan keeps
  // as they are), then this one over the rest
  std::vector<StagePlan> members;
  int shared = 0;
  // temporaries held one iteration of the shared axes at a time, in a stack buffer of `slab`
  // elements: their views here have stride 0 on the shared axes and offsets into the buffer
  std::vector<Stage::Folded> folded;
  // the storages the stage's code names, in the order of stage_storages: the k-th base the
  // runtime hands the code is that of bases[k]
  std::vector<int> bases;

  int rank() const { return static_cast<int>(domain.size()); }
  /// Axis 0 is split by the (begin, end) arguments of the body: it exists and is not reduced.
  bool splits() const { return rank() > 0 && !reduced[0]; }
};

/// Normalizes and checks a stage; throws std::invalid_argument naming the op on anything the
/// backend refuses ("<backend> backend cannot compile op7 (add): ...", stage_plan.cc).
StagePlan make_plan(const Graph& g, const Stage& s, const std::string& backend);

/// A constant of at most this many bytes is embedded in the generated code, so the compiler sees
/// its values (a scalar operand folds); its bytes are then part of the stage's cache key.
constexpr size_t kEmbedBytes = 256;

/// The storages a stage names, in the order its text first names them (its registers, its
/// folded temporaries, then each op's views and their run-time extents, computed_at members
/// first). The text numbers them so: two stages that differ only in the storages they touch
/// (one loop body unrolled twice, one image of a batch after another) have one text, and the
/// LLVM backend one machine code for both, reading the bases in this order.
std::vector<int> stage_storages(const Stage& s);

/// The stage's full text for cache keys: domain, ops and views, registers, schedule, and the
/// dtype and kind of every storage it touches, with the bytes of the constants code embeds;
/// storages are numbered in stage_storages' order, not by id. Op ids, source lines and the
/// graph's name are left out: they reach only messages and logs.
std::string stage_text(const Graph& g, const Stage& s);

}  // namespace strider::detail
