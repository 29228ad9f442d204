"""The cost of one warm call: strider.compile(lambda a, b, c: a + b * c) on three float32[4]
arrays against NumPy's own `a + b * c` in the same run (best of 5 loops of 100,000 calls), and
the per-call cost of the same function compiled with target="cuda" on the emulated device
(tests/cuda_fake, when this build has it) with DeviceArray arguments and with NumPy arguments.
No timing asserts: it prints microseconds per call and the ratios.

    python benchmarks/dispatch.py [--loops 5] [--calls 100000] [--no-cuda]
"""
import argparse
import os
import time

import numpy as np


def best_per_call(fn, calls, loops):
    """Microseconds per call: the best of `loops` loops of `calls` calls."""
    best = float("inf")
    for _ in range(loops):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / calls * 1e6


def emulated_device():
    """Points strider at the emulated driver and NVRTC (before anything loads CUDA); False when
    this build has none."""
    from strider import _C

    paths = _C.emulated_cuda
    if paths is None:
        return False
    os.environ.setdefault("STRIDER_CUDA_DRIVER", paths["driver"])
    os.environ.setdefault("STRIDER_NVRTC", paths["nvrtc"])
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=5)
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--no-cuda", action="store_true", help="skip the emulated-device figures")
    opts = parser.parse_args()
    cuda = not opts.no_cuda and emulated_device()

    import strider
    from strider import _C

    a, b, c = (np.arange(4, dtype=np.float32) + k for k in range(3))
    f = strider.compile(lambda a, b, c: a + b * c)
    np.testing.assert_array_equal(f(a, b, c), a + b * c)
    ours = best_per_call(lambda: f(a, b, c), opts.calls, opts.loops)
    numpy = best_per_call(lambda: a + b * c, opts.calls, opts.loops)
    print(f"strider {strider.__file__}")
    print(f"cpu dispatch: strider {ours:.3f} us/call, numpy {numpy:.3f} us/call, ratio {ours / numpy:.2f}")
    if not cuda:
        print("cuda: skipped (no emulated device in this build)" if not opts.no_cuda else "cuda: skipped")
        return
    if _C.cuda_unavailable_reason():
        print(f"cuda: skipped ({_C.cuda_unavailable_reason()})")
        return
    g = strider.compile(lambda a, b, c: a + b * c, target="cuda")
    calls = max(opts.calls // 10, 1)  # each call synchronizes with the emulated device
    np.testing.assert_array_equal(g(a, b, c), a + b * c)
    host = best_per_call(lambda: g(a, b, c), calls, opts.loops)
    device = []
    for x in (a, b, c):
        d = _C.DeviceArray.empty(0, x.shape, x.dtype.num)
        _C.cuda_upload(0, d.ptr, x)
        device.append(d)
    g(*device)
    on_device = best_per_call(lambda: g(*device), calls, opts.loops)
    print(f"cuda (emulated) per call: DeviceArray arguments {on_device:.3f} us, NumPy arguments {host:.3f} us")


if __name__ == "__main__":
    main()
