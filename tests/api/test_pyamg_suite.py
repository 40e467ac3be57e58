"""pyamg at scale: all of pyamg's amg_core built and bound by bindthem, and
pyamg's own test suite run against it.

- test_amg_core_all: bindthem.build compiles the 8 amg_core headers and
  tests/bind_examples.h from pyamg 5.4.1's sdist with pyamg's own
  instantiate.yml / instantiate-test.yml, unchanged; every name of
  amg_core.__all__ (read from the sdist's __init__.py source) is a
  bindthem.Function with as many overloads as the YAML implies.
- test_pyamg_own_suite: ``tests/api/pyamg/run_suite.sh bindthem``, i.e.
  ``pytest --pyargs pyamg`` (all of it: about 1 minute on 2 cores) with the
  ``bindthem_pyamg`` plugin serving pyamg.amg_core from bindthem Libraries;
  0 failures and 0 errors. It needs the pyamg 5.4.1 wheel installed (for
  pyamg's Python code and tests) and skips, saying so, when it is not, and
  with BINDTHEM_SLOW_TESTS=1, where test_pyamg_wheel runs pyamg's suite on
  the wheel built with bindthem (once per run, not twice).
- test_char_param_takes_one_char_str, test_bool_param_takes_int: minimal
  regressions for the two bindthem incompatibilities with pybind11 that
  pyamg's suite found (41 failures before the csrc/py/bt_call.c fix).

Everything skips with the reason when pyamg's sdist can't be fetched.
"""

import importlib.metadata
import inspect
import os
import re
import subprocess
import sys

import pytest

import bindthem

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "pyamg"))
import pyamg_libs  # noqa: E402  (tests/api/pyamg/pyamg_libs.py)
from pyamg_sdist import VERSION, amg_core_or_skip  # noqa: E402

RUN_SUITE = os.path.join(HERE, "pyamg", "run_suite.sh")


@pytest.fixture(scope="module")
def core():
    return amg_core_or_skip()


@pytest.fixture(scope="module")
def libraries(core):
    # the plugin's cache: run_suite.sh below then finds them built
    return pyamg_libs.build_libraries(core)


@pytest.mark.pyamg
def test_amg_core_all(core, libraries):
    """Every name of pyamg.amg_core.__all__ is a bindthem Function of exactly
    one of the 8 Libraries, with the overload count instantiate.yml implies."""
    names = pyamg_libs.core_all(core)
    counts = pyamg_libs.yaml_overloads(os.path.join(core, "instantiate.yml"))
    mods = {h: libraries["pyamg.amg_core." + h] for h in pyamg_libs.HEADERS}
    for lib in libraries.values():
        assert isinstance(lib, bindthem.Library)
        assert lib.unexported == []
    assert set(mods) - {"air"} <= set(names)  # __all__ lists 7 submodules (not air)
    functions = [n for n in names if n not in mods]
    assert len(functions) == 68
    problems = []
    for n in functions:
        owners = [h for h, lib in mods.items() if n in lib.__all__]
        if len(owners) != 1:
            problems.append("%s: in %s" % (n, owners or "no Library"))
            continue
        f = getattr(mods[owners[0]], n)
        if not isinstance(f, bindthem.Function):
            problems.append("%s: %r is not a bindthem.Function" % (n, f))
        elif len(f.overloads) != counts[n]:
            problems.append("%s: %d overloads, the YAML implies %d"
                            % (n, len(f.overloads), counts[n]))
        elif any(p.annotation is p.empty for p in inspect.signature(f).parameters.values()):
            problems.append("%s: a parameter without its types in %s"
                            % (n, inspect.signature(f)))
    assert not problems, "\n".join(problems)
    assert len(mods["smoothed_aggregation"].fit_candidates.overloads) == 8  # both remaps
    # bind_examples: everything instantiate-test.yml lists
    ex = libraries[pyamg_libs.TEST_MODULE]
    tcounts = pyamg_libs.yaml_overloads(os.path.join(core, "tests", "instantiate-test.yml"))
    assert sorted(ex.__all__) == sorted(tcounts)
    assert {n: len(getattr(ex, n).overloads) for n in ex.__all__} == tcounts
    assert ex.test1.__doc__.strip() == "Testing docstring"


def _pyamg_wheel_or_skip():
    try:
        v = importlib.metadata.version("pyamg")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("pyamg %s is not installed (it could not be fetched from the index; "
                    "the test extra lists pyamg==%s)" % (VERSION, VERSION))
    if v != VERSION:
        pytest.skip("needs pyamg %s to match the sdist's headers, found %s" % (VERSION, v))


