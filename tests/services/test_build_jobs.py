"""Cold builds on several cores (jobs=): a header's instantiations split over
translation units compiled in parallel and linked. The library calls the
same whatever jobs is, the cache entry is shared, warnings are said once,
errors name the header's line, and headers whose split would change what a
call does (state of internal linkage, definitions that are not inline) are
built as one unit."""

import importlib
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from support import TOTAL_SCALE_H

import bindthem
from bindthem._services import status as _status

cachemod = importlib.import_module("bindthem._services.cache")
# where the private functions the tests replace are looked up
manifestmod = importlib.import_module("bindthem._services.cache._manifest")  # _stat_key
entrymod = importlib.import_module("bindthem._services.cache._entry")  # _compile

KERNELS = TOTAL_SCALE_H + """
// The largest of x.
template <class T>
T largest(const T x[], const int x_size)
{
    T m = x[0];
    for (int i = 1; i < x_size; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}
%s"""

YAML = """\
instantiate:
  - functions: [total, scale, largest]
    types: [[int], [long], [float], [double]]
%s"""


def write(tmp_path, extra_header="", extra_yaml="", name="kernels"):
    h, y = tmp_path / (name + ".h"), tmp_path / (name + ".yml")
    h.write_text(KERNELS % extra_header)
    y.write_text(YAML % extra_yaml)
    return str(h), str(y)


@pytest.fixture
def runs(monkeypatch):
    """The command lists each compiler step ran (several: in parallel), but the
    prelude's precompile."""
    seen = []
    run_all = _status.run_all

    def spy(cmds, what):
        if not any("c++-header" in c for c in cmds):  # the precompiled prelude: test_pch.py
            seen.append([list(c) for c in cmds])
        return run_all(cmds, what)
    monkeypatch.setattr(_status, "run_all", spy)
    return seen


def exported(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[-2] in "TW"}


def calls(lib):
    import numpy as np
    out = []
    for dt in (np.int32, np.int64, np.float32, np.float64):
        x = np.arange(1, 8, dtype=dt)
        out.append((lib.total(x), lib.largest(x)))
        lib.scale(x, dt(3))
        out.append(x.tolist())
    return out


def test_jobs_split_the_instantiations_and_call_the_same(tmp_path, runs):
    h, y = write(tmp_path)
    one = bindthem.build(h, y, cache_dir=str(tmp_path / "c1"), jobs=1)
    assert [len(step) for step in runs] == [1]
    del runs[:]
    three = bindthem.build(h, y, cache_dir=str(tmp_path / "c3"), jobs=3)
    # three units compiled at once, then one link; each unit instantiates a share
    assert [len(step) for step in runs[:2]] == [3, 1]
    assert "-c" in runs[0][0] and "-shared" in runs[1][0]
    assert exported(one._bindthem_.handle.path) == exported(three._bindthem_.handle.path)
    assert calls(one) == calls(three)
    assert one.__all__ == three.__all__


def test_shares_are_balanced_and_cover_every_instantiation(tmp_path):
    bb = importlib.import_module("bindthem._services.compile.kernels")
    units = importlib.import_module("bindthem._services.compile.units")  # where a build is split
    h, y = write(tmp_path)
    meta = bindthem._core.parse_header(h, y, brief=True)  # what a build splits
    every = bb._instantiations(meta)
    for n in (1, 2, 3, 5):
        shares = units._shares(meta, n)
        assert sorted(sum(shares, [])) == sorted(every) and len(shares) == n
        assert max(map(len, shares)) - min(map(len, shares)) <= 2
        assert shares == units._shares(meta, n)  # the same split every time


def test_the_cache_key_does_not_depend_on_jobs(tmp_path, runs):
    h, y = write(tmp_path)
    cache = str(tmp_path / "cache")
    a = bindthem.build(h, y, cache_dir=cache, jobs=2)
    n = len(runs)
    b = bindthem.build(h, y, cache_dir=cache, jobs=1)
    assert len(runs) == n  # a hit: nothing compiled
    assert a._bindthem_.handle.path == b._bindthem_.handle.path
    path = bindthem.compile_library(h, y, cache_dir=cache, jobs=5)
    assert path == a._bindthem_.handle.path and len(runs) == n


