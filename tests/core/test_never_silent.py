"""A header that binds fewer functions than it declares says so, once, in
every entry point: load, build, %%bindthem, bindthem.stubs and the command
line. Binding nothing warns everywhere and makes `python -m bindthem build`
and `python -m bindthem.stubs` exit 1 with the reasons; an attribute the
header declares but the Library lacks says why. The reasons are the C
core's (metadata "skipped", the binding's left_out), never Python's."""

import subprocess
import sys
import warnings
import weakref

import numpy as np
import pytest

from sources import CC

import bindthem
import bindthem.stubs

MIXED = """\
#include <stddef.h>
int ok(const int a);
void no_size(double x[]);
template <class T> T tmpl(T a) { return a; }
int gone(const int a);
static inline int helper(const int a) { return a; }
"""
MIXED_C = "int ok(const int a) { return a + 1; }\n"  # gone is missing from the library

NOTHING = "void no_size(double x[]);\n"


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _clib(tmp_path, source, stem):
    c = _write(tmp_path, stem + ".c", source)
    lib = str(tmp_path / ("lib%s.so" % stem))
    proc = subprocess.run([CC, "-x", "c", "-fPIC", "-shared", c, "-o", lib],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return lib


def _bind_warnings(rec):
    return [w for w in rec if issubclass(w.category, bindthem.BindWarning)]


def test_load_lists_what_is_left_out_once(tmp_path):
    h = _write(tmp_path, "mixed.h", MIXED)
    lib = _clib(tmp_path, MIXED_C, "mixed")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        got = bindthem.load(lib, h)
    (w,) = _bind_warnings(rec)
    assert got.__all__ == ["ok"] and got.ok(1) == 2
    msg = str(w.message)
    assert msg.splitlines() == [
        "%s binds 1 function; 3 declarations are not bound:" % h,
        "  mixed.h:3: no_size: unbindable: parameter 'x' is a pointer with no 'x_size' after it",
        "  mixed.h:4: tmpl: templated; needs instantiate.yml",
        "  mixed.h:5: gone: not in %s: it exports neither the C++ symbol _Z4gonei nor the C "
        "name gone" % got.__file__]
    # the static inline helper is the header's own business: not a shortfall
    assert "helper" not in msg
    # the same facts from the core, and each attribute says its own reason
    left = {x["name"]: x for x in bindthem.info(got).left_out}
    assert set(left) == {"no_size", "tmpl", "gone", "helper"}
    assert left["helper"]["deliberate"] and not left["gone"]["deliberate"]
    for name, why in [("no_size", "unbindable: parameter 'x' is a pointer"),
                      ("tmpl", "templated; needs instantiate.yml"),
                      ("gone", "it exports neither the C++ symbol"),
                      ("helper", "inline/static; not exported by the library")]:
        with pytest.raises(AttributeError) as e:
            getattr(got, name)
        assert ("mixed.h:%d declares %r, but this Library does not bind it: "
                % (left[name]["line"], name)) in str(e.value) and why in str(e.value)
        assert e.value.name == name
    with pytest.raises(AttributeError, match="^'Library' object has no attribute 'nope'$"):
        got.nope
    assert not hasattr(got, "nope") and hasattr(got, "ok")
    # the reasons come from the module's own __getattr__ (PEP 562), asked on a miss
    # only: no class-level hook on every lookup (lib.f costs a module's lookup and a
    # little more, not a Python call), and no reference cycle keeps a dropped Library
    assert "__getattr__" not in vars(type(got)) and "__getattribute__" not in vars(type(got))
    ref = weakref.ref(got)
    del got, e
    assert ref() is None


def test_everything_bound_or_deliberate_is_silent(tmp_path):
    h = _write(tmp_path, "quiet.h", "int ok(const int a) { return a; }\n"
               "static inline int helper(const int a) { return a; }\n"
               "template <class T> T unlisted(T a) { return a; }\n"
               "template <class T> T listed(T a) { return a; }\n"
               # helpers pyamg's headers have: unbindable, but a YAML or `inline` leaves them out
               "template <class T> void unb_tmpl(T *x) { }\n"
               "inline void unb_inline(double &x) { }\n")
    y = _write(tmp_path, "quiet.yml", "- types:\n    - [int]\n  functions: [listed]\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = bindthem.build(h, y, cache_dir=str(tmp_path / "cache"))
        bindthem.stubs.render(h, y)
    assert got.__all__ == ["listed", "ok"]
    assert sorted(x["name"] for x in bindthem.info(got).left_out) == [
        "helper", "unb_inline", "unb_tmpl", "unlisted"]
    with pytest.raises(AttributeError, match="not listed in instantiate.yml"):
        got.unlisted


def test_binding_nothing_warns_with_reasons(tmp_path):
    h = _write(tmp_path, "nothing.h", NOTHING)
    lib = _clib(tmp_path, "void no_size(double *x) { x[0] = 0; }\n", "nothing")
    with pytest.warns(bindthem.BindWarning) as rec:
        got = bindthem.load(lib, h)
    assert got.__all__ == [] and len(_bind_warnings(rec)) == 1
    assert str(rec[0].message) == (
        "%s binds no functions; 1 declaration is not bound:\n"
        "  nothing.h:1: no_size: unbindable: parameter 'x' is a pointer with no 'x_size' "
        "after it" % h)
    with pytest.warns(bindthem.BindWarning) as rec:
        built = bindthem.build(h, cache_dir=str(tmp_path / "cache"))
    assert built.__all__ == [] and len(_bind_warnings(rec)) == 1
    assert "no_size: unbindable" in str(rec[0].message)
    with pytest.warns(bindthem.BindWarning, match="no_size: unbindable"):
        bindthem.stubs.render(h)
    # only static/inline helpers: nothing bound, so they are listed too
    h2 = _write(tmp_path, "helpers.h", "static inline int helper(const int a) { return a; }\n")
    with pytest.warns(bindthem.BindWarning, match=r"helpers.h:1: helper: inline/static"):
        bindthem.build(h2, cache_dir=str(tmp_path / "cache"))


def test_a_header_that_only_includes(tmp_path):
    _write(tmp_path, "real.h", "int ok(const int a) { return a; }\n")
    h = _write(tmp_path, "umbrella.h", '#include "real.h"\n')
    with pytest.warns(bindthem.BindWarning, match=r"/umbrella.h binds no functions: it declares "
                      r"none that bindthem can read .*not in the files it #includes"):
        got = bindthem.build(h, cache_dir=str(tmp_path / "cache"))
    assert got.__all__ == []
    r = _cli(["-m", "bindthem", "build", h, "--cache-dir", str(tmp_path / "cache")])
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("error: %s binds no functions: it declares none" % h)


def test_many_left_out_shows_the_first_five_and_a_count(tmp_path):
    h = _write(tmp_path, "many.h", "int ok(const int a) { return a; }\n" + "".join(
        "void bad%d(double x[]) { }\n" % i for i in range(8)))
    with pytest.warns(bindthem.BindWarning) as rec:
        got = bindthem.build(h, cache_dir=str(tmp_path / "cache"))
    lines = str(rec[0].message).splitlines()
    assert lines[0] == "%s binds 1 function; 8 declarations are not bound:" % h
    assert [ln.split(":")[2].strip() for ln in lines[1:6]] == ["bad%d" % i for i in range(5)]
    assert lines[6] == "  and 3 more (bindthem.info(lib).left_out lists them all)"
    assert len(bindthem.info(got).left_out) == 8


def _cli(args):
    return subprocess.run([sys.executable] + args, capture_output=True, text=True, timeout=300)


def test_command_line_exit_codes(tmp_path):
    nothing = _write(tmp_path, "nothing.h", NOTHING)
    mixed = _write(tmp_path, "mixed.h", MIXED.replace("int gone(const int a);\n", ""))
    cache = str(tmp_path / "cache")
    # nothing to bind: exit 1 with the reasons, nothing written
    for args in (["-m", "bindthem", "build", nothing, "--cache-dir", cache],
                 ["-m", "bindthem.stubs", nothing, "-o", str(tmp_path / "nothing.pyi")]):
        r = _cli(args)
        assert r.returncode == 1, (args, r.stderr)
        assert r.stderr.startswith("error: %s binds no functions; 1 declaration is not "
                                   "bound:\n  nothing.h:1: no_size: unbindable: parameter 'x'"
                                   % nothing), r.stderr
    assert not (tmp_path / "nothing.pyi").exists()
    # templates without -i: the same exit 1, with the reason and what to pass
    tmpl = _write(tmp_path, "tmpl.h", "template <class T> T f(T a) { return a; }\n")
    r = _cli(["-m", "bindthem.stubs", tmpl])
    assert r.returncode == 1 and "tmpl.h:1: f: templated; needs instantiate.yml" in r.stderr
    assert "- types:\n    - [double]\n  functions: [f]" in r.stderr
    # something bound: exit 0, the rest said once on standard error
    for args in (["-m", "bindthem", "build", mixed, "--cache-dir", cache],
                 ["-m", "bindthem.stubs", mixed]):
        r = _cli(args)
        assert r.returncode == 0, (args, r.stderr)
        assert r.stderr.count("warning: %s binds 1 function; 2 declarations are not "
                              "bound:" % mixed) == 1, r.stderr
        assert "no_size: unbindable" in r.stderr and "tmpl: templated" in r.stderr


def test_cell_magic(tmp_path, monkeypatch, capsys):
    pytest.importorskip("IPython")
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("BINDTHEM_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "bindthem")
    cell = MIXED.replace("int gone(const int a);\n", "").replace(
        "int ok(const int a);", "int ok(const int a) { return a; }")
    shell.run_cell_magic("bindthem", "mixedcell", cell)
    err = capsys.readouterr().err
    # the template is bound open (instantiated on demand: no -t), so it is not left out
    assert err == ("%%bindthem mixedcell: warning: cell binds 2 functions; 1 declaration is "
                   "not bound:\n"
                   "  cell:3: no_size: unbindable: parameter 'x' is a pointer with no 'x_size' "
                   "after it\n"), err
    assert shell.user_ns["mixedcell"].__all__ == ["ok", "tmpl"]
    assert shell.user_ns["mixedcell"].tmpl.open
    with pytest.raises(UsageError) as e:
        shell.run_cell_magic("bindthem", "nothingcell", NOTHING)
    assert str(e.value).startswith("%%bindthem nothingcell: nothing to bind\n"
                                   "cell binds no functions; 1 declaration is not bound:\n"
                                   "  cell:1: no_size: unbindable")
    assert capsys.readouterr().err == ""  # said once: in the error
    assert np.int64(1)  # numpy stays importable in the shell's process
