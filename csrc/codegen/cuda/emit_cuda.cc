// runtime/elementwise.h's scalar semantics as CUDA C, op for op, and the elementwise kernel: a
// grid-stride loop over the flattened domain. The guards mirror the LLVM backend's: division by
// 0 and -1, shifts by the width or more and out-of-range float-to-int conversions never reach
// the operations C leaves undefined; integer arithmetic wraps through unsigned types.

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>

#include "codegen/cuda/cuda_emitter.h"
#include "runtime/elementwise.h"

namespace strider::detail {

namespace {

// Shared by every stage; guarded so that several stages' sources compile as one program.
constexpr const char* kPrelude = R"(#ifndef STRIDER_CUDA_PRELUDE
#define STRIDER_CUDA_PRELUDE
template <class T> struct st_unsigned;
template <> struct st_unsigned<int> { typedef unsigned int type; };
template <> struct st_unsigned<long long> { typedef unsigned long long type; };
template <class T> __device__ __forceinline__ T st_add(T a, T b) { typedef typename st_unsigned<T>::type U; return (T)((U)a + (U)b); }
template <class T> __device__ __forceinline__ T st_sub(T a, T b) { typedef typename st_unsigned<T>::type U; return (T)((U)a - (U)b); }
template <class T> __device__ __forceinline__ T st_mul(T a, T b) { typedef typename st_unsigned<T>::type U; return (T)((U)a * (U)b); }
template <class T> __device__ __forceinline__ T st_floor_divide(T a, T b) {
  if (b == 0) return 0;
  if (b == -1) return st_sub((T)0, a);
  T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? (T)(q - 1) : q;
}
template <class T> __device__ __forceinline__ T st_remainder(T a, T b) {
  if (b == 0 || b == -1) return 0;
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? (T)(r + b) : r;
}
template <class T> __device__ __forceinline__ T st_fmod(T a, T b) { return (b == 0 || b == -1) ? (T)0 : (T)(a % b); }
template <class T> __device__ __forceinline__ T st_left_shift(T a, T b) {
  typedef typename st_unsigned<T>::type U;
  return (U)b < 8 * sizeof(T) ? (T)((U)a << (U)b) : (T)0;
}
template <class T> __device__ __forceinline__ T st_right_shift(T a, T b) {
  typedef typename st_unsigned<T>::type U;
  return (U)b < 8 * sizeof(T) ? (T)(a >> b) : (T)(a < 0 ? -1 : 0);
}
// a negative exponent is the reference's domain_error: flag it (the launcher raises)
template <class T> __device__ T st_power(T base, T exp, int* err) {
  if (exp < 0) { *err = 1; return 1; }
  T result = 1;
  while (exp) {
    if (exp & 1) result = st_mul(result, base);
    base = st_mul(base, base);
    exp = (T)(exp >> 1);
  }
  return result;
}
// NaN and out-of-range values give INT_MIN, as x86's cvtt* (and the reference)
__device__ __forceinline__ long long st_to_i64(double x) {
  return (x >= -0x1p63 && x < 0x1p63) ? (long long)x : (long long)(-9223372036854775807LL - 1);
}
__device__ __forceinline__ int st_to_i32(double x) {
  const long long w = st_to_i64(x);
  return (w < -2147483648LL || w > 2147483647LL) ? (int)(-2147483647 - 1) : (int)w;
}
__device__ __forceinline__ float st_fmodf(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double st_fmodf(double a, double b) { return fmod(a, b); }
__device__ __forceinline__ float st_floorf(float a) { return floorf(a); }
__device__ __forceinline__ double st_floorf(double a) { return floor(a); }
__device__ __forceinline__ float st_copysignf(float a, float b) { return copysignf(a, b); }
__device__ __forceinline__ double st_copysignf(double a, double b) { return copysign(a, b); }
__device__ __forceinline__ float st_log1pf(float a) { return log1pf(a); }
__device__ __forceinline__ double st_log1pf(double a) { return log1p(a); }
__device__ __forceinline__ float st_expf(float a) { return expf(a); }
__device__ __forceinline__ double st_expf(double a) { return exp(a); }
// npy_divmod, as elementwise.h's float_floor_divide
template <class T> __device__ __forceinline__ T st_divmod(T a, T b, T* mod_out) {
  T mod = st_fmodf(a, b);
  if (b == 0) { *mod_out = mod; return a / b; }
  T div = (a - mod) / b;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) { mod += b; div -= (T)1; }
  } else {
    mod = st_copysignf((T)0, b);
  }
  T floordiv;
  if (div != 0) {
    floordiv = st_floorf(div);
    if (div - floordiv > (T)0.5) floordiv += (T)1;
  } else {
    floordiv = st_copysignf((T)0, a / b);
  }
  *mod_out = mod;
  return floordiv;
}
template <class T> __device__ __forceinline__ T st_floor_divide_f(T a, T b) { T m; return st_divmod(a, b, &m); }
template <class T> __device__ __forceinline__ T st_remainder_f(T a, T b) {
  if (b == 0) return st_fmodf(a, b);
  T m;
  st_divmod(a, b, &m);
  return m;
}
template <class T> __device__ __forceinline__ T st_logaddexp(T a, T b) {
  if (a == b) return a + (T)0.693147180559945309417232121458176568;
  const T d = a - b;
  if (d > 0) return a + st_log1pf(st_expf(-d));
  if (d <= 0) return b + st_log1pf(st_expf(d));
  return d;
}
// a run-time extent, clamped to its static bound as the reference does
template <class I> __device__ __forceinline__ I st_extent(const long long* e, long long bound) {
  const long long v = *e;
  return (I)(v < 0 ? 0 : v > bound ? bound : v);
}
#endif
)";

