"""Handles through a call: a function that returns a pointer to an opaque
struct (`thing_t`, `gzFile`) returns a bindthem.Handle, which the functions
taking that type accept back (from any Library: by the type's key), and a
`void *` parameter takes too (or None); a wrong or closed one is refused; a
type's destructor (load()'s handles=) runs exactly once per handle, by
every route (called, close(), a with block, collected, interpreter exit);
a NULL return raises NullHandleError with errno, or gives None; threads
that use and close handles at once never free one under a call; zlib for
real, against Debian's zlib.h and libz.so.1; the metadata and stubs."""

import gc
import gzip
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import warnings

import pytest

from sources import c_library
from support import python_env

import bindthem
from bindthem import _core
from bindthem.errors import BindValueError, NullHandleError

HEADER = """\
typedef struct thing *thing_t;
typedef struct other *other_t;
/* A new thing of value v; NULL (errno ENOENT) for v < 0. */
thing_t thing_new(int v);
/* Its value. */
int thing_get(thing_t t);
/* Its value, read n times (a call that lasts). */
int thing_spin(thing_t t, int n);
/* Frees it (counted; logged when thing_log named a file). */
void thing_free(thing_t t);
/* Its value plus k. */
int thing_add(thing_t t, int k);
/* The address p holds. */
long thing_addr(void *p);
/* How many things were freed. */
int thing_frees(void);
/* Append each freed thing's value to the file at path. */
void thing_log(const char *path);
/* Another handle type. */
other_t other_new(void);
"""

SOURCE = r"""
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "thing.h"
#define MAGIC 0x7e1157
struct thing { int magic, v; };
struct other { int x; };
static int frees;
static char log_path[4096];
thing_t thing_new(int v)
{
    thing_t t;
    if (v < 0) { errno = ENOENT; return NULL; }
    t = malloc(sizeof *t);
    t->magic = MAGIC;
    t->v = v;
    return t;
}
static void check(thing_t t) { if (!t || t->magic != MAGIC) abort(); }
int thing_get(thing_t t) { check(t); return t->v; }
int thing_spin(thing_t t, int n)
{
    volatile int s = 0;
    for (int i = 0; i < n; i++) { check(t); s += t->v; }
    return s / (n ? n : 1);
}
void thing_free(thing_t t)
{
    FILE *f;
    check(t);
    __atomic_fetch_add(&frees, 1, __ATOMIC_SEQ_CST);
    if (log_path[0] && (f = fopen(log_path, "a"))) { fprintf(f, "%d\n", t->v); fclose(f); }
    t->magic = 0;
    free(t);
}
int thing_add(thing_t t, int k) { check(t); return t->v + k; }
long thing_addr(void *p) { return (long)p; }
int thing_frees(void) { return __atomic_load_n(&frees, __ATOMIC_SEQ_CST); }
void thing_log(const char *path) { snprintf(log_path, sizeof log_path, "%s", path); }
other_t other_new(void) { return calloc(1, sizeof(struct other)); }
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return c_library(tmp_path_factory, "thing", HEADER, SOURCE)


@pytest.fixture(scope="module")
def owned(built):
    """The library with thing_free as thing_t's destructor."""
    return bindthem.load(*built, handles={"thing_t": "thing_free"})


@pytest.fixture(scope="module")
def plain(built):
    """The same library with no destructor: nothing is freed for it."""
    return bindthem.load(*built)


@pytest.fixture(params=["direct", "ffi"])
def lib(request, owned):
    old = _core.force_ffi(request.param == "ffi")
    yield owned
    _core.force_ffi(old)


def run_py(code, *args, timeout=300):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=timeout, env=python_env())


def test_returned_and_passed_back(lib):
    h = lib.thing_new(5)
    assert type(h) is bindthem.Handle and not h.closed
    assert lib.thing_get(h) == 5 and lib.thing_add(h, 2) == 7 and lib.thing_get(t=h) == 5
    assert h.address == lib.thing_addr(h) != 0
    assert repr(h) == "<thing_t handle at 0x%x>" % h.address
    assert h.type.name == "thing_t" and h.type.key == "struct thing"
    assert h.type.destructor is lib.thing_free
    h.close()
    assert h.closed and repr(h) == "<thing_t handle (closed)>"


