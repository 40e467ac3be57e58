"""Unaligned arrays (csrc/py/bt_call.c, invoke_temps): passed as aligned
temporaries, written ones copied back (also when the kernel throws), refused
when a copy would change what the kernel sees (shared memory), counted in
Function.stats.

Every CPU dtype of the table at every byte offset 1..itemsize-1 (dtypes of
one byte have none: any address is aligned for them), a const and a writable
array, against the same kernel on aligned copies, bit for bit. The kernels
(tests/data/kernels/unaligned.h) throw when they receive a pointer that is
not aligned for their type. Everything runs in a child interpreter (a wrong
pointer can crash it), once on each call path: the direct call and libffi
(BINDTHEM_FFI=1); the parent checks what the child saw.

Run directly, this file is that child: ``python test_unaligned.py LIB HEADER
YML OUT``.
"""

import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest

N = 7  # elements per array in the dtype cases


def cpu_rows():
    """The table's rows a CPU kernel takes (not void, not the CUDA-only
    2-byte floats)."""
    from bindthem import _core
    return [t for t in _core.scalar_types()
            if t["c"] != "void" and not t["c"].startswith("__")]


def placed(values, off, buf=None):
    """A writable array holding values whose address is off bytes past a
    multiple of 64, made as a network buffer makes one: np.frombuffer over a
    bytearray."""
    values = np.asarray(values)
    buf = bytearray(values.nbytes + 128) if buf is None else buf
    base = np.frombuffer(buf, np.uint8).ctypes.data
    a = np.frombuffer(buf, values.dtype, len(values), (-base) % 64 + off)
    a[...] = values
    assert a.flags.writeable and a.flags.c_contiguous
    assert a.flags.aligned == (a.ctypes.data % values.dtype.alignment == 0)
    return a


def sample(dt, seed):
    """N bit-rich values of dtype dt (small integers: 3y + a never overflows)."""
    i = np.arange(N) + seed
    if dt.kind == "b":
        return (i % 3 == 0).astype(dt)
    if dt.kind in "iu":
        return (i * 7 % 5).astype(dt)
    if dt.kind == "f":
        return (i * 0.1 - 0.37).astype(dt) / dt.type(3)
    return ((i * 0.1 - 0.37) + 1j * (i / 7.0 + 0.01)).astype(dt)


def outcome(f, *args, **kwargs):
    try:
        return ("ret", f(*args, **kwargs))
    except Exception as e:
        return ("exc", type(e).__name__, str(e))


def delta(f, before):
    return {k: v - before[k] for k, v in f.stats.items()}


