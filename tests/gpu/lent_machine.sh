#!/usr/bin/env bash
# strider's GPU checks on a lent machine that has a GPU, Python, a C++ compiler, pybind11 and the
# peers (CuPy, torch, JAX) but neither LLVM 16 nor isl, and nothing to fetch them with.
#
#   here:  tests/gpu/lent_machine.sh pack [PYTHON]
#          builds the C++ core with the LLVM components the JIT uses linked in, as one shared
#          library (only strider's own symbols exported), and puts it with isl and gmp in .lent/;
#          with PYTHON (that machine's version, with NumPy and pybind11), the bindings for it too,
#          so that the lease is not spent compiling them
#   there: tests/gpu/lent_machine.sh run PHASE...    (.lent carried; logs and results to $OUT)
#          build: the Python bindings (csrc/python) for that machine's Python: pack's, when it
#          made them for that Python's ABI, or else compiled there against the core
#          gpu, e2e: tests/gpu; tests/e2e and tests/property with STRIDER_TEST_TARGET=cuda
#          bench: benchmarks/run.py --device cuda ($BENCH_SYSTEMS, $BENCH_SIZES, $BENCH_HEADS)
#          Each phase has a time limit ($GPU_S, $E2E_S, $BENCH_S seconds) so that one call of a
#          lease ends with every phase's output saved (SIGINT: pytest and run.py end with a summary).
set -uo pipefail
cd "$(dirname "$0")/../.."
LENT=.lent

pack() {
  set -e
  # LLVM's CMake package names zstd for a static link
  dpkg -s libzstd-dev >/dev/null 2>&1 || apt-get install -y -qq libzstd-dev
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
  cp -L "$(g++ -print-file-name=libisl.so.23)" "$(g++ -print-file-name=libgmp.so.10)" $LENT/
  cp -r build/device/generated $LENT/
  if [ -n "${1:-}" ]; then bindings "$1" $LENT; fi
  du -sh $LENT
}

# bindings PYTHON DIR: compiles csrc/python for PYTHON against $LENT's core into DIR/_C<suffix>
bindings() {
  local py=$1 dir=$2 inc pb np suffix obj=build/device-obj-$(basename "$1")
  inc=$($py -c "import sysconfig; print(sysconfig.get_paths()['include'])")
  pb=$($py -c "import pybind11; print(pybind11.get_include())")
  np=$($py -c "import numpy; print(numpy.get_include())")
  suffix=$($py -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  rm -rf "$obj" && mkdir -p "$obj"
  # the flags pybind11_add_module gives the bindings (CMakeLists.txt), less LTO
  ls csrc/python/*.cc | xargs -P "$(nproc)" -I{} sh -c "g++ -O2 -DNDEBUG -fPIC -fvisibility=hidden -std=gnu++17 \
    -DSTRIDER_HAVE_LLVM=1 -I$np -Icsrc -I$LENT/generated -isystem $inc -isystem $pb -c {} \
    -o $obj/\$(basename {}).o" || return 1
  g++ -shared -o "$dir/_C$suffix" "$obj"/*.o -L$LENT -lstrider_core -Wl,-rpath,'$ORIGIN' -s
}

phase_build() {
  local suffix
  suffix=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  cp $LENT/libstrider_core.so $LENT/libisl.so.23 $LENT/libgmp.so.10 python/strider/
  if [ -f "$LENT/_C$suffix" ]; then
    cp "$LENT/_C$suffix" python/strider/
  else
    bindings python3 python/strider || return 1
  fi
  python3 -c "import strider, numpy, sys; from strider import _C
print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'strider', strider.__file__)
print('cuda:', _C.cuda_unavailable_reason() or 'available', _C.cuda_device_arch())"
}

phase_gpu() {
  timeout -s INT -k 20 "${GPU_S:-120}" python3 -m pytest -p no:cacheprovider -rfE --tb=short tests/gpu \
    --junitxml="$OUT/gpu.xml" 2>&1 | tee "$OUT/gpu.log" | tail -40
}

phase_e2e() {
  STRIDER_TEST_TARGET=cuda timeout -s INT -k 20 "${E2E_S:-300}" python3 -m pytest -p no:cacheprovider -rfE --tb=short \
    --timeout=120 -n "$(nproc)" tests/property tests/e2e --junitxml="$OUT/e2e.xml" 2>&1 | tee "$OUT/e2e.log" | tail -60
}

phase_bench() {
  PYTHONUNBUFFERED=1 timeout -s INT -k 20 "${BENCH_S:-300}" python3 benchmarks/run.py --device cuda --sizes "${BENCH_SIZES:-image,batch}" \
    --heads "${BENCH_HEADS:-}" \
    --systems "${BENCH_SYSTEMS:-strider,cupy,torch,jax}" --budget "${BENCH_BUDGET:-0.1}" \
    --out "$OUT/${BENCH_JSON:-cuda.json}" 2>&1 | tee "$OUT/bench.log" | tail -80
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
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