def test_wrong_handles_refused(lib, plain):
    h = lib.thing_new(1)
    o = lib.other_new()
    with pytest.raises(TypeError, match=r"thing_get\(\): argument 't' must be a thing_t handle "
                                        r"\(struct thing\), not a other_t handle \(struct other\)"):
        lib.thing_get(o)
    with pytest.raises(TypeError, match=r"thing_get\(\): argument 't' must be a thing_t handle "
                                        r"\(struct thing\), not int"):
        lib.thing_get(h.address)
    with pytest.raises(TypeError, match=r"argument 't' must be a thing_t handle .*not NoneType"):
        lib.thing_add(None, 1)
    # a handle of the same key from another Library is the same type
    assert plain.thing_get(h) == 1 and plain.thing_add(h, 1) == 2
    h.close()
    with pytest.raises(ValueError, match=r"thing_get\(\): argument 't' is a closed thing_t "
                                         r"handle"):
        lib.thing_get(h)
    with pytest.raises(ValueError, match="closed"):
        plain.thing_get(h)
    with pytest.raises(ValueError, match="closed"):
        with h:
            pass
    with pytest.raises(TypeError):
        bindthem.Handle()


def test_void_pointers_take_none_or_any_handle(lib):
    h, o = lib.thing_new(3), lib.other_new()
    assert lib.thing_addr(None) == 0
    assert lib.thing_addr(h) == h.address and lib.thing_addr(o) == o.address
    with pytest.raises(TypeError, match=r"thing_addr\(\): argument 'p' \(void \*\) must be a "
                                        r"Handle or None, not int"):
        lib.thing_addr(5)
    with pytest.raises(TypeError, match="not bytes"):
        lib.thing_addr(b"x")
    h.close()
    with pytest.raises(ValueError, match=r"argument 'p' is a closed thing_t handle"):
        lib.thing_addr(h)


def test_destructor_runs_once_when_called(lib):
    n = lib.thing_frees()
    h = lib.thing_new(1)
    assert lib.thing_free(h) is None
    assert h.closed and lib.thing_frees() == n + 1
    with pytest.raises(ValueError, match=r"thing_free\(\): argument 't' is a closed"):
        lib.thing_free(h)
    h.close()  # closed already: nothing
    del h
    gc.collect()
    assert lib.thing_frees() == n + 1


def test_destructor_runs_once_on_close_and_with(lib):
    n = lib.thing_frees()
    h = lib.thing_new(2)
    h.close()
    h.close()
    assert lib.thing_frees() == n + 1
    with lib.thing_new(3) as h2:
        assert lib.thing_get(h2) == 3
    assert h2.closed and lib.thing_frees() == n + 2
    with pytest.raises(KeyError):
        with lib.thing_new(4):
            raise KeyError  # closed all the same
    assert lib.thing_frees() == n + 3


def test_destructor_runs_once_when_collected(lib):
    n = lib.thing_frees()
    h = lib.thing_new(4)
    del h
    assert lib.thing_frees() == n + 1

    class Box:
        pass

    b = Box()
    b.self, b.h = b, lib.thing_new(5)  # unreachable only through the collector
    del b
    gc.collect()
    assert lib.thing_frees() == n + 2


def test_no_destructor_frees_nothing(plain):
    n = plain.thing_frees()
    h = plain.thing_new(6)
    assert h.type.destructor is None
    h.close()
    assert h.closed and plain.thing_frees() == n
    h2 = plain.thing_new(7)
    del h2
    gc.collect()
    assert plain.thing_frees() == n
    # the function itself still frees what it is given
    h3 = plain.thing_new(8)
    plain.thing_free(h3)
    assert plain.thing_frees() == n + 1 and not h3.closed  # no destructor: not marked


def test_null_return(built, lib):
    with pytest.raises(NullHandleError) as e:
        lib.thing_new(-1)
    assert str(e.value) == "thing_new returned NULL: [Errno 2] No such file or directory"
    assert e.value.errno == 2 and e.value.function == "thing_new"
    assert isinstance(e.value, OSError) and isinstance(e.value, bindthem.BindError)
    assert pickle.loads(pickle.dumps(e.value)).errno == 2
    none = bindthem.load(*built, null_handles="none")
    assert none.thing_new(-1) is None and none.thing_get(none.thing_new(1)) == 1
    some = bindthem.load(*built, null_handles={"thing_new": "none"})
    assert some.thing_new(-1) is None
    raising = bindthem.load(*built, null_handles={"thing_new": "raise"})
    with pytest.raises(NullHandleError):
        raising.thing_new(-1)


