"""bindthem.stubs: .pyi from the header's metadata, checked by mypy --strict,
stubtest and calls at run time.

One session fixture renders the stubs of every case (the README example,
tests/api/typing/features.h and pyamg's eight amg_core headers), writes a
good- and a bad-usage file per case (and overloads.h's stub with calls by
count, keyword and dtype), compiles the Libraries; the four slow checkers run once over all cases:
mypy --strict over one directory of stubs and usage files, stubtest against
the runtime Libraries (tests/api/typing/stubtest_runner.py), every overload
called with the stub's dtypes (tests/api/typing/call_runtime.py), and mypy
--strict on bindthem/_core.pyi; each once per test run, however many
pytest-xdist workers run these tests, and only when a selected test reads its
verdict (the core suite, tests/core_suite.txt, takes the runtime checks,
stubtest's and the calls: mypy's verdict on a generated stub does not depend on
the CPython it runs on). The
per-case tests only read their results.
"""

import ast
import concurrent.futures
import functools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from cached import mypy_cache
from sources import KERNELS, ROOT, once_per_run, run_folder
from support import ASSERT_TYPE_IMPORT, python_env

import bindthem
from bindthem import compile_library, stubs
from bindthem._services import binding

REPO = Path(ROOT)
TYPING = Path(__file__).resolve().parent / "typing"
sys.path.insert(0, str(TYPING))
import pyamg_sdist  # noqa: E402  (tests/support/pyamg_sdist.py)
import usage  # noqa: E402  (tests/api/typing/usage.py)

EXAMPLE_H = REPO / "examples" / "myheader.h"
EXAMPLE_YML = REPO / "examples" / "instantiate.yml"
FEATURES_H = TYPING / "features.h"
FEATURES_YML = TYPING / "features.yml"
DEFAULTS_H = Path(KERNELS) / "defaults.h"
DEFAULTS_YML = Path(KERNELS) / "defaults.yml"
# remapped overloads with different parameter lists (tests/core/test_overloads.py): their
# stub, and calls that mypy must resolve by count, keyword and dtype (lines 12 and 13 wrong)
OVERLOADS_H = Path(KERNELS) / "overloads.h"
OVERLOADS_YML = Path(KERNELS) / "overloads.yml"
OVL_USE = (ASSERT_TYPE_IMPORT + "\nimport numpy\nimport ovl\n"
           "x = numpy.zeros(2)\nidx = numpy.zeros(2, dtype=numpy.int32)\n"
           "assert_type(ovl.summary(x), float)\nassert_type(ovl.summary(x, w=x), float)\n"
           "assert_type(ovl.summary(v=x), float)\nassert_type(ovl.summary(idx=idx), float)\n"
           "assert_type(ovl.half(n=3), int)\nassert_type(ovl.half(3.0), float)\n"
           "ovl.summary(x, x, x)  # expect-error\n"
           "ovl.summary(y=x)  # expect-error\n")
PYAMG_HEADERS = ("air", "evolution_strength", "graph", "krylov", "linalg", "relaxation",
                 "ruge_stuben", "smoothed_aggregation")
# -O0: the kernels are only called on tiny inputs, and -O3 builds of all of
# pyamg take a minute on two cores.
CXXFLAGS = ["-O0"]


@functools.lru_cache(maxsize=None)
def _pyamg():
    """(amg_core directory or None, why not) -- fetched once per session."""
    try:
        return Path(pyamg_sdist.amg_core_dir()), ""
    except OSError as e:
        return None, "pyamg's sdist is not available: %s" % e


def pyamg_amg_core():
    """The unpacked amg_core folder of pyamg's sdist (tests/support/pyamg_sdist.py,
    cached), or None when the index can't be reached. pyamg's files are never
    copied into the repository."""
    return _pyamg()[0]


def _skip_without_pyamg():
    core, why = _pyamg()
    if core is None:
        pytest.skip(why)
    return core


def _cases():
    cases = [pytest.param(("myheader", EXAMPLE_H, EXAMPLE_YML), id="myheader"),
             pytest.param(("features", FEATURES_H, FEATURES_YML), id="features"),
             pytest.param(("defaults", DEFAULTS_H, DEFAULTS_YML), id="defaults")]
    for h in PYAMG_HEADERS:
        cases.append(pytest.param(("pyamg", h), id="pyamg-" + h, marks=pytest.mark.pyamg))
    return cases


CASES = _cases()
BAD_USAGE_CASES = [c for c in CASES if c.id not in ("features", "defaults")]


