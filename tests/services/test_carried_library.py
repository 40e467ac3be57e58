"""A built kernel's pickle carries its shared library (bindthem._services.travel:
``binary``): workers without a compiler run it, on every engine users hand
work to, and a library damaged or mismatched in transit is refused, never
loaded.

Each engine runs in a subprocess (a crash fails one test): the parent builds
with the compiler, then starts its workers with no compiler on their PATH,
``CXX``/``CC`` naming none, an empty ``BINDTHEM_CACHE``, and the author's
header folder and build cache removed, and checks the results against NumPy.
"""

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from support import python_env

import bindthem
from bindthem._services import travel

ENGINE = r"""
import os, shutil, sys, tempfile
import numpy as np
import bindthem

def task(f, x):
    if f.__name__ == "total":  # the packaged kernel (examples/kernelpkg)
        return f(x)
    y = x.copy()
    f(y, 3.0)
    return y

def main(engine, folder, kind):
    src = os.path.join(folder, "author")
    header, yml = os.path.join(src, "k.h"), os.path.join(src, "k.yml")
    if kind == "build":
        lib = bindthem.build(header, yml, cache_dir=os.path.join(src, "cache"))
    elif kind == "ondemand":  # no YAML: both instantiations made on demand, here
        lib = bindthem.build(header, cache_dir=os.path.join(src, "cache"))
        for dtype in (np.float64, np.float32):
            lib.scale(np.ones(2, dtype), 1.0)
    elif kind == "package":  # examples/kernelpkg, built into pkg/: no worker has a copy
        sys.path.insert(0, os.path.join(folder, "pkg"))
        from kernelpkg import kernels as lib
    else:  # a library compiled by whoever, loaded: the worker has no such file
        so = bindthem.compile_library(header, yml, output=os.path.join(src, "libk.so"),
                                      cache_dir=os.path.join(src, "cache"))
        lib = bindthem.load(so, header, yml)
    f = lib.total if kind == "package" else lib.scale
    import pickle
    pickle.dumps(f)  # read the library now: its file goes with the author's folder
    shutil.rmtree(src)
    shutil.rmtree(os.path.join(folder, "pkg"), ignore_errors=True)
    nocc = os.path.join(folder, "no-compiler")
    os.makedirs(nocc)
    os.environ.update(PATH=nocc, CXX=os.path.join(nocc, "c++"), CC=os.path.join(nocc, "cc"),
                      BINDTHEM_CACHE=os.path.join(folder, "worker-cache"))
    xs = [np.arange(5.0) + i for i in range(4)] + [np.arange(5, dtype=np.float32)]
    if engine in ("pool-spawn", "pool-forkserver"):
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing as mp
        with ProcessPoolExecutor(2, mp_context=mp.get_context(engine.split("-")[1])) as ex:
            out = list(ex.map(task, [f] * len(xs), xs))
    elif engine in ("mp-spawn", "mp-forkserver"):
        import multiprocessing as mp
        with mp.get_context(engine.split("-")[1]).Pool(2) as pool:
            out = pool.starmap(task, [(f, x) for x in xs])
    elif engine == "joblib":
        from joblib import Parallel, delayed
        out = Parallel(n_jobs=2, backend="loky")(delayed(task)(f, x) for x in xs)
    elif engine == "dask":
        import distributed
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None, silence_logs=40) as cluster, \
                distributed.Client(cluster) as client:
            out = client.gather(client.map(task, [f] * len(xs), xs, pure=False))
            # each worker that ran a task mapped the carried bytes from its cache's carried/
            # (the scheduler may give all five to one)
            maps = client.run(lambda: [l for l in open("/proc/self/maps") if "/carried/" in l])
            cache = os.environ["BINDTHEM_CACHE"]
            assert any(maps.values()) and all(
                any(cache in l for l in m) for m in maps.values() if m), maps
    elif engine == "dask-sent":  # the bytes sent once per worker, the pickles without them
        import distributed
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                      dashboard_address=None, silence_logs=40) as cluster, \
                distributed.Client(cluster) as client:
            before = len(pickle.dumps(f))
            sent = bindthem.send_to_workers(client, lib)
            after = len(pickle.dumps(f))
            assert sent > 10000 and after < before - sent + 2000, (before, sent, after)
            assert bindthem.send_to_workers(client, f) == sent  # again: the same plugin
            out = client.gather(client.map(task, [f] * len(xs), xs, pure=False))
            old = set(client.scheduler_info()["workers"])
            cluster.scale(2)  # a worker that joins later gets them too
            client.wait_for_workers(2)
            new = sorted(set(client.scheduler_info()["workers"]) - old)
            assert len(new) == 1, new
            more = client.gather(client.map(task, [f] * 2, xs[:2], pure=False, workers=new))
            assert all(np.array_equal(y, x * 3) for x, y in zip(xs, more)) or kind == "package"
            maps = client.run(lambda: [l for l in open("/proc/self/maps") if "/carried/" in l])
            assert len(maps) == 2 and all(maps.values()), maps
    for x, y in zip(xs, out):
        if kind == "package":
            assert y == x.sum(), (x, y)
        else:
            assert y.dtype == x.dtype and np.array_equal(y, x * 3), (x, y)
    print("ok", engine, kind, len(out))

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
"""

