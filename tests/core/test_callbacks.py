"""Function pointer parameters (csrc/py/bt_callback.c): a Python callable
called through a libffi closure made for the call, or a raw C function
pointer (a ctypes or cffi one, an object with an integer `address`, a
bindthem Function of the same C type); on both call paths; exceptions
kept and raised after the C function returns; callbacks from threads the
C function starts while the call has released the GIL; Python threads
calling at once; the refusals (and a CUDA kernel's, at bind time); dispatch
among remapped overloads; the signature, metadata and stub; FFTW's wisdom,
a callback API of a Debian library."""

import ctypes
import os
import subprocess
import sys
import textwrap
import traceback
import warnings

import numpy as np
import pytest

from sources import c_library
from support import python_env

import bindthem
from bindthem import _core

HEADER = """\
#ifdef __cplusplus
extern "C" {
#endif
typedef double (*integrand)(double x, void *data);
enum color { RED, GREEN = 5, BLUE };
/* Midpoint rule of f over [a, b] in n steps. */
double integrate(integrand f, void *data, double a, double b, int n);
/* f(0) + ... + f(n - 1). */
int apply_n(int (*f)(int), int n);
/* cb(names[i % 3], i) for i < n. */
void each_name(void (*cb)(const char *name, int i), int n);
/* f(0) + ... + f(n - 1) from each of two threads of its own: the sum. */
long in_threads(long (*f)(long), int n);
/* x * x, an integrand. */
double square(double x, void *data);
/* x * x * x. */
double cube(double x);
/* 3 * i. */
int triple(int i);
/* What f makes of x. */
double reduce(double (*f)(const double *x, int x_size), const double *x, int x_size);
/* f fills n doubles of a buffer of its own: their sum. */
double fill(void (*f)(double *out, int out_size), int n);
/* f of a 2x3 matrix. */
double matrix(double (*f)(const float *m, int m_size0, int m_size1));
/* f(k) as float. */
float scale(float (*f)(float), float x);
/* The sum of f(0..n-1). */
int colorize(enum color (*f)(int i), int n);
/* f given a function pointer of its own. */
int nested(int (*f)(int (*g)(int), int x), int x);
/* The length of the string f returns. */
int named(const char *(*f)(int), int k);
/* Whether f(k) is true. */
int truth(_Bool (*f)(int), int k);
/* An int overload, beside apply_n, under one Python name (pick). */
int apply_int(int k, int n);
typedef int (*unary)(int);
typedef float (*funary)(float);
/* Sets the handler (kept past the call: a C function), returns the one before. */
unary set_handler(unary h);
/* The handler's h(k), or -1 without one. */
int run_handler(int k);
/* No handler; returns the one before. */
unary clear_handler(void);
/* A float function: k / 2. */
funary get_half(void);
#ifdef __cplusplus
}
#endif
"""

SOURCE = """\
#include <pthread.h>
#include <string.h>
#include "cb.h"
double integrate(integrand f, void *data, double a, double b, int n)
{
    double h = (b - a) / n, s = 0;
    for (int i = 0; i < n; i++)
        s += f(a + (i + 0.5) * h, data);
    return s * h;
}
int apply_n(int (*f)(int), int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += f(i);
    return s;
}
void each_name(void (*cb)(const char *, int), int n)
{
    static const char *const names[] = {"alpha", "beta", "gamma"};
    for (int i = 0; i < n; i++)
        cb(names[i % 3], i);
}
struct job { long (*f)(long); int n; long sum; };
static void *work(void *p)
{
    struct job *j = p;
    for (int i = 0; i < j->n; i++)
        j->sum += j->f(i);
    return NULL;
}
long in_threads(long (*f)(long), int n)
{
    pthread_t t[2];
    struct job j[2] = {{f, n, 0}, {f, n, 0}};
    for (int k = 0; k < 2; k++)
        if (pthread_create(&t[k], NULL, work, &j[k]) != 0)
            return -1;
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    return j[0].sum + j[1].sum;
}
double square(double x, void *data) { (void)data; return x * x; }
double cube(double x) { return x * x * x; }
int triple(int i) { return 3 * i; }
double reduce(double (*f)(const double *, int), const double *x, int x_size)
{
    return f(x, x_size);
}
double fill(void (*f)(double *, int), int n)
{
    double buf[16] = {0}, s = 0;
    if (n > 16)
        n = 16;
    f(buf, n);
    for (int i = 0; i < n; i++)
        s += buf[i];
    return s;
}
double matrix(double (*f)(const float *, int, int))
{
    static const float m[2][3] = {{1, 2, 3}, {4, 5, 6}};
    return f(&m[0][0], 2, 3);
}
float scale(float (*f)(float), float x) { return f(x); }
int colorize(enum color (*f)(int), int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += (int)f(i);
    return s;
}
static int twice(int v) { return 2 * v; }
int nested(int (*f)(int (*)(int), int), int x) { return f(twice, x); }
int named(const char *(*f)(int), int k) { return (int)strlen(f(k)); }
int truth(_Bool (*f)(int), int k) { return f(k) ? 1 : 0; }
int apply_int(int k, int n) { return k * n; }
static unary handler;
unary set_handler(unary h) { unary old = handler; handler = h; return old; }
int run_handler(int k) { return handler ? handler(k) : -1; }
unary clear_handler(void) { return set_handler(NULL); }
static float half(float k) { return k / 2; }
funary get_half(void) { return half; }
"""

