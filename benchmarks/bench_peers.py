"""The call shapes of benchmarks/shapes/shapes.h through bindthem's peers:
nanobind and pybind11 modules (benchmarks/peers/), cffi in ABI mode and
ctypes, each on the library bindthem built from shapes.h, every case both
as a local call (`f(x)`) and as an attribute call (`lib.f(x)`).

bench_callgrind.py measures these cases in its valgrind run beside its own
and prints `table()`: one row per shape and call form, bindthem, the floor
and the peers side by side, in instructions per call with the loop included.

The peers are built at bench time, never committed: nanobind, pybind11 and
cffi (pinned in REQUIREMENTS) are pip-installed into the bench cache, and the
two modules are compiled there, keyed by a hash of their sources, the
headers, the packages and the command. Without pip (no network) a line says
so and their columns are left out.

What each peer's Python does is what a user of that tool writes for the same
call: the nanobind and pybind11 functions take the arrays (their checks are
in the C++ sources); cffi passes `ffi.from_buffer("double[]", x)` and
`len(x)`, ctypes `x.ctypes.data` and `len(x)` (argtypes set): those two
check nothing, the sizes are passed by hand.
"""

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

REQUIREMENTS = ("nanobind==3.1.0", "pybind11==3.1.0", "cffi==2.1.1")
PEERS = ("nanobind", "pybind11", "cffi", "ctypes")
SRC = os.path.join(common.HERE, "peers")
# the shapes.h functions by their Python names (bindthem's Library and the modules)
NAMES = ("k1", "k63", "k12", "kdef", "k2d", "kz")
ENV = "BINDTHEM_BENCH_PEERS"
# (warm-up calls, N) per peer case: fewer than bindthem's (500, 2000), as a
# peer's call costs up to a million instructions (pybind11's no-match message)
CALLS_MEASURED = (100, 200)

# What cffi and ctypes cannot do, by shape (bench_callgrind.shape_list's keys):
# "—" in the table, the reason under it.
NOT_EXPRESSED = {
    "k63 keywords": ("cffi", "ctypes", "no keyword arguments"),
    "kdef defaults": ("cffi", "ctypes", "no default arguments (a C call passes all)"),
    "kz": ("cffi", "ctypes", "no complex argument by value (cffi's ABI mode, ctypes before "
                             "Python 3.14)"),
    "k1 nomatch": ("cffi", "ctypes", "check nothing: the kernel runs on the int32 bytes"),
    "k1 0-d": ("cffi", "ctypes", "check nothing: the kernel runs on the 0-d array's element"),
    "gs nomatch": ("cffi", "ctypes", "have no overloads: one symbol per instantiation"),
    "k1 keyword": ("ctypes", "ignores keyword arguments: the call runs"),
    "k1 strided": ("ctypes", "passes the base pointer: the kernel runs on the wrong elements"),
}

# cffi's and ctypes' call per shape: (parameters, arguments, exception caught);
# "{x}" stands for one array argument and its size
CALLS = {
    "k1": ("x", "{x}", None),
    "k63": ("a, w, i, j", ", ".join(["{a}"] * 6) + ", w, i, j", None),
    "k12": ("a", ", ".join(["{a}"] * 12), None),
    "kdef": ("x, w, i", "{x}, w, i", None),
    "k2d": ("x", "{x2}", None),
    "k1 strided": ("x", "{x}", "ValueError"),
    "k1 keyword": ("x", "{x}, y=1", "TypeError"),
}
ARRAY = {
    "cf": {"x": 'ffi.from_buffer("double[]", x), len(x)',
           "a": 'ffi.from_buffer("double[]", a), len(a)',
           "x2": 'ffi.from_buffer("double[]", x), x.shape[0], x.shape[1]'},
    "ct": {"x": "x.ctypes.data, len(x)", "a": "a.ctypes.data, len(a)",
           "x2": "x.ctypes.data, x.shape[0], x.shape[1]"},
}


def loop_name(kind, shape):
    return "run_%s_%s" % (kind, shape.replace(" ", "_"))


def _loops():
    """The cffi ("cf") and ctypes ("ct") loops, one per shape: run_cf_k1(n,
    f, ffi, x) calls f(ffi.from_buffer("double[]", x), len(x)) n times."""
    out = []
    for kind, arrays in ARRAY.items():
        for shape, (params, args, exc) in CALLS.items():
            call = "f(%s)" % args.format(**arrays)
            body = ("        %s\n" % call if exc is None else
                    "        try:\n            %s\n        except %s:\n            pass\n"
                    % (call, exc))
            out.append("def %s(n, f, ffi, %s):\n    for _ in range(n):\n%s"
                       % (loop_name(kind, shape), params, body))
    return "\n" + "\n".join(out)


LOOP = _loops()


