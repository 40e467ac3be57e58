"""The direct kernel call (csrc/core/bt_direct.c) against libffi, bit for bit.

A generated C++ library (compiled with g++, and with clang++ when there is
one) has kernels that copy the bits of every argument they receive into an
output array and return one of them: every scalar type in every position of
16, 20 arguments of one type (stack-passed integers, floats past the last
floating-point register, 16 std::complex<float> packed on the stack), mixed
float/double/complex registers (a std::complex<float> in two registers at an
even and an odd one on aarch64), a complex that no longer fits in the
registers (on aarch64 it closes them: the floats after it go to the stack
too), 24 mixed arguments that spill both register classes, returns of every
type (negative narrow integers, bool, char, float, double, both complexes,
64-bit), narrow returns with dirty upper bits, narrow arguments widened by the
callee, and C++ exceptions through a call with stack arguments. Each group
runs in a child interpreter (a wrong call can crash it) through both paths
(``_core.force_ffi``); the parent compares the paths with each other and
with what NumPy says the values are.

The direct path is x86-64 System V's and AAPCS64's (Linux aarch64;
csrc/core/bt_direct.h); elsewhere every call goes through libffi and the
plans say "ffi": the comparison is then libffi against itself and against
NumPy. char is the platform's (int8 where signed, uint8 on aarch64), read
from a C program (support.c_facts).

Run directly, this file is that child: ``python test_direct.py LIB HEADER
YML GROUP OUT``.
"""

import os
import pickle
import platform
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from support import c_facts

with tempfile.TemporaryDirectory() as _d:
    CHAR_MIN, CHAR_MAX = (c_facts(_d)[k] for k in ("CHAR_MIN", "CHAR_MAX"))
# the ABI of the direct call on this machine (bt_direct.h's platforms), and
# the path a call takes where no switch forces libffi
if platform.machine() == "x86_64" and sys.platform != "win32":
    ABI = "x86-64 System V"
elif platform.machine() == "aarch64" and sys.platform.startswith("linux"):
    ABI = "AAPCS64"
else:
    ABI = None
DIRECT = "direct" if ABI else "ffi"

# (C++ spelling, NumPy dtype)
TYPES = [
    ("bool", np.bool_), ("char", np.int8 if CHAR_MIN < 0 else np.uint8), ("signed char", np.int8),
    ("unsigned char", np.uint8), ("short", np.int16), ("unsigned short", np.uint16),
    ("int", np.int32), ("unsigned", np.uint32), ("long", np.int64),
    ("unsigned long", np.uint64), ("long long", np.int64), ("unsigned long long", np.uint64),
    ("float", np.float32), ("double", np.float64), ("std::complex<float>", np.complex64),
    ("std::complex<double>", np.complex128),
]
DTYPE = dict(TYPES)
INTEGERS = [t for t, dt in TYPES if np.dtype(dt).kind in "iu"]
MIX = ["float", "int", "double", "char", "std::complex<float>", "bool", "double",
       "unsigned short", "float", "std::complex<double>", "long", "float", "double", "float",
       "unsigned char", "double", "float", "short"]
# 12 integers (4 on the stack on aarch64, 6 on x86-64), complexes at the first
# and the last pair of floating-point registers on aarch64, then floats,
# doubles and complexes on the stack: 12 stack slots on either
MIX2 = ["int", "std::complex<float>", "long", "float", "short", "std::complex<double>",
        "unsigned", "double", "char", "std::complex<float>", "bool", "float", "long long",
        "double", "signed char", "std::complex<float>", "unsigned long", "float", "int",
        "std::complex<double>", "unsigned short", "double", "long", "float"]


def ident(t):
    return t.replace("std::complex<", "c").replace(">", "").replace(" ", "_")


def value(t, pos):
    """A bit-rich value of C type t for argument position pos."""
    dt = np.dtype(DTYPE[t])
    if dt.kind == "b":
        return pos % 3 != 1
    if dt.kind in "iu":  # 64 scrambled bits cut to the width: both signs, high bits set
        bits = np.array((0x9E3779B97F4A7C15 * (pos + 3)) % 2**64, np.uint64)
        return int(bits.astype(dt))
    if dt.kind == "f":
        return -(pos + 1) * 1.25 if dt.itemsize == 4 else (pos + 1) * -3.141592653589793e100
    return complex(pos + 0.5, -(pos + 1) * 2.25)