YAML = """\
instantiate:
- types: [null]
  functions: [apply_n, apply_int]
remaps:
  - apply_n: pick
  - apply_int: pick
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return c_library(tmp_path_factory, "cb", HEADER, SOURCE, flags=('-pthread',))


@pytest.fixture(scope="module")
def cb(built):
    return bindthem.load(*built)


@pytest.fixture(params=["direct", "ffi"])
def lib(request, cb):
    """The library, called through each path (libffi where forced)."""
    old = _core.force_ffi(request.param == "ffi")
    yield cb
    _core.force_ffi(old)


def test_python_callables(lib):
    assert lib.integrate(lambda x, data: x * x, None, 0.0, 1.0, 1000) == pytest.approx(1 / 3)
    assert lib.apply_n(lambda i: i * i, 5) == 30
    seen = []
    lib.each_name(lambda name, i: seen.append((name, i)), 4)
    assert seen == [("alpha", 0), ("beta", 1), ("gamma", 2), ("alpha", 3)]
    # bound methods, builtins, classes and objects with __call__ are callables too
    assert lib.apply_n(abs, 3) == 3 and lib.apply_n(int, 3) == 3
    assert lib.apply_n((7).__add__, 2) == 15

    class Plus:
        def __call__(self, i):
            return i + 1

    assert lib.apply_n(Plus(), 3) == 6
    assert lib.apply_n(lambda i: i, 0) == 0  # never called


def test_conversions(lib):
    # an enum as int, and returned as its integer type; a bool result; a float result
    assert lib.colorize(lambda i: 5, 3) == 15
    assert lib.truth(lambda k: k > 2, 3) == 1 and lib.truth(lambda k: 0, 3) == 0
    assert lib.scale(lambda x: x * 2, 1.5) == 3.0
    assert lib.scale(lambda x: 2, 1.5) == 2.0  # an int for a float, as an argument takes it
    assert lib.apply_n(lambda i: np.int16(i), 4) == 6


def test_arrays_are_views(lib):
    x = np.arange(5.0)
    got = []

    def f(v):
        got.append(v)
        assert v.flags.writeable is False and v.dtype == np.float64 and v.shape == (5,)
        assert np.shares_memory(v, x)
        return float(v.sum())

    assert lib.reduce(f, x) == 10.0 and len(got) == 1

    def g(out):
        assert out.flags.writeable and out.shape == (4,)
        out[:] = np.arange(1.0, 5.0)

    assert lib.fill(g, 4) == 10.0

    def h(m):
        assert m.shape == (2, 3) and m.dtype == np.float32 and not m.flags.writeable
        return float(m[1, 2] * 10 + m[0, 1])

    assert lib.matrix(h) == 62.0


def test_an_exception_is_raised_after_the_call(lib):
    calls = []

    def f(i):
        calls.append(i)
        if i == 2:
            raise ValueError("boom at %d" % i)
        return i

    with pytest.raises(ValueError, match="boom at 2") as info:
        lib.apply_n(f, 10)
    assert calls == [0, 1, 2]  # later invocations return 0 without calling Python
    names = [fr.name for fr in traceback.extract_tb(info.value.__traceback__)]
    assert "f" in names  # the callable's own frame: its traceback kept
    # the next call is a fresh one
    assert lib.apply_n(lambda i: 1, 3) == 3


def test_a_wrong_result_is_raised(lib):
    with pytest.raises(TypeError, match=r"apply_n\(\): the callback given for argument 'f' "
                                        r"\(int \(\*\)\(int\)\) must return int \(int\), not str"):
        lib.apply_n(lambda i: "x", 3)
    with pytest.raises(TypeError, match="must return int .*, not NoneType"):
        lib.apply_n(lambda i: None, 3)
    with pytest.raises(TypeError, match=r"must return float \(double\), not str"):
        lib.integrate(lambda x, d: "1", None, 0.0, 1.0, 4)
    with pytest.raises(OverflowError, match=r"returned 1099511627776, which does not fit in int"):
        lib.apply_n(lambda i: 2 ** 40, 3)
    with pytest.raises(OverflowError, match="does not fit in float"):
        lib.scale(lambda x: 1e300, 1.0)
    # a void callback's result is ignored
    lib.each_name(lambda name, i: "ignored", 2)


def run_py(code, built, timeout=300):
    """code run in a process of its own (a crash there fails one test),
    with `lib` the library bound (by `load(so, header, **LOAD)` when code
    sets LOAD first); its standard output."""
    prelude = "import sys, threading, bindthem\nso, header = sys.argv[1:3]\n"
    r = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code), *built],
                       capture_output=True, text=True, timeout=timeout, env=python_env())
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return r.stdout


def test_callbacks_from_threads_the_c_function_starts(built):
    """The C function calls from two pthreads of its own: the call released
    the GIL (gil="release", and "auto": a call with a closure releases it),
    and each invocation takes it (PyGILState_Ensure)."""
    out = run_py("""
        n = 2000
        for gil in ("release", "auto"):
            lib = bindthem.load(so, header, gil=gil)
            idents = set()
            def f(v):
                idents.add(threading.get_ident())
                return v
            assert lib.in_threads(f, n) == 2 * sum(range(n))
            assert len(idents) == 2 and threading.get_ident() not in idents, idents
            calls = []
            def bad(v):
                calls.append(v)
                if v == 7:
                    raise KeyError("from a thread")
                return 1
            try:
                lib.in_threads(bad, n)
            except KeyError as e:
                assert "from a thread" in str(e)
            else:
                raise AssertionError("no KeyError")
            assert len(calls) < 2 * n  # the invocations after it call nothing
        print("ok")
    """, built)
    assert out.strip() == "ok"


def test_python_threads_at_once(built):
    """8 Python threads calling functions with callbacks at once (each
    call its own closures), the GIL released around each C call."""
    out = run_py("""
        lib = bindthem.load(so, header)
        errors = []
        def worker(t):
            try:
                for _ in range(200):
                    assert lib.apply_n(lambda i: i + t, 50) == sum(range(50)) + 50 * t
                    r = lib.integrate(lambda x, d: float(t), None, 0.0, 2.0, 8)
                    assert abs(r - 2 * t) < 1e-9, r
                    assert lib.in_threads(lambda v: t, 10) == 20 * t
            except BaseException as e:
                errors.append(e)
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors, errors[0]
        print("ok")
    """, built)
    assert out.strip() == "ok"


def test_ctypes_function_pointers(lib, built):
    # a ctypes callback (its own closure, its own Python call)
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
    plus = proto(lambda i: i + 1)
    assert lib.apply_n(plus, 4) == 10
    # a C function of the library itself, through ctypes: no Python in between
    so = ctypes.CDLL(built[0])
    sq = ctypes.cast(so.square, ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double,
                                                 ctypes.c_void_p))
    assert lib.integrate(sq, None, 0.0, 1.0, 1000) == pytest.approx(1 / 3)
    assert lib.apply_n(ctypes.cast(so.triple, proto), 4) == 18


def test_cffi_function_pointers(lib, built):
    cffi = pytest.importorskip("cffi")
    ffi = cffi.FFI()
    plus = ffi.callback("int(int)", lambda i: i + 2)
    assert lib.apply_n(plus, 3) == 9
    ffi.cdef("int triple(int);")
    so = ffi.dlopen(built[0])
    assert lib.apply_n(so.triple, 4) == 18
    with pytest.raises(TypeError, match="must be a callable or a C function pointer"):
        lib.apply_n(ffi.new("int *"), 4)  # a cffi pointer, but no function's


def test_an_object_with_an_address(lib, built):
    class CFunc:  # as numba.cfunc's result: an integer `address`, not callable
        def __init__(self, address):
            self.address = address

    addr = ctypes.cast(ctypes.CDLL(built[0]).triple, ctypes.c_void_p).value
    assert lib.apply_n(CFunc(addr), 4) == 18
    with pytest.raises(ValueError, match="null function pointer"):
        lib.apply_n(CFunc(0), 4)


def test_a_bindthem_function_as_a_raw_pointer(lib):
    assert lib.integrate(lib.square, None, 0.0, 1.0, 1000) == pytest.approx(1 / 3)
    assert lib.apply_n(lib.triple, 4) == 18
    with pytest.raises(TypeError, match=r"integrate\(\): argument 'f' is the bindthem Function "
                                        r"cube, of C type double \(\*\)\(double\), but the "
                                        r"parameter's type is double \(\*\)\(double, void \*\)"):
        lib.integrate(lib.cube, None, 0.0, 1.0, 10)


def test_returned_function_pointers(lib):
    """A returned function pointer is a bindthem.FunctionPointer of its C
    type (None for NULL): a callback parameter of that type takes it, one of
    another type refuses it, ctypes calls it; it does not pickle."""
    import pickle

    lib.clear_handler()
    assert lib.run_handler(7) == -1
    assert lib.set_handler(lib.triple) is None  # none before: NULL
    p = lib.set_handler(lib.triple)
    assert isinstance(p, bindthem.FunctionPointer) and p.ctype == "int (*)(int)"
    assert lib.run_handler(7) == 21 and lib.apply_n(p, 4) == 18  # 0 + 3 + 6 + 9
    q = lib.set_handler(p)
    assert q == p and hash(q) == hash(p) and lib.run_handler(2) == 6
    half = lib.get_half()
    assert half.ctype == "float (*)(float)" and lib.scale(half, 3.0) == 1.5
    with pytest.raises(TypeError, match=r"scale\(\): argument 'f' is a function pointer of "
                       r"type int \(\*\)\(int\), not the parameter's float \(\*\)\(float\)"):
        lib.scale(p, 3.0)
    assert ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(int(p))(5) == 15
    assert "int (*)(int) at 0x" in repr(p)
    with pytest.raises(TypeError, match="does not pickle"):
        pickle.dumps(p)
    with pytest.raises(ValueError):
        bindthem.FunctionPointer(0, "int (*)(int)")


def test_refusals(lib):
    with pytest.raises(TypeError, match=r"apply_n\(\): argument 'f' needs a callable "
                                        r"\(int \(\*\)\(int\)\), not None"):
        lib.apply_n(None, 3)
    with pytest.raises(TypeError, match=r"argument 'f' \(position 1\) got int, expected a "
                                        r"callable or C function pointer: int \(\*\)\(int\)"):
        lib.apply_n(3, 3)
    with pytest.raises(TypeError, match=r"must be a callable or a C function pointer "
                                        r"\(int \(\*\)\(int\)\), not object"):
        lib.apply_n(object(), 3)
    with pytest.raises(TypeError, match=r"a Python callable cannot stand for "
                                        r"int \(\*\)\(int \(\*\)\(int\), int\) \(parameter "
                                        r"'g' is a function pointer\); pass a C function "
                                        r"pointer"):
        lib.nested(lambda g, x: x, 3)
    with pytest.raises(TypeError, match=r"const char \*\(\*\)\(int\) \(the return value is a "
                                        r"C string"):
        lib.named(lambda k: "abc", 1)
    # a raw pointer stands for any of them
    so_nested = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int)(lambda g, x: x + 1)
    assert lib.nested(so_nested, 3) == 4


def test_dispatch_among_overloads(built):
    so, header = built
    yml = os.path.join(os.path.dirname(header), "cb.yml")
    with open(yml, "w") as f:
        f.write(YAML)
    lib = bindthem.load(so, header, yml)
    assert lib.pick(lambda i: 2, 3) == 6  # the callback overload
    assert lib.pick(4, 3) == 12  # the int one
    assert lib.pick(lib.triple, 3) == 9
    with pytest.raises(TypeError, match="needs a callable"):
        lib.pick(None, 3)
    with pytest.raises(TypeError, match=r"the bindthem Function pick, which has 2 overloads: "
                                        r"pass one with exactly one, of the parameter's type "
                                        r"double \(\*\)\(double, void \*\)"):
        lib.integrate(lib.pick, None, 0.0, 1.0, 4)


def test_cuda_kernel_with_a_callback_is_refused(tmp_path, mock):
    import bindthem.cuda as cuda

    h = tmp_path / "k.cuh"
    h.write_text("__global__ void fill(float y[], int y_size);\n"
                 "__global__ void mapped(float y[], int y_size, float (*f)(float));\n")
    sym = bindthem.parse_header(str(h))["functions"][0]["overloads"][0]["symbol"]
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        lib = cuda.load(("bindthem-mock-module\nkernel %s 8 4\n" % sym).encode(), str(h))
    assert "fill" in lib.__all__ and "mapped" not in lib.__all__
    (out,) = [x for x in bindthem.info(lib).left_out if x["name"] == "mapped"]
    assert out["reason"] == ("a function whose parameter 'f' is a function pointer: a kernel "
                             "cannot call back into the host")


def test_signature_metadata_and_stub(cb, built):
    meta = bindthem.info(cb).plan.metadata()
    ovs = {f["name"]: f["overloads"][0] for f in meta["functions"]}
    assert ovs["integrate"]["signature"].startswith(
        "double integrate(double (*f)(double, void *), ")
    assert ovs["integrate"]["params"][0]["python"] == "Callable[[float, int | None], float]"
    assert ovs["each_name"]["params"][0]["python"] == "Callable[[str | None, int], object]"
    assert ovs["reduce"]["params"][0]["python"] == \
        "Callable[[numpy.typing.NDArray[numpy.float64]], float]"
    assert ovs["nested"]["params"][0]["python"] == "Callable[..., int]"
    from bindthem import stubs
    text = stubs.render(built[1])
    assert "from collections.abc import Callable\n" in text
    assert "\ndef apply_n(f: Callable[[int], int], n: int) -> int:\n" in text


def test_closures_are_freed(built):
    """Many calls with closures, some raising or refused, in a process of
    its own: under tests/run_asan.sh (libasan preloaded into it too) a
    closure used after it was freed fails it; without ASan (whose
    quarantine keeps freed memory) the process does not grow with the
    calls, as it would by a closure left unfreed in each."""
    out = run_py("""
        import os
        import numpy as np
        lib = bindthem.load(so, header)
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        f, x = (lambda i: i), np.arange(3.0)
        for k in range(3000):
            assert lib.apply_n(lambda i: i, 4) == 6
            assert lib.reduce(lambda v: float(v.sum()), x) == 3.0
            try:
                lib.apply_n(lambda i: 1 // 0, 3)
            except ZeroDivisionError:
                pass
            try:
                lib.apply_n(None, 3)
            except TypeError:
                pass
        before = rss()
        for k in range(100000):
            lib.apply_n(f, 2)
        grew = rss() - before
        assert "asan" in os.environ.get("LD_PRELOAD", "") or grew < 2 << 20, grew
        print("ok")
    """, built)
    assert out.strip() == "ok"


FFTW_HEADER = "/usr/include/fftw3.h"


@pytest.fixture(scope="module")
def fftw():
    if not os.path.exists(FFTW_HEADER):
        pytest.skip("needs fftw3.h (libfftw3-dev)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bindthem.BindWarning)  # what FFTW leaves out
        try:
            return bindthem.load("libfftw3.so.3", FFTW_HEADER)  # read after the preprocessor
        except OSError as e:
            pytest.skip("needs libfftw3.so.3: %s" % e)


def test_fftw_wisdom_through_callbacks(fftw):
    """fftw_export_wisdom(write_char, data) and fftw_import_wisdom(read_char,
    data): void (*)(char, void *) and int (*)(void *). (The text is not
    compared with fftw_export_wisdom_to_string's: that returns a malloc'd
    `char *`, which bindthem leaves out, and which could not be freed were it
    returned as a str.)"""
    chars = []
    fftw.fftw_export_wisdom(lambda c, data: chars.append(chr(c & 0xFF)), None)
    text = "".join(chars)
    assert text.startswith("(fftw-3.3") and text.rstrip().endswith(")")
    it = iter(text.encode())
    assert fftw.fftw_import_wisdom(lambda data: next(it, -1), None) == 1
