#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "codegen/cuda/cuda_codegen.h"
#include "runtime/cuda_loader.h"
#include "runtime/elementwise.h"

// The CUDA backend without a GPU: every op on every dtype is emitted where the reference has a
// loop for it and refused (naming the op) where it has none, every reduction in each of its
// kernel shapes; all of it compiles with NVRTC for sm_80 and sm_90. Cubins are cached on disk
// under a key that holds the architecture and the NVRTC version.
namespace strider {
namespace {


Stage one_op_stage(Graph& g, OpCode code, const std::vector<DType>& in, DType out, const Shape& shape,
                   const std::vector<int>& axes) {
  Op op;
  op.code = code;
  op.axes = axes;
  for (size_t k = 0; k < in.size(); ++k) {
    Storage s;
    s.dtype = in[k];
    s.size = shape_numel(shape);
    s.kind = StorageKind::Arg;
    s.arg = static_cast<int>(k);
    op.inputs.push_back(View{g.add_storage(s), shape, contiguous_strides(shape), 0});
  }
  Shape kept;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(shape[d]);
  Storage r;
  r.dtype = out;
  r.size = shape_numel(kept);
  op.output = View{g.add_storage(r), kept, contiguous_strides(kept), 0};
  g.ops.push_back(op);
  Stage s;
  s.domain = shape;
  for (size_t d = 0; d < shape.size(); ++d) s.loops.push_back("i" + std::to_string(d));
  s.op_ids = {static_cast<int>(g.ops.size()) - 1};
  s.ops = {op};
  s.reduce_axes = axes;
  return s;
}

// Whether runtime/elementwise.h has a loop for op on t (it throws logic_error where not).
bool reference_has_loop(OpCode code, DType t) {
  try {
    dispatch_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      const st::reg_t<T> one(1);
      // cast is convert<U, T>, defined for every pair
      if (op_kind(code) == OpKind::Unary && code != OpCode::cast)
        is_predicate(code) ? detail::unary_predicate<T>(code, one) : bool(detail::unary_same<T>(code, one));
      if (op_kind(code) == OpKind::Binary)
        is_comparison(code) ? detail::compare<T>(code, one, one) : bool(detail::binary_same<T>(code, one, one));
      return 0;
    });
    return true;
  } catch (const std::logic_error&) {
    return false;
  }
}

// One NVRTC program holding every source (each is self-contained, kernels named per stage).
void expect_compiles(const std::vector<std::string>& sources) {
  const Nvrtc* nvrtc = Nvrtc::get();
  if (!nvrtc) GTEST_SKIP() << nvrtc_unavailable_reason();
  std::string all;
  for (const std::string& s : sources) all += s;
  for (const char* arch : {"sm_80", "sm_90"})
    EXPECT_NO_THROW(nvrtc->compile_cubin(all, "stages.cu", arch, cuda_compile_options())) << arch;
}