def _resolve(case):
    """(module name, header, yml) for a case; skips a pyamg case without pyamg."""
    if case[0] != "pyamg":
        return case
    core = _skip_without_pyamg()
    return case[1], core / (case[1] + ".h"), core / "instantiate.yml"


def _env():
    return python_env()


def _run(cmd, cwd=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=cwd, timeout=600)


def _prepare(root):
    """Renders the stubs and usage files of every available case into root/src and
    compiles the Libraries (root/cache); what the checkers read (JSON)."""
    src = root / "src"
    src.mkdir()
    modules = [("myheader", EXAMPLE_H, EXAMPLE_YML), ("features", FEATURES_H, FEATURES_YML),
               ("defaults", DEFAULTS_H, DEFAULTS_YML)]
    core = pyamg_amg_core()
    if core is not None:
        modules += [(h, core / (h + ".h"), core / "instantiate.yml") for h in PYAMG_HEADERS]
    texts = {}
    for name, header, yml in modules:
        texts[name] = stubs.render(header, yml, name)
        (src / (name + ".pyi")).write_text(texts[name], encoding="utf-8")
        meta = bindthem.parse_header(header, yml)
        (src / ("use_good_%s.py" % name)).write_text(usage.good(name, meta))
        if name not in ("features", "defaults"):
            (src / ("use_bad_%s.py" % name)).write_text(usage.bad(name, meta))
    (src / "ovl.pyi").write_text(stubs.render(OVERLOADS_H, OVERLOADS_YML, "ovl"))
    (src / "use_ovl.py").write_text(OVL_USE)
    cache = root / "cache"
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda m: compile_library(m[1], m[2], cache_dir=cache, cxxflags=CXXFLAGS),
                      modules))
    spec = {"cache_dir": str(cache), "cxxflags": CXXFLAGS, "stubs": str(src),
            "mypy_path": [str(REPO)], "check_also": ["bindthem._core"],
            "modules": [{"name": n, "header": str(h), "instantiate": str(y)}
                        for n, h, y in modules]}
    (root / "spec.json").write_text(json.dumps(spec))
    return {"texts": texts, "modules": {n: [str(h), str(y)] for n, h, y in modules}}


def _jobs(root, out):
    """The four slow checkers' command lines over the prepared root; their caches in out."""
    py = sys.executable
    src = root / "src"
    return {
        "mypy": [py, "-m", "mypy", "--strict", "--no-color-output", "--no-error-summary",
                 "--cache-dir", mypy_cache("stubs"), str(src)],
        "core": [py, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-color-output",
                 "--cache-dir", mypy_cache("stubs-core"),
                 str(REPO / "bindthem" / "_core.pyi")],
        "stubtest": [py, str(TYPING / "stubtest_runner.py"), str(root / "spec.json")],
        "calls": [py, str(TYPING / "call_runtime.py"), str(root / "spec.json")],
    }


class _Lazy(Mapping):
    """A mapping whose values are made on first use: what the selected tests read and
    nothing more (the core suite selects the checks at run time, tests/core_suite.txt,
    so under the other CPythons the static checkers, mypy, do not run)."""

    def __init__(self, makers):
        self._makers, self._made = makers, {}

    def __getitem__(self, key):
        if key not in self._made:
            self._made[key] = self._makers[key]()
        return self._made[key]

    def __iter__(self):
        return iter(self._makers)

    def __len__(self):
        return len(self._makers)


@pytest.fixture(scope="session")
def checked(tmp_path_factory):
    """Everything the slow checkers said, over all available cases: each checker
    run once per test run, whichever pytest-xdist workers run these tests (the
    checkers take most of the core suite's time, the more so where mypy runs
    uncompiled, as on a free-threaded CPython), and only when a selected test
    reads its verdict."""
    pytest.importorskip("mypy")
    made = once_per_run(tmp_path_factory, "stubs", _prepare)
    root = run_folder(tmp_path_factory) / "stubs"

    def result(key):
        def make(out):
            r = _run(_jobs(root, out)[key], str(root / "src"))
            return [r.args, r.returncode, r.stdout, r.stderr]
        return lambda: subprocess.CompletedProcess(
            *once_per_run(tmp_path_factory, "stubs-" + key, make))

    results = _Lazy({k: result(k) for k in ("mypy", "core", "stubtest", "calls")})

    def errors():
        found = {}  # file name -> {line: [messages]}
        for line in results["mypy"].stdout.splitlines():
            m = re.match(r"(?:.*[/\\])?([^/\\:]+):(\d+): error: (.*)$", line)
            if m:
                found.setdefault(m.group(1), {}).setdefault(int(m.group(2)), []).append(
                    m.group(3))
        return found

    return _Lazy({"root": lambda: root, "src": lambda: root / "src",
                  "texts": lambda: made["texts"], "results": lambda: results,
                  "errors": errors,
                  "modules": lambda: {n: tuple(map(Path, hy))
                                      for n, hy in made["modules"].items()}})