STATE = """
static int calls = 0;       // one counter for every kernel, as in one unit
namespace { int seen = 0; }

// 100 times the calls of count() so far, this one included, plus those with x > 0.
template <class T>
int count(T x)
{
    seen += x > 0;
    return ++calls * 100 + seen;
}
"""


def test_state_of_internal_linkage_stays_one_copy(tmp_path, runs):
    """Split over units, each would have its own `calls`: the header is built
    as one unit, and the counter counts every instantiation's calls."""
    h, y = write(tmp_path, STATE, "  - functions: [count]\n    types: [[int], [double]]\n")
    lib = bindthem.build(h, y, cache_dir=str(tmp_path / "c"), jobs=4)
    assert [lib.count(1), lib.count(2.0), lib.count(3), lib.count(-1.0)] == [101, 202, 303, 403]
    assert len(runs[-1]) == 1 and "-shared" in runs[-1][0]  # the one-unit build, last


def test_a_definition_that_is_not_inline_builds_as_one_unit(tmp_path, runs):
    h, y = write(tmp_path, "\n// 42.\nint answer() { return 42; }\n")
    lib = bindthem.build(h, y, cache_dir=str(tmp_path / "c"), jobs=2)
    assert lib.answer() == 42 and calls(lib)[0] == (28, 7)
    assert [len(step) for step in runs] == [2, 1, 1]  # units; the link failed; one unit


def test_warnings_from_every_unit_are_said_once(tmp_path):
    warn = ("\n// x, with an unused variable.\ninline int warns(int x)\n{\n"
            "    int unused_here;\n    return x;\n}\n")
    h, y = write(tmp_path, warn)
    with pytest.warns(bindthem.BuildWarning) as rec:
        lib = bindthem.build(h, y, cache_dir=str(tmp_path / "c"), jobs=3,
                             extra_cxxflags="-Wall")
    text = "\n".join(str(w.message) for w in rec)
    assert len(re.findall("unused variable .unused_here.", text)) == 1, text
    assert "%s:32:9: warning" % h in text
    assert calls(lib)[0] == (28, 7)  # warns() is inline: in every unit, not bound


def test_an_error_names_the_header_line(tmp_path):
    bad = "\n// Not for numbers.\ntemplate <class T>\nint broken(T x)\n{\n    return x.size();\n}\n"
    h, y = write(tmp_path, bad, "  - functions: [broken]\n    types: [[int]]\n")
    with pytest.raises(bindthem.BuildError) as e:
        bindthem.build(h, y, cache_dir=str(tmp_path / "c"), jobs=2)
    assert "%s:33:14: error" % h in e.value.output


@pytest.mark.parametrize("jobs", [0, -1, True, 2.0, "2"])
def test_jobs_must_be_a_count(tmp_path, jobs):
    h, y = write(tmp_path)
    with pytest.raises(ValueError, match=r"jobs=.*: expected a number of compiler processes, "
                       r"1 or more \(default: as many as the cores idle now, of the \d+ "
                       r"this process may use\)"):
        bindthem.build(h, y, cache_dir=str(tmp_path / "c"), jobs=jobs)


