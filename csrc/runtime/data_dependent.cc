#include "runtime/data_dependent.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/elementwise.h"
#include "runtime/thread_pool.h"

namespace strider {

namespace {

template <typename T>
T* at(char* const* base, const View& v, int64_t off) {
  return reinterpret_cast<T*>(base[v.storage]) + off;
}

[[noreturn]] void out_of_bounds(int64_t index, int axis, int64_t size) {
  throw std::out_of_range("index " + std::to_string(index) + " is out of bounds for axis " + std::to_string(axis) +
                          " with size " + std::to_string(size));
}

// The assert's message, UTF-8 from the code points the op carries.
std::string assert_message(const View& text, char* const* base) {
  std::string out;
  for (int64_t i = 0; i < text.shape[0]; ++i) {
    const uint32_t c = static_cast<uint32_t>(*at<int32_t>(base, text, text.offset + i * text.strides[0]));
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

}  // namespace

void throw_check_failure(const Op& op, int64_t a, int64_t b, char* const* base) {
  switch (op.code) {
    case OpCode::check_index:
      // axes[0] < 0: a partition's kth, NumPy's ValueError names it made non-negative
      if (op.axes[0] < 0)
        throw std::invalid_argument("kth(=" + std::to_string(a < 0 ? a + b : a) + ") out of bounds (" + std::to_string(b) + ")");
      out_of_bounds(a, op.axes[0], b);
    case OpCode::check_nonempty: {
      static const char* const kMessages[] = {
          "zero-size array to reduction operation maximum which has no identity",
          "zero-size array to reduction operation minimum which has no identity",
          "attempt to get argmax of an empty sequence", "attempt to get argmin of an empty sequence"};
      throw std::invalid_argument(kMessages[op.axes[0]]);
    }
    case OpCode::check_assert: {
      // axes[0], when given: the Python error a failed check raises (int() of a float)
      const std::string message = assert_message(op.inputs[1], base);
      if (op.axes.empty() || op.axes[0] == kAssertionError) throw AssertionFailed(message, op.file + ":" + std::to_string(op.line));
      if (op.axes[0] == kRunInNumPy) throw RunInNumPy(message);
      if (op.axes[0] == kValueError) throw std::invalid_argument(message);
      if (op.axes[0] == kZeroDivisionError) throw ZeroDivision(message);
      if (op.axes[0] == kUnboundLocalError) throw UnboundLocal(message);
      throw std::overflow_error(message);
    }
    case OpCode::append: throw LoopBoundExceeded("a list filled in a loop outgrew its " + std::to_string(b) + " places");
    case OpCode::check_equal: {
      std::string text;
      for (char c : assert_message(op.inputs[2], base))
        text += c == '\x01' ? std::to_string(a) : c == '\x02' ? std::to_string(b) : std::string(1, c);
      if (!op.axes.empty() && op.axes[0] == kIndexError) throw std::out_of_range(text);  // a mask's: IndexError
      if (a == 1 || b == 1)  // NumPy broadcasts it
        throw RunInNumPy(text + "(a length of 1 known only when the function runs, at " + op.file + ":" +
                         std::to_string(op.line) + "): NumPy broadcasts it (the compiled program reads those lengths "
                         "as one)");
      throw std::invalid_argument(text);
    }
    default: out_of_bounds(a, 0, b);  // take, put, add_at: the rows' axis
  }
}

namespace {

// Calls f(off) for every element of `shape` in C order, off[k] being the element's offset (in
// elements) in views[k], which share the shape.
template <size_t N, typename F>
void walk(const Shape& shape, const std::array<const View*, N>& views, F&& f) {
  if (shape_numel(shape) == 0) return;
  const int nd = static_cast<int>(shape.size());
  std::array<int64_t, N> off;
  for (size_t k = 0; k < N; ++k) off[k] = views[k]->offset;
  std::vector<int64_t> idx(nd, 0);
  while (true) {
    f(off);
    int d = nd - 1;
    for (; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) off[k] += views[k]->strides[d];
      if (++idx[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= views[k]->strides[d] * shape[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

void nonzero(const Graph& g, const Op& op, char* const* base) {
  const View& in = op.inputs[0];
  const View& out = op.output;
  const int64_t room = out.shape[0];  // the count, as the op before computed it
  int64_t flat = 0, k = 0;
  dispatch_dtype(g.dtype_of(in), [&](auto tag) {
    using T = decltype(tag);
    if (in.ndim() == 1) {
      // branchless: every index is stored, the count moves past the kept ones (the storage holds
      // one per element, so the stores past the count stay inside it)
      const T* x = at<T>(base, in, in.offset);
      int64_t* o = at<int64_t>(base, out, out.offset);
      int64_t i = 0;
      if constexpr (std::is_same_v<T, bool>)
        if (in.strides[0] == 1 && out.strides[0] == 1)
          // a contiguous mask 8 at a time: words of false skipped, words of true (most of an NMS
          // trip's survivors) stored as a run
          for (; i + 8 <= in.shape[0] && k + 8 <= room; i += 8) {
            uint64_t w;
            std::memcpy(&w, x + i, 8);
            if (w == 0x0101010101010101ull) {
              for (int b = 0; b < 8; ++b) o[k + b] = i + b;
              k += 8;
            } else if (w) {
              for (int b = 0; b < 8; ++b, w >>= 8) {
                o[k] = i + b;
                k += (w & 0xFF) != 0;
              }
            }
          }
      for (; i < in.shape[0] && k < room; ++i) {
        o[k * out.strides[0]] = i;
        k += st::convert<bool>(st::from_memory(x[i * in.strides[0]]));
      }
      return;
    }
    walk<1>(in.shape, {&in}, [&](const std::array<int64_t, 1>& off) {
      if (st::convert<bool>(st::from_memory(*at<T>(base, in, off[0]))) && k < room) *at<int64_t>(base, out, out.offset + out.strides[0] * k++) = flat;
      ++flat;
    });
  });
}

void check_nonempty(const Op& op, char* const* base) {
  const int64_t n = *at<int64_t>(base, op.inputs[0], op.inputs[0].offset);
  *at<int64_t>(base, op.output, op.output.offset) = n;
  if (n <= 0) throw_check_failure(op, n, 0, base);
}

void check_assert(const Op& op, char* const* base) {
  const bool ok = *at<bool>(base, op.inputs[0], op.inputs[0].offset);
  *at<bool>(base, op.output, op.output.offset) = ok;
  if (!ok) throw_check_failure(op, 0, 0, base);
}

void check_equal(const Op& op, char* const* base) {
  const int64_t a = *at<int64_t>(base, op.inputs[0], op.inputs[0].offset);
  const int64_t b = *at<int64_t>(base, op.inputs[1], op.inputs[1].offset);
  *at<int64_t>(base, op.output, op.output.offset) = a;
  if (a != b) throw_check_failure(op, a, b, base);
}

void check_index(const Op& op, char* const* base) {
  const View& idx = op.inputs[0];
  const int64_t n = *at<int64_t>(base, op.inputs[1], op.inputs[1].offset);
  const View& out = op.output;
  if (out.ndim() == 1 && idx.strides[0] == 1 && out.strides[0] == 1) {
    // contiguous (gathers in an NMS loop's body, every trip): one branch-free pass, then the
    // first bad index found again for NumPy's message
    const int64_t* src = at<int64_t>(base, idx, idx.offset);
    int64_t* dst = at<int64_t>(base, out, out.offset);
    bool bad = false;
    for (int64_t k = 0; k < out.shape[0]; ++k) {
      const int64_t i = src[k];
      bad |= (i < -n) | (i >= n);
      dst[k] = i < 0 ? i + n : i;
    }
    if (bad)
      for (int64_t k = 0; k < out.shape[0]; ++k)
        if (src[k] < -n || src[k] >= n) throw_check_failure(op, src[k], n, base);
    return;
  }
  walk<2>(out.shape, {&idx, &out}, [&](const std::array<int64_t, 2>& off) {
    const int64_t i = *at<int64_t>(base, idx, off[0]);
    if (i < -n || i >= n) throw_check_failure(op, i, n, base);
    *at<int64_t>(base, out, off[1]) = i < 0 ? i + n : i;
  });
}

// Moves rows between the trailing axes of two views of the same row shape, each row given by
// the offset of its first element: dense rows with one memcpy, others element by element
// (`combine`: the elementwise op that combines each element with the destination's, np.add.at,
// np.maximum.at, np.minimum.at, in the values' dtype V: NumPy's loop for the two, its result
// cast back at every step).
template <typename T, typename V = T>
class RowMover {
 public:
  RowMover(char* const* base, const View& dst, int dst_lead, const View& src, int src_lead,
           std::optional<OpCode> combine = std::nullopt)
      : dst_(reinterpret_cast<T*>(base[dst.storage])), src_(reinterpret_cast<const V*>(base[src.storage])),
        dst_row_(dst.tail(dst_lead)), src_row_(src.tail(src_lead)), combine_(combine),
        n_(dst_row_.numel()), dense_(!combine && dst_row_.is_c_contiguous() && src_row_.is_c_contiguous()) {}

  // inline where dense (short rows: boxes, scalars), the strided walk out of line
  void operator()(int64_t dst_off, int64_t src_off) const {
    if constexpr (std::is_same_v<T, V>) {
      if (dense_) {
        T* to = dst_ + dst_off;
        const T* from = src_ + src_off;
        for (int64_t i = 0; i < n_; ++i) to[i] = from[i];
        return;
      }
    }
    strided(dst_off, src_off);
  }
  // Whether rows are contiguous on both sides (and moved, not added).
  bool dense() const { return dense_; }
  // Asks for the cache lines of a dense source row.
  void prefetch(int64_t src_off) const {
    if (!dense_) return;
    const uintptr_t from = reinterpret_cast<uintptr_t>(src_ + src_off), end = from + n_ * sizeof(V);
    for (uintptr_t line = from & ~uintptr_t{63}; line < end; line += 64)
      __builtin_prefetch(reinterpret_cast<const void*>(line));
  }

 private:
  void move(T* to, V v) const {
    if constexpr (std::is_same_v<T, V>) {
      *to = combine_ ? st::to_memory<T>(detail::binary_same<T>(*combine_, st::from_memory(*to), st::from_memory(v))) : v;
    } else {
      const st::reg_t<V> x = detail::binary_same<V>(*combine_, st::convert<V>(st::from_memory(*to)), st::from_memory(v));
      *to = st::to_memory<T>(st::convert<T>(x));
    }
  }

  [[gnu::noinline]] void strided(int64_t dst_off, int64_t src_off) const {
    if (dst_row_.ndim() <= 1) {
      const int64_t ds = dst_row_.ndim() ? dst_row_.strides[0] : 0, ss = src_row_.ndim() ? src_row_.strides[0] : 0;
      for (int64_t i = 0; i < n_; ++i) move(dst_ + dst_off + i * ds, src_[src_off + i * ss]);
      return;
    }
    View d = dst_row_, s = src_row_;
    d.offset = dst_off;
    s.offset = src_off;
    walk<2>(d.shape, {&d, &s}, [&](const std::array<int64_t, 2>& off) { move(dst_ + off[0], src_[off[1]]); });
  }

  T* dst_;
  const V* src_;
  View dst_row_, src_row_;
  std::optional<OpCode> combine_;
  int64_t n_;
  bool dense_;
};

// Calls f(i) for each i < n where the bool m[i * stride] is set; a contiguous mask is read 8 bytes
// at a time, skipping words of false (the kept rows of a score threshold are few).
template <typename F>
void for_each_set(const bool* m, int64_t n, int64_t stride, F&& f) {
  int64_t i = 0;
  if (stride == 1) {
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, m + i, 8);
      while (w) {
        const int b = __builtin_ctzll(w) >> 3;
        f(i + b);
        w &= ~(uint64_t{0xFF} << (8 * b));
      }
    }
  }
  for (; i < n; ++i)
    if (m[i * stride]) f(i);
}

// Moves `Bytes` from `from` to `to`, which may overlap it: read whole, then written. Up to 64
// bytes the compiler keeps them in registers (memmove of a constant size is a call).
template <size_t Bytes>
void move_bytes(char* to, const char* from) {
  if constexpr (Bytes <= 64) {
    char held[Bytes];
    std::memcpy(held, from, Bytes);
    std::memcpy(to, held, Bytes);
  } else {
    std::memmove(to, from, Bytes);
  }
}

void compress(const Graph& g, const Op& op, char* const* base) {
  const View& mask = op.inputs[0];
  const View& src = op.inputs[1];
  const View& out = op.output;
  const bool* m = reinterpret_cast<const bool*>(base[mask.storage]) + mask.offset;
  const int64_t n = mask.shape[0], ms = mask.strides[0], room = out.shape[0];  // room: the count
  const int64_t ss = src.strides[0], os = out.strides[0];
  dispatch_dtype(g.dtype_of(out), [&](auto tag) {
    using T = decltype(tag);
    int64_t k = 0;
    const int64_t oo = out.offset, so = src.offset;
    // Rows of a fixed size (an element, a box, a detection) move as one block each. Inside a word
    // of a contiguous mask with a bit set, branchless: every row is stored and the kept ones
    // counted (the stores past the count stay below it: the room holds that many rows). The
    // output may be the input moved towards its start (compress_in_place): each row is read
    // before any store reaches it.
    auto fixed = [&](auto size) {
      char* to = reinterpret_cast<char*>(at<T>(base, out, oo));
      const char* from = reinterpret_cast<const char*>(at<T>(base, src, so));
      const int64_t ob = os * static_cast<int64_t>(sizeof(T)), sb = ss * static_cast<int64_t>(sizeof(T));
      constexpr int64_t row = decltype(size)::value;
      const bool runs = ob == row && sb == row;  // eight kept rows are one block
      int64_t i = 0;
      if (ms == 1)
        for (; i + 8 <= n && k + 8 <= room; i += 8) {
          uint64_t w;
          std::memcpy(&w, m + i, 8);
          if (!w) continue;
          if (runs && w == 0x0101010101010101ull) {  // all kept (most of an NMS trip's survivors)
            move_bytes<8 * row>(to + k * ob, from + i * sb);
            k += 8;
            continue;
          }
          for (int b = 0; b < 8; ++b, w >>= 8) {
            move_bytes<row>(to + k * ob, from + (i + b) * sb);
            k += (w & 0xFF) != 0;
          }
        }
      for_each_set(m + i * ms, n - i, ms, [&, to, from, ob, sb](int64_t j) {
        if (k < room) move_bytes<row>(to + k++ * ob, from + (i + j) * sb);
      });
    };
    if (src.ndim() == 1) return fixed(std::integral_constant<size_t, sizeof(T)>{});
    const RowMover<T> move(base, out, 1, src, 1);
    const int64_t bytes = static_cast<int64_t>(sizeof(T)) * (src.numel() / std::max<int64_t>(src.shape[0], 1));
    if (bytes < 64) {  // rows sharing cache lines: a stream the hardware prefetches
      if (move.dense()) switch (bytes) {
          case 4: return fixed(std::integral_constant<size_t, 4>{});
          case 8: return fixed(std::integral_constant<size_t, 8>{});
          case 16: return fixed(std::integral_constant<size_t, 16>{});
          case 20: return fixed(std::integral_constant<size_t, 20>{});
          case 24: return fixed(std::integral_constant<size_t, 24>{});
          case 32: return fixed(std::integral_constant<size_t, 32>{});
          case 48: return fixed(std::integral_constant<size_t, 48>{});
          default: break;
        }
      for_each_set(m, n, ms, [&](int64_t i) {
        if (k < room) move(oo + k++ * os, so + i * ss);
      });
      return;
    }
    // Rows of a cache line or more kept far apart (a few percent of a large prediction): their
    // misses, each waited for in turn, cost more than the copy; each row is prefetched when found
    // and copied kAhead rows later.
    constexpr int kAhead = 8;
    int64_t found[kAhead];
    int64_t seen = 0;
    for_each_set(m, n, ms, [&](int64_t i) {
      if (seen >= room) return;
      move.prefetch(so + i * ss);
      if (seen >= kAhead) move(oo + k++ * os, so + found[seen % kAhead] * ss);
      found[seen++ % kAhead] = i;
    });
    for (; k < seen; ++k) move(oo + k * os, so + found[k % kAhead] * ss);
  });
}

// append of a block: in1's rows (a run-time count of them) into out's rows from the 0-d in0 on.
void append_rows(const Graph& g, const Op& op, char* const* base) {
  const View& out = op.output;
  const View& block = op.inputs[1];
  const int64_t first = *at<int64_t>(base, op.inputs[0], op.inputs[0].offset);
  if (first < 0 || first + block.shape[0] > out.shape[0]) throw_check_failure(op, first + block.shape[0], out.shape[0], base);
  dispatch_dtype(g.dtype_of(out), [&](auto tag) {
    using T = decltype(tag);
    const RowMover<T> move(base, out, 1, block, 1);
    for (int64_t j = 0; j < block.shape[0]; ++j)
      move(out.offset + (first + j) * out.strides[0], block.offset + j * block.strides[0]);
  });
}

// take reads rows of in0 at in1's indices into out; put (add_at) writes the rows of in1 into out
// at in0's indices: both walk the indices with the rows in their order (`dense`) alongside.
void move_indexed_rows(const Graph& g, const Op& op, char* const* base) {
  if (op.code == OpCode::append && op.inputs[1].ndim() == op.output.ndim()) return append_rows(g, op, base);
  const bool gather = op_kind(op.code) == OpKind::Gather;
  const View& idx = op.inputs[gather ? 1 : 0];
  const View& indexed = gather ? op.inputs[0] : op.output;
  const View& dense = gather ? op.output : op.inputs[1];
  const int lead = idx.ndim();
  if (lead <= 1 && indexed.ndim() == 1 && dense.ndim() == lead && !scatter_combines(op.code)) {
    // single elements by one axis of indices (x[i + 1:, 4] *= w written back from a traced
    // position, thousands an iteration) or by one index (keep.append(i), every trip of an NMS
    // loop): a plain loop, without walk's and the row mover's steps
    return dispatch_dtype(g.dtype_of(op.output), [&](auto tag) {
      using T = decltype(tag);
      // strides and direction in locals, a loop each way: a store of a byte (bool, int8) may
      // alias what the lambda captures, which the loop would otherwise read again after every
      // element (greedy NMS's suppressed[rest] = m spent 40% of its time so)
      const int64_t n = lead ? idx.shape[0] : 1, rows = indexed.shape[0];
      const int64_t xs = lead ? idx.strides[0] : 0, ts = indexed.strides[0], ls = lead ? dense.strides[0] : 0;
      const int64_t* ix = at<int64_t>(base, idx, idx.offset);
      T* table = at<T>(base, indexed, indexed.offset);
      T* list = at<T>(base, dense, dense.offset);
      auto row = [&](int64_t j) {
        const int64_t i = ix[j * xs];
        if (i < 0 || i >= rows) throw_check_failure(op, i, rows, base);
        return i * ts;
      };
      if (gather)
        for (int64_t j = 0; j < n; ++j) list[j * ls] = table[row(j)];
      else
        for (int64_t j = 0; j < n; ++j) table[row(j)] = list[j * ls];
    });
  }
  const View starts = dense.head(lead);
  auto rows = [&](const auto& move) {
    walk<2>(idx.shape, {&idx, &starts}, [&](const std::array<int64_t, 2>& off) {
      const int64_t i = *at<int64_t>(base, idx, off[0]);
      if (i < 0 || i >= indexed.shape[0]) throw_check_failure(op, i, indexed.shape[0], base);
      const int64_t row = indexed.offset + i * indexed.strides[0];
      if (gather) move(off[1], row);
      else move(row, off[1]);
    });
  };
  dispatch_dtype(g.dtype_of(op.output), [&](auto tag) {
    using T = decltype(tag);
    if (gather) return rows(RowMover<T>(base, dense, lead, indexed, 1));
    if (g.dtype_of(dense) == g.dtype_of(op.output)) return rows(RowMover<T>(base, indexed, 1, dense, lead, scatter_combines(op.code)));
    dispatch_dtype(g.dtype_of(dense), [&](auto values) {  // np.add.at's loop in another dtype
      rows(RowMover<T, decltype(values)>(base, indexed, 1, dense, lead, scatter_combines(op.code)));
    });
  });
}

// Accumulates every row along the last axis with the scan's operation.
void scan_rows(const Graph& g, const Op& op, char* const* base) {
  const View& in = op.inputs[0];
  const View& out = op.output;
  const int last = in.ndim() - 1;
  const int64_t n = in.shape[last];
  const OpCode f = op.code == OpCode::cumsum    ? OpCode::add
                   : op.code == OpCode::cumprod ? OpCode::multiply
                   : op.code == OpCode::cummax  ? OpCode::maximum
                                                : OpCode::minimum;
  View in_rows = in, out_rows = out;
  in_rows.shape[last] = out_rows.shape[last] = 1;
  dispatch_dtype(g.dtype_of(in), [&](auto tag) {
    using T = decltype(tag);
    walk<2>(in_rows.shape, {&in_rows, &out_rows}, [&](const std::array<int64_t, 2>& off) {
      st::reg_t<T> acc{};
      for (int64_t i = 0; i < n; ++i) {
        const st::reg_t<T> x = st::from_memory(*at<T>(base, in, off[0] + i * in.strides[last]));
        acc = i == 0 ? x : detail::binary_same<T>(f, acc, x);
        *at<T>(base, out, off[1] + i * out.strides[last]) = st::to_memory<T>(acc);
      }
    });
  });
}

// An unsigned key whose order is NumPy's sort order of T: floats with -0.0 equal to 0.0 and
// every NaN equal to the others and after everything else.
template <typename T>
auto sort_key(T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<uint8_t>(x);
  } else if constexpr (std::is_same_v<T, st::half>) {
    return sort_key(st::from_memory(x));
  } else if constexpr (std::is_unsigned_v<T>) {
    return x;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<U>(static_cast<U>(x) ^ (U(1) << (8 * sizeof(U) - 1)));
  } else {
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    constexpr U sign = U(1) << (8 * sizeof(U) - 1);
    U bits;
    std::memcpy(&bits, &x, sizeof(U));
    const U key = (bits & sign) ? static_cast<U>(~bits) : static_cast<U>(bits | sign);
    // selects, not branches: a row's keys are made in a loop the compiler vectorizes
    return x != x ? static_cast<U>(~U(0)) : x == T(0) ? sign : key;
  }
}

// A buffer this thread keeps from one sort to the next, resized to n: a fresh one per call costs
// page faults and zeroing that take as long as radix sorting 10^5 keys. One over kKeptBytes is
// freed when its sort is done instead. Which tells apart buffers of one type.
constexpr size_t kKeptBytes = size_t{64} << 20;
template <typename T, int Which>
class Scratch {
 public:
  explicit Scratch(int64_t n) : v_(buffer()) { v_.resize(static_cast<size_t>(n)); }
  ~Scratch() {
    if (v_.capacity() * sizeof(T) > kKeptBytes) std::vector<T>().swap(v_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::vector<T>& operator*() { return v_; }

 private:
  static std::vector<T>& buffer() {
    thread_local std::vector<T> v;
    return v;
  }
  std::vector<T>& v_;
};

// Positions n..2^32 and keys of 32 bits or less sort as (key, position) words: one stream to
// move per pass instead of two, the order of equal keys carried by the word itself.
template <typename U>
constexpr bool kPacked = sizeof(U) <= 4;

// The stable order of `keys`: positions, smallest key first, ties in their order. LSD radix
// sort by 11-bit digits (fewer passes beat counters that fit L1: 8-bit digits are slower from
// 4,000 keys up on this machine), every digit's counts taken in one pass first and a digit all
// keys share skipped; insertion-class sizes by merge sort.
template <typename U>
void stable_order(const std::vector<U>& keys, std::vector<int64_t>& order) {
  const int64_t n = static_cast<int64_t>(keys.size());
  order.resize(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  if (n < 256) {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
    return;
  }
  constexpr int bits = 11;
  const int digits = (8 * static_cast<int>(sizeof(U)) + bits - 1) / bits;
  const size_t radix = size_t{1} << bits;
  const U mask = static_cast<U>(radix - 1);
  std::vector<int64_t> count(digits * radix, 0);
  for (const U key : keys)
    for (int d = 0; d < digits; ++d) ++count[d * radix + ((key >> (d * bits)) & mask)];
  // one LSD pass per digit that splits the keys; key_of(item) is the item's key
  auto passes = [&](auto& items, auto& next, auto key_of) {
    for (int d = 0; d < digits; ++d) {
      int64_t* c = &count[d * radix];
      const int shift = d * bits;
      if (c[(key_of(items[0]) >> shift) & mask] == n) continue;
      int64_t sum = 0;
      for (size_t v = 0; v < radix; ++v) sum += std::exchange(c[v], sum);
      for (int64_t i = 0; i < n; ++i) next[c[(key_of(items[i]) >> shift) & mask]++] = items[i];
      items.swap(next);
    }
  };
  if constexpr (kPacked<U>) {
    if (n <= (int64_t{1} << 32)) {
      Scratch<uint64_t, 0> a(n);
      Scratch<uint64_t, 1> b(n);
      std::vector<uint64_t>& words = *a;
      for (int64_t i = 0; i < n; ++i) words[i] = uint64_t{keys[i]} << 32 | uint64_t(i);
      passes(words, *b, [](uint64_t w) { return static_cast<U>(w >> 32); });
      for (int64_t i = 0; i < n; ++i) order[i] = static_cast<int64_t>(words[i] & 0xFFFFFFFFu);
      return;
    }
  }
  Scratch<std::pair<U, int64_t>, 0> a(n);
  Scratch<std::pair<U, int64_t>, 1> b(n);
  std::vector<std::pair<U, int64_t>>& items = *a;
  for (int64_t i = 0; i < n; ++i) items[i] = {keys[i], i};
  passes(items, *b, [](const std::pair<U, int64_t>& item) { return item.first; });
  for (int64_t i = 0; i < n; ++i) order[i] = items[i].second;
}

// Rows of 32-bit keys up to this long are sorted as (key, position) words (the radix sort's
// passes over its counters cost more).
constexpr int64_t kPackedSortMax = 2048;

// The first m positions of the stable order of `keys` (reversed: of its reverse, the m last
// positions of the stable order, last first), by the total order (key, position), which ties the
// stable sort's. Few of many (a top-k) in O(n + m log m): a pivot taken from a sample of the keys
// bounds the candidates (the keys not after it in the order asked: the first m and a margin,
// expected; all keys where fewer pass); 2048 buckets over the candidates' range, in the order
// asked; the candidates of the buckets that hold the first m are placed bucket by bucket (a
// counting sort), each bucket sorted and the last one only to the m-th. Short rows of 32-bit keys
// are sorted whole; else the whole order is radix sorted.
template <typename U>
const std::vector<int64_t>& selected(const std::vector<U>& keys, int64_t m, bool reverse, std::vector<int64_t>& order) {
  const int64_t n = static_cast<int64_t>(keys.size());
  order.clear();
  if (m == 0) return order;
  if (m * 8 < n || (sizeof(U) == 4 && n <= kPackedSortMax)) {
    const bool bucketed = m * 8 < n;
    auto in_order = [reverse](U a, U b) { return reverse ? b < a : a < b; };
    // the candidates: their keys and positions (null: the positions are the indices)
    const U* ck = keys.data();
    const int64_t* cp = nullptr;
    int64_t c = n;
    Scratch<U, 4> kept_keys(bucketed ? n : 0);
    Scratch<int64_t, 5> kept_positions(bucketed ? n : 0);
    if (bucketed) {
      constexpr int64_t kSample = 512;
      std::array<U, kSample> sample;
      for (int64_t j = 0; j < kSample; ++j) sample[j] = keys[j * n / kSample];
      const int64_t expect = m * kSample / n;  // the m-th key's rank in the sample, about
      const int64_t r = std::min<int64_t>(kSample - 1, expect + 4 * static_cast<int64_t>(std::sqrt(double(expect))) + 8);
      std::nth_element(sample.begin(), sample.begin() + r, sample.end(), in_order);
      const U pivot = sample[r];
      U* kk = (*kept_keys).data();
      int64_t* kp = (*kept_positions).data();
      int64_t k = 0;
      for (int64_t i = 0; i < n; ++i) {  // branchless: every key stored, the kept ones counted
        kk[k] = keys[i];
        kp[k] = i;
        k += !in_order(pivot, keys[i]);
      }
      if (k >= m) {
        ck = kk;
        cp = kp;
        c = k;
      }
    }
    U lo = c ? ck[0] : U(0), hi = lo;
    if (bucketed)
      for (int64_t j = 0; j < c; ++j) {
        lo = std::min(lo, ck[j]);
        hi = std::max(hi, ck[j]);
      }
    constexpr int kDigits = 11;
    const U span = static_cast<U>(hi - lo);
    const int width = span ? 64 - __builtin_clzll(static_cast<uint64_t>(span)) : 0;  // bits the span needs
    const int shift = std::max(0, width - kDigits);
    auto digit = [lo, shift, reverse](U key) {  // by value: kept in registers over the passes
      const size_t d = static_cast<size_t>(static_cast<U>(key - lo) >> shift);
      return reverse ? (size_t{1} << kDigits) - 1 - d : d;
    };
    // start[d]: where bucket d's candidates begin; one bucket of all keys when not bucketed
    std::vector<int64_t> start{0, c};
    if (bucketed) {
      std::vector<int64_t> count(size_t{1} << kDigits, 0);
      for (int64_t j = 0; j < c; ++j) ++count[digit(ck[j])];
      start.assign(1, 0);
      for (size_t d = 0; start.back() < m; ++d) start.push_back(start.back() + count[d]);
    }
    const size_t buckets = start.size() - 1;
    // (key, position) pairs compared by value: one 64-bit word where both fit
    auto select = [&](auto& items, auto make, auto position) {
      using Item = typename std::remove_reference_t<decltype(items)>::value_type;
      auto before = [reverse](const Item& a, const Item& b) { return reverse ? b < a : a < b; };
      items.resize(start.back());
      std::vector<int64_t> at(start.begin(), start.end() - 1);
      for (int64_t j = 0; j < c; ++j) {
        const size_t d = bucketed ? digit(ck[j]) : 0;
        if (d < buckets) items[at[d]++] = make(ck[j], cp ? cp[j] : j);
      }
      for (size_t d = 0; d + 1 < buckets; ++d) std::sort(items.begin() + start[d], items.begin() + start[d + 1], before);
      const auto first = items.begin() + start[buckets - 1], mth = items.begin() + m;
      std::nth_element(first, mth, items.end(), before);
      std::sort(first, mth, before);
      order.resize(m);
      for (int64_t i = 0; i < m; ++i) order[i] = position(items[i]);
    };
    if (sizeof(U) == 4 && n <= (int64_t{1} << 32)) {
      Scratch<uint64_t, 0> items(0);
      select(*items, [](U key, int64_t i) { return uint64_t(key) << 32 | uint64_t(i); },
             [](uint64_t item) { return int64_t(item & 0xFFFFFFFFu); });
    } else {
      Scratch<std::pair<U, int64_t>, 0> items(0);
      select(*items, [](U key, int64_t i) { return std::make_pair(key, i); },
             [](const std::pair<U, int64_t>& item) { return item.second; });
    }
    return order;
  }
  stable_order(keys, order);
  if (reverse) std::reverse(order.begin(), order.end());
  return order;
}

// Rows of this many keys in all are worth the pool's wake-up (some tens of microseconds).
constexpr int64_t kParallelSortKeys = int64_t{1} << 15;

// NumPy's sort and argsort by dtype (set_numpy_sort), installed once at import.
struct NumpySorts {
  NumpySortFn sort = nullptr;
  NumpyArgsortFn argsort = nullptr;
};
std::array<NumpySorts, std::size(kDTypes)> numpy_sorts{};
NumpyPartitionFn numpy_partition = nullptr;

// A sort op's axes: [reversed, k], then 1 (ties in NumPy's default kind's order) or 2 and the
// kth of a partition whose order is NumPy's (set_numpy_partition)
constexpr int64_t kNumpyTies = 1, kNumpyPartition = 2;

// Whether the first m of `chosen` leave an order to ties: two of them hold equal keys, or the
// m-th's key is another unchosen one's (sort_key makes equal what NumPy's comparison does).
template <typename U>
bool ties_in(const std::vector<U>& keys, const std::vector<int64_t>& chosen, int64_t m) {
  for (int64_t i = 1; i < m; ++i)
    if (keys[chosen[i]] == keys[chosen[i - 1]]) return true;
  const int64_t n = static_cast<int64_t>(keys.size());
  if (m == 0 || m == n) return false;
  const U last = keys[chosen[m - 1]];
  int64_t equal = 0;
  for (int64_t i = 0; i < n; ++i) equal += keys[i] == last;
  return equal > 1;
}

// Sorts (or ranks) every row along the last axis.
void sort_rows(const Graph& g, const Op& op, char* const* base) {
  const View& in = op.inputs[0];
  const View& out = op.output;
  const bool reverse = !op.axes.empty() && op.axes[0] != 0;
  const int last = in.ndim() - 1;
  const int64_t n = in.shape[last], m = out.shape[last];
  const bool positions = op.code == OpCode::argsort;
  const int64_t ties = op.axes.size() >= 3 ? op.axes[2] : 0;
  // NumPy's own sort where the op asks for its kind's order of ties and it is installed
  const NumpySorts numpy = ties == kNumpyTies ? numpy_sorts[static_cast<int>(g.dtype_of(in))] : NumpySorts{};
  const NumpyPartitionFn partition = ties == kNumpyPartition ? numpy_partition : nullptr;
  const std::vector<int64_t> kth(op.axes.begin() + std::min<size_t>(op.axes.size(), 3), op.axes.end());
  View in_rows = in, out_rows = out;  // the first element of each row
  in_rows.shape[last] = out_rows.shape[last] = 1;
  dispatch_dtype(g.dtype_of(in), [&](auto tag) {
    using T = decltype(tag);
    using U = decltype(sort_key(T{}));
    std::vector<std::array<int64_t, 2>> rows;  // each row's first element in `in` and `out`
    walk<2>(in_rows.shape, {&in_rows, &out_rows}, [&](const std::array<int64_t, 2>& off) { rows.push_back(off); });
    auto sort = [&](int64_t begin, int64_t end) {
      Scratch<U, 2> keys_buffer(partition ? 0 : n);
      Scratch<int64_t, 3> order(0);
      using Byte = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;  // (NumPy's bools are bytes)
      Scratch<Byte, 6> values(0);
      std::vector<U>& keys = *keys_buffer;
      for (int64_t r = begin; r < end; ++r) {
        const auto [from, to] = rows[r];
        const T* row = at<T>(base, in, from);
        const int64_t step = in.strides[last];
        if (partition) {  // NumPy's partition of the row: the m it heads with (or ends with, last first)
          std::vector<Byte>& v = *values;
          const Byte* data = reinterpret_cast<const Byte*>(row);
          if (step != 1 || !positions) {  // (a partition of values moves them: a copy)
            v.resize(n);
            for (int64_t i = 0; i < n; ++i) v[i] = row[i * step];
            data = v.data();
          }
          // positions straight into a contiguous result
          const bool direct = positions && out.strides[last] == 1;
          std::vector<int64_t>& o = *order;
          o.resize(positions && !direct ? m : 0);
          int64_t* into = direct ? at<int64_t>(base, out, to) : o.data();
          std::string error;
          if (partition(g.dtype_of(in), const_cast<Byte*>(data), n, kth.data(), static_cast<int64_t>(kth.size()),
                        positions ? into : nullptr, m, reverse, &error) != 0)
            throw std::invalid_argument(error);
          for (int64_t i = 0; i < m && !direct; ++i) {
            if (positions) *at<int64_t>(base, out, to + i * out.strides[last]) = o[i];
            else *at<T>(base, out, to + i * out.strides[last]) = static_cast<T>(v[reverse ? n - 1 - i : i]);
          }
          continue;
        }
        for (int64_t i = 0; i < n; ++i) keys[i] = sort_key(row[i * step]);
        const std::vector<int64_t>* chosen = &selected(keys, m, reverse, *order);
        // a row with ties: NumPy's order of it (its values, for sort), reversed where asked
        if ((positions ? numpy.argsort != nullptr : numpy.sort != nullptr) && ties_in(keys, *chosen, m)) {
          std::vector<Byte>& v = *values;
          v.resize(n);
          for (int64_t i = 0; i < n; ++i) v[i] = row[i * step];
          std::vector<int64_t>& o = *order;
          o.resize(n);
          for (int64_t i = 0; i < n; ++i) o[i] = i;
          if ((positions ? numpy.argsort(v.data(), o.data(), n, nullptr) : numpy.sort(v.data(), n, nullptr)) != 0)
            throw std::bad_alloc();
          if (reverse && positions) std::reverse(o.begin(), o.end());
          if (reverse && !positions) std::reverse(v.begin(), v.end());
          for (int64_t i = 0; i < m; ++i) {
            if (positions) *at<int64_t>(base, out, to + i * out.strides[last]) = o[i];
            else *at<T>(base, out, to + i * out.strides[last]) = static_cast<T>(v[i]);
          }
          continue;
        }
        for (int64_t i = 0; i < m; ++i) {
          if (positions) *at<int64_t>(base, out, to + i * out.strides[last]) = (*chosen)[i];
          else *at<T>(base, out, to + i * out.strides[last]) = *at<T>(base, in, from + (*chosen)[i] * in.strides[last]);
        }
      }
    };
    // rows are independent: several long ones sort on the pool (NumPy's partition takes the GIL:
    // on this thread)
    if (!partition && static_cast<int64_t>(rows.size()) * n >= kParallelSortKeys) parallel_for(static_cast<int64_t>(rows.size()), sort);
    else sort(0, static_cast<int64_t>(rows.size()));
  });
}

// NumPy's searchsorted: binary search in the sort order of sort_key (NaNs last), the values in C
// order, as the NumPy the function was traced with searches (axes[1]): before 2.5 each search's
// range narrowed from the last one's, from 2.5 a halving of the whole range for each value. Both
// find the same places in a sorted array, and NumPy's own in one that is not.
void search(const Graph& g, const Op& op, char* const* base) {
  const View& a = op.inputs[0];
  const View& v = op.inputs[1];
  const View& out = op.output;
  const bool right = op.axes[0] != 0;
  const bool halving = op.axes[1] != 0;
  dispatch_dtype(g.dtype_of(a), [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = a.shape[0];
    int64_t lo = 0, hi = n;  // (the first value searches all of it, whichever way the test goes)
    decltype(sort_key(T{})) last{};
    auto before = [&](int64_t i, const auto& key) {
      const auto k = sort_key(*at<T>(base, a, a.offset + i * a.strides[0]));
      return right ? !(key < k) : k < key;
    };
    walk<2>(v.shape, {&v, &out}, [&](const std::array<int64_t, 2>& off) {
      const auto key = sort_key(*at<T>(base, v, off[0]));
      if (halving) {
        int64_t first = 0;
        for (int64_t len = n; len > 1; len -= len / 2)
          if (before(first + len / 2, key)) first += len / 2;
        *at<int64_t>(base, out, off[1]) = n == 0 ? 0 : first + before(first, key);
        return;
      }
      if (right ? !(key < last) : last < key) {
        hi = n;
      } else {
        lo = 0;
        hi = hi < n ? hi + 1 : n;
      }
      last = key;
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (before(mid, key)) lo = mid + 1;
        else hi = mid;
      }
      *at<int64_t>(base, out, off[1]) = lo;
    });
  });
}

}  // namespace

void set_numpy_sort(DType dtype, NumpySortFn sort, NumpyArgsortFn argsort) {
  numpy_sorts[static_cast<int>(dtype)] = {sort, argsort};
}

void set_numpy_partition(NumpyPartitionFn partition) { numpy_partition = partition; }

void run_data_dependent(const Graph& g, const Op& op, char* const* base) {
  switch (op_kind(op.code)) {
    case OpKind::Compact: return nonzero(g, op, base);
    case OpKind::Compress: return compress(g, op, base);
    case OpKind::Gather:
    case OpKind::Scatter: return move_indexed_rows(g, op, base);
    case OpKind::Sort: return sort_rows(g, op, base);
    case OpKind::Check:
      if (op.code == OpCode::check_nonempty) return check_nonempty(op, base);
      if (op.code == OpCode::check_assert) return check_assert(op, base);
      if (op.code == OpCode::check_equal) return check_equal(op, base);
      return check_index(op, base);
    case OpKind::Scan: return scan_rows(g, op, base);
    case OpKind::Search: return search(g, op, base);
    default: throw std::logic_error(std::string(op_name(op.code)) + " is not a data-dependent op");
  }
}

}  // namespace strider