def kernels():
    """{name: (parameter types, return type, body returning what)}; the
    output array comes last and every argument i is copied to out[2i:2i+2]."""
    k = {}
    for r in range(len(TYPES)):
        ts = [t for t, _ in TYPES[r:] + TYPES[:r]]
        k["rot%d" % r] = (ts, ts[0], "a0")  # every type in every position
    for t, _ in TYPES:
        k["all_" + ident(t)] = ([t] * 20, t, "a19")  # past the registers
    # 30 or 28 stack slots (x86-64, aarch64): the widest direct call site
    k["wide"] = (["long"] * 36, "long", "a35")
    # no floating-point argument, a floating-point return: the call sites
    # that pass no floating-point registers, returning in xmm0 / d0
    k["wide_fret"] = (["int"] * 36, "double", "a35")
    k["gp_fret"] = (["long", "unsigned short"], "std::complex<double>", "a1")
    # 4 complex<double> in registers, 17 on the stack: 34 slots, past the direct
    # call's 32, so libffi
    k["over_cdouble"] = (["std::complex<double>"] * 21, "std::complex<double>", "a20")
    k["mix"] = (MIX, "double", "a15")
    k["mix2"] = (MIX2, "std::complex<float>", "a9")
    # 7 doubles, then a complex<double> that must go whole to the stack, a
    # float that still gets xmm7, and stack arguments after them
    k["split"] = (["double"] * 7 + ["std::complex<double>", "float", "int",
                                    "std::complex<double>", "double"], "float", "a8")
    # 7 floats, then a complex<float> that takes xmm7 on x86-64 but needs two
    # registers on aarch64: there it goes to the stack (one packed slot) and
    # the float and complex after it follow it there
    k["cfsplit"] = (["float"] * 7 + ["std::complex<float>", "float", "std::complex<float>",
                                     "double", "int"], "std::complex<float>", "a9")
    # 6 doubles and a complex<double> in the last two registers, a float after
    k["cdfit"] = (["double"] * 6 + ["std::complex<double>", "float"],
                  "std::complex<double>", "a6")
    for t, _ in TYPES:
        op = {"b": "!a0", "f": "a0 * -2", "c": "a0 * %s(0, 1)" % t}.get(
            np.dtype(DTYPE[t]).kind, "(%s)~a0" % t)
        k["ret_" + ident(t)] = ([t], t, op)
    for t in INTEGERS:  # (T)long long: gcc returns the wide register as it is
        k["trunc_" + ident(t)] = (["long long"], t, "(%s)a0" % t)
    for t in ["bool"] + INTEGERS[:6]:  # the callee widens what the caller passed
        k["widen_" + ident(t)] = ([t], "long long", "a0")
    return k


def header():
    lines = ["// generated by tests/core/test_direct.py", "#include <complex>",
             "#include <cstdint>", "#include <cstring>", "#include <new>", "#include <stdexcept>",
             ""]
    for name, (ts, ret, what) in kernels().items():
        params = ", ".join("%s a%d" % (t, i) for i, t in enumerate(ts))
        lines.append("%s %s(%s, uint64_t out[], const int out_size)\n{" % (ret, name, params))
        lines += ["    std::memcpy(&out[%d], &a%d, sizeof a%d);" % (2 * i, i, i)
                  for i in range(len(ts))]
        lines.append("    return %s;\n}\n" % what)
    # throws after writing out[0]; 10 ints and 10 doubles: stack arguments
    ints = ", ".join("int i%d" % i for i in range(10))
    dbls = ", ".join("double d%d" % i for i in range(10))
    lines.append("long long thrower(%s, %s, int kind, uint64_t out[], const int out_size)\n{\n"
                 "    out[0] = 1;\n"
                 "    switch (kind) {\n"
                 "    case 1: throw std::runtime_error(\"boom\");\n"
                 "    case 2: throw std::out_of_range(\"index 9 out of range\");\n"
                 "    case 3: throw std::invalid_argument(\"bad argument\");\n"
                 "    case 4: throw std::overflow_error(\"too big\");\n"
                 "    case 5: throw std::bad_alloc();\n"
                 "    case 6: throw 42;\n    }\n    return i9 + (long long)d9;\n}\n" % (ints, dbls))
    return "\n".join(lines)