// The C spelling of a float function: expf for float32, exp for float64.
std::string fn(const char* name, DType t) { return std::string(name) + (t == DType::Float32 ? "f" : ""); }

std::string literal(int64_t v) {
  // INT64_MIN has no literal of its own
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  return std::to_string(v) + (v > INT32_MAX || v < INT32_MIN ? "LL" : "");
}

// The vector type a view of `t` is read or written with, in halves for 8-byte types (16 bytes
// each, the widest load), and the alignment its base address needs.
const char* vector_type(DType t) {
  switch (t) {
    case DType::Bool: return "uchar4";
    case DType::Int32: return "int4";
    case DType::Int64: return "longlong2";
    case DType::Float32: return "float4";
    case DType::Float64: break;
  }
  return "double2";
}
bool in_halves(DType t) { return itemsize(t) == 8; }
int vector_alignment(DType t) { return t == DType::Bool ? 4 : 16; }

// Lane w of a vector local: name.x ... name.w, or name_0.x, name_0.y, name_1.x, name_1.y.
std::string lane_component(const std::string& name, DType t, int w, bool read) {
  static const char* const kField[] = {".x", ".y", ".z", ".w"};
  const std::string c = in_halves(t) ? name + "_" + std::to_string(w / 2) + kField[w % 2] : name + kField[w];
  return read && t == DType::Bool ? "(" + c + " != 0)" : c;
}

}  // namespace

CudaEmitter::CudaEmitter(const Graph& g, const StagePlan& p, std::string name) : g_(g), p_(p), name_(std::move(name)) {}

std::string CudaEmitter::mem_type(DType t) {
  switch (t) {
    case DType::Bool: return "unsigned char";
    case DType::Int32: return "int";
    case DType::Int64: return "long long";
    case DType::Float32: return "float";
    case DType::Float64: break;
  }
  return "double";
}

std::string CudaEmitter::reg_type(DType t) { return t == DType::Bool ? "bool" : mem_type(t); }

void CudaEmitter::refuse(const std::string& why) const {
  std::string id = cur_op_ >= 0 && cur_op_ < static_cast<int>(p_.op_ids.size()) ? "op" + std::to_string(p_.op_ids[cur_op_])
                                                                                 : "stage op " + std::to_string(cur_op_);
  std::string name = cur_op_ >= 0 ? op_name(p_.ops[cur_op_].code) : "?";
  throw std::invalid_argument("CUDA backend cannot compile " + id + " (" + name + "): " + why);
}

void CudaEmitter::line(const std::string& text) { kernels_ << std::string(2 * indent_, ' ') << text << "\n"; }

std::string CudaEmitter::element_index(const View& v) const {
  std::string at = v.offset ? literal(v.offset) : "";
  for (int d = 0; d < v.ndim(); ++d) {
    const int64_t s = v.strides[d];
    if (s == 0) continue;
    std::string i = "i" + std::to_string(d);
    if (lane_ > 0 && d == v.ndim() - 1) i = "(" + i + " + " + std::to_string(lane_) + ")";
    const std::string term = (s == 1 || s == -1) ? i : literal(s < 0 ? -s : s) + " * " + i;
    if (at.empty()) at = s < 0 ? "-" + term : term;
    else at += (s < 0 ? " - " : " + ") + term;
  }
  return at.empty() ? "0" : at;
}