HEADER = """\
// Scales x by a.
template <class T>
void scale(T x[], const int x_size, double a)
{
    for (int i = 0; i < x_size; i++)
        x[i] *= a;
}
"""
YAML = "instantiate:\n- types: [[double], [float]]\n  functions: [scale]\n"


def _author(tmp_path):
    src = tmp_path / "author"
    src.mkdir()
    (src / "k.h").write_text(HEADER)
    (src / "k.yml").write_text(YAML)
    return src


ENGINES = ["pool-spawn", "pool-forkserver", "mp-spawn", "mp-forkserver", "joblib", "dask"]
KINDS = ["build", "load", "ondemand", "package"]
CASES = ([(e, k) for e in ENGINES for k in KINDS]
         + [("dask-sent", "build"), ("dask-sent", "load"), ("dask-sent", "package")])


@pytest.fixture(scope="module")
def kernelpkg(tmp_path_factory):
    """examples/kernelpkg after `setup.py build_py`: its build/lib folder."""
    import shutil

    from sources import ROOT

    tmp = tmp_path_factory.mktemp("kernelpkg")
    shutil.copytree(os.path.join(ROOT, "examples", "kernelpkg"), tmp / "src")
    env = python_env(BINDTHEM_CACHE=str(tmp / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(tmp / "src"), env["PYTHONPATH"]])
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_py"], cwd=str(tmp / "src"),
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return tmp / "src" / "build" / "lib"