def yml():
    return "- types:\n    - null\n  functions:\n" + "".join(
        "    - %s\n" % n for n in list(kernels()) + ["thrower"])


GROUPS = {
    "rot": lambda k: k.startswith("rot"),
    "all": lambda k: k.startswith("all_") or k in ("mix", "mix2", "split", "cfsplit", "cdfit",
                                                                "wide", "wide_fret", "gp_fret",
                                                                "over_cdouble"),
    "ret": lambda k: k.startswith(("ret_", "trunc_", "widen_")),
}
TRUNC = [0x7EDCBA98F654F381, -0x7EDCBA98F654F381]
WIDEN = {"bool": [True, False], "char": [CHAR_MIN, CHAR_MAX], "signed char": [-128, -1],
         "unsigned char": [255, 128], "short": [-32768, -2], "unsigned short": [65535, 32768],
         "int": [-2**31, -3]}


def calls(group):
    """[(kernel, scalar arguments)] of a group."""
    ks = kernels()
    if group == "throw":
        return [("thrower", list(range(10)) + [0.5 * i for i in range(10)] + [kind])
                for kind in range(7)]
    out = []
    for name, (ts, _, _) in ks.items():
        if not GROUPS[group](name):
            continue
        if name.startswith("trunc_"):
            out += [(name, [v]) for v in TRUNC]
        elif name.startswith("widen_"):
            out += [(name, [v]) for v in WIDEN[ts[0]]]
        else:
            out.append((name, [value(t, i) for i, t in enumerate(ts)]))
    return out


def child(lib_path, header_path, yml_path, group, out_path):
    import bindthem
    from bindthem import _core

    lib = bindthem.load(lib_path, header_path, yml_path)
    got = {}
    for name, args in calls(group):
        f = getattr(lib, name)
        for path in ("direct", "ffi"):
            _core.force_ffi(path == "ffi")
            out = np.zeros(2 * len(args) + 2, dtype=np.uint64)
            try:
                r = ("ret", f(*args, out))
            except Exception as e:
                r = ("exc", type(e).__name__, str(e))
            got.setdefault(name, []).append((tuple(args), path, r, out.tobytes(),
                                             f._call_paths[0]))
    _core.force_ffi(False)
    with open(out_path, "wb") as fh:
        pickle.dump(got, fh)


COMPILERS = [c for c in (os.environ.get("CXX", "g++"), "clang++") if shutil.which(c)]


@pytest.fixture(scope="module", params=sorted(set(COMPILERS)))
def built(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("direct")
    h, y = d / "direct.h", d / "direct.yml"
    h.write_text(header())
    y.write_text(yml())
    src = d / "direct.cpp"
    src.write_text('#include "%s"\n' % h)
    lib = d / "libdirect.so"
    subprocess.run([request.param, "-std=c++17", "-O2", "-fPIC", "-shared", str(src), "-o",
                    str(lib)], check=True)
    return str(lib), str(h), str(y), d


_GOT = {}  # (library, group) -> what its child said: one child per group and library


def run_group(built, group):
    """What a child interpreter's calls of the group's kernels gave, through both
    paths; run once per library (the exception tests each read their kind's)."""
    from sources import SUPPORT
    from support import python_env

    lib, h, y, d = built
    if (lib, group) in _GOT:
        return _GOT[lib, group]
    out = d / ("%s.pickle" % group)
    env = python_env()
    env["PYTHONPATH"] += os.pathsep + SUPPORT  # this file, run as a script, imports support
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), lib, h, y, group,
                           str(out)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out, "rb") as fh:
        _GOT[lib, group] = pickle.load(fh)
    return _GOT[lib, group]


