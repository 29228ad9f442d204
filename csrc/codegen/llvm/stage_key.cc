// The disk-cache key of a stage. Its text names everything the machine code depends on and
// nothing else: op ids, source lines and the graph's name only reach messages and logs, so the
// same loop nest in two functions shares one entry.

#include <llvm/Config/llvm-config.h>

#include "codegen/llvm/codegen.h"
#include "codegen/llvm/jit.h"
#include "codegen/stage_plan.h"
#include "ops/numpy_loops.h"

#ifndef STRIDER_VERSION
#error "CMakeLists.txt defines STRIDER_VERSION (project version) for this file"
#endif
#ifndef STRIDER_CODEGEN_ID
#error "CMakeLists.txt defines STRIDER_CODEGEN_ID (a hash of the backend's sources) for this file"
#endif

namespace strider {

namespace {

// Bumped when what an entry holds changes meaning in a way the sources' hash would not show.
constexpr int kCodegenFormat = 1;

}  // namespace

CacheKey stage_cache_key(const Graph& g, const Stage& s) { return stage_cache_key(g, std::vector<const Stage*>{&s}); }

CacheKey stage_cache_key(const Graph& g, const std::vector<const Stage*>& stages) {
  CacheKey key;
  key.add("strider", STRIDER_VERSION);
  key.add("llvm", LLVM_VERSION_STRING);
  key.add("codegen", std::to_string(kCodegenFormat) + "-" + STRIDER_CODEGEN_ID);
  detail::Jit* jit = detail::Jit::get();
  key.add("target", jit ? jit->target_description() + " compress=" + vector_compress() : "none");
  // their code calls NumPy's loops where the Python module installed them, libm where not
  key.add("math", numpy_loops_installed() ? "numpy" : "libm");
  for (const Stage* s : stages) key.add("stage", detail::stage_text(g, *s));
  return key;
}

}  // namespace strider