def test_options_checked(built):
    with pytest.raises(BindValueError, match=r"handles=\{'nope': 'thing_free'\}: 'nope' is no "
                                             r"handle type of this header \(its handle types: "
                                             r"thing_t, other_t\)"):
        bindthem.load(*built, handles={"nope": "thing_free"})
    with pytest.raises(BindValueError, match=r"a destructor takes exactly one parameter, a "
                                             r"thing_t handle \(struct thing\); thing_add "
                                             r"takes 2$"):
        bindthem.load(*built, handles={"thing_t": "thing_add"})
    with pytest.raises(BindValueError, match=r"other_t handle \(struct other\); thing_free "
                                             r"takes a handle of type thing_t$"):
        bindthem.load(*built, handles={"other_t": "thing_free"})
    with pytest.raises(BindValueError, match="thing_addr takes one that is no handle"):
        bindthem.load(*built, handles={"thing_t": "thing_addr"})
    with pytest.raises(BindValueError, match="the header declares no function thing_gone"):
        bindthem.load(*built, handles={"thing_t": "thing_gone"})
    with pytest.raises(BindValueError, match=r"null_handles=\{'thing_get': \.\.\.\}: thing_get "
                                             r"returns no handle"):
        bindthem.load(*built, null_handles={"thing_get": "none"})
    with pytest.raises(BindValueError, match=r"null_handles='maybe': expected 'raise'"):
        bindthem.load(*built, null_handles="maybe")
    with pytest.raises(bindthem.BindTypeError, match="handles="):
        bindthem.load(*built, handles=["thing_free"])


def test_close_while_in_use_is_refused(built):
    """A call holds its handle: a close from another thread waits for no one
    but is refused ("in use"); the handle stays usable."""
    r = run_py("""
        import sys, threading, time
        import bindthem
        lib = bindthem.load(sys.argv[1], sys.argv[2], handles={"thing_t": "thing_free"},
                            gil="release")
        h = lib.thing_new(9)
        started = threading.Event()
        def spin():
            started.set()
            lib.thing_spin(h, 300_000_000)
        t = threading.Thread(target=spin)
        t.start()
        started.wait()
        time.sleep(0.05)
        refused = 0
        while t.is_alive():
            try:
                h.close()
                break
            except RuntimeError as e:
                assert "in use by 1 call" in str(e), e
                refused += 1
            time.sleep(0.01)
        t.join()
        h.close()
        print(refused, lib.thing_frees(), h.closed)
    """, *built)
    assert r.returncode == 0, r.stdout + r.stderr
    refused, frees, closed = r.stdout.split()
    assert int(refused) > 0 and frees == "1" and closed == "True"


THREADS = """
import gc, random, sys, threading
import bindthem
lib = bindthem.load(sys.argv[1], sys.argv[2], handles={"thing_t": "thing_free"},
                    gil="release")
SLOTS = 32
lock = threading.Lock()
slots = [lib.thing_new(i) for i in range(SLOTS)]
made = [SLOTS]
outcomes = {"called": 0, "closed": 0, "freed": 0, "in use": 0, "refused closed": 0}

def renew(i, old):
    # the closer that finds its old handle still in the slot puts a new one there
    with lock:
        if slots[i] is old:
            slots[i] = lib.thing_new(i)
            made[0] += 1

def worker(k):
    rnd = random.Random(k)
    mine = dict.fromkeys(outcomes, 0)
    for _ in range(3000):
        i = rnd.randrange(SLOTS)
        h = slots[i]
        op = rnd.random()
        try:
            if op < 0.9:
                assert lib.thing_spin(h, rnd.randrange(1, 100000)) == i
                assert lib.thing_addr(h) == h.address
                mine["called"] += 1
            elif op < 0.95:
                h.close()
                mine["closed"] += 1
                renew(i, h)
            else:
                lib.thing_free(h)
                mine["freed"] += 1
                renew(i, h)
        except RuntimeError as e:
            assert "in use" in str(e), e
            mine["in use"] += 1
        except ValueError as e:
            assert "closed" in str(e), e
            mine["refused closed"] += 1
    with lock:
        for o in mine:
            outcomes[o] += mine[o]

threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
del slots[:]
gc.collect()
print(lib.thing_frees(), made[0], outcomes)
assert lib.thing_frees() == made[0], (lib.thing_frees(), made[0])
assert outcomes["in use"] > 0, outcomes
assert bindthem._core._open_handle_count() == 0
"""


