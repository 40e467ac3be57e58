"""The bytes that were checked are the bytes that run (docs/build.rst, "The
text compiled"): a build parses its header once into a Plan, keys the cache
on those bytes and has the compiler read a snapshot of them, never the
header's path again. A header edited while it compiles (an editor's
save-then-undo, a ``git stash``/``stash pop`` or a branch switch during a
build) can then neither put other code under its key nor into the Library
bound from the text it parsed; the same for instantiation on demand.

The edits are made deterministic by a compiler wrapper that rewrites the
header just before running the real compiler and puts it back after.
"""

import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from support import python_env

import bindthem

HEADER = "// K.\nint k();\nint k() { return %d; }\n"
TEMPLATE = ("// The first element plus a constant.\ntemplate <class T>\n"
            "T first(const T x[], const int x_size) { return x[0] + %d; }\n")


def real_cxx():
    return shutil.which("c++") or shutil.which("g++")


def evil_cxx(tmp_path, header, during):
    """A compiler that, when $EVIL is set, writes ``during`` into ``header``
    while it compiles (just before the real compiler runs) and puts the
    header's text back after: the header goes A -> B -> A in one compile.
    Runs the real compiler as it is otherwise (and for --version and -E)."""
    (tmp_path / "during").write_text(during)
    wrapper = tmp_path / "evilcxx"
    wrapper.write_text(textwrap.dedent("""\
        #!/bin/sh
        if [ -n "$EVIL" ]; then
          case "$*" in *" -o "*)
            cp "%(h)s" "%(t)s/before"
            cp "%(t)s/during" "%(h)s"
            "%(cxx)s" "$@"; rc=$?
            cp "%(t)s/before" "%(h)s"
            echo x >> "%(t)s/compiles"
            exit $rc;;
          esac
        fi
        exec "%(cxx)s" "$@"
        """ % {"h": header, "t": tmp_path, "cxx": real_cxx()}))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def compiles(tmp_path):
    try:
        return len((tmp_path / "compiles").read_text().split())
    except FileNotFoundError:
        return 0


BUILD_AGAIN = """
import sys
import bindthem
lib = bindthem.build(sys.argv[1], cxx=sys.argv[2], cache_dir=sys.argv[3])
print(lib.k())
"""


def test_a_header_edited_during_its_compile_builds_the_text_parsed(tmp_path, monkeypatch):
    header = tmp_path / "k.h"
    header.write_text(HEADER % 1)
    cxx = evil_cxx(tmp_path, header, HEADER % 2)
    cache = str(tmp_path / "cache")
    monkeypatch.setenv("EVIL", "1")
    lib = bindthem.build(str(header), cxx=cxx, cache_dir=cache)
    assert compiles(tmp_path) == 1  # the wrapper did edit the header mid-compile
    assert header.read_text() == HEADER % 1
    assert lib.k() == 1  # the text parsed and keyed, not the one the path held meanwhile
    assert bindthem.info(lib).plan.header_text == (HEADER % 1).encode()
    assert bindthem.info(lib).source.header_text == (HEADER % 1).encode()
    # the entry filed under the header's text holds that text's code: a later build
    # of the unchanged header, in another process, is a hit on it (no compile)
    monkeypatch.delenv("EVIL")
    out = subprocess.run([sys.executable, "-c", BUILD_AGAIN, str(header), cxx, cache],
                         capture_output=True, text=True, env=python_env(), timeout=240)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1"] and compiles(tmp_path) == 1


def test_a_header_replaced_during_its_compile_is_built_anew_after(tmp_path, monkeypatch):
    """A -> B for good during the compile: the Library is A's (what was
    parsed and bound), and the next build reads B and compiles it."""
    header = tmp_path / "k.h"
    header.write_text(HEADER % 1)
    cxx = tmp_path / "swapcxx"
    cxx.write_text("#!/bin/sh\ncase \"$*\" in *\" -o \"*) printf '%s' \"$NEW\" > \"%s\";; esac\n"
                   "exec \"%s\" \"$@\"\n" % ("%s", header, real_cxx()))
    cxx.chmod(0o755)
    cache = str(tmp_path / "cache")
    monkeypatch.setenv("NEW", HEADER % 2)
    assert bindthem.build(str(header), cxx=str(cxx), cache_dir=cache).k() == 1
    assert header.read_text() == HEADER % 2
    assert bindthem.build(str(header), cxx=str(cxx), cache_dir=cache).k() == 2


def test_an_instantiation_on_demand_compiles_the_text_built(tmp_path, monkeypatch):
    header = tmp_path / "t.h"
    header.write_text(TEMPLATE % 1)
    cxx = evil_cxx(tmp_path, header, TEMPLATE % 100)
    cache = str(tmp_path / "cache")
    lib = bindthem.build(str(header), cxx=cxx, cache_dir=cache)
    monkeypatch.setenv("EVIL", "1")
    assert lib.first(np.array([5.0])) == 6.0
    assert lib.first(np.array([5], np.int32)) == 6
    assert compiles(tmp_path) == 2  # each instantiation compiled while the header was B


def test_racing_edits_never_bind_other_code(tmp_path):
    """A header renamed between two texts as fast as it can be while builds
    run in this process: every Library computes what its own Plan's text
    says (0 wrong of however many builds fit in the time), and the entries
    serve another process the same."""
    header = tmp_path / "k.h"
    texts = [HEADER % v for v in (1, 2)]
    header.write_text(texts[0])
    cache = str(tmp_path / "cache")
    stop = threading.Event()

    def edit():
        i = 0
        while not stop.is_set():
            i += 1
            tmp = tmp_path / ("k.h.%d" % (i % 2))
            tmp.write_text(texts[i % 2])
            os.replace(tmp, header)
            time.sleep(0.001)

    editor = threading.Thread(target=edit)
    editor.start()
    wrong, built = [], 0
    deadline = time.monotonic() + 12
    try:
        while time.monotonic() < deadline:
            lib = bindthem.build(str(header), cache_dir=cache)
            want = 1 if bindthem.info(lib).plan.header_text == texts[0].encode() else 2
            built += 1
            if lib.k() != want:
                wrong.append((built, want, lib.k()))
    finally:
        stop.set()
        editor.join()
    assert built >= 2 and wrong == []
    for i, text in enumerate(texts):
        header.write_text(text)
        out = subprocess.run([sys.executable, "-c", BUILD_AGAIN, str(header),
                              os.environ.get("CXX") or "c++", cache],
                             capture_output=True, text=True, env=python_env(), timeout=240)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == [str(i + 1)]


def test_the_compiler_reads_the_snapshot_and_names_the_header(tmp_path):
    """Diagnostics and __FILE__ name the header, not the snapshot; local
    includes are found beside the header."""
    (tmp_path / "inc.h").write_text("#define BASE 40\n")
    header = tmp_path / "f.h"
    header.write_text('#include "inc.h"\n#include <cstring>\n// F.\nint f();\n'
                      'int f() { return BASE + (std::strstr(__FILE__, "f.h") ? 2 : 0); }\n'
                      '#warning look here\n')
    with pytest.warns(bindthem.BuildWarning) as w:
        lib = bindthem.build(str(header), cache_dir=str(tmp_path / "c"))
    assert lib.f() == 42
    text = "\n".join(str(x.message) for x in w)
    assert "%s:6:2: warning: #warning look here" % header in text
