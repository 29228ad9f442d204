#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "ir/graph.h"

namespace strider {

/// Runs a data-dependent op (ops.def's Compact, Gather, Scatter, Sort and Check kinds) on
/// memory: `op`'s run-time extents already resolved to static shapes, `base[s]` the address of
/// storage s. Throws std::out_of_range with NumPy's IndexError message where check_index finds an
/// index out of range (and, defensively, where take or put meets one), std::invalid_argument with
/// NumPy's ValueError message for a partition's kth out of range or a reduction of no element.
void run_data_dependent(const Graph& g, const Op& op, char* const* base);

/// Throws what `op` throws where it fails: a Check op, or take, put or add_at meeting an index
/// out of range. check_index, take, put, add_at: `a` the first bad index (C order), `b` the
/// indexed axis's length; check_equal: its two lengths; check_nonempty, check_assert: neither
/// (`base[s]` holds storage s: check_assert's message).
[[noreturn]] void throw_check_failure(const Op& op, int64_t a, int64_t b, char* const* base);

/// NumPy's sort and argsort of `n` contiguous values of one dtype, in place (its ArrFuncs'
/// signatures: argsort's `order` holds 0..n-1 on entry; the last argument is unused for numbers;
/// nonzero on failure).
using NumpySortFn = int (*)(void* values, int64_t n, void* unused);
using NumpyArgsortFn = int (*)(void* values, int64_t* order, int64_t n, void* unused);

/// Installs NumPy's own sort and argsort of its default kind for `dtype`, which a sort op that
/// asks for NumPy's order of ties (its axes' third, 1) calls for a row that holds equal keys:
/// NumPy leaves their order to its algorithm (x86-simd-sort, introsort), which only it has. The
/// Python module installs them; without them ties come in stable order.
void set_numpy_sort(DType dtype, NumpySortFn sort, NumpyArgsortFn argsort);

/// NumPy's own partition of `n` contiguous values of `dtype` at the `nkth` positions `kth`
/// (negative ones from the end), its default kind: with `order` null, of the values in place;
/// else argpartition's first m positions into `order` (`reverse`: its last m, last first).
/// Nonzero on failure, `error` then holding NumPy's message.
using NumpyPartitionFn = int (*)(DType dtype, void* values, int64_t n, const int64_t* kth, int64_t nkth,
                                 int64_t* order, int64_t m, bool reverse, std::string* error);

/// Installs NumPy's partition, which a sort op that asks for it (its axes' third, 2, then the kth)
/// calls for every row: NumPy leaves the order on either side of a kth, and which of equal keys
/// lands there, to its introselect, which only it has. The Python module installs it; without
/// it such a sort is a stable sort (one of the answers NumPy's contract allows).
void set_numpy_partition(NumpyPartitionFn partition);

/// What check_assert throws where the asserted value is false (Python's AssertionError, with
/// the user's message and, as a note, where the assert is: a traceback shows strider's call).
struct AssertionFailed : std::runtime_error {
  AssertionFailed(const std::string& message, std::string where) : std::runtime_error(message), where(std::move(where)) {}
  std::string where;  // file:line
};

/// What a check_assert for kZeroDivisionError throws (Python's ZeroDivisionError).
struct ZeroDivision : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a check_assert for kUnboundLocalError throws (Python's UnboundLocalError).
struct UnboundLocal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What append throws past its list's capacity: the loop ran more trips than the program has
/// room for. Nothing it did is the caller's to see (Runner::run puts back the arguments it
/// wrote): the dispatcher traces again with more room and runs the call anew.
struct LoopBoundExceeded : std::length_error {
  using std::length_error::length_error;
};

/// What a check throws where NumPy's semantics part from the compiled program's on values known
/// only when the function runs: check_equal where one of its lengths is 1 (NumPy broadcasts that
/// length, which the program read as equal to the other), check_assert with kRunInNumPy. The
/// dispatcher runs the call in NumPy instead where nothing the run did reached the caller
/// (Runner::run puts back the arguments it wrote); what() says why.
struct RunInNumPy : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

}  // namespace strider
