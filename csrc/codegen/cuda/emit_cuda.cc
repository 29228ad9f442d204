// The elementwise kernel: a grid-stride loop over the flattened domain, each op a call of its
// scalar function in ops/scalar_ops.inc (the reference executor's own definition), which every
// source carries in its prelude.

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>

#include "codegen/cuda/cuda_emitter.h"
#include "ops/scalar_ops_text.h"

namespace strider::detail {

// Shared by every stage; guarded so that several stages' sources compile as one program. The
// scalar semantics are ops/scalar_ops.inc, the text the reference executor compiles.
const std::string& prelude() {
  static const std::string text =
      std::string("#ifndef STRIDER_CUDA_PRELUDE\n#define STRIDER_CUDA_PRELUDE\n#define ST_FN __device__ __forceinline__\n") +
      kScalarOpsText + R"(// a run-time extent, clamped to its static bound as the reference does
template <class I> __device__ __forceinline__ I st_extent(const long long* e, long long bound) {
  const long long v = *e;
  return (I)(v < 0 ? 0 : v > bound ? bound : v);
}
// Fills the error record (runtime/kernel.h): the first op of the call to fail claims it, and of
// its failing elements the first in C order (the largest INT64_MAX - position). True while `who`
// holds it.
__device__ __forceinline__ bool st_fail(long long* err, long long who, long long pos) {
  const unsigned long long held = atomicCAS((unsigned long long*)err, 0ull, (unsigned long long)who);
  if (held != 0ull && held != (unsigned long long)who) return false;
  atomicMax(err + 1, 9223372036854775807LL - pos);
  return true;
}
// NumPy's sort order of floats as unsigned keys (runtime/data_dependent.cc's sort_key): -0.0
// equal to 0.0, every NaN equal to the others and last
__device__ __forceinline__ unsigned int st_key(float x) {
  if (x != x) return 0xffffffffu;
  const unsigned int b = st::bit_cast_<unsigned int>(x == 0.0f ? 0.0f : x);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ unsigned long long st_key(double x) {
  if (x != x) return 0xffffffffffffffffull;
  const unsigned long long b = st::bit_cast_<unsigned long long>(x == 0.0 ? 0.0 : x);
  return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}
#endif
)";
  return text;
}

std::string literal(int64_t v) {
  // INT64_MIN has no literal of its own
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  return std::to_string(v) + (v > INT32_MAX || v < INT32_MIN ? "LL" : "");
}

// A memory element as it computes (st::reg_t), and a computed value as memory holds it.
std::string from_memory(const std::string& x, DType t) {
  if (t == DType::Bool) return "(" + x + " != 0)";
  if (t == DType::Float16) return "st::half_to_float(" + x + ")";
  return x;
}
std::string to_memory(const std::string& x, DType t) {
  if (t == DType::Bool) return "(unsigned char)(" + x + ")";
  if (t == DType::Float16) return "st::float_to_half(" + x + ")";
  return x;
}

namespace {

// The vector type a view of `t` is read or written with, in halves for 8-byte types (16 bytes
// each, the widest load), and the alignment its base address needs.
const char* vector_type(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8: return "uchar4";
    case DType::Int8: return "char4";
    case DType::Int16: return "short4";
    case DType::UInt16:
    case DType::Float16: return "ushort4";
    case DType::Int32: return "int4";
    case DType::UInt32: return "uint4";
    case DType::Int64: return "longlong2";
    case DType::UInt64: return "ulonglong2";
    case DType::Float32: return "float4";
    case DType::Float64: break;
  }
  return "double2";
}
bool in_halves(DType t) { return itemsize(t) == 8; }
int vector_alignment(DType t) { return static_cast<int>(std::min<size_t>(4 * itemsize(t), 16)); }

// Lane w of a vector local: name.x ... name.w, or name_0.x, name_0.y, name_1.x, name_1.y.
std::string lane_component(const std::string& name, DType t, int w, bool read) {
  static const char* const kField[] = {".x", ".y", ".z", ".w"};
  const std::string c = in_halves(t) ? name + "_" + std::to_string(w / 2) + kField[w % 2] : name + kField[w];
  return read ? from_memory(c, t) : c;
}

}  // namespace

CudaEmitter::CudaEmitter(const Graph& g, const StagePlan& p, std::string name) : g_(g), p_(p), name_(std::move(name)) {}

