#pragma once

// The scalar semantics of every elementwise op (scalar_ops.inc) for host code: the reference
// executor. CUDA stages compile the same text (codegen/cuda, embedded at build time).

#include <math.h>  // C's math library in the global namespace, isnan and signbit overloaded

#define ST_FN inline
#include "ops/scalar_ops.inc"
#undef ST_FN
