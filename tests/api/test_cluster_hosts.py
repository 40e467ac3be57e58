"""Kernels on a Dask cluster of hosts that share nothing (root only).

A scheduler, three workers and a client, each on a host of its own made of a
network namespace (an address of a private /24 that exists only in those
namespaces, bridged in a namespace of its own) and, for every process, a
mount namespace with a tmpfs over the kernel author's folder and over the
worker's BINDTHEM_CACHE (tests/api/netns_hosts.py): each worker rebuilds the
kernels from their pickles. Worker "nocc" has no C++ compiler
(CXX=/nonexistent/c++). The client side runs tests/api/cluster_client.py on the
client host and reports back in JSON.

Elsewhere (not root, no ``ip``/``unshare``, namespaces not permitted) the
module is skipped with the reason. Everything it makes (namespaces, links,
mounts, processes) is removed at the end, also on failure, and a run killed
before that is cleaned up by the next one (netns_hosts.sweep).
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

import netns_hosts
from sources import ROOT, kernel
from support import python_env

pytest.importorskip("distributed")
pytest.importorskip("dask.array")

SLOW = bool(os.environ.get("BINDTHEM_SLOW_TESTS"))
REASON = netns_hosts.unavailable() if SLOW else None  # probes with a namespace: only if run
pytestmark = [
    pytest.mark.skipif(REASON is not None, reason=REASON or ""),
    pytest.mark.slow,
    pytest.mark.skipif(not SLOW,
                       reason="set BINDTHEM_SLOW_TESTS=1 (a cluster of namespaced hosts, "
                       "~1-2 min)"),
]

HERE = os.path.dirname(os.path.abspath(__file__))
NOCC = "/nonexistent/c++"
WORKERS = ("w0", "w1")


@pytest.fixture(scope="module")
def author(tmp_path_factory):
    """The kernel author's folder: src/rows.h, src/rows.yml and a build
    cache, cache/ (hidden from the workers, so to them neither exists)."""
    d = tmp_path_factory.mktemp("author")
    (d / "src").mkdir()
    shutil.copy(kernel("rows.h"), d / "src" / "rows.h")
    shutil.copy(kernel("rows.yml"), d / "src" / "rows.yml")
    (d / "cache").mkdir()
    return d


@pytest.fixture(scope="module")
def amg_core():
    """pyamg's amg_core folder from the sdist, or None when the index is
    unreachable (the pyamg test then skips)."""
    import pyamg_sdist
    try:
        return pyamg_sdist.amg_core_dir()
    except OSError as e:
        return "unavailable: %s" % e


def _pyamg_cache():
    import pyamg_sdist
    d = os.path.join(pyamg_sdist.cache_dir(), "cluster-author-cache")
    os.makedirs(d, exist_ok=True)
    return d


@pytest.fixture(scope="module")
def hosts(author, amg_core):
    hide = [str(author)]
    if not amg_core.startswith("unavailable"):
        hide += [amg_core, _pyamg_cache()]
    with netns_hosts.HostCluster(WORKERS, hide=hide, env=python_env()) as hc:
        # no compiler: none on its PATH (an empty folder), and CXX and CC naming none
        empty = os.path.join(str(author), "..", "nocc-path")
        os.makedirs(empty, exist_ok=True)
        hc.add_worker("nocc", env={"CXX": NOCC, "CC": "/nonexistent/cc"},
                      path=os.path.abspath(empty))
        yield hc


def client(hosts, mode, *args, timeout=300):
    """Runs cluster_client.py MODE on the client host; its JSON result."""
    import cluster_client
    return cluster_client.run(hosts, mode, *args, timeout=timeout)


def ok(result, what):
    assert result["ok"], "%s: %s\n%s" % (what, result["error"], result.get("traceback", ""))
    return result


def rows(author):
    return [author / "src" / "rows.h", author / "src" / "rows.yml", author / "cache"]


# --- the hosts themselves ---------------------------------------------------------


def test_hosts_share_nothing(hosts, author):
    facts = client(hosts, "facts", author / "src" / "rows.h", *WORKERS, "nocc")
    for w in WORKERS + ("nocc",):
        f = facts[w]
        assert not f["sees_header"] and f["sees_folder"] is None, (w, f)
        assert f["cache"] == [], (w, f)
        assert f["addr"] == hosts.hosts[w] and f["addr"].startswith(netns_hosts.SUBNET)
        assert f["links"] == ["eth0", "lo"], (w, f)
        assert facts["_addresses"][w] == "tcp://%s:%s" % (
            f["addr"], facts["_addresses"][w].rsplit(":", 1)[1])
    assert facts["nocc"]["cxx"] == NOCC and facts["w0"]["cxx"] != NOCC
    assert facts["nocc"]["compilers_on_path"] == [] and facts["w0"]["compilers_on_path"]
    # the machine's own namespace has none of it
    assert netns_hosts.SUBNET not in subprocess.run(["ip", "-4", "addr"], capture_output=True,
                                                    text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert not re.search(r"^\d+: (br0|v-\w+)[@:]", links, re.M), links
    with open("/proc/self/mountinfo") as f:
        assert str(author) not in f.read()


# --- kernels on them --------------------------------------------------------------


def test_hosts_submit_a_closure_first_and_later_tasks(hosts, author):
    r = ok(client(hosts, "closure", *rows(author), *WORKERS)["closure"], "submit of a closure")
    for w in WORKERS:
        later = sorted(r["later"][w])
        print("host %s: first task (rebuild from the pickle) %.2f s, later tasks median "
              "%.1f ms (min %.1f)" % (w, r["first"][w], 1e3 * later[len(later) // 2],
                                      1e3 * later[0]))
        assert r["first"][w] < 120
    # each worker built into its own cache, which only it sees
    facts = client(hosts, "facts", author / "src" / "rows.h", *WORKERS)
    for w in WORKERS:
        assert "sources" in facts[w]["cache"], (w, facts[w])
        assert os.listdir(os.path.join(hosts.root, w + "-cache")) == []


def test_hosts_client_map_and_map_blocks(hosts, author):
    """Default options (no copy_const): arrays as distributed delivers them,
    half of them unaligned. Needs unaligned arrays to be accepted."""
    r = client(hosts, "map", *rows(author), *WORKERS)
    ok(r["map"], "Client.map of lib.total")
    print("Client.map: data offsets modulo 8 of the chunks on arrival: %s" % r["map"]["offsets"])
    ok(r["map_blocks"], "map_blocks with lib.rowsum")


@pytest.mark.parametrize("kind", ["build", "load", "ondemand", "package"])
def test_hosts_worker_without_a_compiler_runs_the_library_the_pickle_carries(hosts, author,
                                                                             kind):
    """The client's pickle carries the library it built (or compiled and
    loaded, or made on demand, or its package's): the worker without a
    compiler, which shares no file with the client, verifies and loads it."""
    if kind == "package" and not (author / "pkg").exists():
        src = author / "kernelpkg"
        shutil.copytree(os.path.join(ROOT, "examples", "kernelpkg"), src)
        env = python_env(BINDTHEM_CACHE=str(author / "cache"))
        env["PYTHONPATH"] = os.pathsep.join([str(src), env["PYTHONPATH"]])
        subprocess.run([sys.executable, "setup.py", "-q", "build_py"], cwd=str(src), env=env,
                       check=True, capture_output=True, timeout=300)
        shutil.copytree(src / "build" / "lib", author / "pkg")
    r = client(hosts, "nocc", *rows(author), "nocc", "1", kind, timeout=180)
    assert r["task"] == {"raised": None, "result": r["expected"]}, r
    assert r["seconds"] < 60, r
    ok(r["after"], "a task on the worker after it")


def test_hosts_worker_without_a_compiler_gives_a_task_error_and_stays(hosts, author):
    """Pickles of the source alone (BINDTHEM_CARRY_LIBRARY=0): the worker must
    build, and cannot. Needs lazy unpickling: the build (and its failure) in
    the task."""
    r = client(hosts, "nocc", *rows(author), "nocc", "0", timeout=180)
    task = r["task"]
    assert task["raised"] == "BuildError" and task["module"].startswith("bindthem"), r
    assert "compiler" in task["message"] and NOCC in task["message"], r
    assert r["seconds"] < 60, r
    assert r["listed"], "the scheduler no longer lists the worker: %s\n%s" % (
        r, hosts.log("nocc")[-3000:])
    ok(r["after"], "a task on the worker after the error")
    assert r["after"]["same_pid"], "the worker process was restarted"


def test_hosts_pyamg_kernel_rebuilds_off_the_event_loop(hosts, amg_core):
    """A pyamg-sized build (relaxation.h with linalg.h and graph.h) on a
    worker logs no "Event loop was unresponsive". Needs lazy unpickling."""
    if amg_core.startswith("unavailable"):
        pytest.skip("pyamg's sdist is not available: %s" % amg_core)
    before = len(hosts.log("w1"))
    r = ok(client(hosts, "pyamg", amg_core, _pyamg_cache(), "w1")["pyamg"],
           "gauss_seidel on a worker")
    print("host w1: pyamg relaxation.h rebuilt and run in %.1f s" % r["seconds"])
    log = hosts.log("w1")[before:]
    assert "Event loop was unresponsive" not in log, log[-3000:]


# --- clean-up ---------------------------------------------------------------------


def test_close_and_sweep_leave_nothing(tmp_path):
    """close() removes the namespaces, links, mounts and processes of a
    cluster; sweep() removes those of a run that died without closing."""
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    hc = netns_hosts.HostCluster([], hide=[str(hidden)], env=python_env())
    try:
        hc.add_worker("w")
        deadline = time.monotonic() + 60
        while "Starting established connection" not in hc.log("w"):
            assert time.monotonic() < deadline, hc.log("w")
            time.sleep(0.5)
        pids = hc.pids("w") + hc.pids("sched")
        assert len(pids) >= 3  # scheduler, nanny, worker
        names = [ns for ns in netns_hosts.namespaces(os.getpid())
                 if ns.startswith(hc.tag + "-")]
        assert len(names) == 4  # hub, sched, client, w
        root = hc.root
    finally:
        hc.close()
    assert not [ns for ns in netns_hosts.namespaces() if ns.startswith(hc.tag + "-")]
    assert not [p for p in pids if netns_hosts._alive(p)]
    assert not os.path.exists(root)

    # a run killed at once (SIGKILL: no finally, no atexit) leaves its namespaces and
    # processes behind; the next sweep removes them
    script = ("import sys, time, netns_hosts\n"
              "hc = netns_hosts.HostCluster([], hide=[sys.argv[1]])\n"
              "hc.add_worker('w')\n"
              "print(hc.tag, flush=True)\n"
              "time.sleep(600)\n")
    p = subprocess.Popen([sys.executable, "-c", script, str(hidden)], stdout=subprocess.PIPE,
                         text=True, env=python_env(PYTHONPATH=HERE + os.pathsep
                                                   + python_env()["PYTHONPATH"]))
    try:
        tag = p.stdout.readline().strip()
        assert tag.startswith(netns_hosts.PREFIX + str(p.pid)), tag
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    left = [ns for ns in netns_hosts.namespaces() if ns.startswith(tag + "-")]
    assert len(left) == 4
    stray = [int(x) for ns in left for x in subprocess.run(
        ["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()]
    assert stray  # the scheduler and the worker outlived their parent
    removed = netns_hosts.sweep()
    assert sorted(left) == sorted(set(removed) & set(left))
    assert not [ns for ns in netns_hosts.namespaces() if ns.startswith(tag + "-")]
    time.sleep(0.5)
    assert not [x for x in stray if netns_hosts._alive(x)]
    assert not [d for d in os.listdir("/tmp") if d.startswith(tag + "-")]
