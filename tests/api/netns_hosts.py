"""A cluster of hosts that share nothing, on one machine (root only).

Each host is a network namespace with one veth interface (``eth0``) whose
peer sits in a bridge (``br0``) in a hub namespace of its own; the addresses
are of the private /24 ``SUBNET``, and exist only inside those namespaces:
the machine's own namespace gains no address, route or link. Each process
started on a host also gets a mount namespace of its own (``unshare -m
--propagation private``) with a fresh tmpfs mounted over every folder it is
told to hide (the kernel author's folder, its own ``BINDTHEM_CACHE``), so it
sees neither the author's files nor any cache but its own empty one.

Every namespace is named ``btns<pid>-<n>-<host>``, <pid> being the process
that made it and <n> its count of clusters. ``sweep()`` (run by every
``HostCluster()``) removes the namespaces and the work folder of a run
whose process is gone, after killing what still runs in them: a run killed
before its clean-up leaves nothing behind for long.
``close()`` (also registered with atexit) stops the processes, then deletes
the namespaces, which takes their links with them; the tmpfs mounts go with
the last process of their mount namespace.

    with HostCluster(["w0", "w1"], hide=[author_dir]) as hc:
        hc.add_worker("nocc", env={"CXX": "/nonexistent/c++"})
        proc = hc.client([sys.executable, "script.py", hc.scheduler])

Used by tests/api/test_cluster_hosts.py and benchmarks/bench_cluster.py.
"""

import atexit
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PREFIX = "btns"
SUBNET = "10.213.7."  # a private /24; .1 the scheduler, .2-.99 workers, .100 the client
PORT = 8786


def unavailable():
    """Why a host cluster cannot be made here (a sentence), or None."""
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux's"
    if os.geteuid() != 0:
        return "making network and mount namespaces needs root"
    for tool in ("ip", "unshare", "mount"):
        if not shutil.which(tool):
            return "no %r on PATH (iproute2 / util-linux)" % tool
    name = "%s%d-probe" % (PREFIX, os.getpid())
    try:
        _ip("netns", "add", name)
        try:
            _ip("netns", "exec", name, "unshare", "-m", "--propagation", "private",
                "true")
            _ip("-n", name, "link", "add", "br0", "type", "bridge")
        finally:
            _ip("netns", "del", name, check=False)
    except (OSError, subprocess.CalledProcessError) as e:
        return "network/mount namespaces are not permitted here: %s" % (
            getattr(e, "stderr", None) or e)
    return None


def _ip(*args, check=True):
    return subprocess.run(("ip",) + args, check=check, capture_output=True, text=True, timeout=60)


def _alive(pid):
    """Whether pid runs (a zombie does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def namespaces(owner=None):
    """The btns namespaces on this machine ({name: owner pid}), or those of
    one owner."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"(%s(\d+)-\S+)" % PREFIX, line)
        if m and (owner is None or int(m.group(2)) == owner):
            found[m.group(1)] = int(m.group(2))
    return found


def _kill_inside(ns):
    """SIGKILLs every process whose network namespace is ns."""
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
    for pid in out.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def _remove(names):
    for ns in names:
        _kill_inside(ns)
    for ns in names:
        _ip("netns", "del", ns, check=False)


def sweep():
    """Removes what runs whose process is gone left behind: their processes
    and namespaces (with their links). Returns the namespaces removed."""
    dead = [ns for ns, pid in namespaces().items() if not _alive(pid)]
    _remove(dead)
    tmp = tempfile.gettempdir()
    for name in os.listdir(tmp):
        m = re.match(r"%s(\d+)-\d+-" % PREFIX, name)
        if m and not _alive(int(m.group(1))):
            shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)
    return dead


