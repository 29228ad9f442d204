"""Where the emulated CUDA device (tests/cuda_fake) is: the build records the paths of its two
libraries in the extension (_C.emulated_cuda) when it builds the tests, wherever its build
directory is. A build with the tests must have them (a missing one fails the test that needs it);
a build without them (plain `pip install .`) skips those tests, saying so. BackgroundRuns runs
the suites that test on it beside the rest of the session."""
import collections
import pathlib
import subprocess
import tempfile
import threading
from concurrent.futures import Future

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


class BackgroundRuns:
    """Subprocesses run by `workers` threads in the order submitted, each with a cache directory
    of its own (STRIDER_CACHE_DIR). result() waits for one, meanwhile running those no worker has
    begun (its own first): a test that waits is one more worker. stop() kills what runs and drops
    what waits."""

    def __init__(self, workers):
        self._jobs = {}  # key -> (args, env, timeout)
        self._results = {}  # key -> Future
        self._pending = collections.deque()
        self._running = set()
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)  # something pending, or stopped
        self._stopped = False
        for _ in range(workers):
            threading.Thread(target=self._work, daemon=True, name="background-run").start()

    def submit(self, key, args, env, timeout):
        with self._lock:
            if key not in self._jobs:
                self._jobs[key] = (args, env, timeout)
                self._results[key] = Future()
                self._pending.append(key)
                self._ready.notify()

    def result(self, key, args, env, timeout):
        self.submit(key, args, env, timeout)
        while not self._results[key].done():
            with self._lock:
                todo = key if key in self._pending else self._pending[0] if self._pending else None
                if todo is not None:
                    self._pending.remove(todo)
            if todo is None:
                break
            self._finish(todo)
        return self._results[key].result()

    def stop(self):
        with self._lock:
            self._stopped = True
            for proc in self._running:
                proc.kill()
            for key in self._pending:
                self._results[key].cancel()
            self._pending.clear()
            self._ready.notify_all()

    def _work(self):
        while True:
            with self._ready:
                self._ready.wait_for(lambda: self._pending or self._stopped)
                if self._stopped:
                    return
                key = self._pending.popleft()
            self._finish(key)

    def _finish(self, key):
        try:
            self._results[key].set_result(self._run(*self._jobs[key]))
        except Exception as e:  # noqa: BLE001 - the test that waits raises it
            self._results[key].set_exception(e)

    def _run(self, args, env, timeout):
        with tempfile.TemporaryDirectory(prefix="strider-emulated-") as cache:
            with self._lock:
                if self._stopped:
                    raise RuntimeError("the session ended before this run started")
                proc = subprocess.Popen(args, env=dict(env, STRIDER_CACHE_DIR=cache), stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
                self._running.add(proc)
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                err += f"\nkilled after {timeout} s"
            finally:
                with self._lock:
                    self._running.discard(proc)
            return subprocess.CompletedProcess(args, proc.returncode, out, err)
