#!/usr/bin/env bash
# strider's GPU checks on a lent machine that has a GPU, Python, a C++ compiler, pybind11 and the
# peers (CuPy, torch, JAX) but neither LLVM 16 nor isl, and nothing to fetch them with.
#
#   here:  tests/gpu/lent_machine.sh pack
#          builds the C++ core with the LLVM components the JIT uses linked in, as one shared
#          library (only strider's own symbols exported), and puts it with isl in .lent/
#   there: tests/gpu/lent_machine.sh run PHASE...    (.lent carried; logs and results to $OUT)
#          build: compiles the Python bindings (csrc/python) for that machine's Python against it
#          gpu, e2e: tests/gpu; tests/e2e and tests/property with STRIDER_TEST_TARGET=cuda
#          bench: benchmarks/run.py --device cuda (systems: $BENCH_SYSTEMS)
#          Each phase has a time limit ($GPU_S, $E2E_S, $BENCH_S seconds) so that one call of a
#          lease ends with every phase's output saved.
set -uo pipefail
cd "$(dirname "$0")/../.."
LENT=.lent

pack() {
  set -e
  cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRIDER_STATIC_DEPS=ON \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
  cmake --build build/device
  rm -rf $LENT && mkdir -p $LENT
  # the layers highest first, as a static link wants them
  local layers=""
  for l in driver codegen runtime transforms schedule analysis ops ir support; do
    layers+=" build/device/libstrider_$l.a"
  done
  # LLVM's and isl's symbols stay private: the peers load LLVMs of their own (Triton, llvmlite)
  echo '{ global: *7strider*; local: *; };' >build/device/exports.map
  g++ -shared -o $LENT/libstrider_core.so -Wl,--whole-archive $layers -Wl,--no-whole-archive \
    -L"$(llvm-config-16 --libdir)" $(llvm-config-16 --link-static --libs bitreader linker native orcjit passes) \
    -l:libisl.so.23 -lz -lzstd -ltinfo -lpthread -ldl \
    -Wl,--version-script=build/device/exports.map -Wl,--gc-sections -Wl,--as-needed -Wl,-rpath,'$ORIGIN' -s
  cp -L "$(g++ -print-file-name=libisl.so.23)" $LENT/
  cp -r build/device/generated $LENT/
  du -sh $LENT
}

phase_build() {
  local py pb np suffix
  py=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
  pb=$(python3 -c "import pybind11; print(pybind11.get_include())")
  np=$(python3 -c "import numpy; print(numpy.get_include())")
  suffix=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  rm -rf build/device-obj && mkdir -p build/device-obj
  # the flags pybind11_add_module gives the bindings (CMakeLists.txt), less LTO
  ls csrc/python/*.cc | xargs -P "$(nproc)" -I{} sh -c "g++ -O2 -DNDEBUG -fPIC -fvisibility=hidden -std=gnu++17 \
    -DSTRIDER_HAVE_LLVM=1 -I$np -Icsrc -I$LENT/generated -isystem $py -isystem $pb -c {} \
    -o build/device-obj/\$(basename {}).o" || return 1
  cp $LENT/libstrider_core.so $LENT/libisl.so.23 python/strider/
  g++ -shared -o "python/strider/_C$suffix" build/device-obj/*.o -Lpython/strider -lstrider_core \
    -Wl,-rpath,'$ORIGIN' || return 1
  python3 -c "import strider, numpy, sys; from strider import _C
print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'strider', strider.__file__)
print('cuda:', _C.cuda_unavailable_reason() or 'available', _C.cuda_device_arch())"
}

phase_gpu() {
  timeout "${GPU_S:-120}" python3 -m pytest -p no:cacheprovider -rfE --tb=short tests/gpu \
    --junitxml="$OUT/gpu.xml" 2>&1 | tee "$OUT/gpu.log" | tail -40
}

phase_e2e() {
  STRIDER_TEST_TARGET=cuda timeout "${E2E_S:-300}" python3 -m pytest -p no:cacheprovider -rfE --tb=short \
    --timeout=120 -n "$(nproc)" tests/property tests/e2e --junitxml="$OUT/e2e.xml" 2>&1 | tee "$OUT/e2e.log" | tail -60
}

phase_bench() {
  PYTHONUNBUFFERED=1 timeout "${BENCH_S:-300}" python3 benchmarks/run.py --device cuda --sizes "${BENCH_SIZES:-image,batch}" \
    --systems "${BENCH_SYSTEMS:-strider,cupy,torch,jax}" --budget "${BENCH_BUDGET:-0.1}" \
    --out "$OUT/${BENCH_JSON:-cuda.json}" 2>&1 | tee "$OUT/bench.log" | tail -80
}

case "${1:-}" in
  pack) pack ;;
  run)
    shift
    OUT=${OUT:-$PWD/build/device-out}
    mkdir -p "$OUT"
    export PYTHONPATH=$PWD/python:$PWD/tests:$PWD/benchmarks
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader
    # NVRTC where strider looks (CUDA_HOME, /usr/local/cuda) or else the first one installed
    if [ -z "${STRIDER_NVRTC:-}" ] && ! ls "${CUDA_HOME:-/usr/local/cuda}"/lib64/libnvrtc.so* >/dev/null 2>&1; then
      STRIDER_NVRTC=$(find /usr /opt -name 'libnvrtc.so.*' 2>/dev/null | grep -v builtins | head -1)
      export STRIDER_NVRTC && echo "NVRTC: $STRIDER_NVRTC"
    fi
    for p in "$@"; do
      echo "== $(date +%T) $p"
      "phase_$p" || echo "== phase $p failed"
    done
    echo "== $(date +%T) end" ;;
  *) sed -n '2,15p' "$0"; exit 2 ;;
esac
