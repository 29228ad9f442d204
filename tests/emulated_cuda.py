"""Where the emulated CUDA device (tests/cuda_fake) is: the build records the paths of its two
libraries in the extension (_C.emulated_cuda) when it builds the tests, wherever its build
directory is. A build with the tests must have them (a missing one fails the test that needs it);
a build without them (plain `pip install .`) skips those tests, saying so."""
import pathlib

import pytest

from strider import _C


def emulated_cuda():
    """The environment that points strider at the emulated driver and NVRTC."""
    paths = _C.emulated_cuda
    if paths is None:
        pytest.skip("this build has no C++ tests and so no emulated CUDA device (STRIDER_BUILD_TESTS=OFF; make build has them)")
    missing = [p for p in paths.values() if not pathlib.Path(p).is_file()]
    if missing:
        pytest.fail(f"the build that made this extension should contain {', '.join(missing)}: rebuild (make build)")
    return {"STRIDER_CUDA_DRIVER": paths["driver"], "STRIDER_NVRTC": paths["nvrtc"]}