std::string CudaEmitter::load(const View& v) const {
  if (p_.registers.count(v.storage)) return "r" + std::to_string(v.storage);
  if (lane_ >= 0)
    for (const VectorAccess& a : vector_loads_)
      if (a.view == v) return lane_component(a.name, g_.dtype_of(v), lane_, true);
  const std::string x = "s" + std::to_string(v.storage) + "[" + element_index(v) + "]";
  return g_.dtype_of(v) == DType::Bool ? "(" + x + " != 0)" : x;
}

void CudaEmitter::store(const View& v, const std::string& value) {
  const DType t = g_.dtype_of(v);
  if (p_.registers.count(v.storage)) return line("const " + reg_type(t) + " r" + std::to_string(v.storage) + " = " + value + ";");
  if (lane_ >= 0)
    for (const VectorAccess& a : vector_stores_)
      if (a.view == v) return line(lane_component(a.name, t, lane_, false) + " = " + (t == DType::Bool ? "(unsigned char)(" + value + ")" : value) + ";");
  line("s" + std::to_string(v.storage) + "[" + element_index(v) + "] = " + (t == DType::Bool ? "(unsigned char)(" + value + ")" : value) + ";");
}

void CudaEmitter::emit_op(size_t k) {
  cur_op_ = static_cast<int>(k);
  const Op& op = p_.ops[k];
  const DType out = g_.dtype_of(op.output);
  // the inputs as locals: expressions below name an operand more than once
  std::vector<std::string> in;
  for (size_t j = 0; j < op.inputs.size(); ++j) {
    const View& v = op.inputs[j];
    if (p_.registers.count(v.storage)) {
      in.push_back(load(v));
      continue;
    }
    in.push_back("a" + std::to_string(k) + "_" + std::to_string(j));
    line("const " + reg_type(g_.dtype_of(v)) + " " + in.back() + " = " + load(v) + ";");
  }
  const DType t = op.inputs.empty() ? out : g_.dtype_of(op.inputs[0]);
  switch (op_kind(op.code)) {
    case OpKind::Copy:
      if (t != out) refuse("copy between different dtypes");
      return store(op.output, in[0]);
    case OpKind::Unary:
      if (op.code == OpCode::cast) return store(op.output, convert(in[0], t, out));
      if (is_predicate(op.code)) return store(op.output, convert(predicate(op.code, t, in[0]), DType::Bool, out));
      return store(op.output, convert(unary(op.code, t, in[0]), t, out));
    case OpKind::Binary:
      if (g_.dtype_of(op.inputs[1]) != t) refuse("its inputs do not share one dtype");
      if (is_comparison(op.code)) return store(op.output, convert(compare(op.code, t, in[0], in[1]), DType::Bool, out));
      return store(op.output, convert(binary(op.code, t, in[0], in[1]), t, out));
    case OpKind::Ternary:
      // the reference copies the chosen element's bytes: the values must have the output's dtype
      if (t != DType::Bool) refuse("where needs a bool condition");
      if (g_.dtype_of(op.inputs[1]) != out || g_.dtype_of(op.inputs[2]) != out) refuse("its values do not have the output's dtype");
      return store(op.output, "(" + in[0] + " ? " + in[1] + " : " + in[2] + ")");
    case OpKind::Arange: {
      if (t != out || g_.dtype_of(op.inputs[1]) != out) refuse("start and step must have the output's dtype");
      // NumPy's fill: the first two values as given, then first + i * (second - first)
      const std::string i = p_.rank() == 0 ? "0" : lane_ > 0 ? "(i0 + " + std::to_string(lane_) + ")" : "i0";
      const std::string& first = in[0];
      const std::string& second = in[1];
      std::string v = second;
      const std::string ty = reg_type(out);
      if (is_float(out)) v = first + " + (" + ty + ")" + i + " * (" + second + " - " + first + ")";
      else if (out != DType::Bool) v = "st_add(" + first + ", st_mul((" + ty + ")" + i + ", st_sub(" + second + ", " + first + ")))";
      return store(op.output, "(" + i + " == 0 ? " + first + " : " + i + " == 1 ? " + second + " : (" + ty + ")(" + v + "))");
    }
    case OpKind::Reduce: break;
  }
  refuse("a reduction must be the last op of its stage");
}

