"""The self-contained wheel (`make wheel`, in dist/) installs and runs in a clean root: a minimal
Debian of this machine's release with python3 and pip only (no LLVM, no isl, no compiler), made by
debootstrap. numpy comes from PyPI there; the wheel is installed with no index, so it needs nothing
else. Slow (debootstrap once, then a fresh copy of that root per run) and needs root and network:
run with STRIDER_WHEEL_TEST=1 (`make wheel-test`). STRIDER_WHEEL=path tests another wheel."""

import glob
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import time

import pytest

pytestmark = [
    pytest.mark.skipif(os.environ.get("STRIDER_WHEEL_TEST") != "1",
                       reason="slow, needs root and network: STRIDER_WHEEL_TEST=1 (make wheel-test)"),
    pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0, reason="debootstrap and chroot need root on Linux"),
]

_repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_base = os.path.join(_repo, "build", "clean-root")  # debootstrap's output, kept between runs
_run = os.path.join(_repo, "build", "clean-root-run")  # the fresh copy a run installs into
# pip there trusts the CAs this machine trusts (a copy of its bundle), so it reaches PyPI through
# whatever TLS proxy this machine goes through
_env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8", "PIP_CERT": "/tmp/host-ca.crt"}


def _wheel():
    if os.environ.get("STRIDER_WHEEL"):
        return os.environ["STRIDER_WHEEL"]
    wheels = glob.glob(os.path.join(_repo, "dist", "strider-*manylinux*.whl"))
    assert len(wheels) == 1, f"expected one manylinux wheel in dist/ (make wheel), found {wheels}"
    return wheels[0]


def _release():
    with open("/etc/os-release") as f:
        return re.search(r"^VERSION_CODENAME=(\w+)", f.read(), re.M).group(1)


def _base_root():
    if not os.path.exists(os.path.join(_base, "usr", "bin", "pip3")):
        shutil.rmtree(_base, ignore_errors=True)
        subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,python3-pip", _release(), _base,
                        "http://deb.debian.org/debian"], check=True, stdout=subprocess.DEVNULL)
    return _base


def _chroot(root, command):
    start = time.perf_counter()
    done = subprocess.run(["chroot", root, "sh", "-c", command], env=_env, capture_output=True, text=True)
    assert done.returncode == 0, f"in the clean root, {command}:\n{done.stdout}{done.stderr}"
    return done.stdout, time.perf_counter() - start


def test_wheel_installs_and_compiles_in_a_clean_root():
    wheel = _wheel()
    size_mb = os.path.getsize(wheel) / 2**20
    assert size_mb < 60, f"{wheel} is {size_mb:.1f} MB"
    root = _run
    shutil.rmtree(root, ignore_errors=True)
    # cp, not shutil.copytree, which would read dev/'s device nodes as files
    subprocess.run(["cp", "-a", _base_root(), root], check=True)
    for pattern in ("libLLVM*", "libisl*", "x86_64-linux-gnu-g*", "cc", "clang*"):
        found = glob.glob(f"{root}/usr/lib/**/{pattern}", recursive=True) + glob.glob(f"{root}/usr/bin/{pattern}")
        assert not found, f"the clean root has {found}"
    # the wheel is built for the Python that built it: the root's must be the same version
    version, _ = _chroot(root, "python3 -c 'import sys; print(f\"cp{sys.version_info[0]}{sys.version_info[1]}\")'")
    assert f"-{version.strip()}-" in os.path.basename(wheel), f"the root's Python is {version.strip()}: {wheel}"
    shutil.copy(wheel, f"{root}/tmp/")
    shutil.copy(os.path.join(os.path.dirname(__file__), "first_call.py"), f"{root}/tmp/")
    shutil.copy("/etc/resolv.conf", f"{root}/etc/resolv.conf")
    cas = ssl.get_default_verify_paths()
    shutil.copy(cas.cafile or cas.openssl_cafile, f"{root}/tmp/host-ca.crt")
    subprocess.run(["mount", "-t", "proc", "proc", f"{root}/proc"], check=True)
    try:
        pip = "python3 -m pip install -q --no-cache-dir --break-system-packages"
        _, numpy_s = _chroot(root, f"{pip} numpy")
        _, install_s = _chroot(root, f"{pip} --no-index /tmp/{os.path.basename(wheel)}")
        out, run_s = _chroot(root, "cd /tmp && python3 first_call.py")
    finally:
        subprocess.run(["umount", f"{root}/proc"], check=True)
    report = json.loads(out.splitlines()[-1])
    assert report["strider"].startswith("/usr/local/lib/python"), report
    print(f"\nwheel {os.path.basename(wheel)}: {size_mb:.1f} MB; in the clean root: numpy from PyPI {numpy_s:.1f} s, "
          f"wheel install {install_s:.1f} s, first compiled call (python3 start, import, trace, compile, run) "
          f"{run_s:.1f} s, of which the call {report['first_call_s']:.2f} s; install + first call "
          f"{install_s + run_s:.1f} s (target 10 s); {report['stats']}")