def _output(result):
    return "stdout:\n%s\nstderr:\n%s" % (result.stdout, result.stderr)


# --- the checkers' verdicts, per case ------------------------------------------------

@pytest.mark.parametrize("case", CASES)
def test_mypy_strict_clean(checked, case):
    name = _resolve(case)[0]
    assert (checked["src"] / (name + ".pyi")).exists()
    assert checked["errors"].get(name + ".pyi", {}) == {}, _output(checked["results"]["mypy"])


@pytest.mark.parametrize("case", CASES)
def test_good_usage_passes_mypy(checked, case):
    name = _resolve(case)[0]
    found = checked["errors"].get("use_good_%s.py" % name, {})
    assert found == {}, _output(checked["results"]["mypy"])


@pytest.mark.parametrize("case", BAD_USAGE_CASES)
def test_bad_usage_fails_mypy_line_by_line(checked, case):
    name = _resolve(case)[0]
    path = checked["src"] / ("use_bad_%s.py" % name)
    expected = usage.expected_errors(path.read_text())
    assert sorted(expected.values()) == sorted(k for k, _ in usage.MISTAKES)
    found = checked["errors"].get(path.name, {})
    assert set(found) == set(expected), "errors on lines %s, mistakes on lines %s\n%s" % (
        sorted(found), expected, _output(checked["results"]["mypy"]))


@pytest.mark.parametrize("case", CASES)
def test_stubtest_clean(checked, case):
    name = _resolve(case)[0]
    r = checked["results"]["stubtest"]
    mine = [line for line in r.stdout.splitlines() if line.startswith("error: %s." % name)]
    assert mine == [], _output(r)
    # a failure that names no object (stubtest could not run) fails every case
    assert r.returncode == 0 or re.search(r"^error: \w[\w.]*\.\w+ ", r.stdout, re.M), _output(r)


def test_overload_per_parameter_list(checked):
    """overloads.h's stub passes mypy --strict, and mypy picks its overloads by
    count, keyword and dtype: an error on each wrong call, and only there."""
    assert checked["errors"].get("ovl.pyi", {}) == {}, _output(checked["results"]["mypy"])
    found = checked["errors"].get("use_ovl.py", {})
    assert {line: len(msgs) for line, msgs in found.items()} == {12: 1, 13: 1}, _output(
        checked["results"]["mypy"])


def test_stubtest_core_and_mypy_strict_core(checked):
    r = checked["results"]["stubtest"]
    assert not [line for line in r.stdout.splitlines()
                if line.startswith("error: bindthem._core")], _output(r)
    core = checked["results"]["core"]
    assert core.returncode == 0, _output(core)


@pytest.mark.parametrize("case", CASES)
def test_every_instantiation_called_with_stub_dtypes(checked, case):
    name, header, yml = _resolve(case)
    r = checked["results"]["calls"]
    mine = [line for line in r.stdout.splitlines() if line.split(" ", 2)[1:2]
            and line.split(" ", 2)[1].startswith(name + ".")]
    bad = [line for line in mine if not line.startswith("ok ")]
    assert not bad, _output(r)
    assert not [line for line in r.stdout.splitlines() if line.startswith("fail %s:" % name)]
    tree = ast.parse(checked["texts"][name])
    n_defs = sum(isinstance(node, ast.FunctionDef) for node in tree.body)
    assert len(mine) == n_defs > 0, _output(r)


# --- what a stub holds ----------------------------------------------------------------

def _defs(text):
    tree = ast.parse(text)
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, []).append(node)
    return tree, out