def _packages():
    """The folder REQUIREMENTS are pip-installed into (once), or (None, why)."""
    key = hashlib.sha256(("%s %s" % (REQUIREMENTS, sys.version)).encode()).hexdigest()[:16]
    dest = os.path.join(common.CACHE, "peers-pip-" + key)
    if os.path.isdir(dest):
        return dest, None
    tmp = dest + ".tmp%d" % os.getpid()
    try:
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-input",
                               "--disable-pip-version-check", "--target", tmp]
                              + list(REQUIREMENTS), capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        proc = None
        why = str(e)
    if proc is None or proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        if proc is not None:
            why = ((proc.stdout + proc.stderr).strip().splitlines() or ["pip failed"])[-1]
        return None, why
    os.replace(tmp, dest)
    return dest, None


def _compile(name, pkgs, cmds, sources):
    """Runs cmds (each a list; "{out}" is the module's path, "{tmp}" a
    scratch folder) once per hash of the sources and commands; returns the
    module's path, or (None, why)."""
    key = hashlib.sha256()
    for p in sources:
        with open(p, "rb") as f:
            key.update(f.read())
    key.update(repr(cmds).encode() + pkgs.encode())
    folder = os.path.join(common.CACHE, "peers-%s-%s" % (name, key.hexdigest()[:16]))
    target = os.path.join(folder, name + sysconfig.get_config_var("EXT_SUFFIX"))
    if os.path.exists(target):
        return target, None
    tmp = folder + ".tmp%d" % os.getpid()
    os.makedirs(tmp, exist_ok=True)
    out = os.path.join(tmp, os.path.basename(target))
    for cmd in cmds:
        proc = subprocess.run([c.format(out=out, tmp=tmp) for c in cmd], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            return None, "compiling %s failed: %s" % (name, (proc.stderr.strip().splitlines()
                                                             or ["?"])[-1])
    os.makedirs(folder, exist_ok=True)
    os.replace(out, target)
    shutil.rmtree(tmp, ignore_errors=True)
    return target, None


def _modules(pkgs):
    """{"nanobind": path, "pybind11": path} of the compiled modules, and
    [why] for each that did not build."""
    core = common.amg_core()
    cxx = os.environ.get("CXX") or "c++"
    inc = ["-I" + sysconfig.get_paths()["include"], "-I" + core,
           "-I" + os.path.join(common.HERE, "shapes")]
    headers = [os.path.join(common.HERE, "shapes", "shapes.h"),
               os.path.join(SRC, "instantiations.h")] + [
        os.path.join(core, h) for h in ("relaxation.h", "linalg.h")]
    nb = os.path.join(pkgs, "nanobind")
    # nanobind's own recipe for a build without CMake (src/nb_combined.cpp):
    # libnanobind at -O3 with -fno-strict-aliasing; the bindings at -O3 (its
    # CMake default is -Os); no stack protector (nanobind_add_module's default)
    nbflags = [cxx, "-std=c++17", "-fPIC", "-fvisibility=hidden", "-DNDEBUG",
               "-DNB_COMPACT_ASSERTIONS", "-O3", "-fno-stack-protector",
               "-I" + os.path.join(nb, "include"),
               "-I" + os.path.join(nb, "ext", "robin_map", "include")] + inc
    nb_cmds = [nbflags + ["-fno-strict-aliasing", "-c", os.path.join(nb, "src", "nb_combined.cpp"),
                          "-o", "{tmp}/libnanobind.o"],
               nbflags + ["-c", os.path.join(SRC, "nb_shapes.cpp"), "-o", "{tmp}/nb_shapes.o"],
               [cxx, "-shared", "-Wl,-s", "{tmp}/nb_shapes.o", "{tmp}/libnanobind.o", "-o",
                "{out}"]]
    # pybind11_add_module's release flags (one translation unit: its LTO left out)
    pb_cmds = [[cxx, "-std=c++17", "-fPIC", "-shared", "-fvisibility=hidden", "-DNDEBUG", "-O3",
                "-Wl,-s", "-I" + os.path.join(pkgs, "pybind11", "include")] + inc
               + [os.path.join(SRC, "pb_shapes.cpp"), "-o", "{out}"]]
    got, why = {}, []
    for peer, name, cmds in (("nanobind", "nb_shapes", nb_cmds),
                             ("pybind11", "pb_shapes", pb_cmds)):
        path, err = _compile(name, pkgs, cmds, [os.path.join(SRC, name + ".cpp")] + headers)
        if path:
            got[peer] = path
        else:
            why.append("%s: %s" % (peer, err))
    return got, why


def prepare():
    """Installs and builds the peers (cached); {"pkgs": folder, "nanobind":
    module path, "pybind11": module path}, fewer keys for what is missing.
    Prints a line for each peer left out."""
    pkgs, why = _packages()
    if pkgs is None:
        print("\n(nanobind, pybind11 and cffi could not be installed (%s): their columns "
              "are left out)" % why)
        return {}
    got, why = _modules(pkgs)
    for w in why:
        print("\n(%s: its column is left out)" % w)
    got["pkgs"] = pkgs
    return got


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cases(shapes):
    """[(label, loop, callable, args, (warm-up calls, N))] of the peers for
    bench_callgrind's shape_list() `shapes`, each local ("nanobind k1") and
    through its module or library ("nanobind lib.k1", loop "run_k1@k1")."""
    got = json.loads(os.environ[ENV]) if ENV in os.environ else prepare()
    if "pkgs" in got and got["pkgs"] not in sys.path:
        sys.path.append(got["pkgs"])
    out = []
    for peer, name in (("nanobind", "nb_shapes"), ("pybind11", "pb_shapes")):
        if peer in got:
            mod = _load(name, got[peer])
            for shape, loop, args, _ in shapes:
                fname = shape.split()[0]
                fname = "gauss_seidel" if fname == "gs" else fname
                out.append(("%s %s" % (peer, shape), loop, getattr(mod, fname), args,
                            CALLS_MEASURED))
                out.append(("%s lib.%s" % (peer, shape), "%s@%s" % (loop, fname), mod, args,
                            CALLS_MEASURED))
    libs = _c_libraries("pkgs" in got)
    for peer, kind in (("cffi", "cf"), ("ctypes", "ct")):
        if peer not in libs:
            continue
        aux, lib, syms = libs[peer]
        for shape, _, args, _ in shapes:
            key = shape if shape in CALLS else shape.split()[0]  # "k63 numpy": k63's call
            if peer in NOT_EXPRESSED.get(shape, ()) or key not in CALLS:
                continue
            loop, sym = loop_name(kind, key), syms[shape.split()[0]]
            out.append(("%s %s" % (peer, shape), loop, getattr(lib, sym), (aux,) + args,
                        CALLS_MEASURED))
            out.append(("%s lib.%s" % (peer, shape), "%s@%s" % (loop, sym), lib, (aux,) + args,
                        CALLS_MEASURED))
    return out


def _c_libraries(with_cffi):
    """{"cffi": (ffi, lib, {name: symbol}), "ctypes": (None, CDLL, ...)} on
    the library bindthem built from shapes.h (its symbols are C++ names:
    bindthem reports them). cffi only when installed."""
    import ctypes
    shapes = common.shapes()
    syms = {n: getattr(shapes, n).symbols[0] for n in NAMES}
    # the C declarations, as a user would write them for cffi's cdef and ctypes' argtypes
    c = {"k1": "double *, int", "k63": ", ".join(["double *, int"] * 6 + ["double, int, int"]),
         "k12": ", ".join(["double *, int"] * 12), "kdef": "double *, int, double, int",
         "k2d": "double *, int, int"}
    out = {}
    if with_cffi:
        import cffi
        ffi = cffi.FFI()
        ffi.cdef("".join("void %s(%s);\n" % (syms[n], a) for n, a in c.items()))
        out["cffi"] = (ffi, ffi.dlopen(shapes.__file__), syms)
    cdll = ctypes.CDLL(shapes.__file__)
    types = {"double *": ctypes.c_void_p, "int": ctypes.c_int, "double": ctypes.c_double}
    for n, a in c.items():
        fn = getattr(cdll, syms[n])
        fn.argtypes = [types[t.strip()] for t in a.split(",")]
        fn.restype = None
    out["ctypes"] = (None, cdll, syms)
    return out


def table(res, shapes):
    """One table: per shape, the local call and the attribute call, bindthem,
    the floor and each peer that has a row, and bindthem over the floor and
    over nanobind."""
    cols = ["bindthem", "floor"] + [p for p in PEERS
                                    if any("%s %s" % (p, s[0]) in res for s in shapes)]
    missing = [p for p in PEERS if p not in cols]
    rows = []

    def cell(who, shape, lib):
        v = res.get("%s %s%s" % (who, "lib." if lib else "", shape))
        return "%.0f" % v if v else "—"

    def ratio(shape, lib, other):
        pre = "lib." if lib else ""
        a, b = res.get("bindthem " + pre + shape), res.get("%s %s%s" % (other, pre, shape))
        return "%.2f" % (a / b) if a and b else "—"

    for shape, _, _, _ in shapes:
        for lib in (False, True):
            rows.append([shape if not lib else "", "lib.f(x)" if lib else "f(x)"]
                        + [cell(c, shape, lib) for c in cols]
                        + [ratio(shape, lib, "floor"), ratio(shape, lib, "nanobind")])
    notes = ["f(x): the function held in a local; lib.f(x): looked up at each call on its "
             "Library (bindthem), module (floor, nanobind, pybind11) or library object (cffi's "
             "ffi.dlopen, ctypes' CDLL). Each case runs its own loop code.",
             "— : the floor takes no keywords and has no gauss_seidel dispatch; cffi and "
             "ctypes:"]
    for shape, why in NOT_EXPRESSED.items():
        notes.append("  %s: %s: %s" % (shape, " and ".join(why[:-1]), why[-1]))
    if missing:
        notes.append("Left out (not installed or not built): %s." % ", ".join(missing))
    common.table("Callgrind: call shapes against the peers, instructions per call (loop "
                 "included)", ["shape", "call"] + cols + ["bindthem/floor", "bindthem/nanobind"],
                 rows, "\n".join(notes))
