"""Shared set-up for the benchmarks: pyamg's sdist headers, the bindthem
libraries of amg_core, the floor extension, ctypes bindings, test arrays.

Everything built goes under ``$BINDTHEM_BENCH_CACHE`` (default
``/tmp/bindthem-bench``); pyamg's sdist comes through tests/support/pyamg_sdist.py
(cached under ``~/.cache/bindthem-tests``) and is never copied into the repo.
"""

import ctypes
import glob
import hashlib
import importlib
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import pyamg_sdist  # noqa: E402

del sys.path[0]

# the tree whose bindthem is benchmarked (default: this checkout); point it at
# a patched copy to measure a change before applying it
SRC = os.environ.get("BINDTHEM_BENCH_SRC") or ROOT
HEADERS = pyamg_sdist.HEADERS
CACHE = os.environ.get("BINDTHEM_BENCH_CACHE") or "/tmp/bindthem-bench"
os.makedirs(CACHE, exist_ok=True)


def _package_files():
    """bindthem/'s Python files and data files, subpackages included."""
    return sorted(p for ext in ("py", "cuh")
                  for p in glob.glob(os.path.join(SRC, "bindthem", "**", "*." + ext),
                                     recursive=True))


def bindthem_path():
    """A private, optimized build of this checkout's bindthem (csrc/ and
    bindthem/*.py as they are now) under the cache: the in-place
    bindthem/_core*.so may be a debug or sanitizer build, or be rebuilt while
    the benchmarks run. Built with setup.py's default flags (-O2), the
    BINDTHEM_DEBUG / _SANITIZE / _COVERAGE switches cleared. Returns the folder
    to put first on sys.path."""
    files = sorted(glob.glob(os.path.join(SRC, "csrc", "*", "*.[ch]"))) + sorted(
        glob.glob(os.path.join(SRC, "csrc", "*", "*.cpp"))) + [
        os.path.join(SRC, "setup.py")] + _package_files()
    key = hashlib.sha256()
    for p in files:
        key.update(p.encode() + b"\0")
        with open(p, "rb") as f:
            key.update(f.read())
    dest = os.path.join(CACHE, "bindthem-" + key.hexdigest()[:16])
    if glob.glob(os.path.join(dest, "bindthem", "_core*.so")):
        return dest
    tmp = dest + ".tmp%d" % os.getpid()
    env = {k: v for k, v in os.environ.items()
           if k not in ("BINDTHEM_DEBUG", "BINDTHEM_SANITIZE", "BINDTHEM_COVERAGE", "CFLAGS",
                        "LDFLAGS")}
    proc = subprocess.run([sys.executable, "setup.py", "build_ext", "-b", tmp, "-t", tmp + ".o"],
                          cwd=SRC, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(tmp + ".o", ignore_errors=True)
        # the checkout may be mid-edit: fall back to the newest earlier build
        old = sorted((p for p in glob.glob(os.path.join(CACHE, "bindthem-*"))
                      if "." not in os.path.basename(p)
                      and glob.glob(os.path.join(p, "bindthem", "_core*.so"))),
                     key=os.path.getmtime)
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        if not old:
            sys.exit("building bindthem for the benchmarks failed:\n" + tail)
        sys.stderr.write("warning: building this checkout's bindthem failed (%s); using the "
                         "earlier build %s\n" % (tail.splitlines()[-1], old[-1]))
        return old[-1]
    for p in _package_files() + [os.path.join(SRC, "bindthem", "py.typed")]:
        if os.path.exists(p):
            to = os.path.join(tmp, os.path.relpath(p, SRC))
            os.makedirs(os.path.dirname(to), exist_ok=True)
            shutil.copy(p, to)
    shutil.rmtree(tmp + ".o", ignore_errors=True)
    if os.path.exists(dest):
        shutil.rmtree(tmp)
    else:
        os.replace(tmp, dest)
    return dest


BINDTHEM = bindthem_path()
sys.path.insert(0, BINDTHEM)


def amg_core():
    return pyamg_sdist.amg_core_dir()


def build_libraries():
    """{header stem: bindthem.Library} for all of amg_core, built with
    bindthem.build into the cache (compiles only the first time)."""
    import bindthem
    core = amg_core()
    yml = os.path.join(core, "instantiate.yml")
    return {h: bindthem.build(os.path.join(core, h + ".h"), yml, name="pyamg.amg_core." + h,
                              cache_dir=os.path.join(CACHE, "bindthem"))
            for h in HEADERS}


def library_paths():
    """[(shared library, header, instantiate.yml, module name)] of the 8
    cached libraries, building them first if needed."""
    import bindthem as bb
    core = amg_core()
    yml = os.path.join(core, "instantiate.yml")
    return [(bb.compile_library(os.path.join(core, h + ".h"), yml,
                                cache_dir=os.path.join(CACHE, "bindthem")),
             os.path.join(core, h + ".h"), yml, "pyamg.amg_core." + h) for h in HEADERS]


def relaxation():
    import bindthem
    core = amg_core()
    return bindthem.build(os.path.join(core, "relaxation.h"),
                          os.path.join(core, "instantiate.yml"),
                          name="pyamg.amg_core.relaxation",
                          cache_dir=os.path.join(CACHE, "bindthem"))


def shapes():
    """The kernels of benchmarks/shapes/shapes.h, built by bindthem."""
    import bindthem
    here = os.path.join(HERE, "shapes")
    return bindthem.build(os.path.join(here, "shapes.h"), os.path.join(here, "instantiate.yml"),
                          name="shapes", cache_dir=os.path.join(CACHE, "bindthem"))


def floor():
    """The floor extension module (benchmarks/floor/floor.cpp), compiled
    against the sdist's relaxation.h into the cache the first time."""
    import numpy
    src = os.path.join(HERE, "floor", "floor.cpp")
    core = amg_core()
    cxx = os.environ.get("CXX") or "c++"
    cmd = [cxx, "-O3", "-std=c++14", "-fPIC", "-shared",
           "-I" + sysconfig.get_paths()["include"], "-I" + numpy.get_include(), "-I" + core,
           "-I" + os.path.join(HERE, "shapes"), src]
    key = hashlib.sha256()
    for p in (src, os.path.join(core, "relaxation.h"), os.path.join(core, "linalg.h"),
              os.path.join(HERE, "shapes", "shapes.h")):
        with open(p, "rb") as f:
            key.update(f.read())
    key.update(" ".join(cmd).encode())
    folder = os.path.join(CACHE, "floor-" + key.hexdigest()[:16])
    target = os.path.join(folder, "_floor" + sysconfig.get_config_var("EXT_SUFFIX"))
    if not os.path.exists(target):
        os.makedirs(folder, exist_ok=True)
        tmp = target + ".tmp%d" % os.getpid()
        subprocess.run(cmd + ["-o", tmp], check=True)
        os.replace(tmp, target)
    spec = importlib.util.spec_from_file_location("_floor", target)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ctypes_gauss_seidel(lib, which):
    """ctypes binding of overload `which` of lib.gauss_seidel (the symbol
    bindthem found, from the library bindthem built), with
    numpy.ctypeslib.ndpointer argtypes."""
    import numpy as np
    from numpy.ctypeslib import ndpointer
    dt = {0: np.float32, 1: np.float64, 3: np.complex128}[which]
    cdll = ctypes.CDLL(lib.__file__)
    fn = getattr(cdll, lib.gauss_seidel.symbols[which])
    ci = ctypes.c_int
    ro = dict(flags="C_CONTIGUOUS,ALIGNED")
    fn.argtypes = [ndpointer(np.intc, **ro), ci, ndpointer(np.intc, **ro), ci,
                   ndpointer(dt, **ro), ci, ndpointer(dt, flags="C_CONTIGUOUS,ALIGNED,WRITEABLE"),
                   ci, ndpointer(dt, **ro), ci, ci, ci, ci]
    fn.restype = None
    return fn


def tiny(dtype):
    """A 2x2 CSR (identity), x and b of 2 elements: (Ap, Aj, Ax, x, b)."""
    import numpy as np
    Ap = np.array([0, 1, 2], dtype=np.intc)
    Aj = np.array([0, 1], dtype=np.intc)
    Ax = np.ones(2, dtype=dtype)
    x = np.zeros(2, dtype=dtype)
    b = np.ones(2, dtype=dtype)
    return Ap, Aj, Ax, x, b


def stock_module(sub="relaxation"):
    """pyamg.amg_core.<sub> from the stock wheel. When pyamg is not imported
    yet, the extension is loaded from its file without running pyamg's
    __init__ (which imports scipy and all of pyamg): the same code, less
    start-up."""
    name = "pyamg.amg_core." + sub
    if name in sys.modules or "pyamg" in sys.modules:
        return importlib.import_module(name)
    spec = importlib.util.find_spec("pyamg")
    folder = os.path.join(spec.submodule_search_locations[0], "amg_core")
    path = glob.glob(os.path.join(folder, sub + ".*.so"))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def stock_relaxation():
    return stock_module("relaxation")


def machine():
    import numpy
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import pyamg
        pv = pyamg.__version__
    except ImportError:
        pv = "-"
    import bindthem
    return ("CPU: %s, %d cores (os.cpu_count), %s\nPython %s, numpy %s, pyamg (stock wheel) %s\n"
            "bindthem %s from %s (private -O2 build of %s)"
            % (model, os.cpu_count(), platform.platform(), platform.python_version(),
               numpy.__version__, pv, bindthem.__version__, os.path.dirname(bindthem.__file__),
               SRC))


def table(title, header, rows, note=None):
    """Prints a plain-text table."""
    cols = [header] + [[str(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in cols) for i in range(len(header))]
    print()
    print(title)
    print("-" * len(title))
    print("  ".join(h.ljust(w[i]) if i == 0 else h.rjust(w[i]) for i, h in enumerate(header)))
    for r in cols[1:]:
        print("  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r)))
    if note:
        print(note)
    sys.stdout.flush()


def python():
    return sys.executable


def env():
    """Environment for subprocesses: the private bindthem build and
    benchmarks/ importable (run them with cwd=CACHE, so that '' on sys.path
    is not the checkout)."""
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([BINDTHEM, HERE] + (
        [e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    return e


def callgrind_per_call(folder, n):
    """Instructions per call from the callgrind dumps in folder, each dumped
    with the client request description "LABEL|K" after K calls: {LABEL:
    (I(2n) - I(n)) / n}, which cancels the fixed costs (the benches'
    one measure). A label dumped with other counts (fewer calls for a costly
    case) uses its own: half its largest count."""
    got = {}
    for p in os.listdir(folder):
        desc = tot = None
        with open(os.path.join(folder, p)) as f:
            for line in f:
                if line.startswith("desc: Trigger: Client Request: "):
                    desc = line.split(": ", 3)[3].strip()
                elif line.startswith("totals:"):
                    tot = int(line.split()[1])
        if desc and tot is not None:
            label, k = desc.rsplit("|", 1)
            got.setdefault(label, {})[int(k)] = tot
    out = {}
    for label, v in got.items():
        m = n if 2 * n in v else max(v) // 2
        if m in v and 2 * m in v:
            out[label] = (v[2 * m] - v[m]) / m
    return out