TEST(CudaCodegen, EveryElementwiseOpIsEmittedWhereTheReferenceHasALoop) {
  std::vector<std::string> sources;
  int refused = 0;
#define STRIDER_OP(name, kind, attrs)                                                                  \
  for (DType t : kDTypes) {                                                                             \
    const OpCode code = OpCode::name;                                                                   \
    const OpKind k = op_kind(code);                                                                     \
    if (k != OpKind::Unary && k != OpKind::Binary && k != OpKind::Ternary && k != OpKind::Copy) continue; \
    const bool boolean = is_predicate(code) || is_comparison(code);                     \
    std::vector<DType> in(op_arity(code), t);                                                           \
    if (k == OpKind::Ternary) in[0] = DType::Bool;                                                      \
    Graph g;                                                                                            \
    const Stage s = one_op_stage(g, code, in, boolean ? DType::Bool : t, {37}, {});                     \
    try {                                                                                               \
      sources.push_back(emit_cuda_stage(g, s).source);                                                  \
      EXPECT_TRUE(reference_has_loop(code, t)) << #name << " " << dtype_name(t);                        \
    } catch (const std::invalid_argument& e) {                                                          \
      ++refused;                                                                                        \
      EXPECT_FALSE(reference_has_loop(code, t)) << e.what();                                            \
      EXPECT_NE(std::string(e.what()).find("CUDA backend cannot compile op0 (" #name ")"), std::string::npos) << e.what(); \
    }                                                                                                   \
  }
#include "ir/ops.def"
  EXPECT_GT(refused, 0);  // bitwise ops on floats, divide on integers, ...
  EXPECT_GT(sources.size(), 240u);  // NumPy's loops (ops.def) of every op on every dtype
  expect_compiles(sources);
}

TEST(CudaCodegen, EveryReductionInEveryKernelShape) {
  struct Case {
    Shape shape;
    std::vector<int> axes;
    const char* marker;  // a line only that shape emits
    size_t launches;
  };
  const Case cases[] = {
      {{50, 4}, {1}, "r++", 1},                            // thread: short rows
      {{4, 50}, {0}, "r++", 1},                            // thread: a column sum
      {{64, 1000}, {1}, "f += 32", 1},                     // warp
      {{64, 10000}, {1}, "part[lane / 32] = a", 1},        // block
      {{100000}, {0}, "partials[b] = a;", 2},              // grid
      {{70000, 3}, {0}, "partials[o * 274 + chunk] = a;", 2},  // columns
  };
  std::vector<std::string> sources;
  for (OpCode code : {OpCode::sum, OpCode::prod, OpCode::max, OpCode::min, OpCode::argmax, OpCode::argmin, OpCode::any,
                      OpCode::all})
    for (DType t : kDTypes)
      for (const Case& c : cases) {
        const bool arg = code == OpCode::argmax || code == OpCode::argmin;
        const DType out = arg ? DType::Int64 : code == OpCode::any || code == OpCode::all ? DType::Bool : t;
        Graph g;
        const CudaStage st = emit_cuda_stage(g, one_op_stage(g, code, {t}, out, c.shape, c.axes));
        // float16 sums and products round after every step, in order: a thread per output
        const bool half_steps = (code == OpCode::sum || code == OpCode::prod) && t == DType::Float16;
        EXPECT_NE(st.source.find(half_steps ? "r++" : c.marker), std::string::npos) << op_name(code) << " " << c.shape[0];
        EXPECT_EQ(st.source.find("a.v = st::round_half(st::") != std::string::npos, half_steps);
        EXPECT_EQ(st.launches.size(), half_steps ? 1 : c.launches);
        EXPECT_EQ(st.scratch_bytes > 0, st.launches.size() == 2);
        sources.push_back(st.source);
      }
  expect_compiles(sources);
}

TEST(CudaCodegen, IntegerPowerTakesTheErrorFlag) {
  Graph g;
  const CudaStage st = emit_cuda_stage(g, one_op_stage(g, OpCode::power, {DType::Int64, DType::Int64}, DType::Int64, {9}, {}));
  EXPECT_TRUE(st.error_flag);
  EXPECT_NE(st.source.find("long long* __restrict__ err)"), std::string::npos);
  EXPECT_NE(st.source.find("if (st::power_fails(a0_0, a0_1)) st_fail(err, 1, 0);"), std::string::npos);
  Graph f;
  EXPECT_FALSE(emit_cuda_stage(f, one_op_stage(f, OpCode::power, {DType::Float32, DType::Float32}, DType::Float32, {9}, {})).error_flag);
}

TEST(CudaCodegen, KernelNameFollowsTheStageNotTheFunction) {
  Graph a, b;
  a.name = "first";
  b.name = "second";
  const CudaStage x = emit_cuda_stage(a, one_op_stage(a, OpCode::exp, {DType::Float32}, DType::Float32, {8}, {}));
  const CudaStage y = emit_cuda_stage(b, one_op_stage(b, OpCode::exp, {DType::Float32}, DType::Float32, {8}, {}));
  Graph c;
  const CudaStage z = emit_cuda_stage(c, one_op_stage(c, OpCode::exp, {DType::Float32}, DType::Float32, {9}, {}));
  EXPECT_EQ(x.name, y.name);
  EXPECT_NE(x.name, z.name);
  EXPECT_EQ(x.name.rfind("strider_", 0), 0u);
  EXPECT_EQ(x.name.size(), 8u + 16u);
}

TEST(CudaCodegen, CacheKeyHoldsArchAndNvrtcVersion) {
  Graph g;
  const Stage s = one_op_stage(g, OpCode::exp, {DType::Float32}, DType::Float32, {8}, {});
  const CacheKey k = cuda_stage_cache_key(g, s, "sm_90", "13.0");
  EXPECT_NE(k.digest(), cuda_stage_cache_key(g, s, "sm_80", "13.0").digest());
  EXPECT_NE(k.digest(), cuda_stage_cache_key(g, s, "sm_90", "12.4").digest());
  EXPECT_EQ(k.digest(), cuda_stage_cache_key(g, s, "sm_90", "13.0").digest());
}

TEST(CudaCodegen, CubinComesFromTheDiskCacheTheSecondTime) {
  if (!Nvrtc::get()) GTEST_SKIP() << nvrtc_unavailable_reason();
  char name[] = "/tmp/strider-cuda-cache-XXXXXX";
  const std::string dir = mkdtemp(name);
  {
    DiskCache cache(dir);
    Graph g;
    const Stage s = one_op_stage(g, OpCode::add, {DType::Float32, DType::Float32}, DType::Float32, {8}, {});
    const CudaCompiled first = compile_cuda_stage(g, s, "sm_80", &cache);
    const CudaCompiled second = compile_cuda_stage(g, s, "sm_80", &cache);
    EXPECT_FALSE(first.from_disk);
    EXPECT_TRUE(second.from_disk);
    EXPECT_EQ(first.cubin, second.cubin);
    EXPECT_FALSE(compile_cuda_stage(g, s, "sm_90", &cache).from_disk);  // another arch, another entry
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strider