@pytest.mark.parametrize("engine,kind", CASES)
def test_workers_without_a_compiler_run_a_kernel(engine, kind, tmp_path, request):
    """Each engine, each kind of kernel: a built one, a loaded one whose
    library file the workers do not have, one whose instantiations were made
    on demand where it was pickled, and a packaged one (examples/kernelpkg)
    that no worker has installed; and on Dask with the bytes sent once per
    worker (bindthem.send_to_workers)."""
    import shutil

    if engine == "joblib":
        pytest.importorskip("joblib")
    if engine.startswith("dask"):
        pytest.importorskip("distributed")
    _author(tmp_path)
    if kind == "package":
        shutil.copytree(request.getfixturevalue("kernelpkg"), tmp_path / "pkg")
    script = tmp_path / "engine.py"
    script.write_text(ENGINE)
    r = subprocess.run([sys.executable, str(script), engine, str(tmp_path), kind],
                       capture_output=True, text=True, timeout=300, env=python_env(),
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["ok", engine, kind, "5"]


# --- what travels, and what is refused ---------------------------------------------

@pytest.fixture
def built(tmp_path):
    src = _author(tmp_path)
    return bindthem.build(str(src / "k.h"), str(src / "k.yml"), cache_dir=str(tmp_path / "cache"))


class _Forged:
    """A pickle of a Library with the given fields (they are checked on arrival)."""

    def __init__(self, fields):
        self.fields = fields

    def __reduce__(self):
        from bindthem import _unpickle

        return (_unpickle.library, (_Fields(self.fields),))


class _Fields:
    def __init__(self, fields):
        self.fields = fields

    def __reduce__(self):
        from bindthem import _unpickle

        return (_unpickle.source, (self.fields,))


USE = r"""
import pickle, sys
import numpy as np
import bindthem
try:
    lib = pickle.loads(sys.stdin.buffer.read())
    x = np.ones(3)
    lib.scale(x, 2.0)
    print("ok", x.tolist())
except Exception as e:
    print(type(e).__name__, str(e).replace("\n", " | "))
print("mapped", any("carried" in l for l in open("/proc/self/maps")))
"""


def _use(data, tmp_path, **env):
    nocc = tmp_path / "nocc"
    nocc.mkdir(exist_ok=True)
    env = python_env(**dict(dict(
        BINDTHEM_CACHE=str(tmp_path / "w-cache"), CXX=str(nocc / "c++"),
        PATH=str(nocc) + os.pathsep + os.path.dirname(sys.executable)), **env))
    r = subprocess.run([sys.executable, "-c", USE], input=data, capture_output=True,
                       timeout=300, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode().splitlines()


def _fields(lib):
    return lib._bindthem_.source.__reduce__()[1][0]


def _gone(lib, tmp_path):
    """The pickle's fields, with the author's folder and cache removed: the
    worker has the bytes the pickle carries and nothing else."""
    import shutil

    fields = _fields(lib)
    shutil.rmtree(tmp_path / "author")
    shutil.rmtree(tmp_path / "cache")
    return fields


def _refused(fields, tmp_path, why):
    """A worker given a pickle of fields raises PickleError saying why, and
    maps no carried library."""
    out = _use(pickle.dumps(_Forged(fields)), tmp_path)
    assert out[0].startswith("PickleError cannot unpickle bindthem kernel 'k': the shared "
                             "library it carries " + why), out
    assert out[1] == "mapped False"


def test_a_library_damaged_in_transit_is_refused_and_never_loaded(built, tmp_path):
    fields = _gone(built, tmp_path)
    data = bytearray(fields["binary"]["data"])
    data[len(data) // 2] ^= 0xFF
    fields["binary"] = dict(fields["binary"], data=bytes(data))
    _refused(fields, tmp_path, "does not hash to the SHA-256 it carries")


def test_a_library_built_from_another_source_is_refused(built, tmp_path):
    fields = _gone(built, tmp_path)
    fields["header_text"] = fields["header_text"].replace(b"*= a", b"/= a")
    source = travel.Source(**fields)
    source._key = None
    fields["key"] = source._digest()  # a consistent source, with the genuine library
    _refused(fields, tmp_path, "was built from another source")


def test_a_mismatched_platform_is_named_when_the_worker_cannot_build(built, tmp_path):
    fields = _gone(built, tmp_path)
    fields["binary"] = dict(fields["binary"], platform=dict(fields["binary"]["platform"],
                                                            machine="sparc64"))
    out = _use(pickle.dumps(_Forged(fields)), tmp_path)
    assert out[0].startswith("BuildError cannot run the C++ compiler"), out
    assert "(the shared library the pickle carries was not used: it was built for " \
           "architecture sparc64, this machine's is " in out[0], out
    assert out[1] == "mapped False"


def test_a_mismatched_platform_rebuilds_where_the_worker_can(built, tmp_path):
    import shutil

    fields = _gone(built, tmp_path)
    fields["binary"] = dict(fields["binary"], platform=dict(fields["binary"]["platform"],
                                                            libc_version="999.0"))
    cxx = shutil.which("c++") or shutil.which("g++")
    out = _use(pickle.dumps(_Forged(fields)), tmp_path, CXX=cxx, PATH=os.environ["PATH"])
    assert out == ["ok [2.0, 2.0, 2.0]", "mapped False"]


def test_the_pickle_carries_the_bytes_up_to_a_bound(built, tmp_path, monkeypatch):
    """Measured: the pickle of a Function with and without its library (the
    README of benchmarks/ quotes these); $BINDTHEM_CARRY_BYTES bounds the
    bytes, $BINDTHEM_CARRY_LIBRARY=0 carries the source alone."""
    size = os.path.getsize(built.__file__)
    full = len(pickle.dumps(built.scale))
    monkeypatch.setenv("BINDTHEM_CARRY_BYTES", str(size - 1))
    hashed = len(pickle.dumps(built.scale))
    monkeypatch.setenv("BINDTHEM_CARRY_LIBRARY", "0")
    alone = len(pickle.dumps(built.scale))
    assert size < full - hashed < size + 64
    assert alone < hashed < alone + 600
    print("library %d bytes; pickle %d with it, %d with its hash, %d without"
          % (size, full, hashed, alone))
    # with the bound: the worker reads the library where it was built
    monkeypatch.delenv("BINDTHEM_CARRY_LIBRARY")
    out = _use(pickle.dumps(built), tmp_path)
    assert out == ["ok [2.0, 2.0, 2.0]", "mapped False"]


def test_a_worker_on_this_machine_loads_the_builders_file(built, tmp_path):
    """No copy: the file the pickle names hashes to the carried SHA-256 here."""
    out = _use(pickle.dumps(built), tmp_path)
    assert out == ["ok [2.0, 2.0, 2.0]", "mapped False"]


NEW_DTYPE = r"""
import pickle, sys
import numpy as np
f = pickle.loads(sys.stdin.buffer.read())
x = np.ones(3)
f(x, 3.0)
print("float64", x.tolist())
try:
    f(np.ones(3, np.float32), 3.0)
except Exception as e:
    print(type(e).__name__, str(e).replace("\n", " | "))
"""


def test_a_new_dtype_on_a_worker_without_a_compiler_says_so(tmp_path):
    """The instantiation made where it was pickled travels; one the worker
    meets first needs a compiler, and the task error says so."""
    src = _author(tmp_path)
    lib = bindthem.build(str(src / "k.h"), cache_dir=str(tmp_path / "cache"))
    lib.scale(np.ones(2), 1.0)  # scale<double>, made on demand here
    data = pickle.dumps(lib.scale)
    import shutil

    shutil.rmtree(src)
    shutil.rmtree(tmp_path / "cache")
    nocc = tmp_path / "nocc"
    r = subprocess.run([sys.executable, "-c", NEW_DTYPE], input=data, capture_output=True,
                       timeout=300, cwd=str(tmp_path), env=python_env(
                           CXX=str(nocc / "c++"), BINDTHEM_CACHE=str(tmp_path / "w")))
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode().splitlines()
    assert out[0] == "float64 [3.0, 3.0, 3.0]"
    assert out[1].startswith("BuildError instantiating scale<float> on demand"), out
    assert "cannot run the C++ compiler '%s'" % (nocc / "c++") in out[1], out


def test_native_code_needs_this_cpu():
    from bindthem._services import carry

    here = carry.platform_of(["-O3", "-march=native"])
    assert here["cpu"] and carry.platform_of(["-O3"])["cpu"] == ""
    assert carry.unusable({"platform": here}) is None
    assert "(-march=native)" in carry.unusable({"platform": dict(here, cpu="0" * 16)})
    assert "glibc 999.1 or newer" in carry.unusable(
        {"platform": dict(here, libc_version="999.1")})


def test_a_library_over_the_bound_is_hashed_not_kept(built, monkeypatch):
    import hashlib

    from bindthem._services import carry

    monkeypatch.setenv("BINDTHEM_CARRY_BYTES", "100")
    binary = carry.carried(built.__file__, [], "0" * 64)
    with open(built.__file__, "rb") as f:
        data = f.read()
    assert binary["data"] is None and binary["size"] == len(data)
    assert binary["sha256"] == hashlib.sha256(data).hexdigest()
    monkeypatch.delenv("BINDTHEM_CARRY_BYTES")
    assert carry.carried(built.__file__, [], "0" * 64)["data"] == data


def test_bytes_sent_ahead_are_checked_and_found_by_their_hash(built, tmp_path, monkeypatch):
    """bindthem.send_to_workers' side, without a cluster: bytes that do not
    hash to their SHA-256 are refused and never written; a pickle of a sent
    library carries its hash alone; a worker holding the bytes in its cache
    binds them, one that never received them says so."""
    from bindthem._services import carry, workers

    fields = _gone(built, tmp_path)
    sha, data = fields["binary"]["sha256"], fields["binary"]["data"]
    assert workers.payload(built._bindthem_.source) == [(sha, data)]
    wcache = tmp_path / "w-cache"
    damaged = bytearray(data)
    damaged[len(data) // 2] ^= 0xFF
    with pytest.raises(bindthem.PickleError, match="does not hash"):
        carry.receive(sha, bytes(damaged), str(wcache))
    assert not list(wcache.glob("carried/*/lib*.so"))
    monkeypatch.setattr(carry, "SENT", {sha})
    light = dict(fields, binary=carry.as_carried(fields["binary"]))
    assert light["binary"]["data"] is None and light["binary"]["sha256"] == sha
    out = _use(pickle.dumps(_Forged(light)), tmp_path)
    assert out[0].startswith("BuildError") and "bindthem.send_to_workers" in out[0], out
    carry.receive(sha, data, str(wcache))  # what the plugin's setup does on a worker
    assert _use(pickle.dumps(_Forged(light)), tmp_path) == ["ok [2.0, 2.0, 2.0]", "mapped True"]