def test_readme_example_stub():
    text = stubs.render(EXAMPLE_H, EXAMPLE_YML)
    tree, defs = _defs(text)
    lib_doc = binding._module_doc("myheader", str(EXAMPLE_H), ["myfunc"])
    assert ast.get_docstring(tree, clean=False) == lib_doc
    assert "from typing import overload\n\nimport numpy\nimport numpy.typing\n" in text
    assert '__all__ = ["myfunc"]' in text
    (first, second) = defs["myfunc"]
    for node in (first, second):
        assert [ast.unparse(d) for d in node.decorator_list] == ["overload"]
        assert [a.arg for a in node.args.args] == ["J", "x", "y", "a"]
        assert ast.unparse(node.returns) == "int"
    assert [ast.unparse(a.annotation) for a in first.args.args] == [
        "numpy.typing.NDArray[numpy.int32]", "numpy.typing.NDArray[numpy.float64]",
        "numpy.typing.NDArray[numpy.complex128]", "float"]
    assert [ast.unparse(a.annotation) for a in second.args.args][1:3] == [
        "numpy.typing.NDArray[numpy.float32]", "numpy.typing.NDArray[numpy.complex64]"]
    assert ast.get_docstring(first) is None
    doc = bindthem.parse_header(EXAMPLE_H, EXAMPLE_YML)["functions"][0]["doc"]
    assert ast.get_docstring(second) == doc
    assert text.count("My Function") == 1


def test_features_stub():
    text = stubs.render(FEATURES_H, FEATURES_YML)
    tree, defs = _defs(text)
    all_ = next(n for n in tree.body if isinstance(n, ast.Assign)
                and ast.unparse(n.targets[0]) == "__all__")
    assert ast.literal_eval(all_.value) == sorted(defs)
    # [int, float] and [long, float] give one Python signature: merged
    total = defs["total"]
    assert len(total) == 2
    assert [ast.unparse(n.args.args[1].annotation) for n in total] == [
        "numpy.typing.NDArray[numpy.float32]", "numpy.typing.NDArray[numpy.float64]"]
    assert ast.get_docstring(total[1]) == (
        'Sum of x, in the precision of T.\n\nA backslash \\ and a triple quote """ must '
        "survive the stub.")
    # one overload: a plain def
    for name, ret in [("any_nonzero", "bool"), ("first", "complex"), ("fill", "None"),
                      ("shift", "int")]:
        (node,) = defs[name]
        assert node.decorator_list == [] and ast.unparse(node.returns) == ret
    assert [ast.unparse(a.annotation) for a in defs["fill"][0].args.args] == [
        "numpy.typing.NDArray[numpy.float64]", "float", "bool"]
    # keyword-named C parameters: renamed, positional-only; no header comment: no docstring
    shift = defs["shift"][0]
    assert [a.arg for a in shift.args.posonlyargs] == ["in_", "from_"]
    assert [a.arg for a in shift.args.args] == ["c"]
    assert ast.get_docstring(shift) is None
    # a char takes a one-character str too
    assert "def shift(in_: int, from_: int, /, c: int | str) -> int: ...\n" in text


@pytest.mark.pyamg
def test_pyamg_duplicates_merged():
    core = _skip_without_pyamg()
    meta = bindthem.parse_header(core / "krylov.h", core / "instantiate.yml")
    n = {f["name"]: len(f["overloads"]) for f in meta["functions"]}
    _, defs = _defs(stubs.render(core / "krylov.h", core / "instantiate.yml"))
    assert n["apply_householders"] == 8 and len(defs["apply_householders"]) == 4
    assert sum(ast.get_docstring(d) is not None for d in defs["apply_householders"]) == 1
    assert ast.get_docstring(defs["apply_householders"][-1]) is not None