std::string CudaEmitter::convert(const std::string& x, DType from, DType to) const {
  if (from == to) return x;
  if (to == DType::Bool) return "(" + x + " != 0)";  // NaN != 0, as the reference
  if (is_float(from) && !is_float(to)) return (to == DType::Int64 ? "st_to_i64((double)" : "st_to_i32((double)") + x + ")";
  return "(" + reg_type(to) + ")(" + x + ")";
}

std::string CudaEmitter::unary(OpCode code, DType t, const std::string& x) const {
  if (t == DType::Bool) return code == OpCode::invert || code == OpCode::logical_not ? "!" + x : x;
  const std::string ty = reg_type(t);
  if (!is_float(t)) {
    switch (code) {
      case OpCode::negative: return "st_sub((" + ty + ")0, " + x + ")";
      case OpCode::absolute: return "(" + x + " < 0 ? st_sub((" + ty + ")0, " + x + ") : " + x + ")";
      case OpCode::sign: return "(" + ty + ")((" + x + " > 0) - (" + x + " < 0))";
      case OpCode::square: return "st_mul(" + x + ", " + x + ")";
      case OpCode::reciprocal: return "(" + ty + ")(" + x + " == 1 ? 1 : " + x + " == -1 ? -1 : 0)";
      case OpCode::invert: return "(" + ty + ")~" + x;
      default: return x;  // positive, floor, ceil, trunc, rint are the identity on integers
    }
  }
  switch (code) {
    case OpCode::negative: return "-" + x;
    case OpCode::positive: return x;
    case OpCode::absolute: return fn("fabs", t) + "(" + x + ")";
    case OpCode::sign: return "(isnan(" + x + ") ? " + x + " : (" + ty + ")((" + x + " > 0) - (" + x + " < 0)))";
    case OpCode::square: return x + " * " + x;
    case OpCode::reciprocal: return "(" + ty + ")1 / " + x;
    case OpCode::sqrt: return fn("sqrt", t) + "(" + x + ")";
    case OpCode::floor: return fn("floor", t) + "(" + x + ")";
    case OpCode::ceil: return fn("ceil", t) + "(" + x + ")";
    case OpCode::trunc: return fn("trunc", t) + "(" + x + ")";
    case OpCode::rint: return fn("rint", t) + "(" + x + ")";  // ties to even: nearbyint's default mode
    case OpCode::cbrt: return fn("cbrt", t) + "(" + x + ")";
    case OpCode::exp: return fn("exp", t) + "(" + x + ")";
    case OpCode::exp2: return fn("exp2", t) + "(" + x + ")";
    case OpCode::expm1: return fn("expm1", t) + "(" + x + ")";
    case OpCode::log: return fn("log", t) + "(" + x + ")";
    case OpCode::log2: return fn("log2", t) + "(" + x + ")";
    case OpCode::log10: return fn("log10", t) + "(" + x + ")";
    case OpCode::log1p: return fn("log1p", t) + "(" + x + ")";
    case OpCode::sin: return fn("sin", t) + "(" + x + ")";
    case OpCode::cos: return fn("cos", t) + "(" + x + ")";
    case OpCode::tan: return fn("tan", t) + "(" + x + ")";
    case OpCode::arcsin: return fn("asin", t) + "(" + x + ")";
    case OpCode::arccos: return fn("acos", t) + "(" + x + ")";
    case OpCode::arctan: return fn("atan", t) + "(" + x + ")";
    case OpCode::sinh: return fn("sinh", t) + "(" + x + ")";
    case OpCode::cosh: return fn("cosh", t) + "(" + x + ")";
    case OpCode::tanh: return fn("tanh", t) + "(" + x + ")";
    case OpCode::arcsinh: return fn("asinh", t) + "(" + x + ")";
    case OpCode::arccosh: return fn("acosh", t) + "(" + x + ")";
    case OpCode::arctanh: return fn("atanh", t) + "(" + x + ")";
    default: refuse(std::string(op_name(code)) + " has no float loop");
  }
}