def child(lib_path, header_path, yml_path, out_path):
    import bindthem
    from bindthem import _core

    lib = bindthem.load(lib_path, header_path, yml_path)
    f = lib.axpy3
    got = {"ffi": _core.force_ffi(), "paths": f._call_paths + lib.dot2._call_paths,
           "rows": [], "yml": list(f.overloads)}

    # every dtype, every offset: const a, writable y, and both unaligned
    for row in cpu_rows():
        dt = np.dtype(row["numpy"])
        for off in range(dt.itemsize):
            for which in ("a", "y", "ay"):
                a0, y0 = sample(dt, 1), sample(dt, 2)
                ra = outcome(f, a0, y0, 0)  # the aligned run
                a = placed(sample(dt, 1), off if "a" in which else 0)
                y = placed(sample(dt, 2), off if "y" in which else 0)
                a_before, before = a.tobytes(), f.stats
                r = outcome(f, a, y, 0)
                got["rows"].append({
                    "c": row["c"], "off": off, "which": which, "ra": ra, "r": r,
                    "y0": y0.tobytes(), "y": y.tobytes(), "a_kept": a.tobytes() == a_before,
                    "unaligned": int(not a.flags.aligned) + int(not y.flags.aligned),
                    "y_unaligned": not y.flags.aligned, "stats": delta(f, before)})

    # the kernel throws after writing y: y holds what the aligned run left
    got["throw"] = []
    for cname in ("double", "std::complex<double>", "short", "float"):
        dt = np.dtype({t["c"]: t["numpy"] for t in cpu_rows()}[cname])
        y0 = sample(dt, 2)
        ra = outcome(f, sample(dt, 1), y0, 1)
        a, y = placed(sample(dt, 1), 1), placed(sample(dt, 2), 1)
        before = f.stats
        got["throw"].append((cname, ra, outcome(f, a, y, 1), y0.tobytes(), y.tobytes(),
                             delta(f, before)))

    # shared memory: two views of one buffer
    def views(off1, n1, off2, n2):
        buf = bytearray(8 * 16 + 64)
        placed(np.arange(16.0) + 0.5, 0, buf)
        base = (-np.frombuffer(buf, np.uint8).ctypes.data) % 64
        return (buf, np.frombuffer(buf, np.float64, n1, base + off1),
                np.frombuffer(buf, np.float64, n2, base + off2))

    ov = {}
    for name, fn, (o1, n1, o2, n2) in [
        ("same y", f, (1, 4, 1, 4)),         # a and y the same unaligned memory
        ("y unaligned", f, (0, 4, 9, 4)),    # a aligned, y unaligned over its bytes
        ("a unaligned", f, (1, 4, 16, 4)),   # y aligned, a unaligned over its bytes
        ("both written", lib.swap2, (1, 4, 25, 4)),
        ("both const", lib.dot2, (1, 4, 9, 4)),
        ("touching", f, (1, 4, 33, 4)),      # adjacent: no byte shared
    ]:
        buf, a, y = views(o1, n1, o2, n2)
        tail = (0,) if fn is f else ()
        ca, cy = a.copy(), y.copy()  # the aligned run, on copies
        ref = outcome(fn, ca, cy, *tail)
        kept, before = bytes(buf), fn.stats
        r = outcome(fn, a, y, *tail)
        ov[name] = (r, bytes(buf) == kept, delta(fn, before), ref,
                    (a.tobytes(), y.tobytes()) == (ca.tobytes(), cy.tobytes()))
    got["overlap"] = ov

    # strided, reversed and Fortran-ordered arrays are passed as aligned C-contiguous
    # copies, a written one copied back: as the contiguous run on copies of them
    dt = np.dtype(np.float64)
    mis = {}
    for name, a, y in [
        ("strided y", placed(sample(dt, 1), 1), sample(dt, 2).repeat(2)[::2]),
        ("unaligned strided y", sample(dt, 1), placed(sample(dt, 2).repeat(2), 1)[::2]),
        ("unaligned strided a", placed(sample(dt, 1).repeat(2), 3)[::2], sample(dt, 2)),
        ("reversed y", sample(dt, 1), sample(dt, 2)[::-1]),
    ]:
        ca, cy = np.ascontiguousarray(a), np.ascontiguousarray(y)
        ref = outcome(f, ca, cy, 0)
        before = f.stats
        r = outcome(f, a, y, 0)
        mis[name] = (r == ref, y.tobytes() == cy.tobytes(), delta(f, before))
    before = f.stats
    mis["unaligned read-only y"] = (outcome(
        f, np.zeros(N), np.frombuffer(bytes(8 * N + 1), np.float64, N, 1), 0), delta(f, before))
    got["misfits"] = mis
    # copy_const (no longer needed) changes nothing: the strided const array and the
    # unaligned writable one are both the call's temporaries
    y = placed(sample(dt, 2), 5)
    before = f.stats
    with bindthem.options(copy_const=True):
        r = outcome(f, sample(dt, 1).repeat(2)[::2], y, 0)
    y0 = sample(dt, 2)
    f(sample(dt, 1), y0, 0)
    got["copy_const"] = (r, y.tobytes() == y0.tobytes(), delta(f, before))

    # large arrays (the GIL is released around the kernel), keywords, empty arrays,
    # a writable array alone
    big_a, big_y = np.linspace(0, 1, 3000), np.linspace(1, 2, 3000)
    a, y = placed(big_a, 4), placed(big_y, 4)
    f(big_a, big_y, 0)
    got["big"] = (outcome(f, a, y, 0), y.tobytes() == big_y.tobytes())
    # 300 doubles each: the first temporary in the call's own 4 KiB, the second malloc'd
    mid_a, mid_y = np.linspace(0, 1, 300), np.linspace(1, 2, 300)
    a, y = placed(mid_a, 4), placed(mid_y, 4)
    f(mid_a, mid_y, 0)
    got["mid"] = (outcome(f, a, y, 0), y.tobytes() == mid_y.tobytes())
    a, y = placed(sample(dt, 1), 2), placed(sample(dt, 2), 6)
    y0 = sample(dt, 2)
    f(sample(dt, 1), y0, 0)
    got["keywords"] = (outcome(f, y=y, a=a, fail=0), y.tobytes() == y0.tobytes())
    e = np.frombuffer(bytearray(16), np.float64, 0, 3)
    before = f.stats
    got["empty"] = (e.flags.aligned, outcome(f, e, e, 0), delta(f, before))
    x = placed(np.zeros(5), 7)
    got["alone"] = (outcome(lib.iota1, x), x.tolist(), lib.iota1.stats)

    # counted from threads (the kernel runs without the GIL)
    g = lib.swap2
    before, errors = g.stats, []

    def work():
        try:
            for _ in range(100):
                g(placed(np.zeros(8), 1), placed(np.ones(8), 2))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    with bindthem.options(gil="release"):
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    got["threads"] = (errors, delta(g, before))
    with open(out_path, "wb") as fh:
        pickle.dump(got, fh)


