// Built instead of the LLVM backend when LLVM 16 is not found: the runtime then uses the
// reference executor for every stage.
#include <stdexcept>

#include "codegen/llvm/codegen.h"

namespace strider {

bool llvm_backend_available() { return false; }

namespace {
const char* const kWithout = "strider was built without LLVM: every stage runs on the reference executor";
}  // namespace

std::unique_ptr<CompiledStage> compile_stage(const Graph&, const Stage&, DiskCache*, Effort) {
  throw std::invalid_argument(kWithout);
}

CompiledGroup compile_stage_group(const Graph&, const std::vector<const Stage*>& stages, DiskCache*, Effort) {
  CompiledGroup out;
  out.kernels.resize(stages.size());
  out.refused.assign(stages.size(), kWithout);
  return out;
}

CacheKey stage_cache_key(const Graph&, const Stage&) { return CacheKey(); }
CacheKey stage_cache_key(const Graph&, const std::vector<const Stage*>&) { return CacheKey(); }

int host_vector_width(DType) { return 1; }

}  // namespace strider