std::string CudaEmitter::predicate(OpCode code, DType t, const std::string& x) const {
  const bool fp = is_float(t);
  switch (code) {
    case OpCode::logical_not: return t == DType::Bool ? "!" + x : "(" + x + " == 0)";
    case OpCode::isfinite: return fp ? "(bool)isfinite(" + x + ")" : "true";
    case OpCode::isnan: return fp ? "(bool)isnan(" + x + ")" : "false";
    case OpCode::isinf: return fp ? "(bool)isinf(" + x + ")" : "false";
    case OpCode::signbit:
      if (fp) return "(signbit(" + x + ") != 0)";
      return t == DType::Bool ? "false" : "(" + x + " < 0)";
    default: refuse(std::string(op_name(code)) + " is not a predicate");
  }
}

std::string CudaEmitter::compare(OpCode code, DType t, const std::string& a, const std::string& b) const {
  auto nonzero = [&](const std::string& v) { return t == DType::Bool ? v : "(" + v + " != 0)"; };
  switch (code) {
    case OpCode::logical_and: return "(" + nonzero(a) + " && " + nonzero(b) + ")";
    case OpCode::logical_or: return "(" + nonzero(a) + " || " + nonzero(b) + ")";
    case OpCode::logical_xor: return "(" + nonzero(a) + " != " + nonzero(b) + ")";
    case OpCode::equal: return "(" + a + " == " + b + ")";
    case OpCode::not_equal: return "(" + a + " != " + b + ")";  // true for NaN, as the reference
    case OpCode::less: return "(" + a + " < " + b + ")";
    case OpCode::less_equal: return "(" + a + " <= " + b + ")";
    case OpCode::greater: return "(" + a + " > " + b + ")";
    default: return "(" + a + " >= " + b + ")";  // greater_equal
  }
}

std::string CudaEmitter::binary(OpCode code, DType t, const std::string& a, const std::string& b) {
  auto call = [&](const std::string& f) { return f + "(" + a + ", " + b + ")"; };
  auto pick = [&](const std::string& cond) { return "((" + cond + ") ? " + a + " : " + b + ")"; };
  if (t == DType::Bool) {
    switch (code) {
      case OpCode::add: case OpCode::maximum: case OpCode::fmax: case OpCode::bitwise_or: return "(" + a + " || " + b + ")";
      case OpCode::multiply: case OpCode::minimum: case OpCode::fmin: case OpCode::bitwise_and: return "(" + a + " && " + b + ")";
      case OpCode::bitwise_xor: return "(" + a + " != " + b + ")";
      default: refuse(std::string(op_name(code)) + " has no bool loop");
    }
  }
  if (!is_float(t)) {
    switch (code) {
      case OpCode::add: return call("st_add");
      case OpCode::subtract: return call("st_sub");
      case OpCode::multiply: return call("st_mul");
      case OpCode::floor_divide: return call("st_floor_divide");
      case OpCode::remainder: return call("st_remainder");
      case OpCode::fmod: return call("st_fmod");
      case OpCode::power: return "st_power(" + a + ", " + b + ", err)";
      case OpCode::maximum: case OpCode::fmax: return pick(a + " >= " + b);
      case OpCode::minimum: case OpCode::fmin: return pick(a + " <= " + b);
      case OpCode::bitwise_and: return "(" + a + " & " + b + ")";
      case OpCode::bitwise_or: return "(" + a + " | " + b + ")";
      case OpCode::bitwise_xor: return "(" + a + " ^ " + b + ")";
      case OpCode::left_shift: return call("st_left_shift");
      case OpCode::right_shift: return call("st_right_shift");
      default: refuse(std::string(op_name(code)) + " has no integer loop");
    }
  }
  switch (code) {
    case OpCode::add: return "(" + a + " + " + b + ")";
    case OpCode::subtract: return "(" + a + " - " + b + ")";
    case OpCode::multiply: return "(" + a + " * " + b + ")";
    case OpCode::divide: return "(" + a + " / " + b + ")";
    case OpCode::floor_divide: return call("st_floor_divide_f");
    case OpCode::remainder: return call("st_remainder_f");
    case OpCode::fmod: return call(fn("fmod", t));
    case OpCode::power:  // NumPy's loop takes sqrt for an exponent of 0.5
      return "(" + b + " == (" + reg_type(t) + ")0.5 ? " + fn("sqrt", t) + "(" + a + ") : " + call(fn("pow", t)) + ")";
    case OpCode::maximum: return pick(a + " >= " + b + " || isnan(" + a + ")");
    case OpCode::minimum: return pick(a + " <= " + b + " || isnan(" + a + ")");
    case OpCode::fmax: return pick(a + " >= " + b + " || isnan(" + b + ")");
    case OpCode::fmin: return pick(a + " <= " + b + " || isnan(" + b + ")");
    case OpCode::arctan2: return call(fn("atan2", t));
    case OpCode::hypot: return call(fn("hypot", t));
    case OpCode::copysign: return call(fn("copysign", t));
    case OpCode::logaddexp: return call("st_logaddexp");
    default: refuse(std::string(op_name(code)) + " has no float loop");
  }
}