def expected_return(name, ret, what, args):
    dt = np.dtype(DTYPE[ret])
    if name.startswith("ret_"):
        x = np.array(args[0], dt)
        if dt.kind == "b":
            return not args[0]
        if dt.kind == "f":
            return (x * dt.type(-2)).item()
        if dt.kind == "c":
            return (x * dt.type(1j)).item()
        return np.invert(x).item()
    if name.startswith("trunc_"):
        return np.array(args[0], np.int64).astype(dt).item()
    if name.startswith("widen_"):
        return int(args[0])
    return np.array(args[int(what[1:])], dt).item()  # the kernel returns argument `what`


def arg_bits(t, v):
    return np.array(v, DTYPE[t]).tobytes().ljust(16, b"\0")


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_direct_and_ffi_agree(built, group):
    got = run_group(built, group)
    ks = kernels()
    assert set(got) == {n for n, _ in calls(group)}
    for name, runs in got.items():
        ts, ret, what = ks[name]
        # pairs of (direct, ffi) per argument list
        for (args, p1, r1, out1, plan), (args2, p2, r2, out2, _) in zip(runs[::2], runs[1::2]):
            assert (p1, p2, args) == ("direct", "ffi", args2)
            assert r1 == r2 and repr(r1) == repr(r2), (name, r1, r2)
            assert out1 == out2, name
            assert r1[0] == "ret", (name, r1)
            want = expected_return(name, ret, what, args)
            assert r1[1] == want and type(r1[1]) is type(want), (name, r1[1], want)
            bits = b"".join(arg_bits(t, v) for t, v in zip(ts, args))
            assert out1[:len(bits)] == bits, name
            # only 21 std::complex<double> (34 stack slots) need libffi
            assert plan == ("ffi" if name == "over_cdouble" else DIRECT), name


@pytest.mark.parametrize("kind, exc, text", [
    (1, "RuntimeError", "boom"), (2, "IndexError", "index 9 out of range"),
    (3, "ValueError", "bad argument"), (4, "OverflowError", "too big"),
    (5, "MemoryError", "bad_alloc"), (6, "RuntimeError", "unknown C++ exception"),
])
def test_cxx_exception_through_both_paths(built, kind, exc, text):
    runs = {}
    for args, path, r, out, plan in run_group(built, "throw")["thrower"]:
        runs.setdefault(args[-1], []).append((path, r, np.frombuffer(out, np.uint64)[0], plan))
    (p1, r1, o1, plan), (p2, r2, o2, _) = runs[kind]
    assert (p1, p2, plan) == ("direct", "ffi", DIRECT)
    assert r1 == r2 and r1[0] == "exc" and r1[1] == exc and text in r1[2], r1
    assert r1[2].startswith("thrower(): the kernel threw a C++ exception: ")
    assert o1 == o2 == 1  # the kernel ran up to its throw
    (_, r0, _, _), (_, r0f, _, _) = runs[0]
    assert r0 == r0f == ("ret", 9 + 4)


def test_direct_abi():
    """_core.DIRECT_ABI names this machine's direct call (None: libffi only)."""
    from bindthem import _core

    assert _core.DIRECT_ABI == ABI


def test_force_ffi_switch():
    """force_ffi() reports and sets the switch; BINDTHEM_FFI=1 sets it at import."""
    from support import python_env

    code = ("from bindthem import _core; a = _core.force_ffi(); b = _core.force_ffi(True); "
            "c = _core.force_ffi(); _core.force_ffi(False); print(a, b, c, _core.force_ffi())")
    for env, first in (({}, "False"), ({"BINDTHEM_FFI": "1"}, "True"),
                       ({"BINDTHEM_FFI": "0"}, "False")):
        e = python_env(**env)
        if not env:
            e.pop("BINDTHEM_FFI", None)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=e, timeout=60)
        assert proc.stdout.split() == [first, first, "True", "False"], proc.stderr


if __name__ == "__main__":
    child(*sys.argv[1:6])
