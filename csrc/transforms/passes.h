#pragma once

#include <string>
#include <vector>

#include "analysis/dependence.h"
#include "analysis/storage_table.h"
#include "ir/graph.h"
#include "schedule/loop_nest.h"

namespace strider {

/// Where a program's stages run: on the CPU each stage is a loop nest whose points run in
/// lexicographic order (rows across threads where they are independent); on a GPU every point of
/// a stage runs at once, one per thread, so a stage may not carry a dependence between points.
enum class Target { Cpu, Cuda };

/// Drops ops whose results nobody observes (not returned, not in caller-visible storage, not
/// read by a live op) and the temporaries only they used. Returns its input when nothing is dead.
Graph eliminate_dead_ops(const Graph& g, const StorageTable& t, const Dag& d);

/// A whole 1-d sort (or argsort) into a temporary that its readers read only the head or the tail
/// of (s[:k], s[::-1][:k], s[-k:]: views, so writes and returns keep NumPy's aliasing) becomes a
/// selection of just that part, written in place into the same storage: the first k of the
/// stable order (axes [0, k]), or the last k, selected last first through a reversed view (axes
/// [1, k]). Not done where the sorted array is returned, written, or read through a run-time
/// extent. Returns its input when no sort is selected.
Graph select_sort_heads(const Graph& g, const StorageTable& t);

/// A cast to float32 of a float64 add, subtract, multiply, divide or sqrt that nothing else reads
/// becomes that op on float32 operands, where each operand is a cast from float32 (or from a
/// dtype float32 holds exactly), a float64 constant float32 holds exactly, or a where, maximum,
/// minimum or negative of such operands (copied in float32 just before the cast): the same bits,
/// since float64 rounding twice is float32 rounding once for these ops, and twice the vector
/// lanes (Soft-NMS's `dets[i + 1:, 4] *= np.where(ov > Nt, 0.0, 1.0)` on float32 rows). Not
/// done where an operand's source is written between its cast and the narrowed op. `log` gets
/// one line per op. Returns its input when nothing is narrowed.
Graph narrow_casts(const Graph& g, const StorageTable& t, std::vector<std::string>* log = nullptr);

/// For Target::Cpu: a compress into a temporary that only a copy back into the compressed array
/// reads (`order = order[m]`, order[1:][m]) compresses in place instead, when its rows move
/// towards the start (the runtime's compress then moves each row before any later one is
/// overwritten). `log` gets one line per op.
Graph compress_in_place(const Graph& g, const StorageTable& t, std::vector<std::string>* log = nullptr);

/// For Target::Cpu, after compress_in_place: a loop's 1-d gathers through an int64 index array
/// it carries (NMS's x1[order[1:]] while `order = order[inds + 1]`) read instead a carried array
/// of the gathered values (one per gathered view: x1[order] taken once before the loop, then
/// compressed by the same mask after each in-place compress of the indices), so that a trip
/// loads consecutive values instead of gathering each one. Done where the index array is
/// written once before the loop (densely from its start, with no region opening or closing
/// between that write and the loop) and inside it only by in-place compresses of itself, no
/// region inside the loop carries it, and the gathered storage is not written from that write to
/// the loop's end. Likewise a gather through a gather of an index array the loop does not write
/// (greedy NMS's x1[order[i + 1:]]: x1 at order at positions) reads x1[order], taken once before
/// the loop, at the positions, where x1 is not written in the loop either and nothing between
/// the two gathers opens or closes a region or writes the positions. `log` gets one line per
/// gather.
Graph carry_gathers(const Graph& g, const StorageTable& t, std::vector<std::string>* log = nullptr);

/// Recomputes cheap elementwise producers where they are read, so that a consumer over another
/// loop domain (a slice, a transpose, a flip or an inner broadcast of the temporary) fuses with
/// them instead of reading a stored temporary: a read of a temporary written once, densely, by
/// an elementwise op or copy gets a copy of that op inserted just before the reader, its inputs
/// composed with the read's view (recursively, at most 48 ops per read). Not done when the read
/// broadcasts along an axis outside the axes it walks (the work would repeat), when an op of
/// the exp/log/power family would run twice, or when an input of the producer is written between
/// it and the reader. The producer is left for eliminate_dead_ops. `log` gets one line per copy.
Graph inline_producers(const Graph& g, const StorageTable& t, std::vector<std::string>* log = nullptr);

/// For Target::Cuda: an op that reads elements which its own write changes at another point
/// (x[:-1] = x[1:] as one copy) writes a new dense temporary instead, and a copy after it stores
/// that into place, so that fuse_stages can put the two in different stages (kernels). `log` gets
/// one line per op.
Graph buffer_overlapping_writes(const Graph& g, std::vector<std::string>* log = nullptr);

/// Groups ops, in program order, into stages (one loop nest each): neighbours with the same loop
/// domain (unit dimensions dropped) join while the exact dependence test says running them point
/// by point keeps every conflicting pair of accesses in order, and for Target::Cuda that no
/// element one of them writes is touched at another point; a reduction ends its stage. Every
/// rejected fusion is recorded with its reason.
StageGraph fuse_stages(const Graph& g, const StorageTable& t, Target target = Target::Cpu);

}  // namespace strider