@pytest.fixture(scope="module")
def built(libdir, tmp_path_factory):
    from sources import compile_cxx, kernel

    lib = compile_cxx(libdir, "unaligned", kernel("unaligned.h"), kernel("unaligned.yml"))
    return lib, kernel("unaligned.h"), kernel("unaligned.yml"), tmp_path_factory.mktemp("out")


@pytest.fixture(scope="module", params=["direct", "ffi"])
def seen(request, built):
    from support import python_env

    lib, h, y, d = built
    out = d / ("%s.pickle" % request.param)
    env = python_env()
    env.pop("BINDTHEM_FFI", None)
    if request.param == "ffi":
        env["BINDTHEM_FFI"] = "1"
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), lib, h, y, str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out, "rb") as fh:
        got = pickle.load(fh)
    assert got["ffi"] is (request.param == "ffi")
    assert set(got["paths"]) == {"direct"}  # so BINDTHEM_FFI=1 is what makes the libffi run
    return got


def nothing(**counts):
    return {"aligned_copies": 0, "copy_backs": 0, "const_copies": 0, "layout_copies": 0, **counts}


def test_the_fixture_covers_every_cpu_dtype(seen):
    # a new row of the table needs its line in unaligned.yml
    assert {r["c"] for r in seen["rows"]} == {t["c"] for t in cpu_rows()}
    assert len(seen["yml"]) == len(cpu_rows())