void CudaEmitter::decompose(const std::string& flat, const std::vector<int>& axes) {
  if (axes.empty()) return;
  if (axes.size() == 1) return line("const " + index_t_ + " i" + std::to_string(axes[0]) + " = " + flat + ";");
  const std::string q = flat + "_q";
  line(index_t_ + " " + q + " = " + flat + ";");
  for (size_t k = axes.size() - 1; k > 0; --k) {
    const std::string d = std::to_string(axes[k]);
    line("const " + index_t_ + " i" + d + " = " + q + " % n" + d + ";");
    line(q + " /= n" + d + ";");
  }
  line("const " + index_t_ + " i" + std::to_string(axes[0]) + " = " + q + ";");
}

std::string CudaEmitter::count(const std::vector<int>& axes) const {
  std::string out;
  for (int a : axes) out += (out.empty() ? "n" : " * n") + std::to_string(a);
  return out.empty() ? "1" : out;
}

int64_t CudaEmitter::bound(const std::vector<int>& axes) const {
  int64_t n = 1;
  for (int a : axes) n *= p_.domain[a];
  return n;
}

void CudaEmitter::open_kernel(const std::string& kernel) {
  std::string params;
  for (int s : params_) {
    const DType t = g_.storages[s].dtype;
    params += (params.empty() ? "" : ", ") + std::string(written_.count(s) ? "" : "const ") + mem_type(t) +
              "* __restrict__ s" + std::to_string(s);
  }
  if (error_flag_) params += (params.empty() ? "" : ", ") + std::string("int* __restrict__ err");
  if (scratch_bytes_) params += (params.empty() ? "" : ", ") + std::string("void* __restrict__ scratch");
  line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kCudaThreads) + ") " + kernel + "(" + params + ") {");
  ++indent_;
  for (int s : embedded_) {
    const std::string t = mem_type(g_.storages[s].dtype);
    line("const " + t + "* __restrict__ s" + std::to_string(s) + " = (const " + t + "*)" + name_ + "_c" + std::to_string(s) + ";");
  }
  for (int d = 0; d < p_.rank(); ++d) {
    const std::string n = "n" + std::to_string(d);
    if (p_.extent[d] < 0) line("const " + index_t_ + " " + n + " = " + literal(p_.domain[d]) + ";");
    else line("const " + index_t_ + " " + n + " = st_extent<" + index_t_ + ">((const long long*)s" + std::to_string(p_.extent[d]) + ", " + literal(p_.domain[d]) + ");");
  }
}

bool CudaEmitter::plan_vectors() {
  const int last = p_.rank() - 1;
  if (p_.reduction || !p_.tails.empty() || last < 0 || p_.extent[last] >= 0 || p_.domain[last] % kCudaVectorLanes != 0)
    return false;
  std::map<int, int> reads, writes;  // memory accesses per storage
  for (const Op& op : p_.ops) {
    for (const View& v : op.inputs)
      if (!p_.registers.count(v.storage)) ++reads[v.storage];
    if (!p_.registers.count(op.output.storage)) ++writes[op.output.storage];
  }
  auto whole = [&](const View& v) {  // every trip's vector starts at a multiple of the lanes
    if (!params_.count(v.storage) || v.strides[last] != 1 || v.offset % kCudaVectorLanes != 0) return false;
    for (int d = 0; d < last; ++d)
      if (v.strides[d] % kCudaVectorLanes != 0) return false;
    return true;
  };
  auto known = [](const std::vector<VectorAccess>& list, const View& v) {
    return std::any_of(list.begin(), list.end(), [&](const VectorAccess& a) { return a.view == v; });
  };
  // vectors are loaded before the lanes run and stored after: only storages the stage does not
  // write are loaded so, and only storages it does not read (written through one view) stored so
  for (const Op& op : p_.ops) {
    for (const View& v : op.inputs)
      if (whole(v) && !writes.count(v.storage) && !known(vector_loads_, v))
        vector_loads_.push_back({v, "v" + std::to_string(vector_loads_.size())});
    const View& w = op.output;
    if (whole(w) && !reads.count(w.storage) && writes[w.storage] == 1)
      vector_stores_.push_back({w, "o" + std::to_string(vector_stores_.size())});
  }
  return !vector_loads_.empty() || !vector_stores_.empty();
}

