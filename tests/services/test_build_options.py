"""Builds the way users build: flags that replace and flags that append,
OpenMP, $CXXFLAGS, the compiler's warnings as BuildWarning, headers that bind
nothing, the cache command and its bound, and importing the source folder."""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings

import pytest

from sources import ROOT
from support import python_env

import bindthem
from bindthem.__main__ import main
from bindthem._services import cache as cachemod

PROBE = """\
// 1 when the compiler optimised (-O1 and up), else 0.
int optimised()
{
#ifdef __OPTIMIZE__
    return 1;
#else
    return 0;
#endif
}

// _OPENMP (the OpenMP version, a date), or 0 without OpenMP.
long openmp()
{
#ifdef _OPENMP
    return _OPENMP;
#else
    return 0;
#endif
}

// EXTRA from -DEXTRA=..., or -1.
int extra()
{
#ifdef EXTRA
    return EXTRA;
#else
    return -1;
#endif
}
"""


@pytest.fixture
def probe(tmp_path):
    h = tmp_path / "probe.h"
    h.write_text(PROBE)
    return str(h)


@pytest.fixture
def recording_cxx(tmp_path):
    """A compiler that records its arguments (JSON lines) and then compiles."""
    log = tmp_path / "argv.jsonl"
    cxx = tmp_path / "cxx.py"
    cxx.write_text("#!%s\nimport json, os, sys\n"
                   "open(%r, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
                   "os.execvp(os.environ.get('REAL_CXX', 'c++'), ['c++'] + sys.argv[1:])\n"
                   % (sys.executable, str(log)))
    cxx.chmod(0o755)

    def argv():
        # the compiles: not the identity (--version) nor the include search list (-E -v)
        return [a for a in map(json.loads, log.read_text().splitlines())
                if "--version" not in a and "-E" not in a]
    return str(cxx), argv


def no_warnings():
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("error")
    return ctx


def test_flag_order(probe, cache_dir, recording_cxx, monkeypatch):
    cxx, argv = recording_cxx
    monkeypatch.setenv("CXXFLAGS", "-DFROM_ENV -g")
    lib = bindthem.build(probe, cache_dir=cache_dir, cxx=cxx, cxxflags="-O1 -DA",
                         extra_cxxflags=["-DEXTRA=5"], openmp=True)
    (cmd,) = argv()
    assert cmd[:7] == ["-O1", "-DA", "-DFROM_ENV", "-g", "-DEXTRA=5", "-fopenmp", "-fPIC"]
    assert cmd[7] == "-shared"
    assert lib.extra() == 5 and lib.optimised() == 1 and lib.openmp() > 200000