def test_cli_jobs(tmp_path):
    h, y = write(tmp_path)
    cmd = [sys.executable, "-m", "bindthem", "build", h, "-i", y, "--cache-dir",
           str(tmp_path / "c")]
    r = subprocess.run(cmd + ["--jobs", "0"], capture_output=True, text=True)
    assert r.returncode == 2 and "'0': expected a number of compiler processes" in r.stderr
    r = subprocess.run(cmd + ["-j", "2"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert exported(r.stdout.strip()) >= {"_Z5totalIiET_PKS0_i"}


MAGIC = """
import sys, warnings
from IPython.core.interactiveshell import InteractiveShell
from bindthem._services import status as _status
seen = []
run_all = _status.run_all
def spy(cmds, what):
    if not any("c++-header" in c for c in cmds):  # the prelude's precompile: test_pch.py
        seen.append(len(cmds))
    return run_all(cmds, what)
_status.run_all = spy
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "bindthem")
shell.run_cell_magic("bindthem", "k -t int -t double --jobs 2", sys.argv[1])
import numpy as np
print(seen, shell.user_ns["k"].total(np.arange(4.0)))
"""


def test_magic_jobs(tmp_path):
    pytest.importorskip("IPython")
    cell = KERNELS % ""
    env = dict(os.environ, BINDTHEM_CACHE=str(tmp_path / "c"))
    r = subprocess.run([sys.executable, "-c", MAGIC, cell], capture_output=True, text=True,
                       cwd=str(tmp_path), env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[2,", "1]", "6.0"]


def built_with_manifest(tmp_path):
    """(header, yaml, cache, manifest path, manifest) of a build of write()'s kernels."""
    h, y = write(tmp_path)
    cache = str(tmp_path / "c")
    bindthem.build(h, y, cache_dir=cache, jobs=1)
    (manifest,) = [os.path.join(cache, d, "deps.json") for d in os.listdir(cache)
                   if d.startswith("kernels-")]
    with open(manifest, "rb") as f:
        return h, y, cache, manifest, cachemod.read_manifest(f.read())


def test_a_warm_build_stats_system_headers_by_folder(tmp_path, monkeypatch):
    h, y, cache, manifest, rec = built_with_manifest(tmp_path)
    # files outside the compiler's folders (Debian 13's asm/ headers resolve to
    # /usr/lib/linux/uapi) are statted one by one; the rest by folder; the header is
    # no dependency: the key holds its bytes, and the compiler read a snapshot of them
    assert len(rec["deps"]) > 50 and rec["dirs"] and h not in rec["deps"]
    assert len(rec["stat"]) < 20 and not [p for p in rec["stat"] for d in rec["dirs"]
                                          if p.startswith(os.path.join(d, ""))]
    statted = []
    real = manifestmod._stat_key
    monkeypatch.setattr(manifestmod, "_stat_key", lambda p: statted.append(p) or real(p))
    bindthem.build(h, y, cache_dir=cache, jobs=1)
    assert sorted(statted) == sorted(list(rec["stat"]) + list(rec["dirs"]))


def test_a_system_header_replaced_by_its_package_rebuilds(tmp_path, monkeypatch):
    """A folder of the compiler's own (here a stand-in): a file renamed in
    over a header (as dpkg and rpm install) is seen, the same text again
    is not a rebuild."""
    bb = importlib.import_module("bindthem._services.compile.kernels")  # where _compile runs
    sysdir = tmp_path / "sys"
    sysdir.mkdir()
    (sysdir / "k.h").write_text("#define K 1\n")
    monkeypatch.setattr(bb, "_system_dirs", lambda cxx, flags: (str(sysdir),))
    h, y = write(tmp_path, '#include "k.h"\n// K.\nint k();\nint k() { return K; }\n')
    kw = dict(cache_dir=str(tmp_path / "c"), jobs=1, extra_cxxflags="-idirafter " + str(sysdir))
    assert bindthem.build(h, y, **kw).k() == 1

    def install(text):
        new = sysdir / "k.h.dpkg-new"
        new.write_text(text)
        os.rename(new, sysdir / "k.h")
    install("#define K 2\n")
    assert bindthem.build(h, y, **kw).k() == 2
    install("#define K 2\n")
    compiles, real = [], entrymod._compile
    monkeypatch.setattr(entrymod, "_compile", lambda *a: compiles.append(a) or real(*a))
    assert bindthem.build(h, y, **kw).k() == 2 and compiles == []


def test_a_manifest_of_an_earlier_bindthem_is_a_hit(tmp_path, monkeypatch):
    """A manifest written as one JSON object (before the head/hashes split),
    with the "outside" list or from before it (then the files whose folder is
    not one of "dirs"), is still a hit that stats no system header; one whose
    list names a file it does not record is rebuilt."""
    h, y, cache, manifest, rec = built_with_manifest(tmp_path)
    full = dict(rec["deps"])
    assert rec["outside"] == {p: full[p] for p in rec["stat"]}
    compiles, real_compile, real_stat = [], entrymod._compile, manifestmod._stat_key
    monkeypatch.setattr(entrymod, "_compile", lambda *a: compiles.append(a) or real_compile(*a))

    def rewrite(**change):
        new = dict(rec, deps=full, **change)
        for k in [k for k, v in change.items() if v is None]:
            del new[k]
        with open(manifest, "w") as f:
            json.dump(new, f)

    for outside in (list(rec["stat"]), None):
        rewrite(outside=outside)
        statted = []
        monkeypatch.setattr(manifestmod, "_stat_key", lambda p: statted.append(p) or real_stat(p))
        assert bindthem.build(h, y, cache_dir=cache, jobs=1).total(np.arange(3.0)) == 3.0
        assert compiles == []
        assert sorted(statted) == sorted(list(rec["stat"]) + list(rec["dirs"]))
    rewrite(outside=list(rec["stat"]) + ["/nonexistent/never-read.h"])
    assert bindthem.build(h, y, cache_dir=cache, jobs=1).total(np.arange(3.0)) == 3.0
    assert len(compiles) == 1


def test_a_hit_reads_only_the_head_of_its_manifest(tmp_path, monkeypatch):
    """The manifest's second line (every file's hash) is parsed only where a
    folder of the compiler's changed; damaged, it is a miss, never an error."""
    h, y, cache, manifest, rec = built_with_manifest(tmp_path)
    with open(manifest, "rb") as f:
        head, nl, tail = f.read().partition(b"\n")
    assert nl and json.loads(tail) == dict(rec["deps"]) and b'"deps"' not in head
    with open(manifest, "wb") as f:
        f.write(head + nl + b"{damaged")
    lib = bindthem.build(h, y, cache_dir=cache, jobs=1)  # a hit: the tail is not read
    assert lib.total(np.arange(3.0)) == 3.0
    with open(manifest, "rb") as f:
        assert f.read().endswith(b"{damaged")
    compiles, real_compile, real_stat = [], entrymod._compile, manifestmod._stat_key
    monkeypatch.setattr(entrymod, "_compile", lambda *a: compiles.append(a) or real_compile(*a))
    folder = next(iter(rec["dirs"]))  # a folder changed: its files are checked one by one
    monkeypatch.setattr(manifestmod, "_stat_key",
                        lambda p: [0, 0, 0, 0] if p == folder else real_stat(p))
    assert bindthem.build(h, y, cache_dir=cache, jobs=1).total(np.arange(3.0)) == 3.0
    assert len(compiles) == 1  # the damaged manifest was a miss: rebuilt
    with open(manifest, "rb") as f:
        assert json.loads(f.read().partition(b"\n")[2]) == dict(rec["deps"])


def test_a_damaged_manifest_never_stops_a_build_or_the_listing(tmp_path):
    """A hit whose outside file was touched (same text, new stat) rewrites
    its manifest; with a damaged second line that rewrite is skipped and the
    build still binds. A manifest that is not a JSON object is left out of
    the cache listing, not an error."""
    h, y, cache, manifest, rec = built_with_manifest(tmp_path)
    with open(manifest, "rb") as f:
        head = f.read().partition(b"\n")[0]
    with open(manifest, "wb") as f:
        f.write(head + b"\n{damaged")
    with open(h, "rb") as f:
        text = f.read()
    with open(h, "wb") as f:  # the same text: a new mtime and ctime
        f.write(text)
    assert bindthem.build(h, y, cache_dir=cache, jobs=1).total(np.arange(3.0)) == 3.0
    with open(manifest, "wb") as f:
        f.write(b"[]")
    listed = [e for e in cachemod.entries(cache) if e["path"] == os.path.dirname(manifest)]
    assert len(listed) == 1 and listed[0]["file"] is None