def test_threads_use_and_close_at_once(built, tmp_path):
    """8 threads call with, close and free 32 slots' handles at random (a
    closed one replaced by a new one; one replaced unclosed is collected),
    the GIL released around every call: each thing is freed exactly once and
    never while a call uses it (a close then is refused, "in use"; thing_spin
    aborts on a freed thing; under tests/run_asan.sh a use after free is a
    report)."""
    (tmp_path / "threads.py").write_text(THREADS)
    r = subprocess.run([sys.executable, str(tmp_path / "threads.py"), *built],
                       capture_output=True, text=True, timeout=600, env=python_env())
    assert r.returncode == 0, r.stdout + r.stderr


def test_open_handles_closed_at_exit_newest_first(built, tmp_path):
    log = tmp_path / "freed.txt"
    r = run_py("""
        import sys
        import bindthem
        lib = bindthem.load(sys.argv[1], sys.argv[2], handles={"thing_t": "thing_free"})
        lib.thing_log(sys.argv[3])
        kept = [lib.thing_new(v) for v in (1, 2, 3)]
        lib.thing_new(4).close()
        lib.thing_free(lib.thing_new(5))
        plain = bindthem.load(sys.argv[1], sys.argv[2])
        unowned = plain.thing_new(6)  # no destructor: never freed
    """, *built, str(log))
    assert r.returncode == 0, r.stdout + r.stderr
    assert log.read_text().split() == ["4", "5", "3", "2", "1"]


