#pragma once

#include <cstdint>

#include "ir/graph.h"

// NumPy's own inner loops for the float functions whose bits no libm reproduces: NumPy computes
// log, tanh, sin and their kin with its own SIMD code or a vector math library (SVML on AVX-512
// hosts), float64 exp and log included. With STRIDER_NUMPY_MATH=1 the Python module installs
// NumPy's loops at import; the JIT's code and the reference executor then call them on the values
// they compute, so these ops give the installed NumPy's results on any host, at the cost of a call
// a vector (an element where a loop does not vectorize). Without them libm and libmvec decide.

namespace strider {

/// A ufunc's inner loop as NumPy's C API declares it (PyUFuncGenericFunction).
using UfuncLoop = void (*)(char** args, const intptr_t* dimensions, const intptr_t* steps, void* data);

/// Installs NumPy's loop of `op` for `dtype` (float32 or float64).
void set_numpy_loop(OpCode op, DType dtype, UfuncLoop loop, void* data);

/// Float32 exp and log: the libm ops whose NumPy algorithms ops/scalar_ops.inc computes inline
/// (fmaf for fmaf), so the kernels at either effort and the reference give the same bits.
bool computed_inline(OpCode op, DType dtype);

/// The unary float ops whose results NumPy's loop should decide: the libm ones (ops.def's
/// kLibm), but those computed_inline.
bool numpy_computes(OpCode op, DType dtype);

/// numpy_computes, and its loop is installed.
bool numpy_decides(OpCode op, DType dtype);

/// Whether any loop is installed (a part of the kernel cache's key: the code calls them).
bool numpy_loops_installed();

/// The id generated code passes strider_numpy_loop for `op` on `dtype`.
int32_t numpy_loop_id(OpCode op, DType dtype);

/// NumPy's loop of `op` over n contiguous elements of `dtype`.
void run_numpy_loop(OpCode op, DType dtype, const void* in, void* out, int64_t n);

}  // namespace strider

/// What generated code calls: the loop numpy_loop_id named, over n contiguous elements.
extern "C" void strider_numpy_loop(int32_t id, const void* in, void* out, int64_t n);
