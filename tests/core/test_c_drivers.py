"""The pure-C stages, without Python: tests/core/c/dump_header.c and dump_plan.c
compiled with gcc -std=c11 -Wall -Wextra -Werror (and ASan/UBSan when gcc
has them) against csrc's Python-free files, run over the malformed corpora,
dialect.h and pyamg's headers."""

import os
import subprocess

import pytest

import c_drivers
from c_drivers import CDIR, ROOT

DATA = os.path.join(ROOT, "tests", "data")


@pytest.fixture(scope="module")
def drivers():
    try:
        return c_drivers.build()
    except OSError as e:
        pytest.skip(str(e))


def assert_clean(r):
    """Exit status and stderr of a run that must succeed, no sanitizer report."""
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    assert r.stderr == ""


def test_built_with_sanitizers_when_available(drivers):
    flags = c_drivers.flags()
    assert "-Werror" in flags and "-std=c11" in flags
    assert ("-fsanitize=address,undefined" in flags) == c_drivers.have_sanitizers()


def _script(name, driver):
    r = subprocess.run(["sh", os.path.join(CDIR, name), driver], capture_output=True, text=True,
                       env=c_drivers.env(), timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "FAIL" not in out and "Sanitizer" not in out and "runtime error" not in out, out
    return out


def test_check_bad_headers(drivers):
    out = _script("check_bad_headers.sh", drivers["dump_header"])
    assert "all bad headers ok" in out


def test_check_bad_yaml(drivers):
    out = _script("check_bad_yaml.sh", drivers["dump_plan"])
    assert "bad_yaml: all cases pass" in out


def test_dump_dialect(drivers):
    r = c_drivers.run("dump_header", os.path.join(DATA, "headers", "dialect.h"))
    assert_clean(r)
    with open(os.path.join(DATA, "headers", "dialect.expected")) as f:
        assert r.stdout == f.read()
    r = c_drivers.run("dump_plan", os.path.join(DATA, "headers", "dialect.h"),
                      os.path.join(DATA, "headers", "dialect.yml"), "--strict")
    assert_clean(r)
    assert "function in_ns (1 overload)\n  void outer::in_ns<int, float>(const int n, " \
        "std::complex<float> z[], const int z_size) [inline]\n" in r.stdout


def test_dump_yaml_shapes(drivers):
    for name in ("readme_shape.yml", "pyamg_shape.yml"):
        r = c_drivers.run("dump_plan", "--yaml-only", os.path.join(DATA, "yaml", name))
        assert_clean(r)
        assert r.stdout.startswith("inst ")
    r = c_drivers.run("dump_plan", "--yaml-only", os.path.join(DATA, "yaml", "pyamg_shape.yml"))
    assert "remap fit_candidates_real -> fit_candidates " in r.stdout


@pytest.mark.pyamg
def test_dump_pyamg(drivers):
    from pyamg_sdist import HEADERS, amg_core_or_skip
    core = amg_core_or_skip()
    yml = os.path.join(core, "instantiate.yml")
    for h in HEADERS:
        path = os.path.join(core, h + ".h")
        r = c_drivers.run("dump_header", path)
        assert_clean(r)
        assert r.stdout.startswith("decl "), h
        r = c_drivers.run("dump_plan", path, yml)
        assert_clean(r)
        assert "function " in r.stdout and "missing print_it\n" in r.stdout, h
    r = c_drivers.run("dump_plan", "--yaml-only", yml)
    assert_clean(r)
    assert "remap fit_candidates_complex -> fit_candidates" in r.stdout


@pytest.mark.parametrize("args", [
    ("headers/dialect.h", "headers/dialect.yml", "--strict"),
    ("headers/dialect.h",),
    ("kernels/names.h", "kernels/names.yml"),
    ("mangle/decls.h", "mangle/instantiate.yml"),
    ("bad_yaml/arity.h", "yaml/pyamg_shape.yml"),
    ("bad_yaml/arity.h", "bad_yaml/near_miss.yml"),
    ("bad_yaml/unbindable.h", "bad_yaml/unbindable.yml"),
    ("bad_headers/garbage_param.h",),
])
def test_allocation_failures(drivers, args):
    """Every allocation a header and a YAML need fails in turn (alone, then
    with every later one): each run reports it, none leaks (tests/core/c/faults.c)."""
    r = c_drivers.run("faults", *[a if a.startswith("--") else os.path.join(DATA, a)
                                  for a in args])
    assert_clean(r)
    assert "all failures reported" in r.stdout, r.stdout
    assert int(r.stdout.split()[1]) >= 20