class HostCluster:
    """A Dask scheduler and workers, each on a host of its own (see the
    module docstring). ``hide``: folders no worker may see (a tmpfs goes
    over each in every worker's mount namespace); each worker also gets an
    empty ``BINDTHEM_CACHE`` of its own. ``python``: the interpreter run on
    the hosts (default: this one, with this process's environment)."""

    made = 0  # clusters made by this process: the <n> of their tag

    def __init__(self, workers=("w0", "w1"), hide=(), python=None, env=None, threads=1):
        for h in hide:
            if not os.path.isdir(h):
                raise ValueError("HostCluster(hide=...): %r is not a folder; a tmpfs can only "
                                 "hide an existing folder" % (h,))
        sweep()
        HostCluster.made += 1
        self.tag = "%s%d-%d" % (PREFIX, os.getpid(), HostCluster.made)
        self.python = python or sys.executable
        self.env = dict(os.environ if env is None else env)
        self.hide = [os.path.realpath(h) for h in hide]
        self.threads = threads
        self.root = tempfile.mkdtemp(prefix=self.tag + "-")
        self.procs = {}  # host -> Popen
        self.hosts = {}  # host -> address
        self.logs = {}  # host -> log path
        self.closed = False
        atexit.register(self.close)
        try:
            self._ns("hub")
            self._hub("link", "set", "lo", "up")
            self._hub("link", "add", "br0", "type", "bridge")
            self._hub("link", "set", "br0", "up")
            self._host("sched", 1)
            self.scheduler = "tcp://%s1:%d" % (SUBNET, PORT)
            self._start("sched", ["-m", "distributed.cli.dask_scheduler", "--host",
                                  SUBNET + "1", "--port", str(PORT), "--no-dashboard"], {}, [])
            self._host("client", 100)
            for name in workers:
                self.add_worker(name)
        except BaseException:
            self.close()
            raise

    # --- namespaces and links ---

    def ns(self, host):
        return "%s-%s" % (self.tag, host)

    def _ns(self, host):
        _ip("netns", "add", self.ns(host))

    def _hub(self, *args):
        _ip("-n", self.ns("hub"), *args)

    def _host(self, host, last_octet):
        """A namespace for host, its eth0 at SUBNET.<last_octet>/24 bridged
        to the others, loopback up."""
        self._ns(host)
        ns = self.ns(host)
        peer = "v-" + host[:12]
        self._hub("link", "add", peer, "type", "veth", "peer", "name", "eth0", "netns", ns)
        self._hub("link", "set", peer, "master", "br0", "up")
        _ip("-n", ns, "addr", "add", "%s%d/24" % (SUBNET, last_octet), "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        self.hosts[host] = SUBNET + str(last_octet)

    # --- processes ---

    def _start(self, host, args, env, hide):
        """Starts python args on host, in a mount namespace of its own with
        a tmpfs over each folder of hide; output goes to self.logs[host]."""
        log = os.path.join(self.root, host + ".log")
        self.logs[host] = log
        mounts = " && ".join('mount -t tmpfs -o size=256m,mode=0755 btns-hidden "$%d"' % (i + 1)
                             for i in range(len(hide)))
        # BTNS_PATH: the PATH of the program itself (the tools above need the usual one)
        script = ((mounts + " && " if mounts else "") + 'shift %d && ' % len(hide)
                  + ('PATH="$BTNS_PATH" exec "$@"' if "BTNS_PATH" in env else 'exec "$@"'))
        cmd = ["ip", "netns", "exec", self.ns(host), "unshare", "-m", "--propagation",
               "private", "sh", "-c", script, "sh"] + list(hide) + [self.python] + args
        e = dict(self.env)
        e.update(env)
        with open(log, "wb") as out:
            self.procs[host] = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                                env=e, cwd=self.root, start_new_session=True)

    def add_worker(self, name, env=None, path=None):
        """Starts a worker (with its nanny) named name on a host of its own.
        env: extra environment of that worker only; path: its PATH (the
        usual one by default). Returns its host's address."""
        if name in self.hosts:
            raise ValueError("host %r exists" % name)
        self._host(name, 2 + sum(1 for h in self.hosts if h not in ("sched", "client")))
        cache = os.path.join(self.root, name + "-cache")
        os.makedirs(cache)
        wenv = {"BINDTHEM_CACHE": cache}
        wenv.update(env or {})
        if path is not None:
            wenv["BTNS_PATH"] = path
        self._start(name, ["-m", "distributed.cli.dask_worker", self.scheduler, "--host",
                           self.hosts[name], "--name", name, "--nworkers", "1", "--nthreads",
                           str(self.threads), "--no-dashboard", "--death-timeout", "120",
                           "--local-directory", os.path.join(self.root, name + "-scratch")],
                    wenv, self.hide + [cache])
        return self.hosts[name]

    def client(self, args, timeout=300, env=None):
        """Runs args (a command) on the client host, which sees every file
        (the author's machine); returns the CompletedProcess."""
        e = dict(self.env)
        e.update(env or {})
        return subprocess.run(["ip", "netns", "exec", self.ns("client")] + list(args),
                              capture_output=True, text=True, timeout=timeout, env=e,
                              cwd=self.root)

    def log(self, host):
        with open(self.logs[host], encoding="utf-8", errors="replace") as f:
            return f.read()

    def pids(self, host):
        """Pids of the processes running on host."""
        out = subprocess.run(["ip", "netns", "pids", self.ns(host)], capture_output=True,
                             text=True).stdout
        return sorted(int(p) for p in out.split())

    def close(self):
        """Stops every process, removes every namespace (and so every link);
        the mounts go with their processes. Idempotent; never raises."""
        if self.closed:
            return
        self.closed = True
        for p in self.procs.values():
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        for p in self.procs.values():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        _remove([ns for ns in namespaces(os.getpid()) if ns.startswith(self.tag + "-")])
        shutil.rmtree(self.root, ignore_errors=True)
        atexit.unregister(self.close)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
