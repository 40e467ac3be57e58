"""Kernels on a plain Dask LocalCluster (worker processes), as a new user
runs them: default options, arrays as distributed delivers them, and a
worker that cannot compile. tests/api/test_cluster_hosts.py does the same on
hosts that share nothing (root only)."""

import os
import pickle
import re
import shutil
import time

import numpy as np
import pytest

from sources import kernel

import bindthem

distributed = pytest.importorskip("distributed")

NOCC = "/nonexistent/c++"


def _cluster(n_workers, **kw):
    cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                       processes=True, dashboard_address=None,
                                       silence_logs=40, **kw)
    return cluster, distributed.Client(cluster, timeout="60s")


def _author(tmp_path):
    src = tmp_path / "author"
    src.mkdir()
    shutil.copy(kernel("rows.h"), src / "rows.h")
    shutil.copy(kernel("rows.yml"), src / "rows.yml")
    (src / "cache").mkdir()
    return src


def _offset(x):
    """The array's data address modulo its item size: 0 when aligned."""
    return x.ctypes.data % x.itemsize


def test_readme_style_client_map_with_default_options(tmp_path):
    """client.map(lib.total, chunks) over chunks of 10 to 10**6 doubles, and
    an in-place kernel on the arrays as they arrive, with default options
    (about half of them arrive unaligned on distributed 2026.8): results as
    NumPy's. Needs unaligned arrays to be accepted."""
    src = _author(tmp_path)
    lib = bindthem.build(str(src / "rows.h"), str(src / "rows.yml"), cache_dir=str(src / "cache"))
    sizes = sorted(set(np.logspace(1, 6, 30).astype(int).tolist())
                   | {11, 12, 13, 55, 999, 4097, 10 ** 4 + 3})
    chunks = [np.random.default_rng(n).random(n) for n in sizes]
    scale = lib.scale

    def doubled(x):  # writes the array distributed handed the task
        scale(x, 2.0)
        return x

    cluster, client = _cluster(2)
    try:
        offsets = client.gather(client.map(_offset, chunks, pure=False))
        got = client.gather(client.map(lib.total, chunks, pure=False))
        np.testing.assert_allclose(got, [c.sum() for c in chunks], rtol=1e-9)
        twice = client.gather(client.map(doubled, chunks, pure=False))
        for c, t in zip(chunks, twice):
            np.testing.assert_array_equal(t, 2 * c)
    finally:
        client.close()
        cluster.close()
    print("data offsets modulo 8 on arrival of %d chunks: %s" % (len(chunks), offsets))


def test_worker_without_a_compiler_gives_a_task_error_and_stays(tmp_path, monkeypatch):
    """A worker with CXX=/nonexistent/c++, an empty BINDTHEM_CACHE and none
    of the author's files, sent the source alone (BINDTHEM_CARRY_LIBRARY=0:
    no built library travels): a task that needs the kernel raises BuildError
    naming the compiler on the client within 60 s, and the same worker
    process then runs the next task. Needs lazy unpickling (the build, and
    its failure, in the task, not in distributed's comm layer)."""
    monkeypatch.setenv("BINDTHEM_CARRY_LIBRARY", "0")
    src = _author(tmp_path)
    lib = bindthem.build(str(src / "rows.h"), str(src / "rows.yml"), cache_dir=str(src / "cache"))
    total = lib.total
    pickle.dumps(total)
    shutil.rmtree(src)  # the author's header, YAML and cache are gone
    empty = tmp_path / "worker-cache"
    empty.mkdir()

    def closure(x):
        return total(x) + 1

    cluster, client = _cluster(1, env={"CXX": NOCC, "BINDTHEM_CACHE": str(empty)})
    try:
        (addr,) = client.scheduler_info()["workers"]
        pid = client.run(os.getpid)[addr]
        for task in (total, closure):  # a Function, then a closure that calls it
            t = time.monotonic()
            with pytest.raises(bindthem.BuildError,
                               match=r"cannot run the C\+\+ compiler '%s'" % re.escape(NOCC)):
                client.submit(task, np.arange(10.0), pure=False).result(timeout=60)
            assert time.monotonic() - t < 60
        time.sleep(1)
        assert list(client.scheduler_info()["workers"]) == [addr]
        assert client.submit(os.getpid, pure=False).result(timeout=30) == pid
    finally:
        client.close()
        cluster.close(timeout=30)
