"""The disk cache of compiled stages, across processes: a fresh process with the same function and
signature loads the machine code instead of compiling it, a damaged entry (flipped bit, truncated,
another key's entry, another format or strider version) is compiled again and replaced, never
run, processes filling an empty cache at once all succeed, and an unusable directory falls back
to memory with one warning. Each test runs fresh Python processes on a temporary STRIDER_CACHE_DIR."""
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import strider

pytestmark = pytest.mark.skipif(not strider._C.llvm_backend_available(), reason="built without LLVM")

# A child process: compiles a two-stage function (a fused elementwise stage, an argmax), calls it
# once, prints its stats and a digest of the results.
_CHILD = r"""
import hashlib, json
import os
import numpy as np
import strider

if os.environ.get("STRIDER_TEST_AS_NOBODY") and os.getuid() == 0:
    # root writes anywhere: a read-only directory needs another user (after the imports, which
    # read files only root may)
    os.setgid(65534)
    os.setuid(65534)

def head(x, w):
    y = np.exp(x * w) - 1.0
    return y, np.argmax(y, axis=1)

f = strider.compile(head)
rows = int(os.environ.get("STRIDER_TEST_ROWS", "64"))
x = np.linspace(-2.0, 2.0, rows * 33, dtype=np.float32).reshape(rows, 33)
w = np.float32(0.75)
y, idx = f(x, w)
digest = hashlib.sha256(y.tobytes() + idx.tobytes()).hexdigest()
print(json.dumps(dict(f.stats(), digest=digest)))
"""


# A child whose one stage has 2^18 element-ops that the reference computes alike: its first call
# waits for a quick kernel (codegen.h's Effort::kQuick), unless the disk cache holds the full one.
_BIG_CHILD = r"""
import hashlib, json
import numpy as np
import strider

f = strider.compile(lambda x, w: x * w + x)
x = np.linspace(-2.0, 2.0, 512 * 256, dtype=np.float32).reshape(512, 256)
y = f(x, np.float32(0.75))
print(json.dumps(dict(f.stats(), digest=hashlib.sha256(y.tobytes()).hexdigest())))
"""


def _run(cache_dir, extra_env=None, child=_CHILD):
    env = dict(os.environ, STRIDER_CACHE_DIR=str(cache_dir))
    env.pop("STRIDER_CACHE", None)
    env.update(extra_env or {})
    return subprocess.Popen([sys.executable, "-c", child], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _result(proc):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), err


def _entries(cache_dir):
    return sorted(p for p in os.listdir(cache_dir) if p.endswith(".kernel"))


def test_a_new_process_loads_instead_of_compiling(tmp_path):
    cache = tmp_path / "new" / "cache"
    first, _ = _result(_run(cache))
    assert first["disk_hits"] == 0 and first["compiles"] > 0, first
    assert oct(cache.stat().st_mode & 0o777) == oct(0o700)  # created private to the user
    entries = _entries(cache)
    assert len(entries) == first["compiles"]
    second, _ = _result(_run(cache))
    assert second["compiles"] == 0 and second["disk_hits"] == first["compiles"], second
    assert second["digest"] == first["digest"]
    assert _entries(cache) == entries


def test_a_big_stage_compiles_quickly_first_unless_the_cache_holds_it(tmp_path):
    first, err = _result(_run(tmp_path, {"STRIDER_LOG": "codegen"}, _BIG_CHILD))
    assert "quickly compiled" in err and first["compiles"] == 1, err
    second, err = _result(_run(tmp_path, {"STRIDER_LOG": "codegen"}, _BIG_CHILD))
    assert "quickly compiled" not in err and err.count("from the disk cache") == 1, err  # loaded once
    assert second["compiles"] == 0 and second["disk_hits"] == 1, second
    assert second["digest"] == first["digest"] == hashlib.sha256(
        (lambda x: x * np.float32(0.75) + x)(np.linspace(-2.0, 2.0, 512 * 256, dtype=np.float32)).tobytes()).hexdigest()