def test_pickle_keeps_the_options(built, tmp_path):
    lib = bindthem.load(*built, handles={"thing_t": "thing_free"}, null_handles="none")
    (tmp_path / "lib.pkl").write_bytes(pickle.dumps(lib))
    r = run_py("""
        import pickle, sys
        import bindthem
        lib = pickle.loads(open(sys.argv[1], "rb").read())
        h = lib.thing_new(1)
        print(h.type.destructor.__name__, lib.thing_new(-1))
        h.close()
        print(lib.thing_frees())
    """, str(tmp_path / "lib.pkl"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["thing_free", "None", "1"]


def test_metadata_and_stub(built):
    so, header = built
    meta = bindthem.parse_header(header)
    assert meta["handles"] == [{"name": "thing_t", "key": "struct thing", "line": 4},
                               {"name": "other_t", "key": "struct other", "line": 20}]
    assert meta["callbacks"] == [] and meta["structs"] == []
    decls = {d["name"]: d for d in meta["declarations"]}
    assert decls["thing_new"]["return"]["handle"] == "thing_t"
    assert decls["thing_get"]["params"][0]["handle"] == "thing_t"
    p = decls["thing_addr"]["params"][0]
    assert p["voidp"] and p["handle"] is None and p["callback"] is None and p["struct"] is None
    ovs = {f["name"]: f["overloads"][0] for f in meta["functions"]}
    assert ovs["thing_new"]["return"]["python"] == "bindthem.Handle"
    assert ovs["thing_get"]["params"][0]["python"] == "bindthem.Handle"
    assert ovs["thing_addr"]["params"][0]["python"] == "bindthem.Handle | None"
    from bindthem.stubs import render
    stub = render(header)
    assert "import bindthem\n" in stub
    assert "def thing_new(v: int) -> bindthem.Handle:\n" in stub
    assert "def thing_get(t: bindthem.Handle) -> int:\n" in stub
    assert "def thing_addr(p: bindthem.Handle | None) -> int:\n" in stub


ZLIB_H = "/usr/include/zlib.h"


@pytest.fixture(scope="module")
def zlib():
    if not os.path.exists(ZLIB_H) or not shutil.which("cc"):
        pytest.skip("needs zlib.h (zlib1g-dev) and cc")
    try:
        with warnings.catch_warnings():  # what zlib.h declares that bindthem leaves out
            warnings.simplefilter("ignore", bindthem.BindWarning)
            return bindthem.load("libz.so.1", ZLIB_H, handles={"gzFile": "gzclose"})
    except OSError as e:
        pytest.skip("no libz.so.1: %s" % e)


def test_zlib_writes_a_gzip_file(zlib, tmp_path):
    path = str(tmp_path / "out.gz")
    f = zlib.gzopen(path, "wb")
    assert repr(f).startswith("<gzFile handle at 0x")
    assert zlib.gzputs(f, "hello, ") == 7 and zlib.gzputs(f, b"world\n") == 6
    assert zlib.gzclose(f) == 0 and f.closed
    with gzip.open(path, "rb") as g:
        assert g.read() == b"hello, world\n"
    with zlib.gzopen(path, "ab") as f2:
        zlib.gzputs(f2, "again\n")
    assert f2.closed
    with gzip.open(path, "rb") as g:
        assert g.read() == b"hello, world\nagain\n"
    f3 = zlib.gzopen(path, "rb")
    del f3  # closed by its destructor: nothing leaks, nothing is freed twice
    gc.collect()


def test_zlib_null_says_errno(zlib, tmp_path):
    with pytest.raises(NullHandleError, match=r"^gzopen returned NULL: \[Errno 2\] No such "
                                              r"file or directory$"):
        zlib.gzopen(str(tmp_path / "no" / "such.gz"), "rb")


def test_cuda_kernel_with_a_handle_is_refused(tmp_path, mock):
    """A kernel on a device cannot use a host pointer: one that takes a
    handle or a void * is left out at bind time, saying why."""
    import bindthem.cuda as cuda

    h = tmp_path / "k.cuh"
    h.write_text("typedef struct plan *plan_t;\n"
                 "__global__ void fill(float y[], int y_size);\n"
                 "__global__ void planned(float y[], int y_size, plan_t p);\n"
                 "__global__ void opaque(float y[], int y_size, void *p);\n")
    syms = {f["name"]: f["overloads"][0]["symbol"]
            for f in bindthem.parse_header(str(h))["functions"]}
    text = "bindthem-mock-module\n" + "".join("kernel %s 8 4\n" % s for s in syms.values())
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        lib = cuda.load(text.encode(), str(h))
    assert "fill" in lib.__all__ and "planned" not in lib.__all__ and "opaque" not in lib.__all__
    why = {x["name"]: x for x in bindthem.info(lib).left_out}
    assert why["planned"]["reason"] == ("a function whose parameter 'p' is a handle: a kernel "
                                        "cannot use a host pointer")
    assert why["opaque"]["reason"].startswith("a function whose parameter 'p' is a void *")
    assert not why["planned"]["deliberate"]


BAD_HEADER = """\
#ifdef __cplusplus
extern "C" {
#endif
typedef struct bad *bad_t;
/* A new bad thing. */
bad_t bad_new(int v);
/* Throws instead of freeing. */
void bad_free(bad_t b);
#ifdef __cplusplus
}
#endif
"""

BAD_SOURCE = """\
#include <stdexcept>
#include "bad.h"
struct bad { int v; };
bad_t bad_new(int v) { return new bad{v}; }
void bad_free(bad_t b) { delete b; throw std::runtime_error("cannot free"); }
"""


def test_destructor_errors(tmp_path):
    """A destructor that fails: close() raises it (the handle is closed all
    the same); while the Handle is finalized, it goes to sys.unraisablehook."""
    from sources import CXX

    if not shutil.which(CXX):
        pytest.skip("needs a C++ compiler")
    (tmp_path / "bad.h").write_text(BAD_HEADER)
    (tmp_path / "bad.cpp").write_text(BAD_SOURCE)
    so = str(tmp_path / "libbad.so")
    subprocess.run([CXX, "-O1", "-fPIC", "-shared", str(tmp_path / "bad.cpp"), "-o", so],
                   check=True)
    lib = bindthem.load(so, str(tmp_path / "bad.h"), handles={"bad_t": "bad_free"})
    h = lib.bad_new(1)
    with pytest.raises(RuntimeError, match="cannot free"):
        h.close()
    assert h.closed
    h.close()  # closed: nothing runs again
    seen = []
    old, sys.unraisablehook = sys.unraisablehook, seen.append
    try:
        h2 = lib.bad_new(2)
        del h2
        gc.collect()
    finally:
        sys.unraisablehook = old
    assert len(seen) == 1 and isinstance(seen[0].exc_value, RuntimeError)
    assert "cannot free" in str(seen[0].exc_value)