def test_deterministic(tmp_path):
    """Byte-identical across runs, processes, hash seeds and where the files are."""
    text = stubs.render(EXAMPLE_H, EXAMPLE_YML)
    assert stubs.render(EXAMPLE_H, EXAMPLE_YML) == text
    elsewhere = tmp_path / "x" / "y"
    elsewhere.mkdir(parents=True)
    shutil.copy(EXAMPLE_H, elsewhere / "myheader.h")
    shutil.copy(EXAMPLE_YML, elsewhere / "instantiate.yml")
    assert stubs.render(elsewhere / "myheader.h", elsewhere / "instantiate.yml") == text
    for seed in ("0", "12345"):
        env = _env()
        env["PYTHONHASHSEED"] = seed
        r = subprocess.run([sys.executable, "-m", "bindthem.stubs", str(EXAMPLE_H), "-i",
                            str(EXAMPLE_YML)], capture_output=True, env=env, cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        assert r.stdout == text.encode()
    assert str(REPO) not in text and "0.1.0" not in text


def test_scalar_defaults_stub():
    text = stubs.render(DEFAULTS_H, DEFAULTS_YML)
    _, defs = _defs(text)
    (report,) = defs["report"]
    defaults = {a.arg: ast.literal_eval(d)
                for a, d in zip(report.args.args[1:], report.args.defaults)}
    assert defaults == {"w": 1e-3, "f": 1.5, "n": -7, "u": 16, "on": True, "c": "T",
                        "nl": "\n", "s": -3, "oct": 15, "neg": -0.25, "off": False}
    assert "    c: int | str = 'T',\n" in text
    # complex: no literal; not literals: required
    assert "def rotate(z: complex, by: complex = ...) -> complex:" in text
    assert "def opaque(a: int, b: int, c: int, d: float) -> int:" in text
    # the default of T omega = 0.5 per instantiation: none for T = int
    relax = [ast.unparse(n.args) for n in defs["relax"]]
    assert [r.split(", ", 2)[2] for r in relax] == [
        "omega: float=0.5, shift: int=0", "omega: float=0.5, shift: int=0",
        "omega: int, shift: int=0"]


def test_render_rejects_bad_module_name():
    with pytest.raises(ValueError):
        stubs.render(EXAMPLE_H, EXAMPLE_YML, module="not-a-name")


# --- command line ---------------------------------------------------------------------

def _main(capsys, *args):
    rc = stubs.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_stdout_file_and_dir(tmp_path, capsys):
    text = stubs.render(EXAMPLE_H, EXAMPLE_YML)
    assert _main(capsys, EXAMPLE_H, "-i", EXAMPLE_YML) == (0, text, "")
    out = tmp_path / "pkg" / "kernels.pyi"
    assert _main(capsys, EXAMPLE_H, "-i", EXAMPLE_YML, "-o", out)[0] == 0
    assert out.read_bytes() == text.encode()
    assert _main(capsys, EXAMPLE_H, "-i", EXAMPLE_YML, "-o", tmp_path)[0] == 0
    assert (tmp_path / "myheader.pyi").read_bytes() == text.encode()
    assert _main(capsys, EXAMPLE_H, "-i", EXAMPLE_YML, "--module", "pkg.fast",
                 "-o", str(tmp_path) + os.sep)[0] == 0
    assert (tmp_path / "pkg" / "fast.pyi").read_bytes() == text.encode()


def test_check_fresh_stale_missing_and_error(tmp_path, capsys):
    out = tmp_path / "myheader.pyi"
    args = [EXAMPLE_H, "-i", EXAMPLE_YML, "-o", out]
    # missing: stale, diffed against nothing
    rc, text, _ = _main(capsys, *args, "--check")
    assert rc == 1 and "does not exist" in text and "+++ " in text
    assert not out.exists()
    assert _main(capsys, *args)[0] == 0
    assert _main(capsys, *args, "--check") == (0, "", "")
    # stale: unified diff of what changed
    out.write_text(out.read_text().replace("a: float", "alpha: float", 1))
    rc, text, _ = _main(capsys, *args, "--check")
    assert rc == 1
    assert "is stale" in text and "--- %s" % out in text and "+++ %s (generated)" % out in text
    assert "\n-    alpha: float,\n" in text and "\n+    a: float,\n" in text
    assert "alpha" in out.read_text()  # --check writes nothing
    # errors: exit 2 with a message
    rc, _, err = _main(capsys, tmp_path / "nope.h", "-o", out, "--check")
    assert rc == 2 and err.startswith("error: ")
    bad = tmp_path / "bad.yml"
    bad.write_text("- types: [[int\n")
    rc, _, err = _main(capsys, EXAMPLE_H, "-i", bad, "-o", out, "--check")
    assert rc == 2 and "bad.yml" in err
    rc, _, err = _main(capsys, *args[:3], "--check")
    assert rc == 2 and "--check needs -o" in err


def test_check_as_a_command(tmp_path):
    """What CI runs: python -m bindthem.stubs ... --check."""
    out = tmp_path / "myheader.pyi"
    cmd = [sys.executable, "-m", "bindthem.stubs", str(EXAMPLE_H), "-i", str(EXAMPLE_YML),
           "-o", str(out)]
    assert _run(cmd).returncode == 0
    assert _run(cmd + ["--check"]).returncode == 0
    out.write_text(out.read_text() + "\n")
    r = _run(cmd + ["--check"])
    assert r.returncode == 1 and r.stdout.startswith("%s is stale" % out)