def test_a_damaged_entry_is_compiled_again_and_replaced(tmp_path):
    first, _ = _result(_run(tmp_path))
    entries = _entries(tmp_path)
    victim = tmp_path / entries[0]
    good = victim.read_bytes()
    damaged = bytearray(good)
    damaged[len(damaged) // 2] ^= 0x01
    victim.write_bytes(bytes(damaged))
    second, err = _result(_run(tmp_path, {"STRIDER_LOG": "cache"}))
    assert second["compiles"] == 1 and second["disk_hits"] == first["compiles"] - 1, second
    assert "damaged entry" in err and "checksum mismatch" in err, err
    assert second["digest"] == first["digest"]
    assert victim.read_bytes() == good  # replaced by a fresh, identical compile
    third, _ = _result(_run(tmp_path))
    assert third["compiles"] == 0, third


def _damage(entry, how, other):
    """The bytes of a cache entry damaged in one of the ways a disk or a user damages files."""
    if how == "truncated":
        return entry[: len(entry) // 2]
    if how == "emptied":
        return b""
    if how == "another key's entry":
        return other
    # a well-formed entry (valid checksum) that this build must still refuse
    body = bytearray(entry[:-32])
    if how == "another format":
        body[8:12] = struct.pack("<I", 99)
    else:  # written by another strider version: the key text inside differs from this build's
        key_len = struct.unpack_from("<Q", body, 12)[0]
        key = bytes(body[20:20 + key_len])
        ours = f"strider {len(strider.__version__)}\n{strider.__version__}\n".encode()
        theirs = ours.replace(b"\n0", b"\n9", 1)  # same length, another version
        assert key.startswith(ours) and theirs != ours, key[:100]
        body[20:20 + key_len] = theirs + key[len(ours):]
    return bytes(body) + hashlib.sha256(bytes(body)).digest()


@pytest.mark.parametrize("how, why", [
    ("truncated", "checksum mismatch"),
    ("emptied", "truncated"),
    ("another key's entry", "written for another key"),
    ("another format", "written by another entry format"),
    ("another strider version", "written for another key"),
])
def test_an_entry_damaged_or_foreign_is_compiled_again(tmp_path, how, why):
    first, _ = _result(_run(tmp_path / "cache"))
    victim = tmp_path / "cache" / _entries(tmp_path / "cache")[0]
    _result(_run(tmp_path / "other", {"STRIDER_TEST_ROWS": "32"}))  # the same stage at another shape
    other = tmp_path / "other" / _entries(tmp_path / "other")[0]
    good = victim.read_bytes()
    victim.write_bytes(_damage(good, how, other.read_bytes()))
    second, err = _result(_run(tmp_path / "cache", {"STRIDER_LOG": "cache"}))
    assert second["compiles"] == 1 and second["disk_hits"] == first["compiles"] - 1, second
    assert f"damaged entry {victim} ({why})" in err, err
    assert second["digest"] == first["digest"]
    assert victim.read_bytes() == good


def test_a_read_only_directory_warns_once_and_keeps_kernels_in_memory():
    cache = tempfile.mkdtemp(prefix="strider-ro-cache-")
    try:
        first, _ = _result(_run(cache))
        entries = _entries(cache)
        if os.getuid() == 0:  # the child drops to nobody, for whom the directory is read-only
            os.chmod(cache, 0o755)
            extra = {"STRIDER_TEST_AS_NOBODY": "1"}
        else:
            os.chmod(cache, 0o555)
            extra = {}
        result, err = _result(_run(cache, extra))
        assert err.count("warning: kernel cache directory") == 1 and "not writable" in err, err
        assert result["compiles"] == first["compiles"] and result["digest"] == first["digest"], result
        assert _entries(cache) == entries
    finally:
        os.chmod(cache, 0o755)
        subprocess.run(["rm", "-rf", cache], check=True)


def test_processes_filling_an_empty_cache_at_once_all_succeed(tmp_path):
    procs = [_run(tmp_path) for _ in range(3)]
    results = [_result(p)[0] for p in procs]
    assert len({r["digest"] for r in results}) == 1
    assert all(r["compiles"] + r["disk_hits"] == results[0]["compiles"] + results[0]["disk_hits"] for r in results)
    assert [p for p in os.listdir(tmp_path) if not p.endswith(".kernel")] == []  # no temporary file left
    after, _ = _result(_run(tmp_path))
    assert after["compiles"] == 0 and after["digest"] == results[0]["digest"], after


def test_strider_cache_0_turns_the_disk_cache_off(tmp_path):
    off, _ = _result(_run(tmp_path, {"STRIDER_CACHE": "0"}))
    assert off["compiles"] > 0 and off["disk_hits"] == 0
    assert _entries(tmp_path) == []


def test_an_unusable_directory_warns_once_and_still_runs(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result, err = _result(_run(blocker / "cache"))
    assert result["compiles"] > 0 and result["disk_hits"] == 0
    assert err.count("warning: kernel cache directory") == 1, err


def test_stats_count_compiles_and_disk_hits_per_stage():
    @strider.compile
    def f(x):
        return np.sqrt(x) + 1.0, np.max(x[:, ::-1], axis=0), np.sum(x) * 2.0  # several stages

    x = np.arange(12.0).reshape(3, 4)
    f(x)
    s = f.stats()
    assert {"traces", "cache_hits", "lowered", "compiles", "disk_hits"} <= set(s)
    assert (s["traces"], s["lowered"]) == (1, 1)
    kernels = [why == "" for why in f.explain(x).fallbacks]
    assert len(kernels) >= 2
    assert s["compiles"] + s["disk_hits"] == sum(kernels)  # each stage compiled or loaded
    f(x)
    assert f.stats()["cache_hits"] == 2 and f.stats()["compiles"] == s["compiles"]  # explain() hit too


def kept_per_image(images, t):
    out = []
    for x in images:  # unrolled: a body per image, alike but for the storages it touches
        x = x[x[:, 4] > t]
        out.append((x[:, :4] * x[:, 4:5]).max(0))
    return out


def test_stages_alike_but_for_their_storages_compile_once():
    """The stage's text numbers storages as it names them: a batch's images unrolled are one
    machine code per stage, not one per image, and each image still reads its own arrays."""
    rng = np.random.default_rng(0)
    compiles = []
    for n in (1, 3):
        images = [rng.uniform(0, 1, (50, 5)) for _ in range(n)]
        f = strider.compile(kept_per_image, strict=True)
        for got, expected in zip(f(images, 0.5), kept_per_image(images, 0.5), strict=True):
            np.testing.assert_array_equal(got, expected, strict=True)
        compiles.append(f.stats()["compiles"] + f.stats()["disk_hits"])  # (another test may have filled the cache)
        assert sum(why == "" for why in f.explain(images, 0.5).fallbacks) == n * compiles[0]
    assert compiles[1] == compiles[0]