def same_bits(c, got, want):
    """Whether arrays of C type c (their bytes) hold the same values bit for bit;
    x87 long double's 6 padding bytes of 16, which a store leaves as they were,
    left out."""
    dt = np.dtype({t["c"]: t["numpy"] for t in cpu_rows()}[c])
    if dt.type in (np.longdouble, np.clongdouble) and np.finfo(np.longdouble).nmant == 63:
        keep = np.tile(np.arange(16) < 10, len(got) // 16)
        got, want = (np.frombuffer(b, np.uint8)[keep].tobytes() for b in (got, want))
    return got == want


def test_every_dtype_at_every_offset(seen):
    copied = 0
    for row in seen["rows"]:
        case = (row["c"], row["off"], row["which"])
        assert row["ra"][0] == "ret" and row["ra"][1] == N, case
        assert row["r"] == row["ra"], case          # the kernel saw aligned pointers
        assert same_bits(row["c"], row["y"], row["y0"]), case  # the aligned run's result
        assert row["a_kept"], case                  # the const array untouched
        n, back = row["unaligned"], int(row["y_unaligned"])
        assert row["stats"] == nothing(aligned_copies=n, copy_backs=back), case
        if row["off"] == 0:
            assert n == 0, case                     # aligned calls count nothing
        copied += n
    assert copied > 200  # the offsets did make unaligned arrays


def test_copy_back_when_the_kernel_throws(seen):
    for cname, ra, r, y0, y, stats in seen["throw"]:
        assert ra == ("exc", "RuntimeError",
                      "axpy3(): the kernel threw a C++ exception: failed after writing y")
        assert r == ra, cname
        assert y == y0, cname  # written before the throw, copied back
        assert stats == nothing(aligned_copies=2, copy_backs=1), cname


SHARE = ("bindthem passes such an array as an aligned C-contiguous copy, which would change "
         "what the kernel sees; pass arrays that do not share memory (a copy of one of them)")


@pytest.mark.parametrize("case, msg", [
    ("same y", "axpy3(): argument 'a' (position 1) is an unaligned array that shares memory "
     "with argument 'y' (position 2), and the kernel writes the second: "),
    ("y unaligned", "axpy3(): argument 'y' (position 2) is an unaligned array that shares "
     "memory with argument 'a' (position 1), and the kernel writes the first: "),
    ("a unaligned", "axpy3(): argument 'a' (position 1) is an unaligned array that shares "
     "memory with argument 'y' (position 2), and the kernel writes the second: "),
    ("both written", "swap2(): argument 'x' (position 1) is an unaligned array that shares "
     "memory with argument 'y' (position 2), and the kernel writes both: "),
])
def test_shared_memory_refused(seen, case, msg):
    r, kept, stats, _, _ = seen["overlap"][case]
    assert r == ("exc", "ValueError", msg + SHARE)
    assert kept  # the caller's buffer untouched
    assert stats == nothing()


def test_shared_memory_that_nobody_writes_is_fine(seen):
    r, kept, stats, ref, same = seen["overlap"]["both const"]
    assert r == ref and r[0] == "ret" and kept
    assert stats == nothing(aligned_copies=2)
    # adjacent views: a's bytes end where y's begin
    r, kept, stats, ref, same = seen["overlap"]["touching"]
    assert r == ref == ("ret", 4) and same
    assert stats == nothing(aligned_copies=2, copy_backs=1)


def test_strided_arrays_are_copies_and_read_only_ones_refused(seen):
    mis = seen["misfits"]
    for name, stats in [
            ("strided y", nothing(aligned_copies=1, layout_copies=1, copy_backs=1)),
            ("unaligned strided y", nothing(layout_copies=1, copy_backs=1)),
            ("unaligned strided a", nothing(layout_copies=1)),
            ("reversed y", nothing(layout_copies=1, copy_backs=1))]:
        same_result, same_y, got = mis[name]
        assert same_result and same_y, name
        assert got == stats, name
    r, stats = mis["unaligned read-only y"]
    assert r == ("exc", "ValueError", "axpy3(): argument 'y' is a read-only array, but the "
                 "kernel writes to it (the parameter is not const)")
    assert stats == nothing()


def test_copy_const_and_aligned_copies_together(seen):
    r, same, stats = seen["copy_const"]
    assert r == ("ret", N) and same
    assert stats == nothing(aligned_copies=1, layout_copies=1, copy_backs=1)


def test_large_keyword_empty_and_lone_arrays(seen):
    assert seen["big"] == (("ret", 3000), True)
    assert seen["mid"] == (("ret", 300), True)
    assert seen["keywords"] == (("ret", N), True)
    # NumPy calls an empty array aligned whatever its address: it is passed as it is
    # (a kernel reads none of its elements; this one checks the address and says so)
    aligned, r, stats = seen["empty"]
    assert aligned and stats == nothing()
    assert r == ("exc", "ValueError", "axpy3(): the kernel threw a C++ exception: a misaligned "
                 "pointer")
    r, x, stats = seen["alone"]
    assert r == ("ret", 5) and x == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert stats == nothing(aligned_copies=1, copy_backs=1)


def test_counts_from_threads(seen):
    errors, stats = seen["threads"]
    assert errors == []
    assert stats == nothing(aligned_copies=800, copy_backs=800)


def test_aligned_calls_count_nothing(abi):
    f, x = abi.sum_const, np.arange(5.0)
    before = f.stats
    assert set(before) == {"aligned_copies", "copy_backs", "const_copies", "layout_copies"}
    for _ in range(3):
        assert f(x) == 10.0
    assert f.stats == before
    assert f(placed(x, 1)) == 10.0
    assert delta(f, before) == nothing(aligned_copies=1)


if __name__ == "__main__":
    child(*sys.argv[1:])