@pytest.mark.pyamg
def test_pyamg_own_suite(libraries, tmp_path):
    """pyamg's whole test suite, with amg_core served by bindthem: 0 failed.
    With BINDTHEM_SLOW_TESTS=1 the suite runs once, on the wheel built with
    bindthem (test_pyamg_wheel: the same kernels, bound by load_package, from
    an installed wheel), and not here as well."""
    if os.environ.get("BINDTHEM_SLOW_TESTS"):
        pytest.skip("pyamg's suite runs on the bindthem-built wheel instead "
                    "(test_pyamg_wheel, BINDTHEM_SLOW_TESTS=1)")
    _pyamg_wheel_or_skip()
    env = dict(os.environ, PYTHON=sys.executable, BINDTHEM_CACHE=pyamg_libs.default_cache())
    proc = subprocess.run(["bash", RUN_SUITE, "bindthem"], capture_output=True, text=True,
                          env=env, timeout=900)
    out = proc.stdout + proc.stderr
    assert "pyamg.amg_core served by bindthem" in out, out[-5000:]
    summary = [ln for ln in out.splitlines()
               if re.search(r"\d+ (passed|failed|error)", ln) and " in " in ln]
    assert summary, out[-5000:]
    last = summary[-1]
    counts = {k.rstrip("s"): int(n)
              for n, k in re.findall(r"(\d+) (passed|failed|errors?|skipped)", last)}
    print("pyamg's suite on bindthem:", last)
    # on failure: pytest's short summary (one FAILED line each, with its error)
    short = out[out.find("short test summary info"):] if "short test summary" in out else out
    assert proc.returncode == 0, short[-12000:]
    assert counts.get("failed", 0) == 0 and counts.get("error", 0) == 0, last
    assert counts.get("passed", 0) >= 280, last  # 284 passed, 1 skipped (pymetis) in 5.4.1


# Minimal regressions for what pyamg's suite found. pybind11 (pyamg's stock
# bindings) takes both; bindthem must as well.

CHARBOOL_H = """\
// Which character it was given.
int char_code(const char c) { return (int)(unsigned char)c; }

// 1 when b is true.
int truth(const bool b) { return b ? 1 : 0; }

template <class T>
int truth_t(T x[], const int x_size, const bool b) { return b ? 1 : 0; }
"""
CHARBOOL_YML = """\
instantiate:
- types:
    - [double]
  functions:
    - truth_t
- types:
    - null
  functions:
    - char_code
    - truth
"""


@pytest.fixture(scope="module")
def charbool(tmp_path_factory):
    d = tmp_path_factory.mktemp("charbool")
    (d / "charbool.h").write_text(CHARBOOL_H)
    (d / "charbool.yml").write_text(CHARBOOL_YML)
    return bindthem.build(str(d / "charbool.h"), str(d / "charbool.yml"),
                          cache_dir=str(d / "cache"))


def test_char_param_takes_one_char_str(charbool):
    """Regression (pyamg: util.utils.get_block_diag calls
    amg_core.pinv_array(..., 'T'); 38 of pyamg's tests): a ``char`` parameter
    takes a one-character str, as pybind11's char caster does. Before the
    fix: TypeError "argument 'TransA' (position 4) got str, expected int
    (char)". Fix: csrc/py/bt_slot.c (BT_K_CHAR dispatch code), bt_slot_store.c (store_char)."""
    assert charbool.char_code("T") == ord("T")
    assert charbool.char_code(b"N") == ord("N")
    assert charbool.char_code(84) == 84  # an int still works
    with pytest.raises(ValueError, match="single character"):
        charbool.char_code("TT")
    with pytest.raises(ValueError, match=r"range\(0x100\)"):
        charbool.char_code("\u20ac")


def test_bool_param_takes_int(charbool):
    """Regression (pyamg: tests/test_amg_core_linalg.py calls
    filter_matrix_rows(..., 0) for ``const bool lump``; 3 of pyamg's tests): a
    ``bool`` parameter takes an int (and a NumPy integer) in the converting
    pass, as pybind11's bool caster does when converting. Before the fix:
    TypeError "argument 'lump' (position 6) got int, expected bool (bool)"."""
    import numpy as np
    assert charbool.truth(0) == 0
    assert charbool.truth(7) == 1
    assert charbool.truth(np.int32(1)) == 1
    assert charbool.truth(True) == 1
    assert charbool.truth_t(np.zeros(2), 1) == 1
    with pytest.raises(TypeError, match="got float"):
        charbool.truth(1.0)  # still refused: only integers are truth values