def test_extra_flags_and_openmp_keep_O3(probe, cache_dir, monkeypatch):
    monkeypatch.delenv("CXXFLAGS", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lib = bindthem.build(probe, cache_dir=cache_dir, openmp=True,
                             extra_cxxflags="-DEXTRA=3")
    assert (lib.optimised(), lib.extra()) == (1, 3) and lib.openmp() > 200000
    assert bindthem.info(lib).source.flags == ["-O3", "-DEXTRA=3", "-fopenmp"]
    plain = bindthem.build(probe, cache_dir=cache_dir)
    assert (plain.optimised(), plain.openmp(), plain.extra()) == (1, 0, -1)


def test_cxxflags_replace_O3_and_say_so(probe, cache_dir, monkeypatch):
    monkeypatch.delenv("CXXFLAGS", raising=False)
    with pytest.warns(bindthem.BuildWarning, match=r"cxxflags='-fopenmp' replaces bindthem's "
                      r"default -O3 and names no -O level, so the kernels are compiled "
                      r"unoptimised \(-O0\)\. To add flags and keep -O3, pass them as "
                      r"extra_cxxflags="):
        lib = bindthem.build(probe, cache_dir=cache_dir, cxxflags="-fopenmp")
    assert lib.optimised() == 0 and lib.openmp() > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bindthem.build(probe, cache_dir=cache_dir, cxxflags="-O0").optimised() == 0


def test_cxxflags_from_the_environment_are_appended(probe, cache_dir, monkeypatch):
    monkeypatch.setenv("CXXFLAGS", "-DEXTRA=9 -O0")
    lib = bindthem.build(probe, cache_dir=cache_dir)
    assert (lib.extra(), lib.optimised()) == (9, 0)  # appended: its -O0 comes last


def test_compiler_warnings_are_build_warnings(tmp_path, cache_dir):
    h = tmp_path / "warns.h"
    h.write_text("// x, with an unused variable.\nint warns(int x)\n{\n    int unused_here;\n"
                 "    return x;\n}\n")
    with pytest.warns(bindthem.BuildWarning) as rec:
        lib = bindthem.build(str(h), cache_dir=cache_dir, extra_cxxflags="-Wall")
    (w,) = [w for w in rec if "unused" in str(w.message)]
    text = str(w.message)
    assert text.startswith("the compiler warned while compiling warns.h:\n")
    assert re.search(r"%s:4:9: warning: unused variable .unused_here." % re.escape(str(h)), text)
    assert w.filename == __file__  # attributed to the caller
    assert lib.warns(3) == 3
    # a cache hit replays them
    with pytest.warns(bindthem.BuildWarning, match=r"compiling warns.h \(cached build\):\n"):
        bindthem.build(str(h), cache_dir=cache_dir, extra_cxxflags="-Wall")


OMP = """\
// y += a x, over OpenMP threads.
template <class T>
void axpy(const T x[], const int x_size, T y[], const int y_size, const T a)
{
    #pragma omp parallel for
    for (int i = 0; i < x_size; i++)
        y[i] += a * x[i];
}
"""


def test_pragma_omp_without_openmp_warns(tmp_path, cache_dir):
    h, y = tmp_path / "omp.h", tmp_path / "omp.yml"
    h.write_text(OMP)
    y.write_text("- types: [[double]]\n  functions: [axpy]\n")
    with pytest.warns(bindthem.BuildWarning, match=r"omp.h:5: '#pragma omp parallel for' has "
                      r"no effect: the build has no OpenMP flag, so the kernels run on one "
                      r"thread. Pass openmp=True \(--openmp for python -m bindthem build and "
                      r"%%bindthem\)."):
        bindthem.build(str(h), str(y), cache_dir=cache_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bindthem.build(str(h), str(y), cache_dir=cache_dir, openmp=True)


TEMPLATED = "// Twice x.\ntemplate <class T>\nT twice(T x) { return x + x; }\n"
NOTHING = (r"binds no functions: its functions are templates \(twice<T>\), and without an "
           r"instantiate.yml nothing says which types to instantiate them with. Write one that "
           r"lists a type tuple per instantiation \(one C\+\+ type per template parameter\), "
           r"e.g.\n- types:\n    - \[double\]\n  functions: \[twice\]\nand pass it")


def test_binding_nothing_warns(tmp_path, cache_dir, libdir):
    h = tmp_path / "tmpl.h"
    h.write_text(TEMPLATED)
    with pytest.warns(bindthem.BindWarning, match=NOTHING) as rec:
        lib = bindthem.build(str(h), cache_dir=cache_dir, on_demand=False)
    assert lib.__all__ == [] and len(rec) == 1
    with warnings.catch_warnings():  # by default the template is bound open: nothing to say
        warnings.simplefilter("error")
        assert bindthem.build(str(h), cache_dir=cache_dir).twice(4) == 8
    with pytest.warns(bindthem.BindWarning, match=NOTHING):
        bindthem.load(lib.__file__, str(h))
    from bindthem.stubs import render
    with pytest.warns(bindthem.BindWarning, match=NOTHING):
        render(str(h))
    # an instantiate.yml, and nothing is said
    y = tmp_path / "tmpl.yml"
    y.write_text("- types: [[int]]\n  functions: [twice]\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bindthem.build(str(h), str(y), cache_dir=cache_dir).twice(4) == 8
    # an untemplated function binds, and the template left out is still said, once
    h.write_text(TEMPLATED + "// One.\nint one() { return 1; }\n")
    with pytest.warns(bindthem.BindWarning) as rec:
        assert bindthem.build(str(h), cache_dir=cache_dir, on_demand=False).__all__ == ["one"]
    assert [str(w.message) for w in rec] == [
        "%s binds 1 function; 1 declaration is not bound:\n"
        "  tmpl.h:3: twice: templated; needs instantiate.yml" % h]


def test_cli_build_of_nothing_exits_1(tmp_path, cache_dir):
    h = tmp_path / "tmpl.h"
    h.write_text(TEMPLATED)
    r = subprocess.run([sys.executable, "-m", "bindthem", "build", str(h), "--cache-dir",
                        cache_dir], capture_output=True, text=True, env=python_env(), timeout=120)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("error: %s binds no functions" % h)
    assert os.listdir(cache_dir) == []
    r = subprocess.run([sys.executable, "-m", "bindthem.stubs", str(h)], capture_output=True,
                       text=True, env=python_env(), timeout=120)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("error: %s binds no functions" % h)


def test_cli_build_flags(probe, tmp_path, cache_dir, recording_cxx):
    cxx, argv = recording_cxx
    out = tmp_path / "libprobe.so"
    env = python_env(CXXFLAGS="")
    r = subprocess.run([sys.executable, "-m", "bindthem", "build", probe, "-o", str(out),
                        "--cxx", cxx, "--extra-cxxflags=-DEXTRA=4", "--openmp", "--cache-dir",
                        cache_dir], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert argv()[0][:4] == ["-O3", "-DEXTRA=4", "-fopenmp", "-fPIC"]
    lib = bindthem.load(str(out), probe)
    assert (lib.extra(), lib.optimised()) == (4, 1) and lib.openmp() > 0
    r = subprocess.run([sys.executable, "-m", "bindthem", "build", probe, "-o", str(out),
                        "--cxxflags=-DEXTRA=2", "--cache-dir", cache_dir],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0
    assert r.stderr.startswith("warning: cxxflags='-DEXTRA=2' replaces bindthem's default -O3")


def _options(parser):
    """(subcommand, option strings, help) of every option of every subcommand."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for a in sub._actions:
                    if not isinstance(a, argparse._HelpAction):
                        yield name, a.option_strings or [a.dest], a.help


def test_every_cli_option_has_help(capsys):
    with pytest.raises(SystemExit):
        main(["build", "--help"])
    text = capsys.readouterr().out
    assert "REPLACE the default -O3" in text and "APPENDED after -O3" in text
    assert "$CXXFLAGS" in text and "--openmp" in text
    import bindthem.__main__ as cli
    seen = []
    real = argparse.ArgumentParser.parse_args

    def grab(self, *a, **kw):
        seen.append(self)
        return real(self, *a, **kw)

    argparse.ArgumentParser.parse_args = grab
    try:
        cli.main(["cache", "size", "--cache-dir", str(ROOT + "/no-such-cache")])
    finally:
        argparse.ArgumentParser.parse_args = real
    capsys.readouterr()
    opts = list(_options(seen[0]))
    assert {name for name, _, _ in opts} == {"show", "build", "cache", "package"}
    assert [o for o in opts if not o[2]] == []


# --- the cache command ---------------------------------------------------------


def cache_cli(cache_dir, *argv):
    r = subprocess.run([sys.executable, "-m", "bindthem", "cache"] + list(argv),
                       capture_output=True, text=True, timeout=120,
                       env=python_env(BINDTHEM_CACHE=cache_dir))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_cache_list_size_clear(tmp_path, cache_dir):
    # the compiler's identity asked now, elsewhere: this process then writes no
    # compilers/ entry into cache_dir (it asks once), whichever tests ran before
    (tmp_path / "warm.h").write_text("// w.\nint w() { return 0; }\n")
    bindthem.build(str(tmp_path / "warm.h"), cache_dir=str(tmp_path / "warm"))
    libs = []
    for i in range(3):
        h = tmp_path / ("c%d.h" % i)
        h.write_text("// %d.\nint c%d() { return %d; }\n" % (i, i, i))
        libs.append(bindthem.build(str(h), cache_dir=cache_dir))
    listed = cache_cli(cache_dir, "list").splitlines()
    assert len(listed) == 3 and all(" build " in line for line in listed)
    assert [line.split()[-1] for line in listed] == [lib.__file__ for lib in reversed(libs)]
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(cache_dir)
                for f in fs)
    size = cache_cli(cache_dir, "size")
    assert size.startswith("%.1f KiB in 3 entries (%s; bound 1.0 GiB)" % (total / 1024,
                                                                         cache_dir))
    # --older-than: only what was last used before then
    old = os.path.join(os.path.dirname(libs[0].__file__), "deps.json")
    os.utime(old, (time.time() - 3 * 86400,) * 2)
    assert cache_cli(cache_dir, "clear", "--older-than", "2").startswith("removed 1 entries")
    assert not os.path.exists(libs[0].__file__) and os.path.exists(libs[1].__file__)
    assert libs[0].c0() == 0  # a loaded library keeps working
    assert cache_cli(cache_dir, "clear").startswith("removed 2 entries")
    assert cache_cli(cache_dir, "list") == "" and os.listdir(cache_dir) == []
    r = subprocess.run([sys.executable, "-m", "bindthem", "cache", "list", "--older-than", "1"],
                       capture_output=True, text=True, env=python_env(), timeout=120)
    assert r.returncode == 2 and "--older-than goes with clear" in r.stderr


def test_cache_stays_bounded(tmp_path, cache_dir, monkeypatch):
    h = tmp_path / "b0.h"
    h.write_text("// 0.\nint b0() { return 0; }\n")
    first = bindthem.build(str(h), cache_dir=cache_dir)
    one = sum(e["size"] for e in cachemod.entries(cache_dir))
    monkeypatch.setenv("BINDTHEM_CACHE_SIZE", str(int(one * 2.5)))
    made = [first]
    for i in range(1, 4):
        h = tmp_path / ("b%d.h" % i)
        h.write_text("// %d.\nint b%d() { return %d; }\n" % (i, i, i))
        made.append(bindthem.build(str(h), cache_dir=cache_dir))
        os.utime(os.path.join(os.path.dirname(made[-1].__file__), "deps.json"),
                 (time.time() + i,) * 2)
    left = [e["file"] for e in cachemod.entries(cache_dir)]
    assert left == [m.__file__ for m in made[2:]]  # the least recently used went first
    assert cachemod.cache_limit() == int(one * 2.5)
    monkeypatch.setenv("BINDTHEM_CACHE_SIZE", "2G")
    assert cachemod.cache_limit() == 2 << 30
    monkeypatch.setenv("BINDTHEM_CACHE_SIZE", "none")
    assert cachemod.cache_limit() is None
    monkeypatch.setenv("BINDTHEM_CACHE_SIZE", "lots")
    with pytest.raises(ValueError, match="BINDTHEM_CACHE_SIZE='lots': expected a size like "
                       "500M or 2G, or none"):
        cachemod.cache_limit()


def test_the_cache_leaves_folders_it_did_not_make_alone(tmp_path, cache_dir):
    mine = os.path.join(cache_dir, "notes")
    os.makedirs(mine)
    with open(os.path.join(mine, "keep.txt"), "w") as f:
        f.write("x" * 10000)
    h = tmp_path / "n.h"
    h.write_text("// n.\nint n() { return 1; }\n")
    bindthem.build(str(h), cache_dir=cache_dir)
    assert [e["kind"] for e in cachemod.entries(cache_dir)] == ["build"]
    assert cache_cli(cache_dir, "clear").startswith("removed 1 entries")
    assert os.listdir(cache_dir) == ["notes"]


def test_a_cache_hit_marks_its_entry_used(tmp_path, cache_dir):
    h = tmp_path / "u.h"
    h.write_text("// u.\nint u() { return 1; }\n")
    lib = bindthem.build(str(h), cache_dir=cache_dir)
    deps = os.path.join(os.path.dirname(lib.__file__), "deps.json")
    os.utime(deps, (1000, 1000))
    bindthem.build(str(h), cache_dir=cache_dir)
    assert os.stat(deps).st_mtime > time.time() - 600


# --- importing the source folder ------------------------------------------------


def test_import_from_the_source_folder_says_what_to_do(tmp_path):
    src = tmp_path / "checkout"
    shutil.copytree(os.path.join(ROOT, "bindthem"), src / "bindthem",
                    ignore=shutil.ignore_patterns("_core*", "__pycache__"))
    (src / "setup.py").write_text("")
    r = subprocess.run([sys.executable, "-c", "import bindthem"], cwd=str(src),
                       capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: bindthem's C extension bindthem._core is not in %s, bindthem's source "
        "folder, which has no compiled extension until it is built. Install bindthem (`pip "
        "install .`) and import it from another folder (`pytest tests` from the venv, not "
        "`python -m pytest` in the checkout), or build it in place: `python setup.py "
        "build_ext --inplace`." % (src / "bindthem"))
    assert "circular import" not in r.stderr


@pytest.mark.parametrize("text", ["", "  -O3  -march=native\t-g\n", "g++ -I'a b'", 'x "y z"',
                                  "a\\ b", "ccache g++", "-DX=1#2", "a\x0bb", "\u00e9 -O2",
                                  "-DQ='\"q\"'"])
def test_flags_and_compilers_split_as_a_shell_does(text):
    import shlex

    from bindthem._services.cache import shell_words
    assert shell_words(text) == shlex.split(text)