std::string CudaEmitter::vectors_aligned() const {
  std::set<int> seen;
  std::string out;
  for (const auto* list : {&vector_loads_, &vector_stores_})
    for (const VectorAccess& a : *list) {
      if (!seen.insert(a.view.storage).second) continue;
      out += (out.empty() ? "" : " && ") + std::string("(unsigned long long)s") + std::to_string(a.view.storage) + " % " +
             std::to_string(vector_alignment(g_.dtype_of(a.view))) + " == 0";
    }
  return out;
}

void CudaEmitter::emit_vector_loop() {
  const int last = p_.rank() - 1;
  const std::string I = index_t_, n = "n" + std::to_string(last), lanes = std::to_string(kCudaVectorLanes);
  std::vector<int> outer(last);
  for (int a = 0; a < last; ++a) outer[a] = a;
  line("const " + I + " " + n + "v = " + n + " / " + lanes + ";  // vectors per innermost row");
  const std::string total = outer.empty() ? n + "v" : count(outer) + " * " + n + "v";
  line("for (" + I + " t = (" + I + ")blockIdx.x * " + std::to_string(kCudaThreads) + " + threadIdx.x; t < " + total + "; t += (" +
       I + ")gridDim.x * " + std::to_string(kCudaThreads) + ") {");
  ++indent_;
  line("const " + I + " i" + std::to_string(last) + " = t % " + n + "v * " + lanes + ";");
  if (!outer.empty()) {
    line("const " + I + " t_o = t / " + n + "v;");
    decompose("t_o", outer);
  }
  for (const VectorAccess& a : vector_loads_) {
    const DType t = g_.dtype_of(a.view);
    const std::string at = "&s" + std::to_string(a.view.storage) + "[" + element_index(a.view) + "]";
    const std::string ty = vector_type(t);
    if (!in_halves(t)) {
      line("const " + ty + " " + a.name + " = *(const " + ty + "*)" + at + ";");
    } else {
      line("const " + ty + " " + a.name + "_0 = *(const " + ty + "*)" + at + ";");
      line("const " + ty + " " + a.name + "_1 = *(const " + ty + "*)(" + at + " + 2);");
    }
  }
  for (const VectorAccess& a : vector_stores_) {
    const DType t = g_.dtype_of(a.view);
    line(std::string(vector_type(t)) + " " + (in_halves(t) ? a.name + "_0, " + a.name + "_1" : a.name) + ";");
  }
  for (lane_ = 0; lane_ < kCudaVectorLanes; ++lane_) {
    line("{  // lane " + std::to_string(lane_));
    ++indent_;
    for (size_t k = 0; k < p_.ops.size(); ++k) emit_op(k);
    --indent_;
    line("}");
  }
  lane_ = -1;
  for (const VectorAccess& a : vector_stores_) {
    const DType t = g_.dtype_of(a.view);
    const std::string at = "&s" + std::to_string(a.view.storage) + "[" + element_index(a.view) + "]";
    const std::string ty = vector_type(t);
    if (!in_halves(t)) {
      line("*(" + ty + "*)" + at + " = " + a.name + ";");
    } else {
      line("*(" + ty + "*)" + at + " = " + a.name + "_0;");
      line("*(" + ty + "*)(" + at + " + 2) = " + a.name + "_1;");
    }
  }
  --indent_;
  line("}");
}

void CudaEmitter::close_kernel() {
  --indent_;
  line("}");
}

