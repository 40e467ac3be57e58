"""Kernels in other processes: a real Dask distributed LocalCluster (worker
processes), dask.array.map_blocks, and multiprocessing with spawn and
forkserver. Workers get Functions by pickle, so everything here also checks
that pickles carry what a worker needs."""

import multiprocessing
import os
import shutil
import textwrap

import numpy as np
import pytest

from sources import kernel

import bindthem

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

OMP = """\
// OpenMP's thread count inside a parallel region; y[i] = 2 x[i] over the threads.
int omp_twice(const double x[], const int x_size, double y[], const int y_size)
{
    int n = 1;
    #pragma omp parallel
    {
        #pragma omp single
        n = omp_get_num_threads();
        #pragma omp for
        for (int i = 0; i < x_size; i++)
            y[i] = 2 * x[i];
    }
    return n;
}
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("parallel")
    shutil.copy(kernel("rows.h"), d / "par.h")
    shutil.copy(kernel("rows.yml"), d / "par.yml")
    (d / "omp.h").write_text("#include <omp.h>\n" + OMP)
    cache = d / "cache"
    cache.mkdir()
    return d


@pytest.fixture(scope="module")
def lib(files):
    return bindthem.build(str(files / "par.h"), str(files / "par.yml"),
                          cache_dir=str(files / "cache"))


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    c = distributed.Client(cluster, timeout="60s")
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def test_client_map_of_a_function(client, files):
    # a Function whose Library object is gone, as bindthem.build(...).f gives it; arrays
    # that distributed delivers can be unaligned (views into a message): aligned copies
    total = bindthem.build(str(files / "par.h"), str(files / "par.yml"),
                           cache_dir=str(files / "cache")).total
    chunks = [np.arange(n, dtype=np.float64) for n in (10, 100, 1000)]
    chunks += [np.linspace(0, 1, 50, dtype=np.float32)]
    futures = client.map(total, chunks)
    got = client.gather(futures)
    assert got == pytest.approx([c.sum() for c in chunks], rel=1e-6)
    pids = client.run(os.getpid)
    assert os.getpid() not in pids.values() and len(pids) == 2


def _strided(f):
    return f(np.arange(10.0)[::2])


def _unaligned(f):
    return f(np.frombuffer(bytes(81), dtype=np.float64, count=10, offset=1))


def test_strided_and_unaligned_arrays_on_a_worker_are_copies(client, lib):
    # neither is a misfit: the call passes each as an aligned C-contiguous copy
    assert client.submit(_strided, lib.total, pure=False).result(timeout=120) == 20.0
    assert client.submit(_unaligned, lib.total, pure=False).result(timeout=120) == 0.0

    def per_call(f):
        with bindthem.options(copy_const=True):  # accepted, and changes nothing
            return _strided(f), _unaligned(f)

    assert client.submit(per_call, lib.total, pure=False).result(timeout=120) == (20.0, 0.0)


def test_submit_a_closure_that_writes_in_place(client, lib):
    scale = lib.scale

    def work(x, a):
        y = x.copy()
        scale(y, a)
        return y, os.getpid()

    x = np.arange(5.0)
    y, pid = client.submit(work, x, 3.0, pure=False).result(timeout=120)
    assert pid != os.getpid()
    np.testing.assert_array_equal(y, 3 * x)
    np.testing.assert_array_equal(x, np.arange(5.0))


def test_dask_tokens_of_kernels(client, lib):
    from dask.base import tokenize
    assert tokenize(lib.total) == tokenize(lib.total)
    assert client.submit(tokenize, lib.total).result(timeout=120) == tokenize(lib.total)


def _row_sums(rowsum):
    def block(b):
        out = np.empty(b.shape[0], dtype=b.dtype)
        rowsum(b, out)
        return out[:, None]
    return block


def test_map_blocks_of_strided_blocks(lib):
    A = np.arange(600.0).reshape(20, 30)
    want = np.stack([A[:, k:k + 10].sum(axis=1) for k in (0, 10, 20)], axis=1)
    d = da.from_array(A, chunks=(20, 10))  # column blocks: views, not C-contiguous
    got = d.map_blocks(_row_sums(lib.rowsum), chunks=(20, 1), dtype=A.dtype).compute(
        scheduler="sync")
    np.testing.assert_allclose(got, want)


def test_map_blocks_with_const_copies(client, lib, files):
    A = np.arange(600.0).reshape(20, 30)
    want = np.stack([A[:, k:k + 10].sum(axis=1) for k in (0, 10, 20)], axis=1)
    # per Library
    copying = bindthem.build(str(files / "par.h"), str(files / "par.yml"),
                             cache_dir=str(files / "cache"), copy_const=True)
    d = da.from_array(A, chunks=(20, 10))
    got = d.map_blocks(_row_sums(copying.rowsum), chunks=(20, 1), dtype=A.dtype).compute()
    np.testing.assert_allclose(got, want)
    # per call, inside the task
    rowsum = lib.rowsum

    def block(b):
        out = np.empty(b.shape[0], dtype=b.dtype)
        with bindthem.options(copy_const=True):
            rowsum(b, out)
        return out[:, None]

    got = d.map_blocks(block, chunks=(20, 1), dtype=A.dtype).compute()
    np.testing.assert_allclose(got, want)


# --- multiprocessing -----------------------------------------------------------


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_multiprocessing_pool(lib, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip("no %s here" % method)
    ctx = multiprocessing.get_context(method)
    chunks = [np.arange(n, dtype=np.float64) for n in (3, 30, 300, 3000)]
    with ctx.Pool(2) as pool:
        got = pool.map(lib.total, chunks, chunksize=1)
    assert got == [c.sum() for c in chunks]


SPAWN_AFTER_OPENMP = textwrap.dedent("""
    import multiprocessing, pickle, sys
    import numpy as np
    import bindthem

    def child(f):
        x = np.arange(100000.0)
        y = np.zeros_like(x)
        return f(x, y), float(y.sum())

    if __name__ == "__main__":
        lib = bindthem.build(sys.argv[1], cache_dir=sys.argv[2], openmp=True)
        x = np.arange(100000.0)
        y = np.zeros_like(x)
        print(lib.omp_twice(x, y))  # libgomp's pool is running now
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            print(pool.apply(child, (lib.omp_twice,)))
""")


def test_spawn_after_openmp(files, tmp_path):
    """libgomp cannot fork after its pool started; spawn starts clean."""
    import subprocess
    import sys

    from support import python_env

    script = tmp_path / "spawn_omp.py"
    script.write_text(SPAWN_AFTER_OPENMP)
    r = subprocess.run([sys.executable, str(script), str(files / "omp.h"),
                        str(files / "cache")], capture_output=True, text=True, timeout=300,
                       env=python_env(OMP_NUM_THREADS="2"), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    parent, child = r.stdout.split("\n")[:2]
    assert parent == "2"
    assert child == "(2, %r)" % float(2 * np.arange(100000.0).sum())


def _code_block(text, name):
    """The body of the code block with ``:name: name`` (indented 3), as written."""
    start = text.index("   :name: %s\n" % name)
    lines = []
    for line in text[start:].split("\n")[1:]:
        if line.startswith("   :"):  # the block's other options
            continue
        if line and not line.startswith("   "):
            break
        lines.append(line[3:])
    return "\n".join(lines).strip("\n") + "\n"


def test_docs_dask_example(tmp_path):
    """docs/dask.rst's worked example, as written there, on its own LocalCluster."""
    import subprocess
    import sys

    from sources import ROOT
    from support import python_env

    with open(os.path.join(ROOT, "docs", "dask.rst"), encoding="utf-8") as f:
        text = f.read()
    (tmp_path / "rows.h").write_text(_code_block(text, "dask-rows-h"))
    (tmp_path / "rows.yml").write_text(_code_block(text, "dask-rows-yml"))
    script = _code_block(text, "dask-example-script") + "    print('example OK')\n"
    (tmp_path / "example.py").write_text(script)
    r = subprocess.run([sys.executable, "example.py"], cwd=str(tmp_path), capture_output=True,
                       text=True, timeout=300,
                       env=python_env(BINDTHEM_CACHE=str(tmp_path / "cache")))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("example OK")