std::string CudaEmitter::mem_type(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8: return "unsigned char";
    case DType::Int8: return "signed char";
    case DType::Int16: return "short";
    case DType::UInt16:
    case DType::Float16: return "unsigned short";  // float16: its bits
    case DType::Int32: return "int";
    case DType::UInt32: return "unsigned int";
    case DType::Int64: return "long long";
    case DType::UInt64: return "unsigned long long";
    case DType::Float32: return "float";
    case DType::Float64: break;
  }
  return "double";
}

// bool computes as bool, float16 as float (st::reg_t)
std::string CudaEmitter::reg_type(DType t) {
  return t == DType::Bool ? "bool" : t == DType::Float16 ? "float" : mem_type(t);
}

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
  return from_memory("s" + std::to_string(v.storage) + "[" + element_index(v) + "]", g_.dtype_of(v));
}

void CudaEmitter::store(const View& v, const std::string& value) {
  const DType t = g_.dtype_of(v);
  if (p_.registers.count(v.storage)) return line("const " + reg_type(t) + " r" + std::to_string(v.storage) + " = " + value + ";");
  if (lane_ >= 0)
    for (const VectorAccess& a : vector_stores_)
      if (a.view == v) return line(lane_component(a.name, t, lane_, false) + " = " + to_memory(value, t) + ";");
  line("s" + std::to_string(v.storage) + "[" + element_index(v) + "] = " + to_memory(value, t) + ";");
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
      return store(op.output, convert(call(op.code, t, in), is_predicate(op.code) ? DType::Bool : t, out));
    case OpKind::Binary:
      if (g_.dtype_of(op.inputs[1]) != t) refuse("its inputs do not share one dtype");
      if (may_fail(op.code, t)) line("if (st::" + std::string(op_name(op.code)) + "_fails(" + in[0] + ", " + in[1] + ")) st_fail(err, " + literal(kCudaFailedPower) + ", 0);");
      return store(op.output, convert(call(op.code, t, in), is_comparison(op.code) ? DType::Bool : t, out));
    case OpKind::Ternary:
      // the reference copies the chosen element's bytes: the values must have the output's dtype
      if (t != DType::Bool) refuse("where needs a bool condition");
      if (g_.dtype_of(op.inputs[1]) != out || g_.dtype_of(op.inputs[2]) != out) refuse("its values do not have the output's dtype");
      return store(op.output, "(" + in[0] + " ? " + in[1] + " : " + in[2] + ")");
    case OpKind::Arange: {
      if (t != out || g_.dtype_of(op.inputs[1]) != out) refuse("start and step must have the output's dtype");
      const std::string i = p_.rank() == 0 ? "0" : lane_ > 0 ? "(i0 + " + std::to_string(lane_) + ")" : "i0";
      return store(op.output, as_dtype("st::arange(" + in[0] + ", " + in[1] + ", (long long)" + i + ")", out));
    }
    case OpKind::Reduce: refuse("a reduction must be the last op of its stage");
    default: break;  // stage_plan refuses the data-dependent kinds before any emitter sees them
  }
  refuse("a data-dependent op runs in the runtime's library");
}

std::string CudaEmitter::convert(const std::string& x, DType from, DType to) {
  if (from == to) return x;
  return "st::convert<" + (to == DType::Float16 ? std::string("st::half") : reg_type(to)) + ">(" + x + ")";
}

std::string CudaEmitter::as_dtype(const std::string& x, DType t) {
  return t == DType::Float16 ? "st::round_half(" + x + ")" : x;
}

std::string CudaEmitter::call(OpCode code, DType t, const std::vector<std::string>& args) const {
  if (!has_loop(code, t)) refuse(std::string(op_name(code)) + " has no " + loop_family(t) + " loop");
  std::string out = "st::" + scalar_function(code, t) + "(";
  for (size_t k = 0; k < args.size(); ++k) out += (k ? ", " : "") + args[k];
  out += ")";
  // float16 computes in float and rounds each result to half; bool results stay
  return is_predicate(code) || is_comparison(code) ? out : as_dtype(out, t);
}

bool CudaEmitter::may_fail(OpCode code, DType t) { return (op_attrs(code) & kMayFail) && !is_float(t); }

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
  if (error_flag_) params += (params.empty() ? "" : ", ") + std::string("long long* __restrict__ err");
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
    if (!op.inputs.empty() && may_fail(op.code, g_.dtype_of(op.inputs[0]))) error_flag_ = true;
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
  src << " (compile with -fmad=false)\n" << prelude();
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