CudaStage CudaEmitter::emit() {
  // storages: memory accesses and run-time extents; a small constant is compiled in instead
  auto use = [&](int s, bool write) {
    const Storage& st = g_.storages[s];
    if (st.kind == StorageKind::Const && !st.data.empty() && st.data.size() <= kEmbedBytes) {
      embedded_.insert(s);
      return;
    }
    params_.insert(s);
    if (write) written_.insert(s);
  };
  // 32-bit index arithmetic where every count and offset fits (with room for the grid stride)
  constexpr int64_t kSmall = int64_t{1} << 30;
  auto small = [&](const View& v) { return v.numel() == 0 || (v.min_offset() > -kSmall && v.max_offset() < kSmall); };
  bool fits = shape_numel(p_.domain) < kSmall;
  for (const Op& op : p_.ops) {
    for (const View& v : op.inputs) {
      if (!p_.registers.count(v.storage)) use(v.storage, false);
      fits = fits && small(v);
    }
    if (!p_.registers.count(op.output.storage)) use(op.output.storage, true);
    fits = fits && small(op.output);
    if (op.code == OpCode::power && !op.inputs.empty() && !is_float(g_.dtype_of(op.inputs[0])) &&
        g_.dtype_of(op.inputs[0]) != DType::Bool)
      error_flag_ = true;
  }
  for (int e : p_.extent)
    if (e >= 0) use(e, false);
  index_t_ = fits ? "int" : "long long";

  if (p_.reduction) {
    // the fold's index (argmax's answer) and its order are the unsplit axes'
    if (!p_.tails.empty()) {
      cur_op_ = static_cast<int>(p_.ops.size() - 1);
      refuse("its schedule splits a loop of a reduction with a tail");
    }
    emit_reduction();
  } else {
    std::vector<int> axes(p_.rank());
    for (int a = 0; a < p_.rank(); ++a) axes[a] = a;
    const int64_t points = shape_numel(p_.domain);
    open_kernel(name_);
    // whole vectors where every vector-accessed base address is aligned (a NumPy array need not
    // be: a slice starts anywhere), else one point per trip
    const bool vectors = plan_vectors();
    if (vectors) {
      line("if (" + vectors_aligned() + ") {");
      ++indent_;
      emit_vector_loop();
      --indent_;
      line("} else {");
      ++indent_;
    }
    const std::string stride = "(" + index_t_ + ")gridDim.x * " + std::to_string(kCudaThreads);
    line("for (" + index_t_ + " t = (" + index_t_ + ")blockIdx.x * " + std::to_string(kCudaThreads) + " + threadIdx.x; t < " +
         count(axes) + "; t += " + stride + ") {");
    ++indent_;
    decompose("t", axes);
    // a split with a tail: the rounded-up domain's points past the axis's extent do not exist
    for (const TailBound& b : p_.tails)
      line("if (i" + std::to_string(b.outer) + " * " + literal(b.factor) + " + i" + std::to_string(b.inner) + " >= " +
           literal(b.extent) + ") continue;");
    for (size_t k = 0; k < p_.ops.size(); ++k) emit_op(k);
    --indent_;
    line("}");
    if (vectors) {
      --indent_;
      line("}");
    }
    close_kernel();
    launches_.push_back({name_, std::clamp<int64_t>((points + kCudaThreads - 1) / kCudaThreads, 1, kCudaMaxBlocks), kCudaThreads});
  }

  std::ostringstream src;
  src << "// strider CUDA stage " << name_ << ": " << g_.name << " ops";
  for (int id : p_.op_ids) src << " op" << id;
  src << " (compile with -fmad=false)\n" << kPrelude;
  for (int s : embedded_) {
    // the bytes as they are (NaN payloads, -0.0): read back through a pointer of the dtype
    const Storage& st = g_.storages[s];
    const size_t item = itemsize(st.dtype);
    const char* word = item == 1 ? "unsigned char" : item == 4 ? "unsigned int" : "unsigned long long";
    src << "static __device__ const " << word << " " << name_ << "_c" << s << "[" << st.size << "] = {";
    for (int64_t i = 0; i < st.size; ++i) {
      uint64_t v = 0;
      for (size_t b = 0; b < item; ++b) v |= uint64_t{st.data[i * item + b]} << (8 * b);
      src << (i ? ", " : "") << "0x" << std::hex << v << std::dec << (item == 8 ? "ull" : item == 4 ? "u" : "");
    }
    src << "};\n";
  }
  src << helpers_.str() << kernels_.str();
  CudaStage out;
  out.name = name_;
  out.source = src.str();
  out.params.assign(params_.begin(), params_.end());
  out.launches = launches_;
  out.error_flag = error_flag_;
  out.scratch_bytes = scratch_bytes_;
  return out;
}

}  // namespace strider::detail
